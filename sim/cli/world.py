"""``companysim world ...``: create, inspect, check, hash and compare worlds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from sim.cli.common import DataDir, console
from worlds.errors import CorruptWorld, SpecError
from worlds.schema import (
    Channel,
    Department,
    Document,
    Employee,
    Event,
    MailMessage,
    Post,
    Project,
    Repository,
    Team,
    Ticket,
)
from worlds.spec import APPS, WorldSpec
from worlds.store import World, WorldStore, create_world, open_world

world_app = typer.Typer(help="Create, inspect, hash and compare worlds.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add ``world ...`` to the application."""
    app.add_typer(world_app, name="world")


@contextmanager
def _progress(enabled: bool) -> Iterator[object]:
    """A rich progress bar fed by the generator's progress(stage, done, total) callback."""
    if not enabled:
        yield None
        return
    with Progress(
        TextColumn("[bold]{task.description:<12}"),
        BarColumn(),
        MofNCompleteColumn(),  # "0/?" until the generator says how many stages there are
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("generating", total=None)

        def report(stage: str, done: int, total: int) -> None:
            bar.update(task, description=stage, completed=done, total=total)

        yield report


def _parse_apps(apps: str | None) -> tuple[str, ...]:
    if apps is None:
        return APPS
    names = tuple(a.strip() for a in apps.split(",") if a.strip())
    if not names:
        raise SpecError(f"invalid apps={apps!r}: expected a comma-separated subset of {', '.join(APPS)}")
    return names


@world_app.command("new")
def world_new(
    seed: Annotated[int, typer.Option(help="Root seed of the company.")],
    employees: Annotated[int, typer.Option(help="Headcount, CEO included.")] = 100,
    history_days: Annotated[int, typer.Option(help="Days of history before the start date.")] = 90,
    start_date: Annotated[str, typer.Option(help="Simulated 'today' (YYYY-MM-DD).")] = "2026-03-02",
    industry: Annotated[str, typer.Option(help="software|fintech|healthcare|retail|logistics")] = "software",
    locale: Annotated[str, typer.Option(help="Faker locale for names.")] = "en_US",
    apps: Annotated[str | None, typer.Option(help="Comma-separated apps to populate (default: all).")] = None,
    db: Annotated[str | None, typer.Option(help="Database URL (sqlite:///x.db, postgresql://...).")] = None,
    out: Annotated[Path | None, typer.Option(help="SQLite file to write.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing world at the target.")] = False,
    data_dir: DataDir = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Generate a seeded company world (into the cache unless --db or --out is given)."""
    try:
        start = date.fromisoformat(start_date)
    except ValueError:
        raise SpecError(f"invalid start_date={start_date!r}: expected YYYY-MM-DD") from None
    spec = WorldSpec.parse(
        seed=seed,
        employees=employees,
        history_days=history_days,
        start_date=start,
        industry=industry,
        locale=locale,
        apps=_parse_apps(apps),
    )
    if db is not None and out is not None:
        raise SpecError("give --db or --out, not both")
    with _progress(not quiet) as report:
        if db is None and out is None:
            world = WorldStore(data_dir).base(spec, progress=report)  # type: ignore[arg-type]
        else:
            target: str | Path = db if db is not None else out  # type: ignore[assignment]
            world = create_world(spec, target, progress=report, overwrite=overwrite)  # type: ignore[arg-type]
    try:
        console.print(f"world {world.url}", markup=False)
        console.print(f"spec {spec.canonical_json()}", markup=False)
    finally:
        world.close()


def _summary_tables(world: World) -> list[Table]:
    tables: list[Table] = []
    with world.session() as session:
        overview = Table(title="World", show_header=False)
        overview.add_row("url", world.url)
        overview.add_row("spec", world.spec.canonical_json())
        overview.add_row("versions", f"schema {world.schema_version}, generator {world.generator_version}")
        counts = {
            "employees": Employee.id,
            "teams": Team.id,
            "projects": Project.id,
            "tickets": Ticket.id,
            "channels": Channel.id,
            "posts": Post.id,
            "mail messages": MailMessage.id,
            "events": Event.id,
            "documents": Document.id,
            "repositories": Repository.id,
        }
        for label, col in counts.items():
            overview.add_row(label, str(session.scalar(select(func.count(col))) or 0))
        tables.append(overview)

        heads = Table(title="Headcount by department")
        heads.add_column("department")
        heads.add_column("code")
        heads.add_column("people", justify="right")
        rows = session.execute(
            select(Department.name, Department.code, func.count(Employee.id))
            .join(Employee, Employee.department_id == Department.id, isouter=True)
            .group_by(Department.id, Department.name, Department.code)
            .order_by(func.count(Employee.id).desc(), Department.name)
        ).all()
        for name, code, people in rows:
            heads.add_row(name, code, str(people))
        tables.append(heads)

        status = Table(title="Tickets by status")
        status.add_column("status")
        status.add_column("tickets", justify="right")
        for name, n in session.execute(
            select(Ticket.status, func.count(Ticket.id)).group_by(Ticket.status).order_by(Ticket.status)
        ).all():
            status.add_row(name, str(n))
        tables.append(status)

        chans = Table(title="Channels (busiest 12)")
        chans.add_column("channel")
        chans.add_column("type")
        chans.add_column("posts", justify="right")
        for name, kind, n in session.execute(
            select(Channel.name, Channel.type, func.count(Post.id))
            .join(Post, Post.channel_id == Channel.id, isouter=True)
            .group_by(Channel.id, Channel.name, Channel.type)
            .order_by(func.count(Post.id).desc(), Channel.name)
            .limit(12)
        ).all():
            chans.add_row(name, kind, str(n))
        tables.append(chans)

        docs = Table(title="Documents")
        docs.add_column("kind")
        docs.add_column("mime type")
        docs.add_column("files", justify="right")
        for kind, mime, n in session.execute(
            select(Document.kind, Document.mime_type, func.count(Document.id))
            .group_by(Document.kind, Document.mime_type)
            .order_by(Document.kind, Document.mime_type)
        ).all():
            docs.add_row(kind, mime, str(n))
        tables.append(docs)
    return tables


@contextmanager
def _readable(world: World) -> Iterator[None]:
    """Turn a database error while reading a world (a dropped table, a damaged page) into ``CorruptWorld``."""
    try:
        yield
    except DBAPIError as exc:
        reason = str(exc.orig).splitlines()[0] if exc.orig is not None else type(exc).__name__
        raise CorruptWorld(f"{world.target.display} is damaged: {reason}") from None


def print_world_summary(world: World) -> None:
    """Print the summary tables of a world (used by ``world show`` and the demo)."""
    with _readable(world):
        tables = _summary_tables(world)
    for table in tables:
        console.print(table)


@world_app.command("show")
def world_show(target: Annotated[str, typer.Argument(help="World file path or database URL.")]) -> None:
    """Show a world: headcount by department, tickets by status, channels, documents."""
    world = open_world(target, readonly=True)
    try:
        print_world_summary(world)
    finally:
        world.close()


@world_app.command("hash")
def world_hash(target: Annotated[str, typer.Argument(help="World file path or database URL.")]) -> None:
    """Print the world's state hash alone on one line."""
    world = open_world(target, readonly=True)
    try:
        with _readable(world):
            digest = world.state_hash()
    finally:
        world.close()
    typer.echo(digest)


@world_app.command("diff")
def world_diff(
    a: Annotated[str, typer.Argument(help="First world (path or URL).")],
    b: Annotated[str, typer.Argument(help="Second world (path or URL).")],
) -> None:
    """Show which tables and rows differ between two worlds (exit 1 if they differ)."""
    from worlds.dump import diff

    wa = open_world(a, readonly=True)
    try:
        wb = open_world(b, readonly=True)
    except BaseException:
        wa.close()
        raise
    try:
        with wa.connect() as ca, wb.connect() as cb:
            result = diff(ca, cb)
    except DBAPIError as exc:
        reason = str(exc.orig).splitlines()[0] if exc.orig is not None else type(exc).__name__
        raise CorruptWorld(f"cannot compare {a} and {b}, one is damaged: {reason}") from None
    finally:
        wa.close()
        wb.close()
    if not result.tables:
        console.print("identical")
        return
    table = Table(title="Differences")
    for col in ("table", "added", "removed", "changed", "first keys"):
        table.add_column(col)
    for name, td in result.tables.items():
        keys = [*td.added, *td.removed, *td.changed][:5]
        table.add_row(name, str(len(td.added)), str(len(td.removed)), str(len(td.changed)), ", ".join(map(str, keys)))
    console.print(table)
    raise typer.Exit(1)


@world_app.command("check")
def world_check(
    target: Annotated[str, typer.Argument(help="World file path or database URL.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON instead of a table.")] = False,
    strict: Annotated[bool, typer.Option(help="Fail on checks marked expected-to-fail too.")] = False,
) -> None:
    """Run check_world: each integrity and coherence check with pass/fail counts (exit 1 if one fails)."""
    from worlds.check import world_report

    world = open_world(target, readonly=True)
    try:
        with _readable(world), world.connect() as conn:
            report = world_report(conn)
    finally:
        world.close()
    failing = [r for r in report if r.failed and (strict or not r.expected_to_fail)]
    if as_json:
        rows = [
            {
                "check": r.name,
                "about": r.about,
                "checked": r.checked,
                "passed": r.checked - r.failed,
                "failed": r.failed,
                "expected_to_fail": r.expected_to_fail,
                "problems": list(r.problems),
            }
            for r in report
        ]
        typer.echo(json.dumps({"ok": not failing, "checks": rows}, indent=1, sort_keys=True))
    else:
        table = Table(title="World checks")
        for col, justify in (("check", "left"), ("checked", "right"), ("passed", "right"), ("failed", "right")):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        table.add_column("result")
        table.add_column("first problem / what it checks")
        for r in report:
            result = "pass" if r.ok else ("expected fail" if r.expected_to_fail and not strict else "FAIL")
            note = r.problems[0] if r.problems else r.about
            table.add_row(r.name, str(r.checked), str(r.checked - r.failed), str(r.failed), result, note)
        console.print(table)
        for r in report:
            if r.expected_to_fail and r.failed:
                console.print(f"{r.name}: {r.expected_to_fail}", markup=False)
    if failing:
        raise typer.Exit(1)


@world_app.command("stats")
def world_stats(
    target: Annotated[str, typer.Argument(help="World file path or database URL.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the figures as JSON here.")] = None,
    top: Annotated[int, typer.Option(help="Most frequent skeletons kept per kind in the JSON.")] = 5,
) -> None:
    """Text variety per kind: rows, distinct skeletons (names, keys, numbers masked), distinct trigrams."""
    import json

    from worlds.stats import mail_key_agreement, world_text_stats

    world = open_world(target, readonly=True)
    try:
        with _readable(world), world.connect() as conn:
            stats = world_text_stats(conn, top=top)
            agreement = mail_key_agreement(conn)
    finally:
        world.close()
    table = Table(title="Text variety (skeletons: names, keys, numbers masked; trigrams of the skeletons)")
    for col in ("kind", "rows", "skeletons", "ratio", "trigrams", "distinct", "ratio"):
        table.add_column(col, justify="left" if col == "kind" else "right")
    for s in stats.values():
        table.add_row(
            s.kind,
            str(s.rows),
            str(s.distinct_skeletons),
            f"{s.skeleton_ratio:.3f}",
            str(s.trigrams),
            str(s.distinct_trigrams),
            f"{s.trigram_ratio:.3f}",
        )
    console.print(table)
    both, same = agreement["mails_with_keys_in_subject_and_body"], agreement["same_key_in_both"]
    console.print(f"mails naming a ticket in subject and body: {both}; naming the same ticket in both: {same}")
    if json_out is not None:
        payload = {
            "world": world.url,
            "spec": json.loads(world.spec.canonical_json()),
            "generator_version": world.generator_version,
            "kinds": {k: s.as_dict() for k, s in stats.items()},
            "references": agreement,
        }
        json_out.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")

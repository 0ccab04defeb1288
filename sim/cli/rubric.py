"""``companysim rubric log|show|diff|evolve`` and ``companysim rescore``: rubric versions and regrading.

Rubric versions live in a ``graders.store.RubricStore``, by default ``<data dir>/rubrics`` (``--rubrics``
names another). ``rescore`` grades recorded traces again (``sim.rescore``) and writes ``rescore`` records to a
file beside each trace; traces themselves are never rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

if TYPE_CHECKING:
    from graders.store import RubricStore

from sim.cli.common import DataDir, UsageError, check_count, console, output_file
from worlds.store import WorldStore

rubric_app = typer.Typer(help="Rubric versions: their history, contents, differences, and evolving them.")

Rubrics = Annotated[Path | None, typer.Option("--rubrics", help="The rubric store (default: <data dir>/rubrics).")]


def register(app: typer.Typer) -> None:
    """Add ``rubric ...`` and ``rescore`` to the application."""
    app.add_typer(rubric_app, name="rubric", no_args_is_help=True)
    app.command("rescore")(rescore)


def _store(rubrics: Path | None, data_dir: Path | None) -> RubricStore:
    from graders.store import RubricStore

    return RubricStore(rubrics if rubrics is not None else WorldStore(data_dir).data_dir / "rubrics")


@rubric_app.command("log")
def log(
    rubric_id: Annotated[str, typer.Argument(help="Rubric id.")], rubrics: Rubrics = None, data_dir: DataDir = None
) -> None:
    """Every stored version of a rubric, oldest first, with what each changed."""
    store = _store(rubrics, data_dir)
    versions = store.log(rubric_id)
    if not versions:
        store.get(rubric_id)  # raises RubricNotFound naming what the store holds
    table = Table(title=f"rubric {rubric_id} ({store.root})")
    for col in ("version", "fingerprint", "parent", "checks", "note"):
        table.add_column(col)
    for v in versions:
        parent = v.parent[:12] if v.parent else "-"
        table.add_row(str(v.rubric.version), v.rubric.fingerprint[:12], parent, str(len(v.rubric.checks)), v.note[:80])
    console.print(table)


@rubric_app.command("show")
def show(
    ref: Annotated[str, typer.Argument(help="ID, ID@VERSION or a rubric file.")],
    rubrics: Rubrics = None,
    data_dir: DataDir = None,
) -> None:
    """One version's checks: weight, gate, function, and where each check came from."""
    store = _store(rubrics, data_dir)
    rubric = store.resolve(ref)
    stored = next((s for s in store.log(rubric.id) if s.rubric.fingerprint == rubric.fingerprint), None)
    title = f"{rubric.id} v{rubric.version} ({rubric.fingerprint[:12]})"
    table = Table(title=title)
    for col in ("check", "weight", "gate", "fn", "origin"):
        table.add_column(col)
    for c in rubric.checks:
        origin = stored.origins.get(c.id) if stored is not None else None
        by = f"{origin.by} (v{origin.added_in})" if origin is not None else "-"
        table.add_row(c.id, f"{c.weight:g}", "must" if c.must else "", c.fn, by)
    console.print(table)


@rubric_app.command("diff")
def diff(
    rubric_id: Annotated[str, typer.Argument(help="Rubric id.")],
    old: Annotated[int, typer.Argument(help="Older version.")],
    new: Annotated[int, typer.Argument(help="Newer version.")],
    rubrics: Rubrics = None,
    data_dir: DataDir = None,
) -> None:
    """What changed between two versions: + added, - removed, ~ changed (with each new check's origin)."""
    for line in _store(rubrics, data_dir).diff(rubric_id, old, new).lines():
        console.print(line, markup=False)


@rubric_app.command("evolve")
def evolve(
    traces: Annotated[list[Path], typer.Argument(help="Traces of one task's rollouts (a group).")],
    base_version: Annotated[int | None, typer.Option(help="Start from the family's rubric at this version.")] = None,
    top_k: Annotated[int, typer.Option(help="Candidates active at once.")] = 4,
    rubrics: Rubrics = None,
    data_dir: DataDir = None,
) -> None:
    """Feed one group of recorded rollouts of a task to its rubric buffer; store the new version if it changed."""
    from graders.buffer import Rollout, RubricBuffer
    from scenarios.base import rubric_at
    from sim.replay import replayed

    check_count("--top-k", top_k)
    root = _store(rubrics, data_dir).root  # one history per task: a rubric carries its task's expectations
    group: list[Rollout] = []
    task: tuple[str, int, str] | None = None
    buffer: RubricBuffer | None = None
    for path in traces:
        for done in replayed(path, store=WorldStore(data_dir)):
            ep, header = done.episode, done.header
            key = (header["scenario"], header["seed"], json.dumps(header.get("options") or {}, sort_keys=True))
            if task is None:
                task = key
                base = ep.instance.rubric if base_version is None else rubric_at(ep.family, ep.instance, base_version)
                store = type(_store(rubrics, data_dir))(root / key[0] / f"seed-{key[1]}")
                buffer = RubricBuffer.resume(base, store, top_k=top_k)
            elif key != task:
                raise UsageError(
                    f"{path}: episode {done.number} is another task ({key[0]} seed {key[1]}); give one task's rollouts"
                )
            assert buffer is not None
            actor = ep.tool_context.actor.employee_id
            reward = ep.regrade(buffer.rubric()).value
            group.append(
                Rollout(
                    id=f"{path.name}#{done.number}",
                    reward=reward,
                    changes=ep.changes(),
                    steps=tuple(ep.steps),
                    actor_id=actor,
                )
            )
    if buffer is None:
        raise UsageError("the traces hold no episode")
    update = buffer.update(group)
    verdict = "changed" if update.changed else "unchanged"
    console.print(f"rubric {update.rubric.id}: v{update.rubric.version} ({verdict}) from {len(group)} rollout(s)")
    console.print(f"stored in {buffer.store.root if buffer.store else '-'}", markup=False)
    for cid in update.activated:
        console.print(f"+ {cid}", markup=False)
    for cid in update.retired:
        console.print(f"- {cid}", markup=False)


def rescore(
    traces: Annotated[list[Path], typer.Argument(help="Trace files to grade again.")],
    rubric: Annotated[str | None, typer.Option(help="A rubric file or ID@VERSION from the store.")] = None,
    family_version: Annotated[
        int | None, typer.Option(help="The scenario family's own rubric at this version.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write the rescore records here (default: beside each trace).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace existing output files.")] = False,
    rubrics: Rubrics = None,
    data_dir: DataDir = None,
) -> None:
    """Replay recorded episodes to their final state and grade them under another rubric (traces stay as they are)."""
    from sim.rescore import RescoreError
    from sim.rescore import rescore as regrade

    if (rubric is None) == (family_version is None):
        raise RescoreError("pass exactly one of --rubric FILE|ID@VERSION and --family-version N")
    if family_version is not None:
        check_count("--family-version", family_version)
    for path in traces:
        if not path.is_file():
            raise UsageError(f"no trace file at {path}")
    chosen = _store(rubrics, data_dir).resolve(rubric) if rubric is not None else None
    label = f"{chosen.id}@{chosen.version}" if chosen is not None else f"family-v{family_version}"
    targets = {p: out if out is not None else p.with_name(f"{p.stem}.rescore-{label}.jsonl") for p in traces}
    for target in set(targets.values()):
        output_file(target, "--out", overwrite=overwrite)
    records: dict[Path, list[str]] = {t: [] for t in targets.values()}
    table = Table(title=f"rescored under {label}")
    for col in ("trace", "episode", "seed", "was", "now"):
        table.add_column(col)
    store = WorldStore(data_dir)
    for done in regrade(traces, rubric=chosen, family_version=family_version, store=store):
        records[targets[Path(done.trace)]].append(json.dumps(done.record(), sort_keys=True, separators=(",", ":")))
        was = f"{done.was['value']:.3f} (v{done.was['rubric_version']})"
        now = "diverged" if done.score is None else f"{done.score.value:.3f} (v{done.score.rubric_version})"
        table.add_row(Path(done.trace).name, str(done.episode), str(done.seed), was, now)
    for target, lines in records.items():  # written only once every episode is graded: an error writes nothing
        target.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    console.print(table)
    console.print(f"wrote {', '.join(str(t) for t in records)}", markup=False)

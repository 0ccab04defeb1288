"""``check_app``: the contract every app's tools must honour, run by the tests over every app.

For each tool of an app, on a private fork of a generated world, acting as a project lead:

* the surface is sound: a namespaced name, READ or WRITE, a description, a flat JSON schema whose every
  argument is documented (no nesting, no ``anyOf``);
* READ tools never change anything: the full state hash is the same after every call, successful or not,
  and no change-log row appears;
* WRITE tools log what they do: a successful call adds change-log rows tagged with the tool's name, and a
  refused call (an AppError) leaves the state hash exactly as it was;
* every WRITE tool succeeds at least once on the app's own examples (``EXAMPLES`` in its ``server.py``), so
  the two rules above are exercised, not vacuously true.

Examples are argument dicts whose string values may hold placeholders filled from the world (``{ticket}``,
``{coworker}``, ...; see ``Placeholders``), so they stay valid for any seed. Random schema-shaped arguments
(seeded) are called too, to catch a READ tool that writes on an odd input.
"""

from __future__ import annotations

import importlib
import json
import tempfile
from collections.abc import Mapping
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mcp_tools.base import READ, WRITE, Actor, ToolContext, ToolSet, ToolSpec, call_tool
from mcp_tools.errors import AppError
from worlds.changelog import track
from worlds.clock import FixedClock
from worlds.rawsql import Sql
from worlds.seeding import Seeds
from worlds.store import World


class AppContractError(AssertionError):
    """An app breaks the contract; the message lists every problem found."""


@dataclass(kw_only=True)
class AppReport:
    """What ``check_app`` ran and found."""

    app: str
    calls: int = 0
    successes: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class Placeholders:
    """Values from the world that examples refer to, chosen deterministically for the acting lead."""

    def __init__(self, sql: Sql, actor: Actor, today: date | None = None) -> None:
        one = sql.one
        me = actor.employee_id
        project = one("SELECT p.id, p.key FROM projects p WHERE p.lead_id = ? ORDER BY p.id LIMIT 1", (me,))
        pid, pkey = project if project else (None, "")
        member = one(
            "SELECT e.username FROM project_members m JOIN employees e ON e.id = m.employee_id"
            " WHERE m.project_id = ? AND e.id <> ? AND e.active = ? ORDER BY e.id LIMIT 1",
            (pid, me, True),
        )
        tickets = sql.column("SELECT key FROM tickets WHERE project_id = ? ORDER BY number LIMIT 2", (pid,))
        post = one(
            "SELECT p.id FROM posts p JOIN channels c ON c.id = p.channel_id WHERE c.type = 'O'"
            " AND p.deleted_at IS NULL AND p.author_id <> ? ORDER BY p.id LIMIT 1",
            (me,),
        )
        mail = one(
            "SELECT d.message_id, m.thread_id FROM mail_deliveries d JOIN mail_messages m ON m.id = d.message_id"
            " JOIN mailboxes b ON b.id = d.mailbox_id JOIN mail_folders f ON f.id = d.folder_id"
            " WHERE b.employee_id = ? ORDER BY f.name <> 'Inbox', d.message_id LIMIT 1",
            (me,),
        )
        coworker = member[0] if member else None
        # A channel of the actor's (not a direct one) and an active coworker outside it, to add and then remove.
        joinable = one(
            "SELECT c.name, e.username FROM channels c JOIN channel_members m ON m.channel_id = c.id"
            " JOIN employees e ON e.active = ? AND e.id <> ? AND NOT EXISTS (SELECT 1 FROM channel_members x"
            " WHERE x.channel_id = c.id AND x.employee_id = e.id)"
            " WHERE m.employee_id = ? AND c.type IN ('O', 'P') ORDER BY c.id, e.id LIMIT 1",
            (True, me, me),
        )
        self._sql, self._me = sql, me
        self.values: dict[str, Any] = {
            "me": actor.username,
            "project": pkey,
            "member": coworker,
            "coworker": coworker,
            "coworker_email": sql.scalar("SELECT email FROM employees WHERE username = ?", (coworker,)),
            "ticket": tickets[0] if tickets else None,
            "other_ticket": tickets[1] if len(tickets) > 1 else None,
            "backlog_ticket": sql.scalar(
                "SELECT key FROM tickets WHERE project_id = ? AND status = 'backlog' ORDER BY number LIMIT 1", (pid,)
            ),
            "sprint": sql.scalar("SELECT name FROM sprints WHERE project_id = ? ORDER BY id LIMIT 1", (pid,)),
            "channel": sql.scalar("SELECT name FROM channels WHERE type = 'O' ORDER BY id LIMIT 1"),
            "my_channel": joinable[0] if joinable else None,
            "non_member": joinable[1] if joinable else None,
            "post": post[0] if post else None,
            "message": mail[0] if mail else None,
            "thread": mail[1] if mail else None,
            "room": sql.scalar("SELECT name FROM rooms ORDER BY id LIMIT 1"),
            "team": sql.scalar("SELECT t.name FROM teams t JOIN employees e ON e.team_id = t.id WHERE e.id = ?", (me,)),
            "department": sql.scalar(
                "SELECT d.name FROM departments d JOIN employees e ON e.department_id = d.id WHERE e.id = ?", (me,)
            ),
            "outsider": sql.scalar(
                "SELECT username FROM employees WHERE id <> ? AND active = ? AND manager_id <> ?"
                " ORDER BY id DESC LIMIT 1",
                (me, True, me),
            ),
            "event": sql.scalar(
                "SELECT id FROM events WHERE organizer_id = ? OR id IN"
                " (SELECT event_id FROM event_attendees WHERE employee_id = ?) ORDER BY id LIMIT 1",
                (me, me),
            ),
            "repo": sql.scalar("SELECT name FROM repositories ORDER BY id LIMIT 1"),
            "invited_event": sql.scalar(
                "SELECT a.event_id FROM event_attendees a JOIN events v ON v.id = a.event_id"
                " WHERE a.employee_id = ? AND v.organizer_id <> ? ORDER BY a.event_id LIMIT 1",
                (me, me),
            ),
        }
        if today is not None:  # calendar examples: a week from today, and a late-evening slot two days ahead
            slot = datetime.combine(today + timedelta(days=2), time(22, 0), tzinfo=UTC)
            self.values.update(
                today=today.isoformat(),
                in_week=(today + timedelta(days=7)).isoformat(),
                slot_start=slot.isoformat(),
                slot_end=(slot + timedelta(minutes=30)).isoformat(),
            )

    def fill(self, value: Any) -> Any:
        """``value`` with ``{name}`` placeholders replaced (a whole-string placeholder keeps the value's type).

        ``{my_post}``, ``{my_file}`` and ``{my_event}`` are looked up at fill time (the actor's newest live post,
        file or event), since earlier calls may have changed them.
        """
        if value == "{my_post}":
            return self._sql.scalar("SELECT max(id) FROM posts WHERE author_id = ? AND deleted_at IS NULL", (self._me,))
        if value == "{granted_by_me}":  # the live grant the decide example approved (looked up after it ran)
            return self._sql.scalar(
                "SELECT id FROM access_requests WHERE owner_id = ? AND status = 'approved' ORDER BY id DESC LIMIT 1",
                (self._me,),
            )
        if value == "{request_to_me}":
            # A pending access request addressed to the actor, made for the check by a coworker if there is none.
            found = self._sql.scalar(
                "SELECT id FROM access_requests WHERE owner_id = ? AND status = 'pending' ORDER BY id LIMIT 1",
                (self._me,),
            )
            if found is None:
                found = self._sql.insert(
                    "access_requests",
                    {
                        "requester_id": self._sql.scalar(
                            "SELECT id FROM employees WHERE username = ?", (self.values["coworker"],)
                        ),
                        "subject_id": self._me,
                        "owner_id": self._me,
                        "field": "performance",
                        "reason": "check_app example",
                        "status": "pending",
                        "created_at": datetime(2000, 1, 1, tzinfo=UTC),
                        "decided_at": None,
                        "expires_at": None,
                    },
                )
            return found
        if value in ("{review_mr}", "{merge_mr}"):  # made by the git app's CHECK_ENV, authored by a coworker
            branch = "check/review" if value == "{review_mr}" else "check/merge"
            return self._sql.scalar(
                "SELECT max(id) FROM merge_requests WHERE source_branch = ? AND state = 'open'", (branch,)
            )
        if value == "{my_file}":
            return self._sql.scalar("SELECT max(id) FROM chat_files WHERE uploader_id = ?", (self._me,))
        if value == "{my_event}":
            return self._sql.scalar(
                "SELECT max(id) FROM events WHERE organizer_id = ? AND cancelled = ?", (self._me, False)
            )
        if isinstance(value, str):
            if value.startswith("{") and value.endswith("}") and value[1:-1] in self.values:
                return self.values[value[1:-1]]
            return value.format_map(self.values) if "{" in value else value
        return value


def _server_module(toolset: ToolSet) -> Any:
    try:
        return importlib.import_module(f"mcp_tools.{toolset.app}.server")
    except ModuleNotFoundError:  # a tool set defined elsewhere (tests): random calls only
        return None


def _examples(toolset: ToolSet) -> Mapping[str, list[dict[str, Any]]]:
    return getattr(_server_module(toolset), "EXAMPLES", {})


def _environment(toolset: ToolSet, ctx: ToolContext, scratch: Path) -> AbstractContextManager[Any]:
    """The app's own environment for the check (``CHECK_ENV`` in its server module), e.g. a git workspace.

    Apps whose state is partly outside the database (repositories on disk) declare how to set it up for a
    world, for the checking actor's context; ``scratch`` is a private directory removed after the check.
    """
    factory = getattr(_server_module(toolset), "CHECK_ENV", None)
    return nullcontext() if factory is None else factory(ctx, scratch)


def _surface_problems(spec: ToolSpec, app: str) -> list[str]:
    out = []
    if not spec.name.startswith(f"{app}_") or spec.kind not in (READ, WRITE) or not spec.description:
        out.append(f"{spec.name}: needs the {app}_ prefix, a READ/WRITE kind and a description")
    params = spec.parameters
    if params.get("type") != "object":
        out.append(f"{spec.name}: parameters must be a JSON object schema")
    for name, prop in params.get("properties", {}).items():
        if not prop.get("description"):
            out.append(f"{spec.name}: argument {name!r} has no description (an Args: line)")
        if "anyOf" in prop or "properties" in prop or prop.get("type") == "object":
            out.append(f"{spec.name}: argument {name!r} is not flat")
    return out


def _random_args(rng: np.random.Generator, spec: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, prop in sorted(spec.parameters.get("properties", {}).items()):
        kinds = prop.get("type")
        kind = kinds[0] if isinstance(kinds, list) else kinds
        out[name] = {
            "string": str(rng.choice(["", "x", "../../etc/passwd", "ENG-1", "é" * 3, "%_"])),
            "integer": int(rng.choice([-1, 0, 1, 7, 10**9])),
            "number": float(rng.choice([-1.5, 0.0, 2.5])),
            "boolean": bool(rng.integers(2)),
            "array": [],
        }.get(kind, None)
    return out


def check_app(
    toolset: ToolSet, world: World, *, random_calls: int = 4, seed: int = 0, raise_on_problems: bool = True
) -> AppReport:
    """Check ``toolset`` on a fork of ``world`` (a generated base world; it is never written).

    Raises:
        AppContractError: with ``raise_on_problems``, when any rule is broken (every problem is listed).
    """
    report = AppReport(app=toolset.app)
    for spec in toolset.specs:
        report.problems += _surface_problems(spec, toolset.app)
    fork = world.fork()
    session = fork.session()
    scratch = tempfile.TemporaryDirectory(prefix="companysim-check-")
    stack = ExitStack()
    try:
        sql = Sql.of(session)
        # A project lead who has mail, so every app's examples have something to act on.
        lead = sql.scalar(
            "SELECT p.lead_id FROM projects p JOIN mailboxes b ON b.employee_id = p.lead_id"
            " JOIN mail_deliveries d ON d.mailbox_id = b.id JOIN mail_folders f ON f.id = d.folder_id"
            " WHERE f.name = 'Inbox' ORDER BY p.id LIMIT 1"
        ) or sql.scalar("SELECT lead_id FROM projects ORDER BY id LIMIT 1")
        actor = Actor.load(session, int(lead))
        clock = FixedClock(datetime.combine(world.spec.start_date, time(10, 0), tzinfo=UTC))
        change = track(session, clock=clock, actor_id=actor.employee_id)
        ctx = ToolContext(session=session, actor=actor, clock=clock)
        places = Placeholders(Sql.of(session), actor, world.spec.start_date)
        rng = Seeds(seed).rng(f"check_app/{toolset.app}")
        examples = _examples(toolset)
        stack.enter_context(_environment(toolset, ctx, Path(scratch.name)))
        for spec in sorted(toolset.specs, key=lambda s: s.name):
            calls: list[dict[str, Any]] = list(examples.get(spec.name, []))
            calls += [_random_args(rng, spec) for _ in range(random_calls)]
            for raw in calls:
                args = {k: places.fill(v) for k, v in raw.items()}
                change.tag = spec.name
                report.calls += 1
                problem = _one_call(fork, session, ctx, spec, args)
                if problem == "ok":
                    report.successes[spec.name] = report.successes.get(spec.name, 0) + 1
                elif problem:
                    report.problems.append(problem)
            if spec.kind == WRITE and not report.successes.get(spec.name):
                report.problems.append(f"{spec.name}: no example call succeeded (add one to EXAMPLES)")
    finally:
        stack.close()
        scratch.cleanup()
        session.close()
        fork.close()
    if raise_on_problems and report.problems:
        raise AppContractError(f"app {toolset.app}: " + "; ".join(report.problems[:20]))
    return report


def _one_call(fork: World, session: Any, ctx: ToolContext, spec: ToolSpec, args: dict[str, Any]) -> str | None:
    """Run one call in a savepoint; ``"ok"`` on success, a problem string, or None for a clean refusal."""
    sql = Sql.of(session)
    before = fork.state_hash()
    seq = sql.scalar("SELECT coalesce(max(seq), 0) FROM change_log")
    sql.execute("SAVEPOINT check_app")
    try:
        call_tool(spec, args, ctx)
    except AppError:
        sql.execute("ROLLBACK TO SAVEPOINT check_app")
        sql.execute("RELEASE SAVEPOINT check_app")
        return None if fork.state_hash() == before else f"{spec.name}{_show(args)}: a refused call changed the state"
    except Exception as exc:  # noqa: BLE001 - an unexpected exception is itself a contract breach
        sql.execute("ROLLBACK TO SAVEPOINT check_app")
        sql.execute("RELEASE SAVEPOINT check_app")
        return f"{spec.name}{_show(args)}: raised {type(exc).__name__} instead of an AppError"
    sql.execute("RELEASE SAVEPOINT check_app")
    tags = sql.column("SELECT DISTINCT tag FROM change_log WHERE seq > ? ORDER BY tag", (seq,))
    if spec.kind == READ:
        if fork.state_hash() != before or tags:
            return f"{spec.name}{_show(args)}: a READ tool changed the state"
        return "ok"
    if tags != [spec.name] and fork.state_hash() != before:
        return f"{spec.name}{_show(args)}: changed the state without change-log rows tagged with its name"
    return "ok"


def _show(args: Mapping[str, Any]) -> str:
    return "(" + json.dumps(args, sort_keys=True, default=str)[:120] + ")"

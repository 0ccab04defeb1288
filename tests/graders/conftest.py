"""A tiny in-memory company for grader tests, built in code.

Base rows are bulk-inserted untracked (like a generated world: no change log); the ``world.session`` is then
tracked with ``worlds.changelog.track`` so every ORM edit a test makes as "the agent" (alice) or an NPC
(bob) writes change-log rows, exactly as an episode would.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from graders.base import GradingContext, read_changes
from worlds.changelog import ChangeContext, track
from worlds.clock import FixedClock
from worlds.rows import insert_rows
from worlds.schema import Base, ChangeLog, Employee, Ticket

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
USERS = ("alice", "bob", "carol", "dave")  # ids 1..4; alice is the agent


def _employee(i: int, name: str) -> dict[str, Any]:
    return {
        "id": i,
        "first_name": name.title(),
        "last_name": "Test",
        "username": name,
        "email": f"{name}@acme.test",
        "title": "Engineer",
        "level": "IC2",
        "manager_id": None if i == 1 else 1,
        "department_id": 1,
        "team_id": 1,
        "location_id": 1,
        "timezone": "UTC",
        "work_start_minute": 540,
        "work_end_minute": 1020,
        "workdays": "1111100",
        "skills": [],
        "hire_date": date(2024, 1, 1),
        "active": True,
    }


def _ticket(n: int, status: str, priority: str, assignee: int | None, labels: int = 0) -> dict[str, Any]:
    return {
        "id": n,
        "key": f"ENG-{n}",
        "project_id": 1,
        "number": n,
        "type": "bug",
        "title": f"Bug {n}",
        "description": "",
        "status": status,
        "priority": priority,
        "assignee_id": assignee,
        "reporter_id": 2,
        "sprint_id": 1 if n <= 2 else None,
        "story_points": n,
        "created_at": T0,
        "updated_at": T0,
        "resolved_at": None,
    }


def base_rows() -> dict[str, list[dict[str, Any]]]:
    """Four people, one project with five tickets, three channels, mailboxes, a room."""
    rows: dict[str, list[dict[str, Any]]] = {
        "locations": [{"id": 1, "name": "HQ", "timezone": "UTC"}],
        "departments": [{"id": 1, "name": "Engineering", "code": "ENG", "head_id": 1}],
        "teams": [{"id": 1, "department_id": 1, "name": "Platform", "slug": "platform", "lead_id": 1}],
        "employees": [_employee(i, n) for i, n in enumerate(USERS, start=1)],
        "projects": [
            {
                "id": 1,
                "key": "ENG",
                "name": "Engine",
                "description": "",
                "team_id": 1,
                "lead_id": 1,
                "status": "active",
                "start_date": date(2025, 1, 1),
                "target_date": None,
                "next_ticket_number": 6,
            }
        ],
        "sprints": [
            {
                "id": 1,
                "project_id": 1,
                "name": "Sprint 7",
                "start_date": date(2025, 3, 3),
                "end_date": date(2025, 3, 14),
                "state": "active",
            }
        ],
        "tickets": [
            _ticket(1, "todo", "high", 2),
            _ticket(2, "in_progress", "medium", 3),
            _ticket(3, "backlog", "low", None),
            _ticket(4, "backlog", "medium", None),
            _ticket(5, "done", "low", 4),
        ],
        "ticket_labels": [{"id": 1, "ticket_id": 1, "label": "backend"}],
        "ticket_comments": [
            {"id": 1, "ticket_id": 1, "author_id": 2, "body": "Root cause is the cache", "created_at": T0}
        ],
        "chat_teams": [{"id": 1, "name": "acme", "display_name": "Acme"}],
        "channels": [
            {
                "id": 1,
                "team_id": 1,
                "name": "general",
                "display_name": "General",
                "type": "O",
                "created_at": T0,
            },
            {"id": 2, "team_id": 1, "name": "eng", "display_name": "Eng", "type": "O", "created_at": T0},
            {"id": 3, "team_id": 1, "name": "1__2", "display_name": "", "type": "D", "created_at": T0},
        ],
        "posts": [{"id": 1, "channel_id": 2, "author_id": 2, "message": "deploy at 5pm", "created_at": T0}],
        "mailboxes": [
            *(
                {"id": i, "address": f"{n}@acme.test", "display_name": n, "employee_id": i}
                for i, n in enumerate(USERS, 1)
            ),
            {"id": 9, "address": "buyer@client.test", "display_name": "Buyer", "employee_id": None},
        ],
        "rooms": [{"id": 1, "name": "Orca", "location_id": 1, "capacity": 6}],
    }
    return rows


@dataclass
class World:
    """A tracked session on the tiny world, with the agent's change context."""

    session: Session
    clock: FixedClock
    change: ChangeContext
    start_seq: int
    trace: list[dict[str, Any]] = field(default_factory=list)

    def ticket(self, key: str) -> Ticket:
        """The ORM ticket with ``key``."""
        return self.session.execute(select(Ticket).where(Ticket.key == key)).scalar_one()

    def as_(self, username: str) -> None:
        """Make the following edits as ``username`` (an NPC when not alice)."""
        self.change.actor_id = USERS.index(username) + 1

    def add(self, *objs: Any) -> None:
        """Add ORM objects and flush (writes the change log)."""
        self.session.add_all(objs)
        self.session.flush()

    def step(self, name: str, error: str | None = None, **arguments: Any) -> None:
        """Append a trace step record."""
        self.trace.append(
            {
                "type": "step",
                "index": len(self.trace),
                "action": {"name": name, "arguments": arguments},
                "result": None if error else {"ok": True},
                "error": {"code": error, "message": f"{error} happened"} if error else None,
                "clock": self.clock.now().isoformat(),
            }
        )

    def ctx(
        self, params: Mapping[str, Any] | None = None, trace: Sequence[Mapping[str, Any]] | None = None
    ) -> GradingContext:
        """A grading context over this episode's changes so far (flushes first)."""
        self.session.flush()
        return GradingContext(
            session=self.session,
            changes=read_changes(self.session, after_seq=self.start_seq),
            trace=self.trace if trace is None else trace,
            actor_id=1,
            params=dict(params or {}),
        )

    def log_count(self) -> int:
        """Rows in change_log."""
        return int(self.session.execute(select(func.count()).select_from(ChangeLog)).scalar_one())

    def later(self, minutes: int = 1) -> None:
        """Advance the clock."""
        self.clock.set(self.clock.now() + timedelta(minutes=minutes))


@pytest.fixture
def world() -> Iterator[World]:
    engine = create_engine("sqlite+pysqlite:///:memory:")
    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        insert_rows(conn, base_rows())
    session = Session(engine)
    clock = FixedClock(T0 + timedelta(hours=1))
    change = track(session, clock=clock, actor_id=1, tag="test")
    start = session.execute(select(func.coalesce(func.max(ChangeLog.seq), 0))).scalar_one()
    yield World(session=session, clock=clock, change=change, start_seq=start)
    session.close()
    engine.dispose()


def employee(session: Session, username: str) -> Employee:
    """The ORM employee ``username``."""
    return session.execute(select(Employee).where(Employee.username == username)).scalar_one()


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """One base-world cache for the graders' episode tests."""
    from worlds.store import WorldStore

    return WorldStore(tmp_path_factory.mktemp("grader-worlds"))


@pytest.fixture
def evaluated(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, bool]]:
    """Every ``on_rows``/``on_changes`` evaluator call of every ``Progress`` made while the test runs.

    As (check id, check function, whether it decided: a verdict rather than None). ``graders.progress`` calls
    the evaluators inline on its hot path, so a test that counts them wraps each one as progress indexes it
    (when it starts, and when a check moves to its rows) rather than spying on a method.
    """
    from graders import progress

    calls: list[tuple[str, str, bool]] = []

    def wrap(live: progress.Progress, i: int, table: dict[int, Any]) -> None:
        evaluate = table[i]
        if getattr(evaluate, "__spied__", False):
            return
        check = live._checks[i]

        def spy(ctx: Any, rows: Any, **kwargs: Any) -> Any:
            out = evaluate(ctx, rows, **kwargs)
            calls.append((check.id, check.fn, out is not None))
            return out

        spy.__spied__ = True  # type: ignore[attr-defined]
        table[i] = spy

    start, bind = progress.Progress._start, progress.Progress._bind_rows

    def spied_start(self: progress.Progress) -> None:
        start(self)
        for table in (self._on_rows, self._on_changes):
            for i in list(table):
                wrap(self, i, table)

    def spied_bind(self: progress.Progress, i: int) -> bool:
        bound = bind(self, i)
        if self._started and i in self._on_rows:
            wrap(self, i, self._on_rows)
        return bound

    monkeypatch.setattr(progress.Progress, "_start", spied_start)
    monkeypatch.setattr(progress.Progress, "_bind_rows", spied_bind)
    return calls


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Per check function, how the steps after the first settled it: ``decided`` (from the rows) or ``rerun``.

    Shared by the step-by-step tests that assert a path decides checks without re-running their functions.
    """
    from graders import progress

    found: dict[str, list[str]] = {"decided": [], "rerun": []}
    state = {"later": False, "running": False}
    run, store, update = progress.Progress._run, progress.Progress._store, progress.Progress.update

    def counted(self, rows):
        state["later"] = self._started
        try:
            return update(self, rows)
        finally:
            state["later"] = False

    def ran(self, i):
        if state["later"]:
            found["rerun"].append(self._checks[i].fn)
        state["running"] = True
        try:
            run(self, i)
        finally:
            state["running"] = False

    def stored(self, i, outcome):
        if state["later"] and not state["running"]:
            found["decided"].append(self._checks[i].fn)
        store(self, i, outcome)

    monkeypatch.setattr(progress.Progress, "update", counted)
    monkeypatch.setattr(progress.Progress, "_run", ran)
    monkeypatch.setattr(progress.Progress, "_store", stored)
    return found


@pytest.fixture
def without_on_step(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A function that turns the named check functions' ``on_step`` evaluators off for the rest of the test.

    Their per-check ``touches``/``on_changes`` hooks then decide, so a test can hold both paths to the same
    verdicts (a progress made before the call keeps the evaluators it indexed).
    """
    import dataclasses

    from graders import registry

    def strip(names: Any) -> None:
        for name in names:
            spec = registry.check_fn_spec(name)
            monkeypatch.setitem(registry._REGISTRY, name, dataclasses.replace(spec, on_step=None))

    return strip

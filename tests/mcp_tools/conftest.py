"""A tiny hand-built company for the app tests: six people, two projects, five tickets, three channels.

Built in code (not with the world generator) so the app tests pin exact keys, names and histories and do not
move when the generator changes. People, by role:

- ``cora.ceo`` (id 1): executive, lead of project OPS, member of the private channel ``leads``.
- ``lena.lead`` (id 2): manager, lead of team Platform and of project ENG -> ``app.lead``.
- ``dev.one`` (3), ``dev.two`` (4): plain employees, members of ENG.
- ``olaf.out`` (5): plain employee, member of no project and no private channel -> ``app.outsider``.
- ``gone.away`` (6): inactive, still listed as an ENG member.
"""

import hashlib
import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, event, func, select, text
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

from mcp_tools.base import Actor, ToolContext, call_tool
from mcp_tools.company import company_specs
from worlds.changelog import jsonable, track
from worlds.clock import FixedClock
from worlds.schema import Base, ChangeLog

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
PEOPLE = [
    # id, username, first, last, title, level, manager, team, active
    (1, "cora.ceo", "Cora", "Chen", "CEO", "E2", None, 2, True),
    (2, "lena.lead", "Lena", "Lind", "Engineering Manager", "M1", 1, 1, True),
    (3, "dev.one", "Devi", "One", "Software Engineer", "IC2", 2, 1, True),
    (4, "dev.two", "Dario", "Two", "Software Engineer", "IC3", 2, 1, True),
    (5, "olaf.out", "Olaf", "Out", "Support Specialist", "IC1", 1, 2, True),
    (6, "gone.away", "Gina", "Away", "Software Engineer", "IC2", 2, 1, False),
]
# key, type, title, status path, priority, assignee, sprint, labels
TICKETS = [
    ("ENG-1", "bug", "Login page crashes on submit", ["backlog", "todo", "in_progress"], "high", 3, 2, ["frontend"]),
    ("ENG-2", "task", "Upgrade the database driver", ["backlog"], "medium", None, None, ["backend"]),
    (
        "ENG-3",
        "story",
        "Export reports as CSV",
        ["backlog", "todo", "in_progress", "in_review", "done"],
        "low",
        4,
        1,
        [],
    ),
    ("ENG-4", "bug", "Crash when uploading an avatar", ["backlog", "todo"], "critical", 3, None, ["frontend", "ux"]),
    ("OPS-1", "incident", "Disk full on the build server", ["backlog", "todo", "in_progress"], "high", 1, 3, []),
]


def tiny_rows() -> dict[str, list[dict[str, Any]]]:
    """The tiny company as table -> rows with explicit ids."""
    day = date(2026, 1, 5)
    rows: dict[str, list[dict[str, Any]]] = {
        "companies": [
            dict(
                id=1,
                name="Acme",
                domain="acme.test",
                industry="software",
                founded=date(2010, 1, 1),
                headquarters="Berlin",
            )
        ],
        "locations": [dict(id=1, name="Berlin", timezone="Europe/Berlin")],
        "departments": [dict(id=1, name="Engineering", code="ENG", head_id=1)],
        "teams": [
            dict(id=1, department_id=1, name="Platform", slug="platform", lead_id=2),
            dict(id=2, department_id=1, name="Operations", slug="operations", lead_id=1),
        ],
        "employees": [
            dict(
                id=i,
                username=u,
                first_name=f,
                last_name=la,
                email=f"{u}@acme.test",
                title=ti,
                level=lv,
                manager_id=m,
                department_id=1,
                team_id=t,
                location_id=1,
                timezone="Europe/Berlin",
                work_start_minute=540,
                work_end_minute=1020,
                workdays="1111100",
                skills=[],
                hire_date=day,
                active=a,
            )
            for i, u, f, la, ti, lv, m, t, a in PEOPLE
        ],
        "employee_roles": [dict(employee_id=i, role="employee") for i, *_ in PEOPLE]
        + [dict(employee_id=1, role="executive"), dict(employee_id=2, role="manager")],
        "projects": [
            dict(
                id=1,
                key="ENG",
                name="Engineering",
                description="Product work",
                team_id=1,
                lead_id=2,
                status="active",
                start_date=day,
                target_date=None,
                next_ticket_number=5,
            ),
            dict(
                id=2,
                key="OPS",
                name="Operations",
                description="Keep it running",
                team_id=2,
                lead_id=1,
                status="active",
                start_date=day,
                target_date=None,
                next_ticket_number=2,
            ),
        ],
        "project_members": [
            dict(project_id=p, employee_id=e, role=r)
            for p, e, r in [(1, 2, "lead"), (1, 3, "member"), (1, 4, "member"), (1, 6, "member"), (2, 1, "lead")]
        ],
        "sprints": [
            dict(
                id=1,
                project_id=1,
                name="ENG Sprint 1",
                start_date=date(2026, 2, 2),
                end_date=date(2026, 2, 13),
                state="closed",
            ),
            dict(
                id=2,
                project_id=1,
                name="ENG Sprint 2",
                start_date=date(2026, 2, 16),
                end_date=date(2026, 2, 27),
                state="active",
            ),
            dict(
                id=3,
                project_id=2,
                name="OPS Sprint 1",
                start_date=date(2026, 2, 16),
                end_date=date(2026, 2, 27),
                state="active",
            ),
        ],
        "chat_teams": [dict(id=1, name="acme", display_name="Acme")],
        "channels": [
            dict(
                id=c,
                team_id=1,
                name=n,
                display_name=n.title(),
                type=ty,
                purpose="",
                header="",
                creator_id=1,
                created_at=T0 - timedelta(days=30),
            )
            for c, n, ty in [(1, "town-square", "O"), (2, "off-topic", "O"), (3, "leads", "P")]
        ],
        "channel_members": [
            dict(channel_id=c, employee_id=e, joined_at=T0 - timedelta(days=30), last_viewed_at=None)
            for c, members in [(1, [1, 2, 3, 4, 5]), (2, [2, 3]), (3, [1, 2])]
            for e in members
        ],
        "posts": [
            dict(
                id=i,
                channel_id=c,
                author_id=a,
                root_id=None,
                message=m,
                created_at=T0 - timedelta(hours=10 - i),
                edited_at=None,
                deleted_at=None,
                is_pinned=False,
            )
            for i, c, a, m in [(1, 1, 1, "Welcome to Acme"), (2, 1, 3, "ENG-1 is on me"), (3, 3, 2, "Budget talk")]
        ],
    }
    tickets, labels, history = [], [], []
    for n, (key, ty, title, path, prio, who, sprint, tags) in enumerate(TICKETS, start=1):
        created = T0 - timedelta(days=20 - n)
        steps = [created + timedelta(days=k) for k in range(len(path))]
        tickets.append(
            dict(
                id=n,
                key=key,
                project_id=1 if key.startswith("ENG") else 2,
                number=int(key.split("-")[1]),
                type=ty,
                title=title,
                description=f"Details of {title.lower()}.",
                status=path[-1],
                priority=prio,
                assignee_id=who,
                reporter_id=2,
                sprint_id=sprint,
                story_points=None,
                created_at=created,
                updated_at=steps[-1],
                resolved_at=steps[-1] if path[-1] == "done" else None,
            )
        )
        labels += [dict(ticket_id=n, label=tag) for tag in tags]
        history += [
            dict(ticket_id=n, from_status=path[k - 1] if k else None, to_status=s, actor_id=2, changed_at=steps[k])
            for k, s in enumerate(path)
        ]
    rows["tickets"], rows["ticket_labels"], rows["ticket_status_changes"] = tickets, labels, history
    # Inserted newest first: get() must order comments by time, not by id.
    rows["ticket_comments"] = [
        dict(ticket_id=1, author_id=4, body="Reproduced on staging.", created_at=T0 - timedelta(hours=1)),
        dict(ticket_id=1, author_id=3, body="Looking into it.", created_at=T0 - timedelta(hours=5)),
    ]
    rows["ticket_links"] = [dict(source_id=4, target_id=1, kind="relates_to", created_at=T0 - timedelta(days=3))]
    return rows


def tiny_engine() -> Any:
    """An in-memory SQLite world (foreign keys on) holding ``tiny_rows()``."""
    engine = create_engine("sqlite://", poolclass=StaticPool)

    @event.listens_for(engine, "connect")
    def _fk(dbapi_conn: Any, record: Any) -> None:
        dbapi_conn.execute("PRAGMA foreign_keys=ON")

    Base.metadata.create_all(engine)
    rows = tiny_rows()
    with engine.begin() as conn:
        conn.execute(text("PRAGMA defer_foreign_keys = ON"))
        for table in Base.metadata.sorted_tables:
            if rows.get(table.name):
                conn.execute(table.insert(), rows[table.name])
    return engine


def state_hash(session: Any) -> str:
    """SHA-256 of every row of every table (primary-key order), as the session sees it."""
    session.flush()
    digest = hashlib.sha256()
    for table in Base.metadata.sorted_tables:
        for row in session.execute(select(table).order_by(*table.primary_key.columns)):
            digest.update(json.dumps([table.name, [jsonable(v) for v in row]], default=str).encode())
    return digest.hexdigest()


class App:
    """A tiny world with a tracked session and helpers to call tools as someone."""

    def __init__(self) -> None:
        self.engine = tiny_engine()
        self.session = Session(self.engine)
        self.clock = FixedClock(T0)
        self.changes = track(self.session, clock=self.clock, actor_id=2, tag="test")
        self.lead = Actor.load(self.session, "lena.lead")
        self.outsider = Actor.load(self.session, "olaf.out")
        self.ceo = Actor.load(self.session, "cora.ceo")
        self.dev = Actor.load(self.session, "dev.one")

    def ctx(self, actor: Actor | None = None) -> ToolContext:
        """A tool context acting as ``actor`` (default: the lead)."""
        return ToolContext(session=self.session, actor=actor or self.lead, clock=self.clock)

    def call(self, name: str, /, actor: Actor | None = None, **arguments: Any) -> Any:
        """Call a company tool in-process as ``actor``."""
        return call_tool(company_specs()[name], arguments, self.ctx(actor))

    def log(self) -> list[ChangeLog]:
        """The change log so far, in order."""
        self.session.flush()
        return list(self.session.scalars(select(ChangeLog).order_by(ChangeLog.seq)))

    def log_count(self) -> int:
        """How many change log rows exist."""
        return self.session.scalar(select(func.count(ChangeLog.seq))) or 0

    def hash(self) -> str:
        """The state hash of the world as the session sees it."""
        return state_hash(self.session)


@pytest.fixture
def app():
    """A fresh tiny world per test."""
    a = App()
    yield a
    a.session.close()
    a.engine.dispose()

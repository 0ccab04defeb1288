"""``check_world``: referential integrity, domain invariants and the coherence of the company's story.

It returns readable violations instead of raising, so the tests (and ``companysim world check``) can show all
of them. ``world_report`` runs the same checks as named ``CheckResult`` rows with pass/fail counts: first the
integrity checks (org chart, ticket histories, chat and calendar, foreign keys), then the coherence checks of
``worlds.coherence`` (every reference resolves and agrees, time is causal, activity falls in working hours,
budgets reconcile with headcount). A check marked ``expected_to_fail`` names the issue item that will make it
pass; its violations are counted and shown but left out of ``check_world``'s list (``strict=True`` keeps them).
Each check is one ordered query or a pass over a small table.
"""

from __future__ import annotations

from sqlalchemy import Connection, select, text

from worlds.coherence import COHERENCE_CHECKS, CheckResult, Tally
from worlds.coherence_code import CODE_CHECKS
from worlds.schema import (
    Channel,
    Company,
    Department,
    Employee,
    EventAttendee,
    Post,
    Project,
    Team,
    Ticket,
    TicketComment,
    TicketStatusChange,
)
from worlds.schema.calendar import RSVP_STATES
from worlds.workflow import TERMINAL_STATUSES, is_legal

__all__ = ["CheckResult", "check_world", "world_report"]


def _org(conn: Connection, tally: Tally) -> None:
    """One CEO, managers in the company, no reporting cycles, unique emails on the domain, real heads and leads."""
    problems: list[str] = []
    rows = conn.execute(select(Employee.id, Employee.manager_id, Employee.email).order_by(Employee.id)).all()
    tally.checked += len(rows)
    ids = {r.id for r in rows}
    manager = {r.id: r.manager_id for r in rows}
    ceos = [r.id for r in rows if r.manager_id is None]
    if len(ceos) != 1:
        problems.append(f"expected exactly one CEO (employee without a manager), found {len(ceos)}: {ceos[:5]}")
    for r in rows:
        if r.manager_id is not None and r.manager_id not in ids:
            problems.append(f"employee {r.id} has manager {r.manager_id}, who is not in the company")
    for start in manager:
        seen, cur = set(), start
        while cur is not None and cur in manager:
            if cur in seen:
                problems.append(f"reporting cycle through employee {start}")
                break
            seen.add(cur)
            cur = manager[cur]
    domain = conn.scalar(select(Company.domain).order_by(Company.id).limit(1))
    emails = [r.email for r in rows]
    if len(set(emails)) != len(emails):
        problems.append("employee emails are not unique")
    problems += [f"email {e} is not on the company domain {domain}" for e in emails if not e.endswith(f"@{domain}")]
    for dept, head in conn.execute(select(Department.id, Department.head_id).order_by(Department.id)):
        if head not in ids:
            problems.append(f"department {dept} has head {head}, who is not an employee")
    for team, lead in conn.execute(select(Team.id, Team.lead_id).order_by(Team.id)):
        if lead not in ids:
            problems.append(f"team {team} has lead {lead}, who is not an employee")
    tally.fail_all(problems)


def _tickets(conn: Connection, tally: Tally) -> None:
    """Keys match their project, resolution matches status, and each history is legal and in time order."""
    problems: list[str] = []
    keys = dict(conn.execute(select(Project.id, Project.key)).all())
    tickets = {
        r.id: r
        for r in conn.execute(
            select(
                Ticket.id,
                Ticket.key,
                Ticket.project_id,
                Ticket.number,
                Ticket.status,
                Ticket.created_at,
                Ticket.resolved_at,
            )
        )
    }
    tally.checked += len(tickets)
    for t in tickets.values():
        if t.key != f"{keys.get(t.project_id)}-{t.number}":
            problems.append(f"ticket {t.key} does not match project key {keys.get(t.project_id)} and number {t.number}")
        if (t.resolved_at is not None) != (t.status in TERMINAL_STATUSES):
            problems.append(
                f"ticket {t.key}: resolved_at is {'set' if t.resolved_at else 'empty'} in status {t.status}"
            )
    history: dict[int, list[tuple[str | None, str, object]]] = {}
    for ch in conn.execute(
        select(
            TicketStatusChange.ticket_id,
            TicketStatusChange.from_status,
            TicketStatusChange.to_status,
            TicketStatusChange.changed_at,
        ).order_by(TicketStatusChange.ticket_id, TicketStatusChange.id)
    ):
        history.setdefault(ch.ticket_id, []).append((ch.from_status, ch.to_status, ch.changed_at))
    for tid, t in sorted(tickets.items()):
        steps = history.get(tid, [])
        if not steps or steps[0][0] is not None:
            problems.append(f"ticket {t.key}: status history does not start with its creation")
            continue
        prev, last_at = None, t.created_at
        for frm, to, at in steps:
            if frm != prev or not is_legal(frm, to):
                problems.append(f"ticket {t.key}: illegal status transition {frm} -> {to}")
                break
            if at < last_at:
                problems.append(f"ticket {t.key}: status change at {at} is before the previous event")
                break
            prev, last_at = to, at
        if prev != t.status:
            problems.append(f"ticket {t.key}: history ends at {prev} but the ticket is {t.status}")
    created = {tid: t.created_at for tid, t in tickets.items()}
    for cid, tid, at in conn.execute(
        select(TicketComment.id, TicketComment.ticket_id, TicketComment.created_at).order_by(TicketComment.id)
    ):
        if at < created[tid]:
            problems.append(f"comment {cid} is before its ticket {tickets[tid].key} was created")
    tally.fail_all(problems)


def _chat_and_calendar(conn: Connection, tally: Tally) -> None:
    """Posts after their channel, replies after their root, RSVPs from the known set."""
    problems: list[str] = []
    channel_at = dict(conn.execute(select(Channel.id, Channel.created_at)).all())
    post_at: dict[int, object] = {}
    for pid, cid, root, at in conn.execute(
        select(Post.id, Post.channel_id, Post.root_id, Post.created_at).order_by(Post.id)
    ):
        post_at[pid] = at
        tally.checked += 1
        if at < channel_at[cid]:
            problems.append(f"post {pid} is before its channel was created")
        if root is not None and root in post_at and at < post_at[root]:  # type: ignore[operator]
            problems.append(f"reply {pid} is before its thread root {root}")
    bad = conn.execute(
        select(EventAttendee.id, EventAttendee.rsvp)
        .where(EventAttendee.rsvp.not_in(RSVP_STATES))
        .order_by(EventAttendee.id)
    ).all()
    problems += [f"attendee {a} has unknown RSVP {r!r}" for a, r in bad]
    tally.fail_all(problems)


def _foreign_keys(conn: Connection, tally: Tally) -> None:
    """Every foreign key points at a row (SQLite's own check; PostgreSQL enforces them on write)."""
    if conn.dialect.name != "sqlite":
        return
    rows = conn.execute(text("PRAGMA foreign_key_check")).all()
    tally.checked += max(1, len(rows))
    tally.fail_all([f"foreign key broken: table {row[0]} row {row[1]} -> {row[2]}" for row in rows])


INTEGRITY_CHECKS = (
    ("org", "org chart: one CEO, no cycles, emails on the domain, heads and leads employed", _org),
    ("tickets", "ticket keys, resolution and legal, time-ordered status histories", _tickets),
    ("chat_calendar", "posts after their channel, replies after their root, known RSVPs", _chat_and_calendar),
    ("foreign_keys", "every foreign key resolves", _foreign_keys),
)


def world_report(conn: Connection) -> list[CheckResult]:
    """Every check of the world on ``conn`` as a named row with how many items it checked and how many failed."""
    results: list[CheckResult] = []
    for name, about, fn in (*INTEGRITY_CHECKS, *COHERENCE_CHECKS, *CODE_CHECKS):
        tally = Tally()
        fn(conn, tally)
        results.append(tally.result(name, about))
    return results


def check_world(conn: Connection, *, strict: bool = False) -> list[str]:
    """All violations found in the world on ``conn`` (empty when the world is valid).

    Args:
        conn: A connection to the world.
        strict: Also list violations of checks marked expected-to-fail.
    """
    return [p for r in world_report(conn) if strict or not r.expected_to_fail for p in r.problems]

"""Checks on a time the agent proposed in a direct message, before any meeting exists.

Why a check of its own: on the first day of a multi-day story the agent only asks (a 1:1 time, say) and books
nothing; the meeting checks need an event. ``dm_time_proposed`` reads the agent's newest question in its direct
channel with a coworker, takes the ISO 8601 time in it, and checks it the way the booking would be checked the
next day: inside both people's working hours (each in their own zone and workdays), free in both calendars
(accepted, tentative or unanswered invitations count as busy), and in the window the task named.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import AwareDatetime, Field
from sqlalchemy import bindparam, or_, select, text

from graders.base import CheckOutcome, GradingContext, check_fn
from graders.checks_common import employee_id, inserted_ids
from mcp_tools.calendar.slots import Person, occurrences
from worlds.schema import Event, EventAttendee

_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?(?:Z|[+-]\d\d:\d\d)")
_PERSON = text(
    "SELECT id, username, timezone, work_start_minute, work_end_minute, workdays FROM employees WHERE id = :id"
)
_BUSY = (
    select(Event.id, Event.title, Event.start_at, Event.end_at, Event.rrule, Event.until)
    .where(
        Event.cancelled.is_(False),
        Event.start_at < bindparam("hi"),
        or_(
            Event.organizer_id == bindparam("who"),
            Event.id.in_(
                select(EventAttendee.event_id).where(
                    EventAttendee.employee_id == bindparam("who"),
                    EventAttendee.rsvp.in_(("accepted", "needs_action", "tentative")),
                )
            ),
        ),
    )
    .order_by(Event.id)
)


@check_fn("dm_time_proposed")
def dm_time_proposed(
    ctx: GradingContext,
    username: str,
    start_after: AwareDatetime,
    start_before: AwareDatetime,
    duration_minutes: Annotated[int, Field(ge=1, le=480)] = 30,
    others: Sequence[str] = (),
) -> CheckOutcome:
    """The agent's newest question to ``username`` by DM proposes a workable time for both of them.

    Workable: an ISO 8601 time with an offset in [``start_after``, ``start_before``), the ``duration_minutes``
    after it inside both people's working hours and clear of both calendars' commitments, and of the times the
    agent's newest questions to ``others`` propose (the agent cannot hold two meetings at once).
    """
    found = _proposal(ctx, username)
    if isinstance(found, str):
        return CheckOutcome.of(False, found)
    other, pid, start = found
    end = start + timedelta(minutes=duration_minutes)
    problems: list[str] = []
    if not start_after <= start < start_before:
        problems.append(f"not between {start_after.isoformat()} and {start_before.isoformat()}")
    for who in (ctx.actor_id, other):
        p = ctx.db.execute(_PERSON, {"id": who}).one()
        person = Person(int(p[0]), str(p[1]), str(p[2]), int(p[3]), int(p[4]), str(p[5]))
        if not person.works(start, end):
            problems.append(f"outside @{p[1]}'s working hours ({p[2]})")
        for ev in ctx.db.execute(_BUSY, {"hi": end, "who": who}):
            s0, e0 = _utc(ev[2]), _utc(ev[3])
            if any(a < end and start < b for a, b in occurrences(s0, e0, ev[4], _utc(ev[5]) if ev[5] else None,
                                                                start, end)):  # fmt: skip
                problems.append(f"@{p[1]} is busy then ({ev[1]!r})")
                break
    for name in others:
        theirs = _proposal(ctx, name)
        if not isinstance(theirs, str) and theirs[2] < end and start < theirs[2] + timedelta(minutes=duration_minutes):
            problems.append(f"clashes with the time proposed to @{name}")
    head = f"post {pid} proposes {start.isoformat()} to @{username}"
    if problems:
        return CheckOutcome.of(False, f"{head}: {'; '.join(problems)}", post_id=pid)
    return CheckOutcome.of(True, f"{head}: inside both working hours and free in both calendars", post_id=pid)


def _proposal(ctx: GradingContext, username: str) -> tuple[int, int, datetime] | str:
    """(their id, post id, proposed start) of the agent's newest question to ``username``, or why there is none."""
    other = employee_id(ctx, username)
    if other is None:
        return f"unknown employee {username!r}"
    ids = inserted_ids(ctx, "posts")
    channel = "__".join(str(i) for i in sorted((ctx.actor_id, other)))
    rows = (
        ctx.db.execute(
            text(
                "SELECT p.id, p.message FROM posts p JOIN channels c ON c.id = p.channel_id WHERE c.name = :name"
                " AND p.author_id = :me AND p.deleted_at IS NULL ORDER BY p.id"
            ),
            {"name": channel, "me": ctx.actor_id},
        ).all()
        if ids
        else []
    )
    asked = [(int(pid), str(msg)) for pid, msg in rows if pid in set(ids) and "?" in msg and _ISO.search(msg)]
    if not asked:
        return f"no question to @{username} by DM proposing a time (ISO 8601 with an offset)"
    pid, message = asked[-1]
    return other, pid, datetime.fromisoformat(_ISO.findall(message)[-1].replace("Z", "+00:00"))


def _utc(value: Any) -> datetime:
    """A stored timestamp as an aware UTC datetime (SQLite returns naive UTC text, PostgreSQL aware values)."""
    at = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)

"""Calendar operations acting as an Actor.

Access rule: you see the full details of events you organize or are invited to; for anyone else's calendar
you see busy blocks only (start, end, ``busy``), as in a real groupware server. An event you are not part of
is ``not_found`` by id. Only the organizer changes, cancels, invites to or books a room for an event; only an
invitee answers its invitation.

Conflicts: a room already taken by a live (not cancelled) occurrence, or the organizer's own live
commitments (events they accepted or have not answered), refuse the change with ``conflict`` naming the
clash. Attendees' clashes do not refuse an invitation (people double-book all the time); they are reported
in the result's ``attendee_conflicts`` so the agent can choose another time. Times are shown as ISO 8601 UTC.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.calendar.slots import Person, check_rrule, free_slots, occurrences, overlaps, parse_time
from mcp_tools.errors import Conflict, Forbidden, InvalidArgument, NotFound
from worlds.rawsql import Sql, iso

MAX_RANGE = timedelta(days=62)
MAX_SLOT_RANGE = timedelta(days=14)
MAX_ATTENDEES = 50
RSVP = ("accepted", "declined", "tentative")
_EV = "SELECT id, organizer_id, title, description, start_at, end_at, rrule, until, room_id, cancelled FROM events"
ID, ORGANIZER, TITLE, DESCRIPTION, START, END, RULE, UNTIL, ROOM, CANCELLED = range(10)
_BUSY = "rsvp IN ('accepted', 'needs_action', 'tentative')"


def _ts(value: Any) -> datetime | None:
    out = iso(value)
    return datetime.fromisoformat(out) if out else None


def _range(start: str, end: str, limit: timedelta) -> tuple[datetime, datetime]:
    lo, hi = parse_time("start", start), parse_time("end", end)
    if hi <= lo or hi - lo > limit:
        raise InvalidArgument(f"end must be after start and at most {limit.days} days later; got {start} .. {end}")
    return lo, hi


def _people(sql: Sql, usernames: str, *, cap: int = MAX_ATTENDEES) -> list[Person]:
    names = sorted({u.strip().lstrip("@") for u in usernames.split(",") if u.strip()})
    if len(names) > cap:
        raise InvalidArgument(f"at most {cap} people at once; got {len(names)}")
    out = []
    for name in names:
        row = sql.one(
            "SELECT id, username, timezone, work_start_minute, work_end_minute, workdays FROM employees"
            " WHERE username = ? AND active = ?",
            (name, True),
        )
        if row is None:
            raise NotFound(f"expected an active employee's username; found none named {name!r}")
        out.append(Person(*row))
    return out


def _busy(sql: Sql, person_id: int, lo: datetime, hi: datetime, skip: int | None = None) -> list[Any]:
    """(start, end, event row) of every live occurrence ``person_id`` is committed to in [lo, hi)."""
    rows = sql.all(
        f"{_EV} WHERE cancelled = ? AND start_at < ? AND (organizer_id = ? OR id IN"  # noqa: S608
        f" (SELECT event_id FROM event_attendees WHERE employee_id = ? AND {_BUSY})) ORDER BY start_at, id",
        (False, sql.bind(hi), person_id, person_id),
    )
    out = []
    for r in rows:
        if r[ID] == skip:
            continue
        for s, e in occurrences(_ts(r[START]), _ts(r[END]), r[RULE], _ts(r[UNTIL]), lo, hi):  # type: ignore[arg-type]
            out.append((s, e, r))
    return out


_SPANS = (
    "SELECT start_at, end_at, rrule, until FROM events WHERE cancelled = ? AND start_at < ?"  # noqa: S608
    f" AND (organizer_id = ? OR id IN (SELECT event_id FROM event_attendees WHERE employee_id = ? AND {_BUSY}))"
    " AND (rrule IS NOT NULL OR end_at > ?) ORDER BY start_at, id"
)


def busy_intervals(sql: Sql, person_id: int, lo: datetime, hi: datetime) -> list[tuple[datetime, datetime]]:
    """(start, end) of every live occurrence ``person_id`` is committed to in [lo, hi), recurring series expanded.

    For setups that must leave someone a free time (a scenario picking people whose calendars allow the task).
    What ``_busy`` gives without its event rows, and without reading one-off events that ended before ``lo``
    (they have no occurrence in the range): in a year of generated history those are nearly all of them.
    """
    rows = sql.all(_SPANS, (False, sql.bind(hi), person_id, person_id, sql.bind(lo)))
    out: list[tuple[datetime, datetime]] = []
    for start, end, rule, until in rows:
        out += occurrences(_ts(start), _ts(end), rule, _ts(until), lo, hi)  # type: ignore[arg-type]
    return out


def _room_busy(sql: Sql, room_id: int, lo: datetime, hi: datetime, skip: int | None) -> list[Any]:
    rows = sql.all(
        f"{_EV} WHERE room_id = ? AND cancelled = ? AND start_at < ? ORDER BY start_at, id",  # noqa: S608
        (room_id, False, sql.bind(hi)),
    )
    out = []
    for r in rows:
        if r[ID] != skip:
            out += [(s, e, r) for s, e in occurrences(_ts(r[START]), _ts(r[END]), r[RULE], _ts(r[UNTIL]), lo, hi)]  # type: ignore[arg-type]
    return out


def _event(ctx: ToolContext, sql: Sql, event_id: int) -> Any:
    row = sql.one(f"{_EV} WHERE id = ?", (event_id,))  # noqa: S608
    if row is None or not _involved(ctx, sql, row):
        raise NotFound(f"expected the id of an event you organize or are invited to; found no event {event_id}")
    return row


def _involved(ctx: ToolContext, sql: Sql, row: Any) -> bool:
    me = ctx.actor.employee_id
    return bool(
        row[ORGANIZER] == me
        or sql.one("SELECT 1 FROM event_attendees WHERE event_id = ? AND employee_id = ?", (row[ID], me))
    )


def _organizer(ctx: ToolContext, row: Any) -> None:
    if row[ORGANIZER] != ctx.actor.employee_id:
        raise Forbidden(f"only the organizer may change event {row[ID]}; @{ctx.actor.username} is an invitee")


def _room(sql: Sql, name: str) -> tuple[int, str, int]:
    row = sql.one("SELECT id, name, capacity FROM rooms WHERE lower(name) = lower(?)", (name.strip(),))
    if row is None:
        raise NotFound(f"expected a room name (see calendar_list_rooms); found none named {name!r}")
    return int(row[0]), str(row[1]), int(row[2])


def _show(sql: Sql, row: Any, start: datetime | None = None, end: datetime | None = None) -> dict[str, Any]:
    attendees = sql.all(
        "SELECT e.username, a.rsvp, a.optional FROM event_attendees a JOIN employees e ON e.id = a.employee_id"
        " WHERE a.event_id = ? ORDER BY e.username",
        (row[ID],),
    )
    return {
        "id": row[ID],
        "title": row[TITLE],
        "description": row[DESCRIPTION],
        "start": (start or _ts(row[START])).isoformat(),  # type: ignore[union-attr]
        "end": (end or _ts(row[END])).isoformat(),  # type: ignore[union-attr]
        "organizer": sql.scalar("SELECT username FROM employees WHERE id = ?", (row[ORGANIZER],)),
        "rrule": row[RULE],
        "room": sql.scalar("SELECT name FROM rooms WHERE id = ?", (row[ROOM],)) if row[ROOM] else None,
        "cancelled": bool(row[CANCELLED]),
        "attendees": [{"username": u, "rsvp": r, "optional": bool(o)} for u, r, o in attendees],
    }


def list_events(ctx: ToolContext, start: str, end: str, username: str | None) -> dict[str, Any]:
    """Occurrences in [start, end) on the actor's calendar, or busy blocks of ``username``'s."""
    lo, hi = _range(start, end, MAX_RANGE)
    sql = Sql.of(ctx.session)
    who = _people(sql, username)[0] if username else None
    person = who.id if who else ctx.actor.employee_id
    out = []
    for s, e, row in sorted(_busy(sql, person, lo, hi), key=lambda x: (x[0], x[2][ID])):
        if who is None or _involved(ctx, sql, row):
            out.append(_show(sql, row, s, e))
        else:
            out.append({"start": s.isoformat(), "end": e.isoformat(), "busy": True})
    return {"owner": who.username if who else ctx.actor.username, "events": out}


def get_event(ctx: ToolContext, event_id: int) -> dict[str, Any]:
    """One event the actor organizes or is invited to."""
    sql = Sql.of(ctx.session)
    return _show(sql, _event(ctx, sql, event_id))


def find_free_slots(
    ctx: ToolContext, usernames: str, duration_minutes: int, start: str, end: str, step_minutes: int, limit: int
) -> dict[str, Any]:
    """Times when everyone named (and the actor) works and is free, earliest first."""
    if not 5 <= duration_minutes <= 480 or step_minutes not in (5, 10, 15, 30, 60) or not 1 <= limit <= 50:
        raise InvalidArgument(
            f"duration_minutes must be 5-480, step_minutes one of 5, 10, 15, 30, 60 and limit 1-50; "
            f"got {duration_minutes}, {step_minutes}, {limit}"
        )
    lo, hi = _range(start, end, MAX_SLOT_RANGE)
    lo = max(lo, ctx.clock.now())
    sql = Sql.of(ctx.session)
    people = _people(sql, f"{usernames},{ctx.actor.username}")
    busy = {p.id: [(s, e) for s, e, _ in _busy(sql, p.id, lo, hi)] for p in people}
    slots = free_slots(
        people, busy, timedelta(minutes=duration_minutes), lo, hi, timedelta(minutes=step_minutes), limit
    )
    return {"people": [p.username for p in people], "slots": slots}


def _conflicts(
    ctx: ToolContext, sql: Sql, people: list[Person], s: datetime, e: datetime, skip: int | None
) -> list[str]:
    """Attendees who are already committed at [s, e)."""
    return [p.username for p in people if overlaps(s, e, [(a, b) for a, b, _ in _busy(sql, p.id, s, e, skip)])]


def _check_slot(ctx: ToolContext, sql: Sql, s: datetime, e: datetime, room: int | None, skip: int | None) -> None:
    if e <= s or e - s > timedelta(hours=8):
        raise InvalidArgument(f"an event must last 1 minute to 8 hours; got {s.isoformat()} .. {e.isoformat()}")
    if s < ctx.clock.now():
        raise InvalidArgument(f"cannot schedule in the past: it is {ctx.clock.now().isoformat()} now")
    mine = _busy(sql, ctx.actor.employee_id, s, e, skip)
    if mine:
        clash = mine[0][2]
        raise Conflict(f"you are already in {clash[TITLE]!r} (event {clash[ID]}) at {mine[0][0].isoformat()}")
    if room is not None:
        taken = _room_busy(sql, room, s, e, skip)
        if taken:
            raise Conflict(f"the room is booked for {taken[0][2][TITLE]!r} (event {taken[0][2][ID]}) then")


def create_event(
    ctx: ToolContext,
    title: str,
    start: str,
    end: str,
    attendees: str,
    room: str | None,
    description: str,
    rrule: str | None,
) -> dict[str, Any]:
    """Create an event you organize (accepted), inviting ``attendees`` (needs_action)."""
    if not title.strip() or len(title) > 300 or len(description) > 5000:
        raise InvalidArgument("title must be 1-300 characters and description at most 5,000")
    s, e = parse_time("start", start), parse_time("end", end)
    rule = check_rrule(rrule) if rrule else None
    sql = Sql.of(ctx.session)
    people = [p for p in _people(sql, attendees) if p.id != ctx.actor.employee_id]
    room_id = _room(sql, room)[0] if room else None
    if room_id is not None and len(people) + 1 > _room(sql, room or "")[2]:
        raise Conflict(f"room {room!r} holds {_room(sql, room or '')[2]} people; you invite {len(people) + 1}")
    _check_slot(ctx, sql, s, e, room_id, None)
    clashes = _conflicts(ctx, sql, people, s, e, None)
    event_id = sql.insert(
        "events",
        {
            "organizer_id": ctx.actor.employee_id,
            "title": title.strip(),
            "description": description,
            "start_at": s,
            "end_at": e,
            "rrule": rule,
            "until": None,
            "room_id": room_id,
            "cancelled": False,
            "created_at": ctx.clock.now(),
        },
    )
    me = {"event_id": event_id, "employee_id": ctx.actor.employee_id, "rsvp": "accepted", "optional": False}
    sql.insert("event_attendees", me)
    for p in people:
        sql.insert(
            "event_attendees", {"event_id": event_id, "employee_id": p.id, "rsvp": "needs_action", "optional": False}
        )
    return {**_show(sql, sql.one(f"{_EV} WHERE id = ?", (event_id,))), "attendee_conflicts": clashes}  # noqa: S608


def update_event(
    ctx: ToolContext, event_id: int, title: str | None, start: str | None, end: str | None, description: str | None
) -> dict[str, Any]:
    """Change an event you organize (omitted fields stay); a new time is checked like a new event."""
    sql = Sql.of(ctx.session)
    row = _event(ctx, sql, event_id)
    _organizer(ctx, row)
    if title is not None and (not title.strip() or len(title) > 300):
        raise InvalidArgument("title must be 1-300 characters")
    s = parse_time("start", start) if start else _ts(row[START])
    e = parse_time("end", end) if end else _ts(row[END])
    assert s is not None and e is not None
    clashes: list[str] = []
    if start or end:
        _check_slot(ctx, sql, s, e, row[ROOM], event_id)
        invited = sql.column(
            "SELECT e.username FROM event_attendees a JOIN employees e ON e.id = a.employee_id"
            " WHERE a.event_id = ? AND a.employee_id <> ? ORDER BY e.username",
            (event_id, row[ORGANIZER]),
        )
        clashes = _conflicts(ctx, sql, _people(sql, ",".join(invited)), s, e, event_id) if invited else []
    sql.update(
        "events",
        event_id,
        {
            "title": (row[TITLE], title.strip() if title is not None else row[TITLE]),
            "description": (row[DESCRIPTION], description if description is not None else row[DESCRIPTION]),
            "start_at": (iso(row[START]), s if start else iso(row[START])),
            "end_at": (iso(row[END]), e if end else iso(row[END])),
        },
    )
    return {**_show(sql, sql.one(f"{_EV} WHERE id = ?", (event_id,))), "attendee_conflicts": clashes}  # noqa: S608


def cancel_event(ctx: ToolContext, event_id: int) -> dict[str, Any]:
    """Cancel an event you organize (it stays, marked cancelled)."""
    sql = Sql.of(ctx.session)
    row = _event(ctx, sql, event_id)
    _organizer(ctx, row)
    sql.update("events", event_id, {"cancelled": (bool(row[CANCELLED]), True)})
    return {"id": event_id, "cancelled": True}


def invite(ctx: ToolContext, event_id: int, usernames: str, optional: bool) -> dict[str, Any]:
    """Add invitees to an event you organize (people already invited are left as they are)."""
    sql = Sql.of(ctx.session)
    row = _event(ctx, sql, event_id)
    _organizer(ctx, row)
    people = _people(sql, usernames)
    if not people:
        raise InvalidArgument("name at least one username to invite")
    added = []
    for p in people:
        if sql.one("SELECT 1 FROM event_attendees WHERE event_id = ? AND employee_id = ?", (event_id, p.id)) is None:
            sql.insert(
                "event_attendees",
                {"event_id": event_id, "employee_id": p.id, "rsvp": "needs_action", "optional": optional},
            )
            added.append(p.username)
    s, e = _ts(row[START]), _ts(row[END])
    assert s is not None and e is not None
    return {"id": event_id, "added": added, "attendee_conflicts": _conflicts(ctx, sql, people, s, e, event_id)}


def rsvp(ctx: ToolContext, event_id: int, response: str) -> dict[str, Any]:
    """Answer an invitation: accepted, declined or tentative."""
    if response not in RSVP:
        raise InvalidArgument(f"response must be one of {', '.join(RSVP)}; got {response!r}")
    sql = Sql.of(ctx.session)
    row = _event(ctx, sql, event_id)
    mine = sql.one(
        "SELECT id, rsvp FROM event_attendees WHERE event_id = ? AND employee_id = ?", (event_id, ctx.actor.employee_id)
    )
    if mine is None or row[ORGANIZER] == ctx.actor.employee_id:
        raise Forbidden(f"only an invitee answers event {event_id}; you organize it" if mine else "you are not invited")
    sql.update("event_attendees", mine[0], {"rsvp": (mine[1], response)})
    return {"id": event_id, "rsvp": response}


def list_rooms(ctx: ToolContext, location: str | None, min_capacity: int) -> dict[str, Any]:
    """Rooms, optionally in one location and with room for ``min_capacity`` people."""
    sql = Sql.of(ctx.session)
    rows = sql.all(
        "SELECT r.name, r.capacity, l.name, l.timezone FROM rooms r JOIN locations l ON l.id = r.location_id"
        " WHERE r.capacity >= ? AND (CAST(? AS TEXT) IS NULL OR lower(l.name) = lower(?)) ORDER BY l.name, r.name",
        (min_capacity, location, location),
    )
    return {"rooms": [{"name": n, "capacity": c, "location": loc, "timezone": tz} for n, c, loc, tz in rows]}


def book_room(ctx: ToolContext, event_id: int, room: str) -> dict[str, Any]:
    """Put a room on an event you organize, if it is free for every occurrence and big enough."""
    sql = Sql.of(ctx.session)
    row = _event(ctx, sql, event_id)
    _organizer(ctx, row)
    room_id, name, capacity = _room(sql, room)
    people = sql.scalar("SELECT count(*) FROM event_attendees WHERE event_id = ? AND rsvp <> 'declined'", (event_id,))
    if int(people) > capacity:
        raise Conflict(f"room {name} holds {capacity}; event {event_id} has {people} attendees")
    s, e = _ts(row[START]), _ts(row[END])
    assert s is not None and e is not None
    horizon = e + timedelta(days=62) if row[RULE] else e
    for os_, oe in occurrences(s, e, row[RULE], _ts(row[UNTIL]), s, horizon):
        taken = _room_busy(sql, room_id, os_, oe, event_id)
        if taken:
            raise Conflict(
                f"room {name} is booked for {taken[0][2][TITLE]!r} (event {taken[0][2][ID]}) at {os_.isoformat()}"
            )
    sql.update("events", event_id, {"room_id": (row[ROOM], room_id)})
    return {"id": event_id, "room": name}

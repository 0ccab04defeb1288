"""State checks on a meeting the agent arranged with coworkers: when, who, where, agreed, announced.

"The meeting" is the live event the agent organised during the episode whose title matches a pattern (the
ticket key). Every check finds it the same way, from the change log's event inserts, so the cost is
O(rows the episode inserted) plus indexed lookups of the attendees' other commitments.

Agreement is read from state, not from chat text (which the agent could write itself): an attendee agreed
when their NPC memory (``npc_memory``, written by the coworker's own turn, unreachable through any tool)
records an answer ``yes`` to an agreement question about exactly the meeting's start, given before the meeting
was booked, and no answer ``no`` to that start. An RSVP does not count: it can only come after the booking,
and the rule is to ask first. An attendee who never agreed may instead have been escalated, and the
escalation must be justified by the rule the scenario states: the agent asked them, and then either they
answered without agreeing or disagreeing (pushed back, refused) or ``answer_minutes`` of their own working
time passed in silence, before the agent direct-messaged their manager naming them (also before booking).
"""

from __future__ import annotations

import bisect
import functools
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, NamedTuple, cast
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr
from pydantic import AwareDatetime, Field

from graders.base import ChangeRow, CheckOutcome, GradingContext, check_fn
from graders.checks_common import Regex, listing, rows_in, rx, snippet
from graders.meeting_log import (
    _employee,
    _named,
    _new_events,
    _when,
    invitations,
    memories,
    new_posts,
)
from graders.meeting_log import (
    _people as _people,  # re-exported: graders.checks_items reads the participants through it
)
from mcp_tools.calendar.slots import Person
from npcs.hours import WorkHours
from worlds.rawsql import Sql


class Attendee(NamedTuple):
    """An invitee of the meeting and their answer."""

    employee_id: int
    username: str
    rsvp: str


# Raw statements (``worlds.rawsql``): the progress score re-runs these after the steps of the asking phase.
_ATTENDEES = (
    "SELECT a.employee_id, e.username, a.rsvp FROM event_attendees a JOIN employees e ON e.id = a.employee_id"
    " WHERE a.event_id = ? ORDER BY e.username"
)
_ROOM = "SELECT r.name, r.capacity, l.name FROM rooms r JOIN locations l ON l.id = r.location_id WHERE r.id = ?"
ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})")


def _meetings(ctx: GradingContext, title_pattern: str) -> list[Any]:
    """Live events the agent organised during the episode whose title matches (memoised per grade)."""

    def find() -> list[Any]:
        return [
            r
            for r in _new_events(ctx)
            if not r.cancelled and r.organizer_id == ctx.actor_id and rx(title_pattern).search(r.title or "")
        ]

    return ctx.kept(("meetings", title_pattern), ("events",), find)


def _meeting_touches(
    ctx: GradingContext, row: ChangeRow, title_pattern: str, attendees: Sequence[str] = (), **_: Any
) -> bool:
    """Whether a changed row may change a meeting check (for ``graders.progress``).

    Until the agent books the meeting every check says it found none, and only an event change can alter that:
    the chat and NPC replies of the asking phase re-run nothing. After it, a new post counts only if the
    agent wrote it (asks, escalations and the announcement are the agent's), and a new NPC memory only if it
    is one of the named attendees' (their answers). A new channel never does (its posts are rows of their own):
    the agent's first message to each coworker opens one.
    """
    if row.table == "events":
        return True
    if row.table == "channels" and row.op == "insert":
        return False
    if not _meetings(ctx, title_pattern):
        return False
    if row.op == "insert" and row.table == "posts":
        return bool(row.changes.get("author_id") == ctx.actor_id)
    if row.op == "insert" and row.table == "npc_memory":
        return row.changes.get("employee_id") in {_employee(ctx, name) for name in attendees}
    return True


def _own_touches(ctx: GradingContext, row: ChangeRow, title_pattern: str, **kwargs: Any) -> bool:
    """``_meeting_touches`` for a check that reads of the calendar only the meeting itself, its attendees and room.

    A new event that is not the meeting after the step (another title, organiser, or cancelled), or a new
    attendee of such an event, cannot change it; onboarding books several meetings in a row. (Double booking
    also reads the participants' other events at the meeting's time: ``_clash_touches``.)
    """
    if row.op == "insert" and row.table in ("events", "event_attendees"):
        event = row.key[0] if row.table == "events" else row.changes.get("event_id")
        return any(m.id == event for m in _meetings(ctx, title_pattern))
    return _meeting_touches(ctx, row, title_pattern, **kwargs)


def _invitee_touches(ctx: GradingContext, row: ChangeRow, title_pattern: str, **kwargs: Any) -> bool:
    """``_own_touches`` for a check that reads who is invited but not their answers (working hours, invitees).

    Coworkers answering the invitation is most of what happens after a booking; only the room and
    double-booking checks read the answers.
    """
    if row.table == "event_attendees" and row.op == "update" and {"rsvp", "optional"}.issuperset(row.changes):
        return False
    return _own_touches(ctx, row, title_pattern, **kwargs)


def _logged_time(value: Any) -> datetime | None:
    """A timestamp of a logged after-image (ISO text, naive meaning UTC) as an aware datetime; None if not one."""
    if not isinstance(value, str):
        return None
    found = datetime.fromisoformat(value)
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found


def _agreed_touches(
    ctx: GradingContext, row: ChangeRow, title_pattern: str, attendees: Sequence[str] = (), **_: Any
) -> bool:
    """``_meeting_touches`` for ``meeting_agreed``, which reads only what was said before the booking.

    An answer an NPC gives after the meeting was booked (accepting the invitation, say) and a post the agent
    writes after it (the announcement) cannot count as agreement or escalation; the one such post that can
    change the evidence is a first direct message to a coworker never asked before ("was never asked").
    """
    if row.op == "insert" and row.table in ("posts", "npc_memory"):
        found = _meetings(ctx, title_pattern)
        if not found:
            return False
        m = found[-1]  # the meeting the check reads (``_the_meeting``)
        when = _logged_time(row.changes.get("created_at" if row.table == "posts" else "at"))
        if when is not None and when > m.created_at:
            if row.table == "npc_memory":
                return False
            return row.changes.get("author_id") == ctx.actor_id and row.changes.get("channel_id") in _dm_channels(
                ctx, attendees
            )
    return _own_touches(ctx, row, title_pattern, attendees=attendees)


_DM_CHANNELS = "SELECT id FROM channels WHERE name IN ({}) ORDER BY id"


def _dm_channels(ctx: GradingContext, attendees: Sequence[str]) -> set[int]:
    """Ids of the agent's direct channels with the named coworkers (those that exist).

    Why kept in ``ctx.lasting`` and folded from the log: the agent's first message to each coworker opens a
    channel, and a kept answer forgotten on every channel change re-ran the query at each of those steps. The
    names are read once per episode (again after an employee row changes); the channel rows logged since the
    last call add a channel created with (or renamed to) one of the names and drop one deleted or renamed away.
    """
    key = ("dm_channels", tuple(attendees))
    stamp = len(ctx.changed_rows("employees"))
    rows = ctx.changed_rows("channels")
    kept = ctx.lasting.get(key)
    if kept is not None and any(r.op == "insert" and "name" not in r.changes for r in rows[kept[1] :]):
        kept = None  # an image without the name: read the table
    if kept is None or kept[0] != stamp:
        ids = [i for name in attendees if (i := _employee(ctx, name)) is not None]
        names = frozenset(_dm_name(ctx.actor_id, i) for i in ids)
        found = {r[0] for r in rows_in(ctx, _DM_CHANNELS, sorted(names))}
        kept = ctx.lasting[key] = [stamp, len(rows), names, found]
    _, seen, names, found = kept
    for r in rows[seen:]:
        c = r.changes
        if r.op == "delete":
            found.discard(r.key[0])
        elif r.op == "insert":
            if c.get("name") in names:
                found.add(r.key[0])
        elif "name" in c:
            found.discard(r.key[0])
            if c["name"][1] in names:
                found.add(r.key[0])
    kept[1] = len(rows)
    return cast(set[int], found)


def _the_meeting(ctx: GradingContext, title_pattern: str) -> tuple[Any, str]:
    """(meeting row or None, evidence prefix): the latest matching live meeting."""
    found = _meetings(ctx, title_pattern)
    if not found:
        Calendar.of(ctx).preload(ctx)
        return None, f"no live meeting organised by the agent matches /{title_pattern}/"
    m = found[-1]
    return m, f"event #{m.id} {snippet(m.title)} at {m.start_at.isoformat()}"


def _attendees(ctx: GradingContext, event_id: int) -> list[Any]:
    """The meeting's attendees, once per grade (every per-coworker check reads them).

    Why from the change log: the meeting is an event this episode created, so every invitation to it was
    logged too, and folding the logged rows (``invitations``) costs less than the query each booking and answer
    re-ran. Only an update moving an invitation the episode did not create (to another event or person) needs
    the query.
    """

    def from_log() -> list[Any]:
        invites = invitations(ctx)
        if invites is None:
            return [Attendee(*r) for r in Sql.of(ctx.session).all(_ATTENDEES, (event_id,))]
        mine = [(i["employee_id"], i["rsvp"]) for i in invites.values() if i.get("event_id") == event_id]
        people = _people(ctx, [emp for emp, _ in mine])
        found = (Attendee(emp, people[emp].username, rsvp) for emp, rsvp in mine if emp in people)
        return sorted(found, key=lambda a: a[1])

    return ctx.kept(("attendees", event_id), ("event_attendees", "employees"), from_log)


def _expect(ctx: GradingContext, names: Sequence[str]) -> None:
    """Note coworkers a meeting check names, so the kept calendar reads their events with the first query."""
    ctx.lasting.setdefault("meeting_people", set()).update(names)


def _resolve(ctx: GradingContext, names: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    found: dict[str, int] = {}
    unknown = []
    for name in names:
        emp = _employee(ctx, name)
        if emp is None:
            unknown.append(name)
        else:
            found[name] = emp
    return found, unknown


def touch_step(touches: Callable[..., bool]) -> Callable[..., dict[int, None]]:
    """An ``on_step`` evaluator (``graders.progress``) for a meeting check function: ``touches`` asked once a meeting.

    Why: a rubric has a meeting check per question and per person, and each one's ``touches`` hook was called on
    every changed row, though the hooks read only the meeting (``title_pattern``) and its ``attendees``. Here it
    is asked once per meeting and row set a step (``ctx.memo``, shared by the functions with the same hook), so
    the per-person checks of a meeting ask it once; until a meeting is booked only an event or invitation row
    can touch a hook (they all say so). A check a row touches is re-run (None), the others stand.
    """

    def on_step(ctx: GradingContext, rows: Sequence[ChangeRow], params: Sequence[Mapping[str, Any]]) -> dict[int, None]:
        if not ctx.changed_rows("events") and not ctx.changed_rows("event_attendees"):
            return {}  # no event or invitation this episode: no meeting, and no row a hook could answer yes to
        keys = ctx.lasting.get((touches, id(params)))
        if keys is None or keys[0] is not params:  # the same list every step: its keys are built once
            found = [(touches, kw["title_pattern"], tuple(kw.get("attendees") or ())) for kw in params]
            keys = ctx.lasting[(touches, id(params))] = (params, found)
        memo = ctx.memo
        seqs = tuple(map(_SEQ, rows))
        calendar, out = None, dict[int, None]()  # calendar: whether a row is an event or an invitation (asked once)
        for pos, meeting in enumerate(keys[1]):
            hit = memo.get((meeting, seqs))
            if hit is None:
                if calendar is None:
                    calendar = any(r.table in _CALENDAR for r in rows)
                if not calendar and not _meetings(ctx, meeting[1]):
                    hit = False
                else:
                    hit = _touched(ctx, touches, rows, params[pos])
                memo[(meeting, seqs)] = hit
            if hit:
                out[pos] = None
        return out

    return on_step


_CALENDAR = frozenset(("events", "event_attendees"))
_SEQ = operator.attrgetter("seq")


def _touched(ctx: GradingContext, hook: Callable[..., bool], rows: Sequence[ChangeRow], kw: Mapping[str, Any]) -> bool:
    """Whether one of ``rows`` touches a check with params ``kw`` (a hook that raises: it does, exactness first).

    Every hook answers an insert of an event or an invitation by its event alone (the meeting? overlapping it?),
    so a booking's event and invitations ask it once for that event.
    """
    asked: set[int] = set()
    try:
        for r in rows:
            if r.op == "insert" and r.table in _CALENDAR:
                event = r.key[0] if r.table == "events" else r.changes.get("event_id")
                if type(event) is int:
                    if event in asked:
                        continue
                    asked.add(event)
            if hook(ctx, r, **kw):
                return True
    except Exception:
        return True
    return False


@check_fn(
    "meeting_in_working_hours",
    reads=("events", "event_attendees", "employees"),
    touches=_invitee_touches,
    on_step=touch_step(_invitee_touches),
)
def meeting_in_working_hours(
    ctx: GradingContext, title_pattern: Regex, start_before: AwareDatetime | None = None
) -> CheckOutcome:
    """The meeting lies inside every participant's working hours (own zone and workdays), before the deadline.

    Participants are the organiser and every invitee, declined or not: the agent chose the time, and an NPC
    declining a slot outside its hours must not turn that slot into a pass.
    """
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        return CheckOutcome.of(False, head)
    going = [a.employee_id for a in _attendees(ctx, m.id)]
    people = _people(ctx, [m.organizer_id, *going])
    outside = []
    for p in people.values():
        person = Person(p.id, p.username, p.timezone, p.work_start_minute, p.work_end_minute, p.workdays)
        if not person.works(m.start_at, m.end_at):
            local = m.start_at.astimezone(ZoneInfo(p.timezone)).strftime("%a %H:%M")
            outside.append(f"@{p.username} ({local} {p.timezone})")
    late = start_before is not None and m.start_at >= start_before
    problems = [f"outside working hours of {listing(outside, 5)}"] * bool(outside)
    problems += [f"starts after the deadline {start_before.isoformat() if start_before else ''}"] * late
    if problems:
        return CheckOutcome.of(False, f"{head}: {'; '.join(problems)}", event_id=m.id)
    return CheckOutcome.of(True, f"{head}: inside working hours of all {len(people)} participants", event_id=m.id)


@check_fn(
    "meeting_attendees",
    reads=("events", "event_attendees", "employees"),
    touches=_invitee_touches,
    on_step=touch_step(_invitee_touches),
)
def meeting_attendees(ctx: GradingContext, title_pattern: Regex, attendees: Sequence[str]) -> CheckOutcome:
    """Every named coworker is invited to the meeting (any answer: an invitation is what the agent controls)."""
    _expect(ctx, attendees)
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        return CheckOutcome.of(False, head)
    invited = {a.username for a in _attendees(ctx, m.id)}
    missing = [a for a in attendees if a not in invited]
    if missing:
        return CheckOutcome.of(False, f"{head}: not invited: {', '.join('@' + a for a in missing)}", event_id=m.id)
    return CheckOutcome.of(True, f"{head}: invites {', '.join('@' + a for a in attendees)}", event_id=m.id)


_BUSY = (
    "SELECT x.who, e.id, e.title, e.start_at, e.end_at, e.rrule, e.until FROM ("
    "SELECT organizer_id AS who, id AS event_id FROM events WHERE organizer_id IN ({0}) UNION "
    "SELECT employee_id, event_id FROM event_attendees WHERE employee_id IN ({0})"
    " AND rsvp IN ('accepted', 'needs_action', 'tentative')) x JOIN events e ON e.id = x.event_id"
    " WHERE NOT e.cancelled AND e.start_at < ? AND (e.rrule IS NOT NULL OR e.end_at > ?)"
    " ORDER BY e.start_at, e.id, x.who"
)
_ROOM_BUSY = (
    "SELECT e.room_id, e.id, e.title, e.start_at, e.end_at, e.rrule, e.until FROM events e WHERE e.room_id IN ({0})"
    " AND NOT e.cancelled AND e.start_at < ? AND (e.rrule IS NOT NULL OR e.end_at > ?)"
    " ORDER BY e.start_at, e.id"
)
_EVENT_ROWS = (
    "SELECT id, title, start_at, end_at, rrule, until, cancelled, room_id FROM events WHERE id IN ({}) ORDER BY id"
)
_ATTENDEE_OF = "SELECT employee_id FROM event_attendees WHERE id = ?"
_COMMITTED = frozenset(("accepted", "needs_action", "tentative"))  # the rsvps the calendar counts as busy
_HARMLESS = {  # columns whose update cannot change anyone's commitments or a clash's label
    "events": frozenset(("description", "room_id")),
    "event_attendees": frozenset(("rsvp", "optional")),
}


def _aware(value: Any) -> Any:
    """A stored naive-UTC timestamp (SQLite text or a PostgreSQL datetime) as an aware datetime, None kept."""
    if value is None:
        return None
    return (datetime.fromisoformat(value) if isinstance(value, str) else value).replace(tzinfo=UTC)


Window = tuple[datetime, datetime]
Clash = tuple[datetime, int, str]  # (start, event id, label): sorted, the order the busy query gives


Busy = tuple[datetime, int, str, datetime, datetime, str | None, datetime | None]  # start, id, label, span, rule
EventRow = tuple[int, str, datetime, datetime, str | None, datetime | None, bool, int | None]
"""An event as the calendar keeps it: id, title, start, end, rrule, until (aware), cancelled, room."""
_IMAGE = frozenset(("title", "start_at", "end_at", "rrule", "until", "cancelled", "room_id"))


def _stored(row: Any) -> EventRow:
    """An ``_EVENT_ROWS`` row as the calendar keeps it."""
    return (row[0], row[1], _aware(row[2]), _aware(row[3]), row[4], _aware(row[5]), bool(row[6]), row[7])


def _image(row: ChangeRow) -> EventRow | None:
    """A logged event insert as the calendar keeps it (what ``_EVENT_ROWS`` reads); None if a column is missing."""
    c = row.changes
    if not _IMAGE.issubset(c):
        return None
    until = _when(c["until"]) if c["until"] is not None else None
    return (
        row.key[0],
        c["title"],
        _when(c["start_at"]),
        _when(c["end_at"]),
        c["rrule"],
        until,
        bool(c["cancelled"]),
        c["room_id"],
    )


_SLOT = {"title": 1, "start_at": 2, "end_at": 3, "rrule": 4, "until": 5, "cancelled": 6, "room_id": 7}


def _event_images(ctx: GradingContext) -> dict[int, EventRow | None]:
    """The events this episode inserted, as ``_EVENT_ROWS`` reads them now, folded from the logged rows.

    Why: the double-booking hook and the calendar need the start, end, recurrence and room of each new event
    another booking or invitation names, and the rows are all logged (inserted, then updated or deleted), so
    no step reads them again. Kept in ``ctx.lasting`` with how many rows it has folded; an event whose insert
    image lacks a column is None (read it); a deleted one is dropped (its row is gone).
    """
    seen, kept = ctx.lasting.get("event_images", (0, {}))
    images: dict[int, EventRow | None] = kept
    rows = ctx.changed_rows("events")
    for r in rows[seen:]:
        key = int(r.key[0])
        if r.op == "insert":
            images[key] = _image(r)
        elif r.op == "delete":
            images.pop(key, None)
        elif (image := images.get(key)) is not None:
            found: list[Any] = list(image)
            for column, (_, after) in r.changes.items():
                slot = _SLOT.get(column)
                if slot is not None:
                    found[slot] = _when(after) if slot in (2, 3) or (slot == 5 and after is not None) else after
            found[6] = bool(found[6])
            images[key] = (found[0], found[1], found[2], found[3], found[4], found[5], found[6], found[7])
    ctx.lasting["event_images"] = (len(rows), images)
    return images


_HORIZON = (timedelta(days=1), timedelta(days=14))  # kept around the first meeting window: before, after
_AHEAD = (timedelta(days=1), timedelta(days=15))  # read before a booking, around the clock: before, after


class Calendar:
    """Per episode, each participant's (and room's) commitments over a horizon, and their clashes per window.

    Why: the double-booking check is re-run whenever an event or an invitation changes (onboarding books several
    meetings in a row, coworkers answer invitations), and a new meeting time used to query every participant's
    events again. Here a person's or room's live events over the horizon (a day before the first meeting
    window asked about to two weeks after it) are read once per episode, one query for everyone not read yet,
    so a booking at a new time is a lookup: the window's clashes are filtered from what is kept (a series by
    its starts, expanded once) and kept per window. Kept in ``ctx.lasting`` and brought up to date from the
    change log rows it has not seen: a new event or invitation is added to its organiser's, invitee's or
    room's events and windows; an answer that keeps someone busy (or free) changes nothing; an answer that
    frees or commits someone forgets that person, who is read again; any other change to an event forgets
    everyone (the rows do not say who is committed to it). A window outside the horizon widens it and forgets
    everyone. Every event is kept here, the meeting itself too; the check leaves it out when it reads a window.
    """

    def __init__(self) -> None:
        self.seen = {"events": 0, "event_attendees": 0}
        self.horizon: Window | None = None
        self.busy: dict[int, dict[int, Busy]] = {}  # person -> their commitments over the horizon, by event id
        self.room_busy: dict[int, dict[int, Busy]] = {}
        self.people: dict[int, dict[Window, dict[int, Clash]]] = {}  # person -> window -> clashes
        self.rooms: dict[int, dict[Window, dict[int, Clash]]] = {}
        self.all_rooms = False  # room_busy holds every room's events over the horizon (a room not in it has none)
        self.expected: tuple[int, list[int]] = (0, [])  # how many coworkers ``_expect`` named, and their ids
        self.spans: dict[tuple[Any, ...], bool] = {}  # (start, end, rule, until, window) -> overlaps

    @classmethod
    def of(cls, ctx: GradingContext) -> Calendar:
        """The episode's calendar, up to date with the change log."""
        found = ctx.lasting.get("calendar")
        if not isinstance(found, Calendar):
            found = ctx.lasting["calendar"] = Calendar()
        found.sync(ctx)
        return found

    def overlaps(self, start: datetime, end: datetime, rule: str | None, until: datetime | None, w: Window) -> bool:
        """Whether an occurrence of the event overlaps the window (a series expanded once per window)."""
        if not rule:
            return start < w[1] and end > w[0]
        key = (start, end, rule, until, w)
        found = self.spans.get(key)
        if found is None:
            found = self.spans[key] = _recurs_in(start, end, rule, until, w)
        return found

    def forget(self, who: int | None = None) -> None:
        """Drop one person's kept events and windows (None: everyone's and every room's)."""
        if who is None:
            self.busy.clear()
            self.people.clear()
            self.room_busy.clear()
            self.rooms.clear()
            self.all_rooms = False
        else:
            self.busy.pop(who, None)
            self.people.pop(who, None)

    def sync(self, ctx: GradingContext) -> None:
        """Fold in the event and invitation rows logged since the last call."""
        events, invites = ctx.changed_rows("events"), ctx.changed_rows("event_attendees")
        new_events, new_invites = events[self.seen["events"] :], invites[self.seen["event_attendees"] :]
        if not new_events and not new_invites:
            return
        if self.busy or self.room_busy or self.all_rooms:
            self._fold(ctx, new_events, new_invites)
        # counted as seen once folded: a fold that failed (a query raising) is done again by the next call
        self.seen = {"events": len(events), "event_attendees": len(invites)}

    def _fold(self, ctx: GradingContext, new_events: Sequence[ChangeRow], new_invites: Sequence[ChangeRow]) -> None:
        """Bring the kept events and windows up to date with the given new rows (``sync``)."""
        adds: list[tuple[int, int]] = []  # (person, event): a new commitment
        for r in new_events:
            if r.op == "insert" and isinstance(r.changes.get("organizer_id"), int):
                adds.append((r.changes["organizer_id"], int(r.key[0])))
            elif r.op == "update" and _HARMLESS["events"].issuperset(r.changes):
                self.room_busy.clear()  # a room booked or moved: the people's commitments stand
                self.rooms.clear()
                self.all_rooms = False
            else:  # a new time, a cancellation, a new title: anyone invited may be affected
                self.forget()
                return
        for r in new_invites:
            who = r.changes.get("employee_id")
            if r.op == "insert" and isinstance(who, int) and isinstance(r.changes.get("event_id"), int):
                if r.changes.get("rsvp") in _COMMITTED:
                    adds.append((who, r.changes["event_id"]))
                continue
            if r.op == "update" and _HARMLESS["event_attendees"].issuperset(r.changes):
                old, new = r.changes.get("rsvp", ("", ""))
                if (old in _COMMITTED) == (new in _COMMITTED):
                    continue  # needs_action -> accepted: as busy as before
                known = invitations(ctx)
                invite = known.get(r.key[0]) if known is not None else None
                who = invite["employee_id"] if invite else Sql.of(ctx.session).scalar(_ATTENDEE_OF, (r.key[0],))
            elif r.op != "delete":
                who = None  # an invitation moved to another event or person: the rows do not say whose
            if isinstance(who, int):
                self.forget(who)
            else:
                self.forget()
                return
        wanted = {e for p, e in adds if p in self.busy}
        if self.room_busy or self.all_rooms:
            wanted.update(int(r.key[0]) for r in new_events if r.op == "insert")
        if not wanted:
            return
        made = _event_images(ctx)  # the new events as they are now, from the log; old ones invited to are read
        rows: dict[int, EventRow | None] = {e: made.get(e) for e in wanted}
        unread = sorted(e for e in wanted if rows.get(e) is None)
        rows.update({r[0]: _stored(r) for r in rows_in(ctx, _EVENT_ROWS, unread)})
        for person, event_id in adds:
            self._add(self.busy.get(person), self.people.get(person), rows.get(event_id))
        for r in new_events:
            row = rows.get(int(r.key[0]))
            if r.op == "insert" and row is not None and row[7] is not None:
                kept = self.room_busy.setdefault(row[7], {}) if self.all_rooms else self.room_busy.get(row[7])
                self._add(kept, self.rooms.get(row[7]), row)

    def _add(
        self, busy: dict[int, Busy] | None, windows: dict[Window, dict[int, Clash]] | None, row: EventRow | None
    ) -> None:
        """Enter a live event in someone's kept events and in the kept windows it overlaps."""
        if busy is None or row is None or row[6]:
            return
        event_id, title, start, end, rule, until = row[:6]
        entry: Busy = (start, event_id, f"#{event_id} {snippet(title, 30)}", start, end, rule, until)
        busy[event_id] = entry
        for w, clashes in (windows or {}).items():
            if start < w[1] and self.overlaps(start, end, rule, until, w):
                clashes[event_id] = entry[:3]

    def preload(self, ctx: GradingContext) -> None:
        """Read, before any meeting is booked, the commitments a booking's checks will ask about, in one statement.

        Why: the first booking's double-booking check read every participant's and the room's events then (two
        queries and their rows, most of a booking step's cost). Before a booking the meeting checks find no
        meeting, and the progress score's first step runs them all, so that is when the agent's, the named
        coworkers' (``_expect``) and every room's events are read, over a horizon from a day before the last
        step's clock to ``_AHEAD`` after it (a booking is due within days; every kept event is scanned once per
        new meeting window, so the horizon is no longer than that). A meeting window outside it widens it and
        reads again, as before. Without a step (no clock) nothing is read.
        """
        if self.horizon is None:
            steps = ctx.steps
            clock = steps[-1].get("clock") if steps else None
            if not isinstance(clock, str):
                return
            now = _when(clock)
            self.horizon = (now - _AHEAD[0], now + _AHEAD[1])
        names = sorted(ctx.lasting.get("meeting_people", ()))
        _named(ctx, names)
        wanted = {ctx.actor_id, *(i for name in names if (i := _employee(ctx, name)) is not None)}
        missing = sorted(p for p in wanted if p not in self.busy)
        if not missing and self.all_rooms:
            return
        _people(ctx, missing)
        marks = ", ".join("?" * len(missing)) or "NULL"
        people = _BUSY.format(marks).replace("SELECT x.who,", "SELECT 0, x.who,").split(" ORDER BY ")[0]
        rooms = _ROOM_BUSY.format("SELECT id FROM rooms").replace("SELECT e.room_id,", "SELECT 1, e.room_id,")
        sql_ = Sql.of(ctx.session)
        bounds = [sql_.bind(self.horizon[1]), sql_.bind(self.horizon[0])]
        params = [*missing, *missing, *bounds]
        if not self.all_rooms:
            people = f"{people} UNION ALL {rooms.split(' ORDER BY ')[0]}"
            params += bounds
        for p in missing:
            self.busy[p] = {}
        for kind, who, event_id, title, start, end, rule, until in sql_.all(people + " ORDER BY 5, 3, 1, 2", params):
            label = f"#{event_id} {snippet(title, 30)}"
            begins = _aware(start)
            entry = (begins, event_id, label, begins, _aware(end), rule, _aware(until))
            (self.room_busy if kind else self.busy).setdefault(who, {})[event_id] = entry
        self.all_rooms = True

    def clashes(
        self, ctx: GradingContext, people: Sequence[int], room: int | None, w: Window
    ) -> tuple[dict[int, dict[int, Clash]], dict[int, Clash]]:
        """Each person's and the room's events overlapping the window (one query for those not read yet).

        The people the rubric's meeting checks name (``_expect``) are read with the first, so a later meeting
        with them is a lookup.
        """
        h = self.horizon
        if h is None or w[0] < h[0] or w[1] > h[1]:
            lo, hi = w[0] - _HORIZON[0], w[1] + _HORIZON[1]
            self.horizon = (lo, hi) if h is None else (min(lo, h[0]), max(hi, h[1]))
            self.forget()
        names = ctx.lasting.get("meeting_people", ())
        if self.expected[0] != len(names):  # the named coworkers' ids, resolved again only when one is added
            self.expected = (len(names), [i for name in sorted(names) if (i := _employee(ctx, name))])
        missing = sorted({p for p in [*people, *self.expected[1]] if p not in self.busy})
        if missing:
            found = self._query(ctx, _BUSY.format(", ".join("?" * len(missing))), [*missing, *missing])
            for p in missing:
                self.busy[p] = found.get(p, {})
        mine = {p: self._window(self.people.setdefault(p, {}), self.busy[p], w) for p in people}
        if room is None:
            return mine, {}
        if room not in self.room_busy:
            read = {} if self.all_rooms else self._query(ctx, _ROOM_BUSY.format("?"), [room]).get(room, {})
            self.room_busy[room] = read
        return mine, self._window(self.rooms.setdefault(room, {}), self.room_busy[room], w)

    def _window(self, windows: dict[Window, dict[int, Clash]], busy: Mapping[int, Busy], w: Window) -> dict[int, Clash]:
        """Someone's clashes in a window, filtered from their kept events once per window."""
        found = windows.get(w)
        if found is None:
            found = windows[w] = {  # a single event compared here (as ``overlaps`` does), without a call
                b[1]: b[:3]
                for b in busy.values()
                if b[3] < w[1] and (b[4] > w[0] if not b[5] else self.overlaps(b[3], b[4], b[5], b[6], w))
            }
        return found

    def _query(self, ctx: GradingContext, sql: str, params: list[Any]) -> dict[int, dict[int, Busy]]:
        """Live events over the horizon by whose (or which room's) they are."""
        assert self.horizon is not None
        sql_ = Sql.of(ctx.session)
        out: dict[int, dict[int, Busy]] = {}
        bounds = [sql_.bind(self.horizon[1]), sql_.bind(self.horizon[0])]
        for who, event_id, title, start, end, rule, until in sql_.all(sql, [*params, *bounds]):
            label = f"#{event_id} {snippet(title, 30)}"
            begins = _aware(start)
            entry = (begins, event_id, label, begins, _aware(end), rule, _aware(until))
            out.setdefault(who, {})[event_id] = entry
        return out


class _Series:
    """A recurrence's starts, expanded once as far as a window asked (and 60 days on), then bisected.

    Why: dateutil walks a series from its first start on every query, and the double-booking check asks about
    each participant's every series once per meeting. ``starts`` holds every start up to ``upto``, so a window
    ending by then is answered from it alone; the same (rule, first start) always gives the same starts, so
    one expansion serves every episode and grade in the process.
    """

    def __init__(self, rule: str, start: datetime) -> None:
        self.rule = rrulestr(rule, dtstart=start)
        self.starts: list[datetime] = []
        self.upto = start - timedelta(microseconds=1)

    def first_after(self, t: datetime, hi: datetime) -> datetime | None:
        """The first start later than ``t``, or None if there is none up to ``hi``."""
        if self.upto < hi:
            to = hi + timedelta(days=60)
            self.starts += [s for s in self.rule.between(self.upto, to, inc=True) if s > self.upto]
            self.upto = to
        i = bisect.bisect_right(self.starts, t)
        return self.starts[i] if i < len(self.starts) else None


@functools.lru_cache(maxsize=4096)
def _series(rule: str, start: datetime) -> _Series:
    return _Series(rule, start)


def _recurs_in(start: datetime, end: datetime, rule: str, until: datetime | None, w: Window) -> bool:
    """Whether an occurrence of a series overlaps the window, as ``mcp_tools.calendar.slots.occurrences`` says.

    There, the occurrences from ``w[0] - length`` on are walked until one starts at or after ``w[1]`` or after
    ``until``, and one overlaps when it ends after ``w[0]``: so the first start later than ``w[0] - length``
    decides (one starting exactly then only touches the window, and every later one starts later still).
    """
    s = _series(rule, start).first_after(w[0] - (end - start), w[1])
    return s is not None and s < w[1] and (until is None or s <= until)


def _labels(clashes: Mapping[int, Clash], skip: int) -> list[str]:
    """The clashes' labels in the busy query's order (start, id), leaving out the meeting itself."""
    return [label for _, event_id, label in sorted(clashes.values()) if event_id != skip]


def _clash_touches(ctx: GradingContext, row: ChangeRow, title_pattern: str, **kwargs: Any) -> bool:
    """``_meeting_touches`` for the double-booking check, which reads other events only at the meeting's time.

    Another new event, or an invitation to one, matters only if it is live and overlaps the meeting: onboarding
    books its meetings one after another on different days, and each booking re-ran every meeting's check.
    """
    if row.op == "insert" and row.table in ("events", "event_attendees"):
        found = _meetings(ctx, title_pattern)
        event = row.key[0] if row.table == "events" else row.changes.get("event_id")
        if not isinstance(event, int) or any(m.id == event for m in found):
            return True
        if len(found) != 1:
            return False  # no meeting, or several (the verdict names the meetings, not their clashes)
        m = found[0]
        other = _event_images(ctx).get(event)  # an event this episode created, as it is now; else its row
        if other is None:
            other = ctx.memo.get(("event_row", event))
            if other is None:
                found_row = Sql.of(ctx.session).one(_EVENT_ROWS.format("?"), (event,))
                other = ctx.memo[("event_row", event)] = _stored(found_row) if found_row is not None else None
        if other is None or other[6]:
            return False  # gone or cancelled: nobody is committed to it
        w = (m.start_at, m.end_at)
        return bool(other[2] < w[1] and Calendar.of(ctx).overlaps(other[2], other[3], other[4], other[5], w))
    if row.table == "event_attendees" and row.op == "update" and _HARMLESS["event_attendees"].issuperset(row.changes):
        old, new = row.changes.get("rsvp", ("", ""))
        if (old in _COMMITTED) == (new in _COMMITTED) and (old == "declined") == (new == "declined"):
            return False  # needs_action -> accepted: as busy as before, and still a participant
    return _meeting_touches(ctx, row, title_pattern, **kwargs)


@check_fn(
    "meeting_no_double_booking",
    reads=("events", "event_attendees", "employees"),
    touches=_clash_touches,
    on_step=touch_step(_clash_touches),
)
def meeting_no_double_booking(ctx: GradingContext, title_pattern: Regex) -> CheckOutcome:
    """Exactly one live meeting, and neither a participant nor its room is committed elsewhere at that time.

    A participant's commitments are what the calendar counts as busy: events they organise, or were invited
    to and have not declined. Recurring events are expanded.
    """
    found = _meetings(ctx, title_pattern)
    if not found:
        Calendar.of(ctx).preload(ctx)
        return CheckOutcome.of(False, f"no live meeting organised by the agent matches /{title_pattern}/")
    if len(found) > 1:
        shown = listing([f"#{m.id} at {m.start_at.isoformat()}" for m in found])
        return CheckOutcome.of(False, f"{len(found)} live meetings match /{title_pattern}/ (book one): {shown}")
    m = found[0]
    going = [a for a in _attendees(ctx, m.id) if a.rsvp != "declined" and a.employee_id != m.organizer_id]
    names = {i: p.username for i, p in _people(ctx, [m.organizer_id]).items()}
    who = [(m.organizer_id, names.get(m.organizer_id, "?"))] + [(a.employee_id, a.username) for a in going]
    ids = sorted({emp for emp, _ in who})
    busy, room = Calendar.of(ctx).clashes(ctx, ids, m.room_id, (m.start_at, m.end_at))
    problems = []
    for emp, name in who:
        labels = _labels(busy[emp], m.id)
        if labels:
            problems.append(f"@{name} is also in {listing(labels, 2)}")
    taken = _labels(room, m.id)
    if taken:
        problems.append(f"the room is also booked for {listing(taken, 2)}")
    head = f"event #{m.id} at {m.start_at.isoformat()}"
    if problems:
        return CheckOutcome.of(False, f"{head}: {'; '.join(problems)}", event_id=m.id)
    return CheckOutcome.of(True, f"{head}: no clash for {len(who)} participants or the room", event_id=m.id)


@check_fn(
    "meeting_room",
    reads=("events", "event_attendees", "employees", "rooms", "locations"),
    touches=_own_touches,
    on_step=touch_step(_own_touches),
)
def meeting_room(ctx: GradingContext, title_pattern: Regex, location: str) -> CheckOutcome:
    """The meeting has a room in ``location`` that holds every participant who has not declined."""
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        return CheckOutcome.of(False, head)
    if m.room_id is None:
        return CheckOutcome.of(False, f"{head}: no room booked", event_id=m.id)
    name, capacity, where = _room(ctx, m.room_id)
    people = 1 + sum(1 for a in _attendees(ctx, m.id) if a.rsvp != "declined" and a.employee_id != m.organizer_id)
    problems = [f"it is in {where}, not {location}"] * (where.lower() != location.lower())
    problems += [f"it holds {capacity}, not {people}"] * (capacity < people)
    text = f"{head} in {name} ({where}, {capacity} seats)"
    return CheckOutcome.of(not problems, text + (f": {'; '.join(problems)}" if problems else ""), event_id=m.id)


def _room(ctx: GradingContext, room_id: int) -> tuple[str, int, str]:
    """A room's (name, capacity, location), read once per episode while no room or location row changes."""
    stamp = (len(ctx.changed_rows("rooms")), len(ctx.changed_rows("locations")))
    kept = ctx.lasting.get(("meeting_room", room_id))
    if kept is None or kept[0] != stamp:
        kept = ctx.lasting[("meeting_room", room_id)] = (stamp, tuple(Sql.of(ctx.session).one(_ROOM, (room_id,))))
    found: tuple[str, int, str] = kept[1]
    return found


def _instants(text: str) -> list[datetime]:
    out = []
    for found in ISO.findall(text):
        try:
            out.append(datetime.fromisoformat(found.replace("Z", "+00:00").replace(" ", "T")))
        except ValueError:
            continue
    return out


@check_fn(
    "meeting_announced", reads=("events", "posts", "channels"), touches=_own_touches, on_step=touch_step(_own_touches)
)
def meeting_announced(ctx: GradingContext, title_pattern: Regex, channel: str, key: str) -> CheckOutcome:
    """The agent posted in ``channel`` a live message naming ``key`` and the meeting's start (ISO 8601 with offset).

    The time is compared as an instant, so ``15:00Z`` and ``16:00+01:00`` are the same announcement.
    """
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        return CheckOutcome.of(False, head)
    posts = new_posts(ctx)
    mine = [p for p in posts if p.channel == channel.lstrip("~#") and p.author_id == ctx.actor_id]
    key_rx = re.compile(rf"\b{re.escape(key)}\b", re.IGNORECASE)
    for p in mine:
        if key_rx.search(p.message) and m.start_at in _instants(p.message):
            return CheckOutcome.of(True, f"post #{p.id} in ~{p.channel} names {key} and {m.start_at.isoformat()}")
    shown = listing([f"#{p.id} {snippet(p.message)}" for p in mine]) or "none"
    return CheckOutcome.of(False, f"no new post by the agent in ~{channel} names {key} and {head}; posts: {shown}")


def _dm_name(a: int, b: int) -> str:
    return "__".join(str(i) for i in sorted((a, b)))


def _fact(row: Any) -> Mapping[str, Any] | None:
    data = row.data if isinstance(row.data, Mapping) else {}
    fact = data.get("fact")
    return fact if isinstance(fact, Mapping) and fact.get("intent") == "agreement" else None


def _said_about(row: Any, start: datetime) -> str | None:
    """What an agreement answer said (yes/no) about ``start``, or None if it is about another time."""
    fact = _fact(row)
    if fact is None:
        return None
    when = _instant(str(fact.get("subject", "")))
    return str(fact.get("said")) if when is not None and when == start else None


@functools.lru_cache(maxsize=4096)
def _instant(text: str) -> datetime | None:
    """An answer's subject as an aware instant; None if it is not one (parsed once per text per process)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


@check_fn(
    "meeting_agreed",
    reads=("events", "employees", "posts", "channels", "npc_memory"),
    touches=_agreed_touches,
    on_step=touch_step(_agreed_touches),
)
def meeting_agreed(
    ctx: GradingContext,
    title_pattern: Regex,
    attendees: Sequence[str],
    answer_minutes: Annotated[int, Field(ge=1)] = 180,
) -> CheckOutcome:
    """Each named coworker agreed to the meeting's time, or was escalated to their manager by the stated rule.

    Agreed: an NPC answer ``yes`` to the exact start before the booking, and never ``no``. Escalated: after the agent's
    question by direct message, the coworker pushed back/refused (an NPC reply to the agent without an
    agreement answer) or stayed silent for ``answer_minutes`` of their working time, and then the agent
    direct-messaged their manager naming them (``@username`` or the username). An escalation does not count
    for someone who had already said ``no`` to that time (the rule is to propose another time then).
    Partial credit: the share of coworkers covered.
    """
    _expect(ctx, attendees)
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        return CheckOutcome.of(False, head)
    ids, unknown = _resolve(ctx, attendees)
    people = _people(ctx, list(ids.values()))
    covered, notes = 0, [f"unknown employee {u!r}" for u in unknown]
    posts: list[Any] | None = None
    agent_name = ""
    did: dict[int, list[Any]] = {}  # each coworker's answers before the booking, in one pass over the memories
    for r in memories(ctx):
        if r.kind == "did" and r.at <= m.created_at:
            did.setdefault(r.employee_id, []).append(r)
    for name, emp in ids.items():
        mem = did.get(emp, [])
        said = [_said_about(r, m.start_at) for r in mem]
        if "yes" in said and "no" not in said:
            covered += 1
            notes.append(f"@{name} agreed at {mem[said.index('yes')].at:%H:%M}")
            continue
        if "no" in said:  # rule 3: a "no" means another time, and neither a later yes nor escalation undoes it
            notes.append(f"@{name} said no to that time at {mem[said.index('no')].at:%H:%M}, yet it was booked")
            continue
        if posts is None:  # read only for someone who did not agree (the posts fold is most of a booking's cost)
            posts = new_posts(ctx)
            agent_name = p.username if (p := _people(ctx, [ctx.actor_id]).get(ctx.actor_id)) else ""
        why = _escalation(ctx, people[emp], posts, mem, m.start_at, m.created_at, agent_name, answer_minutes)
        covered += why.startswith("escalated")
        notes.append(f"@{name} {why}")
    total = len(attendees)
    return CheckOutcome(
        score=covered / total if total else 0.0,
        evidence=f"{head}: {covered} of {total} covered: {listing(notes, 5)}",
        details={"event_id": m.id},
    )


@functools.lru_cache(maxsize=1024)
def _name_rx(username: str) -> re.Pattern[str]:
    """How an escalation names a coworker (``@username`` or the bare username), compiled once per name."""
    return re.compile(rf"(?<![\w.]){re.escape(username)}\b", re.IGNORECASE)


def _escalation(
    ctx: GradingContext,
    person: Any,
    posts: Sequence[Any],
    memory: Sequence[Any],
    start: datetime,
    booked: datetime,
    agent_name: str,
    answer_minutes: int,
) -> str:
    """``escalated ...`` if a justified escalation of ``person`` before ``booked`` exists, else why not."""
    asks = [p for p in posts if p.channel == _dm_name(ctx.actor_id, person.id) and p.author_id == ctx.actor_id]
    if not asks:
        return "was never asked by direct message"
    if person.manager_id is None:
        return "has no manager to escalate to"
    name_rx = _name_rx(person.username)
    escalations = [
        p
        for p in posts
        if p.channel == _dm_name(ctx.actor_id, person.manager_id)
        and p.author_id == ctx.actor_id
        and p.created_at <= booked
        and name_rx.search(p.message)
    ]
    if not escalations:
        return "neither agreed nor was escalated to their manager"
    hours = WorkHours(person.timezone, person.work_start_minute, person.work_end_minute, person.workdays)
    for esc in escalations:
        before = [a for a in asks if a.created_at <= esc.created_at]
        if not before:
            continue
        ask = before[-1]
        replies = [r for r in memory if r.subject == agent_name and ask.created_at <= r.at <= esc.created_at]
        if any(_fact(r) is None for r in replies):
            return f"escalated after pushing back (post #{esc.id})"
        answered = [r for r in replies if _said_about(r, start) is not None]  # answers about other times do not count
        if not answered and esc.created_at >= hours.add(ask.created_at, answer_minutes) - timedelta(seconds=1):
            return f"escalated after {answer_minutes} working minutes of silence (post #{esc.id})"
    return "was escalated without a refusal or the stated silence"

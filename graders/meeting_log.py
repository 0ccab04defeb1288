"""What the meeting checks read of the episode, folded from its change log and kept for the episode.

The meeting checks (``graders.checks_meetings``) and ``event_exists`` re-run after the steps that book, answer
and announce a meeting; each re-run used to query the episode's new events, invitations, posts, NPC memories
and the employees they name. Every one of those rows (but the employees) was logged when it was written, so
here they are folded from the log rows not seen yet (kept in ``ctx.lasting``): an insert adds the row's
after-image, an update changes it, a delete drops it. Where the log cannot tell (an image without a column the
fold needs, an old invitation moved to another event), the table is read as before. Employees are read once
per episode by id or username, and again only after the episode changes an employee row.
``tests/graders/test_progress_meet.py`` holds each fold to the table after every step.
"""

from __future__ import annotations

import bisect
import functools
import json
import operator
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from dateutil.rrule import rrulestr

from graders.base import ChangeRow, GradingContext
from graders.checks_common import inserted_ids, rows_in, snippet
from worlds.rawsql import Sql


class Meeting(NamedTuple):
    """An event this episode created, as the meeting checks read it."""

    id: int
    title: str
    organizer_id: int
    start_at: datetime
    end_at: datetime
    room_id: int | None
    cancelled: bool
    created_at: datetime


# What ``_new_events`` folds from the change log, as the table says it (the tests compare the two).
_EVENTS = (
    "SELECT id, title, organizer_id, start_at, end_at, room_id, cancelled, created_at FROM events"
    " WHERE id IN ({}) ORDER BY id"
)


class Someone(NamedTuple):
    """A participant's working week and manager."""

    id: int
    username: str
    timezone: str
    work_start_minute: int
    work_end_minute: int
    workdays: str
    manager_id: int | None


class DmPost(NamedTuple):
    """A live post this episode made, with its channel's name."""

    id: int
    author_id: int
    message: str
    created_at: datetime
    channel: str


class Memory(NamedTuple):
    """A row of an NPC's memory written during the episode."""

    id: int
    employee_id: int
    at: datetime
    kind: str
    subject: str
    data: Any


# Raw statements (``worlds.rawsql``): read where the log cannot tell.
_PEOPLE = (
    "SELECT id, username, timezone, work_start_minute, work_end_minute, workdays, manager_id FROM employees"
    " WHERE id IN ({}) ORDER BY id"
)
_DM_POSTS = (
    "SELECT p.id, p.author_id, p.message, p.created_at, c.name FROM posts p JOIN channels c ON c.id = p.channel_id"
    " WHERE p.id IN ({}) AND p.deleted_at IS NULL ORDER BY p.created_at, p.id"
)
_MEMORY = "SELECT id, employee_id, at, kind, subject, data FROM npc_memory WHERE id IN ({}) ORDER BY at, id"


def _new_events(ctx: GradingContext) -> list[Any]:
    """Every event this episode created, in id order, for all the meeting checks (one per meeting title).

    Why from the change log: the rows were all logged (inserted, then updated or deleted), so folding the rows
    logged since the last step costs less than the query every event-changing step re-ran. Kept in
    ``ctx.lasting`` with how many of the log's event rows it has folded.
    """

    def fold() -> list[Any]:
        seen, made = ctx.lasting.get("new_events", (0, {}))
        rows = ctx.changed_rows("events")
        for r in rows[seen:]:
            key = r.key[0]
            if r.op == "insert":
                c = r.changes
                made[key] = _new(Meeting, (
                    key, c["title"], c["organizer_id"], _when(c["start_at"]), _when(c["end_at"]), c["room_id"],
                    bool(c["cancelled"]), _when(c["created_at"]),
                ))  # fmt: skip
            elif r.op == "delete":
                made.pop(key, None)
            elif key in made:
                after = {k: v[1] for k, v in r.changes.items() if k in Meeting._fields}
                for k in ("start_at", "end_at", "created_at"):
                    if k in after:
                        after[k] = _when(after[k])
                if "cancelled" in after:
                    after["cancelled"] = bool(after["cancelled"])
                made[key] = made[key]._replace(**after)
        ctx.lasting["new_events"] = (len(rows), made)
        return [made[k] for k in sorted(made)]

    return ctx.kept("new_meeting_events", ("events",), fold)


_new = tuple.__new__
"""Builds a row tuple (``_new(Memory, (...))``) as its class does, without the Python frame of a named tuple's
``__new__``: a fold builds one per logged row, and each frame costs more than the tuple."""


def _when(value: Any) -> datetime:
    """A logged timestamp (ISO text, naive meaning UTC, or a datetime) as an aware UTC datetime."""
    found = datetime.fromisoformat(value) if isinstance(value, str) else value
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found.astimezone(UTC)


def invitations(ctx: GradingContext) -> dict[Any, dict[str, Any]] | None:
    """Every invitation this episode created, by id, as the table holds it now; None if the log cannot tell.

    Folded from the ``event_attendees`` rows logged since the last call (kept in ``ctx.lasting``): an insert
    adds one, an update changes it, a delete drops it. An update moving an invitation the episode did not
    create (to another event or person) makes the fold unknowable for the rest of the episode: None, and the
    callers query the table (an answer to an old invitation changes nothing here).
    """
    seen, invites_ = ctx.lasting.get("meeting_invites", (0, {}))
    invites: dict[Any, dict[str, Any]] | None = invites_
    rows = ctx.changed_rows("event_attendees")
    if invites is not None:
        for r in rows[seen:]:
            key = r.key[0]
            if r.op == "insert":
                invites[key] = dict(r.changes)
            elif r.op == "delete":
                invites.pop(key, None)
            elif key in invites:
                invites[key].update({k: v[1] for k, v in r.changes.items()})
            elif {"event_id", "employee_id"} & set(r.changes):
                invites = None
                break
    ctx.lasting["meeting_invites"] = (len(rows), invites)
    return invites


_PEOPLE_NAMED = (
    "SELECT id, username, timezone, work_start_minute, work_end_minute, workdays, manager_id FROM employees"
    " WHERE username IN ({}) ORDER BY id"
)


class _Directory:
    """Employees the meeting checks looked up this episode, by id and by username, while ``employees`` is as read.

    Why in ``ctx.lasting``: a kept lookup is dropped after the progress score's first step (it forgets every
    kept answer), so the booking step re-queried the organiser, the invitees and every named coworker. The
    rows stand until the episode changes an employee row (``stamp``: how many the log holds); then everything
    is read again.
    """

    def __init__(self, stamp: int) -> None:
        self.stamp = stamp
        self.by_id: dict[int, Someone] = {}
        self.by_name: dict[str, int | None] = {}

    @classmethod
    def of(cls, ctx: GradingContext) -> _Directory:
        """The episode's directory, checked against the log once a step (``ctx.memo``: no row changes in a step)."""
        step: _Directory | None = ctx.memo.get("meeting_directory")  # typed, not cast: a call fewer a lookup
        if step is not None:
            return step
        stamp = len(ctx.changed_rows("employees"))
        found = ctx.lasting.get("meeting_directory")
        if not isinstance(found, _Directory) or found.stamp != stamp:
            found = ctx.lasting["meeting_directory"] = _Directory(stamp)
        ctx.memo["meeting_directory"] = found
        return found

    def keep(self, rows: Sequence[Any]) -> None:
        for r in rows:
            self.by_id[r[0]] = Someone(*r)
            self.by_name[r[1]] = r[0]


def _expect(ctx: GradingContext, names: Sequence[str]) -> None:
    """Note coworkers a meeting check names, so the kept calendar reads their events with the first query."""
    known = ctx.lasting.get("meeting_people")
    if known is None:
        known = ctx.lasting["meeting_people"] = set()
    for name in names:
        if name not in known:
            known.add(name)


def _people(ctx: GradingContext, ids: Sequence[int]) -> dict[int, Any]:
    """Employees by id; each looked up once per episode while no employee row changes (one query for the new)."""
    known: _Directory | None = ctx.memo.get("meeting_directory")  # ``_Directory.of``'s step answer, without a call
    if known is None:
        known = _Directory.of(ctx)
    by_id = known.by_id
    if len(ids) == 1:  # most lookups: one person, known
        found = by_id.get(ids[0])
        if found is not None:
            return {ids[0]: found}
    missing = sorted(set(ids).difference(by_id))  # set operations and a loop: no comprehension frames
    if missing:
        known.keep(rows_in(ctx, _PEOPLE, missing))
    out: dict[int, Any] = {}
    for i in sorted(set(ids)):
        p = by_id.get(i)
        if p is not None:
            out[i] = p
    return out


def _employee(ctx: GradingContext, name: str) -> int | None:
    """``checks_common.employee_id`` through the kept directory (one query per name per episode)."""
    if name == "actor":
        return ctx.actor_id
    known: _Directory | None = ctx.memo.get("meeting_directory")  # ``_Directory.of``'s step answer, without a call
    if known is None:
        known = _Directory.of(ctx)
    if name not in known.by_name:
        _named(ctx, [name])
    return known.by_name.get(name)


def _named(ctx: GradingContext, names: Sequence[str]) -> None:
    """Read the employees of the usernames not looked up yet, in one query (unknown names kept as None)."""
    known = _Directory.of(ctx)
    by_name = known.by_name
    for n in names:  # a loop, not ``all`` over a generator: no frame a name
        if n not in by_name and n != "actor":
            break
    else:
        return  # all looked up already (every step after the first)
    missing = sorted({n for n in names if n not in by_name and n != "actor"})
    if missing:
        known.by_name.update(dict.fromkeys(missing))
        known.keep(rows_in(ctx, _PEOPLE_NAMED, missing))


_CHANNEL_NAMES = "SELECT id, name FROM channels WHERE id IN ({}) ORDER BY id"


_post_order = operator.attrgetter("created_at", "id")
"""A post's place in ``new_posts`` (time, then id), as ``_DM_POSTS`` orders them (no Python frame a post)."""


_POST_COLUMNS = frozenset(("author_id", "message", "created_at", "channel_id"))
_MEMORY_COLUMNS = frozenset(("employee_id", "at", "kind", "subject", "data"))


def new_posts(ctx: GradingContext) -> list[DmPost]:
    """This episode's live new posts with their channels' names, ordered by (time, id), as ``_DM_POSTS`` reads them.

    Why from the log: the agent's every post after a booking re-ran ``meeting_agreed`` and
    ``meeting_announced``, and the booking itself read all the asking phase's posts. A post's later edits
    (message, deletion, another channel) are logged updates; a channel's name is its logged insert or rename,
    or one lookup per channel the episode did not create. A post whose insert image lacks a column reads the
    table instead. The ordered list is kept too: new posts later than the last one (the usual case: the clock
    only moves on) are appended to it, and only an edit, a channel row or a post out of order sorts it again.
    """

    def fold() -> list[DmPost]:
        state: tuple[int, int, dict[Any, dict[str, Any]], dict[Any, Any], list[DmPost] | None] = ctx.lasting.get(
            "meeting_post_fold"
        ) or (0, 0, {}, {}, None)
        seen, seen_channels, posts, names, ordered = state
        rows, channels = ctx.changed_rows("posts"), ctx.changed_rows("channels")
        added: list[Any] | None = [] if ordered is not None and len(channels) == seen_channels else None
        for r in channels[seen_channels:]:
            if r.op == "delete":
                names[r.key[0]] = None  # the query's join drops its posts
            elif r.op == "insert" and "name" in r.changes:
                names[r.key[0]] = r.changes["name"]
            elif "name" in r.changes:
                names[r.key[0]] = r.changes["name"][1]
        for r in rows[seen:]:
            key = r.key[0]
            if r.op == "insert":
                if not _POST_COLUMNS.issubset(r.changes):
                    ctx.lasting["meeting_post_fold"] = (seen, seen_channels, posts, names, None)
                    return _read_posts(ctx)
                posts[key] = {c: r.changes[c] for c in _POST_COLUMNS} | {"deleted_at": r.changes.get("deleted_at")}
                posts[key]["created_at"] = _when(posts[key]["created_at"])  # converted once, not per fold
                if added is not None:
                    added.append(key)
            else:
                added = None
                if r.op == "delete":
                    posts.pop(key, None)
                elif key in posts:
                    posts[key].update({c: v[1] for c, v in r.changes.items() if c in posts[key]})
                    if "created_at" in r.changes:
                        posts[key]["created_at"] = _when(posts[key]["created_at"])
        wanted = sorted(
            {posts[k]["channel_id"] for k in added} if added is not None else {p["channel_id"] for p in posts.values()}
        )
        wanted = [i for i in wanted if i not in names]
        if wanted:
            names.update(dict.fromkeys(wanted))
            names.update((i, n) for i, n in rows_in(ctx, _CHANNEL_NAMES, wanted))
        keys = added if added is not None else list(posts)
        found = [
            _new(DmPost, (i, p["author_id"], p["message"], p["created_at"], names[p["channel_id"]]))
            for i in keys
            if (p := posts[i])["deleted_at"] is None and names[p["channel_id"]] is not None
        ]
        found.sort(key=_post_order)
        if added is None or ordered is None:
            ordered = found
        elif found:
            if ordered and _post_order(found[0]) < _post_order(ordered[-1]):
                ordered = sorted([*ordered, *found], key=_post_order)
            else:
                ordered = [*ordered, *found]
        ctx.lasting["meeting_post_fold"] = (len(rows), len(channels), posts, names, ordered)
        return ordered

    return ctx.kept("meeting_posts", ("posts", "channels"), fold)


_CHANNELS_NAMED = "SELECT id, name FROM channels WHERE name IN ({}) ORDER BY id"


def know_channels(ctx: GradingContext, names: Sequence[str]) -> None:
    """Read the ids of the named channels into ``new_posts``' fold now (once per episode), not at their first post.

    Why: the announcement is the first post in a channel the episode did not create, and the fold read its
    name then, in the step that posts it. A name read now is the channel's name now; the fold applies the
    channel rows logged since it last ran over it, which leave a renamed channel with the name it has now too.
    """
    key = ("meeting_channels_known", tuple(names))
    if key in ctx.lasting:
        return
    ctx.lasting[key] = True
    state = ctx.lasting.setdefault("meeting_post_fold", (0, 0, {}, {}, None))
    known: dict[Any, str | None] = state[3]
    for i, name in rows_in(ctx, _CHANNELS_NAMED, sorted(names)):
        known.setdefault(i, name)


def _read_posts(ctx: GradingContext) -> list[DmPost]:
    """``new_posts`` from the tables (a logged image the fold cannot use)."""
    rows = rows_in(ctx, _DM_POSTS, inserted_ids(ctx, "posts"))
    return [DmPost(i, a, m, _aware(at), c) for i, a, m, at, c in rows]


def memory_of(key: Any, c: Mapping[str, Any]) -> Memory:
    """The memory row an insert image ``c`` (every column of ``_MEMORY_COLUMNS``) logged, parsed as the table reads.

    One parse for both folds of memory rows (``memories`` and ``meeting_words.answers_from_log``): its time as
    an aware UTC instant and its data as JSON, with ``_when`` and ``_data`` inlined (a frame fewer a row).
    """
    at, data = c["at"], c["data"]
    at = datetime.fromisoformat(at) if isinstance(at, str) else at
    at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    data = json.loads(data) if isinstance(data, str) else data
    found: Memory = _new(Memory, (key, c["employee_id"], at, c["kind"], c["subject"], data))
    return found


def memories(ctx: GradingContext) -> list[Memory]:
    """The NPC memory rows this episode wrote, ordered by (time, id), as ``_MEMORY`` reads them.

    Why from the log: a coworker's every answer re-ran ``meeting_agreed``, which read them all again. A row
    whose insert image lacks a column reads the table instead. As in ``new_posts``, the ordered list is kept
    and new rows later than its last are appended; an edit, a delete or a row out of order sorts it again.
    The fold's fourth part counts those other lists (``memory_epoch``): while it stands, each list the fold
    gives starts with the one it gave before, so a reader may fold only the rows past the last list's end.
    """

    def fold() -> list[Memory]:
        state: tuple[int, dict[Any, Memory], list[Memory] | None, int] = ctx.lasting.get("meeting_memory_fold") or (
            0,
            {},
            None,
            0,
        )
        seen, rows_by_id, ordered, epoch = state
        rows = ctx.changed_rows("npc_memory")
        added: list[Memory] | None = [] if ordered is not None else None
        for r in rows[seen:]:
            key = r.key[0]
            if r.op == "insert":
                if not _MEMORY_COLUMNS.issubset(r.changes):
                    ctx.lasting["meeting_memory_fold"] = (seen, rows_by_id, None, epoch + 1)
                    return _read_memories(ctx)
                rows_by_id[key] = memory_of(key, r.changes)
                if added is not None:
                    added.append(rows_by_id[key])
                continue
            added = None
            if r.op == "delete":
                rows_by_id.pop(key, None)
            elif key in rows_by_id:
                after = {c: v[1] for c, v in r.changes.items() if c in Memory._fields and c != "id"}
                if "at" in after:
                    after["at"] = _when(after["at"])
                if "data" in after:
                    after["data"] = _data(after["data"])
                rows_by_id[key] = rows_by_id[key]._replace(**after)
        if added is None or ordered is None:
            ordered = sorted(rows_by_id.values(), key=_memory_order)
            epoch += 1
        elif added:
            added.sort(key=_memory_order)
            if ordered and _memory_order(added[0]) < _memory_order(ordered[-1]):
                ordered = sorted([*ordered, *added], key=_memory_order)
                epoch += 1
            else:
                ordered = [*ordered, *added]
        ctx.lasting["meeting_memory_fold"] = (len(rows), rows_by_id, ordered, epoch)
        return ordered

    return ctx.kept("npc_memory", ("npc_memory",), fold)


def memory_epoch(ctx: GradingContext) -> int:
    """How many times ``memories`` gave a list that does not start with the one it gave before (read after it).

    Why: ``checks_meetings._answers`` files the answers of the rows past the last list's end while this stands,
    instead of every memory of the episode at each booking and answer.
    """
    state = ctx.lasting.get("meeting_memory_fold")
    return int(state[3]) if state else 0


_memory_order = operator.attrgetter("at", "id")
"""A memory row's place in ``memories`` (time, then id), as ``_MEMORY`` orders them (no Python frame a row)."""


def _read_memories(ctx: GradingContext) -> list[Memory]:
    """``memories`` from the table (a logged image the fold cannot use)."""
    rows = rows_in(ctx, _MEMORY, inserted_ids(ctx, "npc_memory"))
    return [Memory(i, e, _aware(at), k, s, _data(d)) for i, e, at, k, s, d in rows]


def _data(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _aware(value: Any) -> Any:
    """A stored naive-UTC timestamp (SQLite text or a PostgreSQL datetime) as an aware datetime, None kept."""
    if value is None:
        return None
    return (datetime.fromisoformat(value) if isinstance(value, str) else value).replace(tzinfo=UTC)


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
        """The episode's calendar, up to date with the change log (brought up to date once a step: ``ctx.memo``)."""
        step: Calendar | None = ctx.memo.get("calendar")  # typed, not cast: a call fewer a lookup
        if step is not None:
            return step
        found = ctx.lasting.get("calendar")
        if not isinstance(found, Calendar):
            found = ctx.lasting["calendar"] = Calendar()
        found.sync(ctx)
        ctx.memo["calendar"] = found
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
        busy = self.busy
        wanted: set[int] = set()  # loops, not comprehensions and generators (a frame each on a booking)
        for p, e in adds:
            if p in busy:
                wanted.add(e)
        if self.room_busy or self.all_rooms:
            for r in new_events:
                if r.op == "insert":
                    wanted.add(int(r.key[0]))
        if not wanted:
            return
        made = _event_images(ctx)  # the new events as they are now, from the log; old ones invited to are read
        rows: dict[int, EventRow | None] = {}
        unread: list[int] = []
        for e in wanted:
            rows[e] = found = made.get(e)
            if found is None:
                unread.append(e)
        if unread:
            unread.sort()
            for r in rows_in(ctx, _EVENT_ROWS, unread):
                rows[r[0]] = _stored(r)
        # each live event's entry built once, for its organiser, every invitee and its room (a booking's four)
        entries: dict[int, Busy] = {}
        for e, row in rows.items():
            if row is not None and not row[6]:
                entries[e] = (row[2], row[0], _label(row[0], row[1]), row[2], row[3], row[4], row[5])
        for person, event_id in adds:
            kept_busy = busy.get(person)
            entry = entries.get(event_id)
            if kept_busy is not None and entry is not None:  # ``_add`` for someone kept and an event live
                self._add(kept_busy, self.people.get(person), entry)
        for r in new_events:
            row = rows.get(int(r.key[0]))
            if r.op == "insert" and row is not None and row[7] is not None:
                kept = self.room_busy.setdefault(row[7], {}) if self.all_rooms else self.room_busy.get(row[7])
                entry = entries.get(row[0])
                if kept is not None and entry is not None:
                    self._add(kept, self.rooms.get(row[7]), entry)

    def _add(self, busy: dict[int, Busy], windows: dict[Window, dict[int, Clash]] | None, entry: Busy) -> None:
        """Enter a live event's entry in someone's (or a room's) kept events and in the kept windows it overlaps."""
        start, event_id, _, _, end, rule, until = entry
        busy[event_id] = entry
        if windows:
            clash = entry[:3]
            for w, clashes in windows.items():  # a single event compared here (as ``overlaps`` does), without a call
                if start < w[1] and (end > w[0] if not rule else self.overlaps(start, end, rule, until, w)):
                    clashes[event_id] = clash

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
            label = _label(event_id, title)
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
        missing = sorted(set(people).union(self.expected[1]).difference(self.busy))
        if missing:
            found = self._query(ctx, _BUSY.format(", ".join("?" * len(missing))), [*missing, *missing])
            for p in missing:
                self.busy[p] = found.get(p, {})
        mine: dict[int, dict[int, Clash]] = {}
        kept = self.people
        for p in people:  # a loop, not a comprehension; a window kept for the person is looked up, not called for
            windows = kept.get(p)
            if windows is None:
                windows = kept[p] = {}
            have = windows.get(w)
            mine[p] = have if have is not None else self._window(windows, self.busy[p], w)
        if room is None:
            return mine, {}
        if room not in self.room_busy:
            read = {} if self.all_rooms else self._query(ctx, _ROOM_BUSY.format("?"), [room]).get(room, {})
            self.room_busy[room] = read
        return mine, self._window(self.rooms.setdefault(room, {}), self.room_busy[room], w)

    def _window(self, windows: dict[Window, dict[int, Clash]], busy: Mapping[int, Busy], w: Window) -> dict[int, Clash]:
        """Someone's clashes in a window, filtered from their kept events once per window.

        A series is decided by ``_recurs_in`` directly, not through ``spans``: a booking is a new window, so a
        kept answer by (series, window) missed for every series of every participant and cost a key and a lookup
        more than the answer (the series' starts are expanded once, ``_series``, and bisected).
        """
        found = windows.get(w)
        if found is None:
            found = windows[w] = {}
            lo, hi = w
            for b in busy.values():  # ``overlaps`` inlined: a booking scans every participant's events here
                if b[3] < hi:
                    rule = b[5]
                    if not rule:
                        if b[4] > lo:
                            found[b[1]] = b[:3]
                        continue
                    if _recurs_in(b[3], b[4], rule, b[6], w):
                        found[b[1]] = b[:3]
        return found

    def _query(self, ctx: GradingContext, sql: str, params: list[Any]) -> dict[int, dict[int, Busy]]:
        """Live events over the horizon by whose (or which room's) they are."""
        assert self.horizon is not None
        sql_ = Sql.of(ctx.session)
        out: dict[int, dict[int, Busy]] = {}
        bounds = [sql_.bind(self.horizon[1]), sql_.bind(self.horizon[0])]
        for who, event_id, title, start, end, rule, until in sql_.all(sql, [*params, *bounds]):
            label = _label(event_id, title)
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
    series, lo, hi = _series(rule, start), w[0] - (end - start), w[1]
    if series.upto < hi:  # ``first_after``, its kept starts reaching the window inlined (a call fewer a series)
        found = series.first_after(lo, hi)
    else:
        i = bisect.bisect_right(series.starts, lo)
        found = series.starts[i] if i < len(series.starts) else None
    return found is not None and found < hi and (until is None or found <= until)


@functools.lru_cache(maxsize=4096)
def _label(event_id: int, title: str) -> str:
    """How a clash names an event (``#12 'Standup'``), written once per event.

    Why cached: a booking enters its event in each participant's calendar, and every read labels the same events.
    """
    return f"#{event_id} {snippet(title, 30)}"


def _labels(clashes: Mapping[int, Clash], skip: int) -> list[str]:
    """The clashes' labels in the busy query's order (start, id), leaving out the meeting itself."""
    if len(clashes) == 1 and skip in clashes:  # the usual window: the meeting alone (no sort, no list to filter)
        return []
    return [label for _, event_id, label in sorted(clashes.values()) if event_id != skip]


_DM_CHANNELS = "SELECT id FROM channels WHERE name IN ({}) ORDER BY id"


def _dm_channels(ctx: GradingContext, attendees: Sequence[str]) -> set[int]:
    """Ids of the agent's direct channels with the named coworkers (those that exist).

    Why kept in ``ctx.lasting`` and folded from the log: the agent's first message to each coworker opens a
    channel, and a kept answer forgotten on every channel change re-ran the query at each of those steps. The
    names are read once per episode (again after an employee row changes); the channel rows logged since the
    last call add a channel created with (or renamed to) one of the names and drop one deleted or renamed away.
    """
    key = ("dm_channels", tuple(attendees))
    step: set[int] | None = ctx.memo.get(key)  # brought up to date once a step: the agent's posts each ask
    if step is not None:
        return step
    stamp = len(ctx.changed_rows("employees"))
    rows = ctx.changed_rows("channels")
    kept = ctx.lasting.get(key)
    if kept is not None:
        for r in rows[kept[1] :]:  # a loop, not ``any`` over a generator: the asking phase's channels, no frame each
            if r.op == "insert" and "name" not in r.changes:
                kept = None  # an image without the name: read the table
                break
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
    ctx.memo[key] = found
    ids_found: set[int] = found  # typed, not cast: a call fewer
    return ids_found


def _dm_name(a: int, b: int) -> str:
    return "__".join(str(i) for i in sorted((a, b)))


_ROOM = "SELECT r.name, r.capacity, l.name FROM rooms r JOIN locations l ON l.id = r.location_id WHERE r.id = ?"
_ROOMS = "SELECT r.id, r.name, r.capacity, l.name FROM rooms r JOIN locations l ON l.id = r.location_id ORDER BY r.id"


def _room(ctx: GradingContext, room_id: int | None) -> tuple[str, int, str]:
    """A room's (name, capacity, location), read once per episode while no room or location row changes.

    Every room is read with the first call, which the room check makes before any booking (``room_id`` None:
    nothing is asked), in the step that grades everything, so the booking reads none. A room the first read
    did not find is read alone (a query that finds no row fails the check, as it always did).
    """
    stamp = (len(ctx.changed_rows("rooms")), len(ctx.changed_rows("locations")))
    kept = ctx.lasting.get("meeting_rooms")
    if kept is None or kept[0] != stamp:
        rooms = {r[0]: (r[1], r[2], r[3]) for r in Sql.of(ctx.session).all(_ROOMS)}
        kept = ctx.lasting["meeting_rooms"] = (stamp, rooms)
    found: tuple[str, int, str] | None = kept[1].get(room_id)
    if found is None and room_id is not None:
        found = kept[1][room_id] = tuple(Sql.of(ctx.session).one(_ROOM, (room_id,)))
    return found  # type: ignore[return-value]

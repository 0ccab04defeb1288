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

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from graders.base import GradingContext
from graders.checks_common import inserted_ids, rows_in


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
                made[key] = Meeting(
                    key, c["title"], c["organizer_id"], _when(c["start_at"]), _when(c["end_at"]), c["room_id"],
                    bool(c["cancelled"]), _when(c["created_at"]),
                )  # fmt: skip
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
        stamp = len(ctx.changed_rows("employees"))
        found = ctx.lasting.get("meeting_directory")
        if not isinstance(found, _Directory) or found.stamp != stamp:
            found = ctx.lasting["meeting_directory"] = _Directory(stamp)
        return found

    def keep(self, rows: Sequence[Any]) -> None:
        for r in rows:
            self.by_id[r[0]] = Someone(*r)
            self.by_name[r[1]] = r[0]


def _people(ctx: GradingContext, ids: Sequence[int]) -> dict[int, Any]:
    """Employees by id; each looked up once per episode while no employee row changes (one query for the new)."""
    known = _Directory.of(ctx)
    missing = sorted({i for i in ids if i not in known.by_id})
    if missing:
        known.keep(rows_in(ctx, _PEOPLE, missing))
    return {i: known.by_id[i] for i in sorted(set(ids)) if i in known.by_id}


def _employee(ctx: GradingContext, name: str) -> int | None:
    """``checks_common.employee_id`` through the kept directory (one query per name per episode)."""
    if name == "actor":
        return ctx.actor_id
    known = _Directory.of(ctx)
    if name not in known.by_name:
        _named(ctx, [name])
    return known.by_name.get(name)


def _named(ctx: GradingContext, names: Sequence[str]) -> None:
    """Read the employees of the usernames not looked up yet, in one query (unknown names kept as None)."""
    known = _Directory.of(ctx)
    missing = sorted({n for n in names if n not in known.by_name and n != "actor"})
    if missing:
        known.by_name.update(dict.fromkeys(missing))
        known.keep(rows_in(ctx, _PEOPLE_NAMED, missing))


_CHANNEL_NAMES = "SELECT id, name FROM channels WHERE id IN ({}) ORDER BY id"
_POST_COLUMNS = frozenset(("author_id", "message", "created_at", "channel_id"))
_MEMORY_COLUMNS = frozenset(("employee_id", "at", "kind", "subject", "data"))


def new_posts(ctx: GradingContext) -> list[DmPost]:
    """This episode's live new posts with their channels' names, ordered by (time, id), as ``_DM_POSTS`` reads them.

    Why from the log: the agent's every post after a booking re-ran ``meeting_agreed`` and
    ``meeting_announced``, and the booking itself read all the asking phase's posts. A post's later edits
    (message, deletion, another channel) are logged updates; a channel's name is its logged insert or rename,
    or one lookup per channel the episode did not create. A post whose insert image lacks a column reads the
    table instead.
    """

    def fold() -> list[DmPost]:
        seen, seen_channels, posts, names = ctx.lasting.get("meeting_post_fold", (0, 0, {}, {}))
        rows, channels = ctx.changed_rows("posts"), ctx.changed_rows("channels")
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
                    return _read_posts(ctx)
                posts[key] = {c: r.changes[c] for c in _POST_COLUMNS} | {"deleted_at": r.changes.get("deleted_at")}
                posts[key]["created_at"] = _when(posts[key]["created_at"])  # converted once, not per fold
            elif r.op == "delete":
                posts.pop(key, None)
            elif key in posts:
                posts[key].update({c: v[1] for c, v in r.changes.items() if c in posts[key]})
                if "created_at" in r.changes:
                    posts[key]["created_at"] = _when(posts[key]["created_at"])
        ctx.lasting["meeting_post_fold"] = (len(rows), len(channels), posts, names)
        wanted = sorted({p["channel_id"] for p in posts.values()} - names.keys())
        if wanted:
            names.update(dict.fromkeys(wanted))
            names.update((i, n) for i, n in rows_in(ctx, _CHANNEL_NAMES, wanted))
        found = [
            DmPost(i, p["author_id"], p["message"], p["created_at"], names[p["channel_id"]])
            for i, p in posts.items()
            if p["deleted_at"] is None and names[p["channel_id"]] is not None
        ]
        return sorted(found, key=lambda p: (p.created_at, p.id))

    return ctx.kept("meeting_posts", ("posts", "channels"), fold)


def _read_posts(ctx: GradingContext) -> list[DmPost]:
    """``new_posts`` from the tables (a logged image the fold cannot use)."""
    rows = rows_in(ctx, _DM_POSTS, inserted_ids(ctx, "posts"))
    return [DmPost(i, a, m, _aware(at), c) for i, a, m, at, c in rows]


def memories(ctx: GradingContext) -> list[Memory]:
    """The NPC memory rows this episode wrote, ordered by (time, id), as ``_MEMORY`` reads them.

    Why from the log: a coworker's every answer re-ran ``meeting_agreed``, which read them all again. A row
    whose insert image lacks a column reads the table instead.
    """

    def fold() -> list[Memory]:
        seen, rows_by_id = ctx.lasting.get("meeting_memory_fold", (0, {}))
        rows = ctx.changed_rows("npc_memory")
        for r in rows[seen:]:
            key = r.key[0]
            if r.op == "insert":
                if not _MEMORY_COLUMNS.issubset(r.changes):
                    return _read_memories(ctx)
                c = r.changes
                rows_by_id[key] = Memory(
                    key, c["employee_id"], _when(c["at"]), c["kind"], c["subject"], _data(c["data"])
                )
            elif r.op == "delete":
                rows_by_id.pop(key, None)
            elif key in rows_by_id:
                after = {c: v[1] for c, v in r.changes.items() if c in Memory._fields and c != "id"}
                if "at" in after:
                    after["at"] = _when(after["at"])
                if "data" in after:
                    after["data"] = _data(after["data"])
                rows_by_id[key] = rows_by_id[key]._replace(**after)
        ctx.lasting["meeting_memory_fold"] = (len(rows), rows_by_id)
        return sorted(rows_by_id.values(), key=lambda m: (m.at, m.id))

    return ctx.kept("npc_memory", ("npc_memory",), fold)


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

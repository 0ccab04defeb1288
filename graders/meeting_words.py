"""What a meeting's messages and answers say: the instants a post names, the key and names it mentions, an answer.

Pure readings of text and memory rows, each cached per text for the process, shared by the meeting checks
(``graders.checks_meetings``, ``graders.checks_items``); and ``announce_score``, the announcement check's score
read from the agent's logged posts, and ``answers_from_log``, the agreement answers read from the logged
memory rows. Kept apart from the checks so that module stays a reader of the
episode's state and this one a reader of words.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from graders.base import GradingContext
from graders.meeting_log import _MEMORY_COLUMNS, _dm_name, _memory_order, memory_of
from mcp_tools.calendar.slots import Person
from npcs.hours import WorkHours

ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})")


@functools.lru_cache(maxsize=4096)
def works(p: Any, start: datetime, end: datetime) -> bool:
    """Whether [start, end) lies inside the working week of ``p`` (a ``meeting_log.Someone``), as ``Person`` says.

    Cached per (person, meeting time) for the process: a booking asks it of each participant for the meeting
    check and again for each per-person check, and the answer depends on nothing else.
    """
    return _person(p).works(start, end)


@functools.lru_cache(maxsize=1024)
def _person(p: Any) -> Person:
    """``p`` as the calendar's ``Person``, built once per person for the process (a frozen dataclass costs ~1 us).

    Why: every booking is a new meeting time, so ``works`` misses its cache for each participant, and each miss
    built the person again.
    """
    return Person(p.id, p.username, p.timezone, p.work_start_minute, p.work_end_minute, p.workdays)


@functools.lru_cache(maxsize=4096)
def local_time(start: datetime, timezone: str) -> str:
    """``start`` as a weekday and time in ``timezone`` (``Tue 15:00``), as the evidence shows it."""
    return start.astimezone(ZoneInfo(timezone)).strftime("%a %H:%M")


@functools.lru_cache(maxsize=4096)
def _instants(text: str) -> list[datetime]:
    """The ISO 8601 instants a message names (parsed once per text per process; read, never changed)."""
    out = []
    for found in ISO.findall(text):
        try:
            out.append(datetime.fromisoformat(found.replace("Z", "+00:00").replace(" ", "T")))
        except ValueError:
            continue
    return out


@functools.lru_cache(maxsize=1024)
def _key_rx(key: str) -> re.Pattern[str]:
    """How an announcement names its key (a whole word, any case), compiled once per key."""
    return re.compile(rf"\b{re.escape(key)}\b", re.IGNORECASE)


def _fact(row: Any) -> Mapping[str, Any] | None:
    """An answer's agreement fact, or None.

    A parsed memory is a dict: tested first, as ``isinstance`` against ``Mapping`` runs the ABC's check in
    Python (a frame per memory filed).
    """
    data = row.data
    if type(data) is not dict and not isinstance(data, Mapping):
        data = {}
    fact = data.get("fact")
    if type(fact) is not dict and not isinstance(fact, Mapping):
        return None
    return fact if fact.get("intent") == "agreement" else None


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


@functools.lru_cache(maxsize=1024)
def _name_rx(username: str) -> re.Pattern[str]:
    """How an escalation names a coworker (``@username`` or the bare username), compiled once per name."""
    return re.compile(rf"(?<![\w.]){re.escape(username)}\b", re.IGNORECASE)


_POST_IMAGE = frozenset(("author_id", "channel_id", "message"))
_UNKNOWN = object()


def announce_score(ctx: GradingContext, start: datetime, channel: str, key: str) -> float | None:
    """``meeting_announced``'s score from the agent's logged posts: 1.0 if one announces ``start``, else 0.0.

    Why: the announcement check first looks at the meeting in the booking step, and its verdict folded every
    post of the asking phase (``meeting_log.new_posts``: each post's row, time, and channel name) to find that
    the announcement is not there yet. The score needs less: the agent's live posts in the channel named
    ``channel`` now, and what each says. Kept in ``ctx.lasting``, folded from the rows not seen yet: the
    agent's posts as logged (channel, message, deleted?), and the names the log gives channels (a channel's
    insert, rename or delete); a channel the log does not name is the one ``know_channels`` read before the
    booking, whose name no logged row has changed since. None (the check reads the fold) once a post is edited,
    moved or deleted, a row lacks a column, or a post of the agent's is in a channel neither names.
    """
    name = channel.lstrip("~#")
    state: list[Any] | None = ctx.lasting.get(("meeting_announce", name))
    if state is None:
        state = ctx.lasting[("meeting_announce", name)] = [0, 0, {}, []]  # posts, channels seen; names; mine
    seen, seen_channels, names, mine = state
    if seen < 0:
        return None
    channels, posts = ctx.changed_rows("channels"), ctx.changed_rows("posts")
    for r in channels[seen_channels:]:
        c = r.changes
        if r.op == "delete":
            names[r.key[0]] = None  # its posts are dropped by the fold's join
        elif r.op == "insert":
            names[r.key[0]] = c.get("name", _UNKNOWN)
        elif "name" in c:
            names[r.key[0]] = c["name"][1]
    state[1] = len(channels)
    actor = ctx.actor_id
    for r in posts[seen:]:
        c = r.changes
        if r.op != "insert" or not _POST_IMAGE.issubset(c):
            state[0] = -1  # an edit, a move or a deletion: the fold follows them
            return None
        if c["author_id"] == actor:
            mine.append((c["channel_id"], c["message"], c.get("deleted_at")))
    state[0] = len(posts)
    if not mine:
        return 0.0
    read = ctx.lasting.get("meeting_post_fold")
    known: dict[Any, Any] = read[3] if read else {}
    key_rx = _key_rx(key)
    for channel_id, message, deleted in mine:
        where = names[channel_id] if channel_id in names else known.get(channel_id, _UNKNOWN)
        if where is _UNKNOWN:
            return None
        if where == name and deleted is None and key_rx.search(message) and start in _instants(message):
            return 1.0
    return 0.0


Answers = dict[int, list[tuple[Any, datetime | None, str]]]
"""Each coworker's agreement answers: (memory row, the instant it answered about, the word), in (time, id) order."""


def answers_from_log(ctx: GradingContext, told: Callable[[Any], tuple[datetime | None, str]]) -> Answers | None:
    """``checks_meetings._answers`` from the logged memory rows, ``told`` filing each; None if the log cannot tell.

    Why: the agreement check first reads the answers at the booking, and ``meeting_log.memories`` folded every
    memory of the asking phase for them (each one's time and JSON parsed, sorted), though only the coworkers'
    ``did`` rows are answers: here a row of another kind is passed over unparsed. Kept in ``ctx.lasting`` and
    folded from the rows not seen yet; each coworker's list in (time, id) order as ``memories`` orders them (a
    row earlier than the list's last is put in its place). None from the first row that is not an insert with
    every column (an edit, a deletion, an image ``memories`` reads the table for): the caller folds them all.
    """
    state: list[Any] | None = ctx.lasting.get("meeting_answers_log")
    if state is None:
        state = ctx.lasting["meeting_answers_log"] = [0, {}]
    seen, did = state
    if seen < 0:
        return None
    rows = ctx.changed_rows("npc_memory")
    for r in rows[seen:]:
        c = r.changes
        if r.op != "insert" or not _MEMORY_COLUMNS.issubset(c):
            state[0] = -1
            return None
        if c["kind"] != "did":
            continue
        row = memory_of(r.key[0], c)  # parsed as ``memories`` parses them
        entry = (row, *told(row))
        mine = did.get(row.employee_id)
        if mine is None:
            did[row.employee_id] = [entry]
        elif _memory_order(mine[-1][0]) <= _memory_order(row):
            mine.append(entry)
        else:
            bisect.insort(mine, entry, key=_entry_order)
    state[0] = len(rows)
    found: Answers = did
    return found


def _entry_order(entry: tuple[Any, ...]) -> Any:
    return _memory_order(entry[0])


def told(row: Any) -> tuple[datetime | None, str]:
    """(the instant, what was said) of an agreement answer, as ``_said_about`` reads it; (None, "") for another row.

    ``_fact`` inlined for a parsed memory (a dict): ``checks_meetings._answers`` files every answer of the
    episode through here.
    """
    data = row.data
    if type(data) is dict:
        fact = data.get("fact")
        if fact is None:  # most ``did`` rows: no fact at all (``_fact`` says None, without its call)
            return None, ""
        if type(fact) is not dict:
            fact = _fact(row)
        elif fact.get("intent") != "agreement":
            fact = None
    else:
        fact = _fact(row)
    if fact is None:
        return None, ""
    return _instant(str(fact.get("subject", ""))), str(fact.get("said"))


def escalation(
    ctx: GradingContext,
    person: Any,
    posts: Sequence[Any],
    memory: Sequence[Any],
    start: datetime,
    booked: datetime,
    agent_name: str,
    answer_minutes: int,
) -> str:
    """``escalated ...`` if a justified escalation of ``person`` before ``booked`` exists, else why not.

    The rule ``checks_meetings.meeting_agreed`` states for someone who did not agree, read from the agent's posts
    and the coworker's answers (here with the other readings of what was said, out of the checks module).
    """
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

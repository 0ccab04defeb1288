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

import operator
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, NamedTuple

from pydantic import AwareDatetime, Field

from graders.base import ChangeRow, CheckOutcome, GradingContext, check_fn
from graders.checks_common import Regex, listing, rx, snippet
from graders.meeting_log import (
    _COMMITTED,
    _EVENT_ROWS,
    _HARMLESS,
    Calendar,
    _dm_channels,
    _employee,
    _event_images,
    _expect,
    _labels,
    _new,
    _new_events,
    _room,
    _stored,
    invitations,
    know_channels,
    memories,
    memory_epoch,
    new_posts,
)
from graders.meeting_log import _DM_CHANNELS as _DM_CHANNELS  # re-exported: the tests name its statement
from graders.meeting_log import _ROOM as _ROOM  # re-exported: the tests name its statement
from graders.meeting_log import _ROOMS as _ROOMS  # re-exported: the tests name its statement

# re-exported: graders.checks_items and the tests read the participants and the calendar through this module
from graders.meeting_log import _people as _people
from graders.meeting_log import _recurs_in as _recurs_in
from graders.meeting_words import ISO as ISO
from graders.meeting_words import (
    _instants,
    _key_rx,
    announce_score,
    answers_from_log,
    escalation,
    told,
)

# re-exported: graders.checks_items reads them through this module
from graders.meeting_words import local_time as local_time
from graders.meeting_words import works as works
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
_FIRST, _USERNAME = operator.itemgetter(0), operator.itemgetter(1)
_NONE: frozenset[str] = frozenset()
"""No coworker noted yet (``_expect``'s set before its first call)."""


def _meetings(ctx: GradingContext, title_pattern: str) -> list[Any]:
    """Live events the agent organised during the episode whose title matches (memoised per grade).

    Kept until an event changes, and looked up through a per-step table of its own (``ctx.memo``, emptied
    whenever a kept answer may be): every hook and check of every meeting asks it, a booking some twenty times.
    One table holds every title's meetings (kept until an event changes); a title it lacks is found with every
    other title asked about this episode (``ctx.lasting``) and not in it yet, in one pass over the new events:
    a booking finds the meetings of all the rubric's titles at once (one per report in 1:1s), not one by one.
    """
    step: dict[str, list[Any]] | None = ctx.memo.get("meetings")
    if step is None:
        step = ctx.memo["meetings"] = ctx.kept("meetings", ("events",), dict)
    found = step.get(title_pattern)
    if found is None:
        titles: list[str] | None = ctx.lasting.get("meeting_titles")
        if titles is None:
            titles = ctx.lasting["meeting_titles"] = []
        if title_pattern not in titles:
            titles.append(title_pattern)
        wanted: list[tuple[str, Any, list[Any]]] = [(t, rx(t).search, []) for t in titles if t not in step]
        actor = ctx.actor_id
        for r in _new_events(ctx):  # in id order, as each title's list was
            if not r.cancelled and r.organizer_id == actor:
                for _, search, into in wanted:
                    if search(r.title or ""):
                        into.append(r)
        for t, _, into in wanted:  # filed once all are found (a read that fails leaves no title half found)
            step[t] = into
        found = step[title_pattern]
    return found


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
    also reads the participants' other events at the meeting's time: ``_clash_touches``.) Of the answers, such
    a check reads only who declined (the room's head count): an answer that neither declines nor withdraws a
    refusal (accepting, say) cannot change it.
    """
    if row.op == "insert" and row.table in ("events", "event_attendees"):
        event = row.key[0] if row.table == "events" else row.changes.get("event_id")
        return any(m.id == event for m in _meetings(ctx, title_pattern))
    if row.table == "event_attendees" and row.op == "update" and _still_going(row.changes):
        return False
    return _meeting_touches(ctx, row, title_pattern, **kwargs)


def _still_going(changes: Mapping[str, Any]) -> bool:
    """Whether an invitation's update changes only its answer, and not whether its invitee declined."""
    if not _ANSWER.issuperset(changes):
        return False
    rsvp: tuple[str, str] = changes.get("rsvp", ("", ""))
    return (rsvp[0] == "declined") == (rsvp[1] == "declined")


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


def _the_meeting(ctx: GradingContext, title_pattern: str) -> tuple[Any, str]:
    """(meeting row or None, evidence prefix): the latest matching live meeting.

    Kept until an event changes: a booking's every check of the meeting starts with it, so the prefix is
    written once a step, not once a check (and looked up in the step's table first, as ``_meetings`` is).
    """
    step: dict[str, tuple[Any, str]] | None = ctx.memo.get("the_meeting")
    if step is None:
        step = ctx.memo["the_meeting"] = {}
    found = step.get(title_pattern)
    if found is None:

        def find() -> tuple[Any, str]:
            found = _meetings(ctx, title_pattern)
            if not found:
                return None, f"no live meeting organised by the agent matches /{title_pattern}/"
            m = found[-1]
            return m, f"event #{m.id} {snippet(m.title)} at {m.start_at.isoformat()}"

        found = step[title_pattern] = ctx.kept(("the_meeting", title_pattern), ("events",), find)
    if found[0] is None:
        Calendar.of(ctx).preload(ctx)
    return found


_Invitees = tuple[list[int], frozenset[int], frozenset[str], frozenset[int]]
"""``_invitees``' answer: the invitees' ids (by username), their ids, usernames, and who declined."""


def _invitation_view(ctx: GradingContext, event_id: int) -> tuple[list[Any], _Invitees]:
    """The meeting's attendees (``_attendees``) and its invitees as every check asks (``_invitees``), built together.

    Why from the change log: the meeting is an event this episode created, so every invitation to it was
    logged too, and folding the logged rows (``invitations``) costs less than the query each booking and answer
    re-ran. Only an update moving an invitation the episode did not create (to another event or person) needs
    the query. Why together: a booking's checks read both, and two kept answers (each its closure, its entry and
    its pass, the second over the first's list) cost a booking more than one pass filing both. Kept until an
    invitation or employee changes, and looked up in the step's table first (``ctx.memo``).
    """
    step: dict[int, tuple[list[Any], _Invitees]] | None = ctx.memo.get("invitees")
    if step is None:
        step = ctx.memo["invitees"] = {}
    found = step.get(event_id)
    if found is None:

        def build() -> tuple[list[Any], _Invitees]:
            invites = invitations(ctx)
            if invites is None:
                attendees = [Attendee(*r) for r in Sql.of(ctx.session).all(_ATTENDEES, (event_id,))]
            else:
                # loops and a C key, not comprehensions, a generator and a lambda: no frame per invitee or list
                mine = []
                for i in invites.values():
                    if i.get("event_id") == event_id:
                        mine.append((i["employee_id"], i["rsvp"]))
                people = _people(ctx, list(map(_FIRST, mine)))
                attendees = []
                for emp, rsvp in mine:
                    if emp in people:
                        attendees.append(_new(Attendee, (emp, people[emp].username, rsvp)))
                attendees.sort(key=_USERNAME)
            ids: list[int] = []
            names: set[str] = set()
            declined: set[int] = set()
            for a in attendees:  # one loop, not a comprehension a set (a frame each)
                ids.append(a.employee_id)
                names.add(a.username)
                if a.rsvp == "declined":
                    declined.add(a.employee_id)
            return attendees, (ids, frozenset(ids), frozenset(names), frozenset(declined))

        found = step[event_id] = ctx.kept(("invitees", event_id), ("event_attendees", "employees"), build)
    return found


def _attendees(ctx: GradingContext, event_id: int) -> list[Any]:
    """The meeting's attendees by username, once per grade (every per-coworker check reads them)."""
    return _invitation_view(ctx, event_id)[0]


def _invitees(ctx: GradingContext, event_id: int) -> _Invitees:
    """The meeting's invitees as every check of it asks: ids (by username), ids, usernames, who declined."""
    return _invitation_view(ctx, event_id)[1]


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


def touch_step(
    touches: Callable[..., bool], decide: Callable[..., Verdict | float] | None = None, like: str | None = None
) -> Callable[..., dict[int, Any]]:
    """An ``on_step`` evaluator (``graders.progress``) for a meeting check function: ``touches`` asked once a meeting.

    Why: a rubric has a meeting check per question and per person, and each one's ``touches`` hook was called on
    every changed row, though the hooks read only the meeting (``title_pattern``) and its ``attendees``. Here it
    is asked once per meeting and row set a step (``ctx.memo``, shared by the functions with the same hook), so
    the per-person checks of a meeting ask it once; until a meeting is booked only an event or invitation row
    can touch a hook (they all say so). A check a row touches is re-run (None), the others stand; with
    ``decide`` (``decide_step``), decided with it instead, as a bare score (``bare=True``): the evidence is
    written when ``results`` asks (``graders.progress``), not at every booking, answer and announcement.

    Nor is a hook asked what every hook answers alike (``_calendar_rows``, once a step): a row of the meeting's
    own event, or a new invitation to it, touches every check of the meeting (a booking); and a step that only
    creates other events and their invitations touches no check of a meeting not booked yet, nor one whose
    hook reads of the calendar only the meeting itself (``_OWN_HOOKS``; onboarding and 1:1s book one meeting
    after another). Nor about a row it answers no to for every meeting (``_rows_left``: a coworker's reply
    after the bookings, an answer to an invitation): a step of only such rows (a ``wait``) asks nothing. Which
    rows those are is known for this module's hooks (``_KIND``); ``like`` names the kind of another module's
    hook that answers them as one of these does (``"clash"``: ``checks_items._free_touches``).
    """
    own = touches in _OWN_HOOKS

    def on_step(ctx: GradingContext, rows: Sequence[ChangeRow], params: Sequence[Mapping[str, Any]]) -> dict[int, Any]:
        keys = ctx.lasting.get((touches, id(params)))
        if keys is None or keys[0] is not params:  # the same list every step: its groups are built once, at the start
            groups = _by_meeting(touches, params)
            titles = tuple(dict.fromkeys(title for _, title, _ in groups))
            kind = _KIND.get(touches, like)
            keys = ctx.lasting[(touches, id(params))] = (params, groups, titles, kind, (kind, titles))
        if not ctx.lasting.get("meeting_calendar"):  # the log only grows: once true, true for the episode
            if ctx.memo.get("meeting_no_calendar"):  # a step's answer: a wait asks it once, not once a group
                return {}
            if not ctx.changed_rows("events") and not ctx.changed_rows("event_attendees"):
                ctx.memo["meeting_no_calendar"] = True
                return {}  # no event or invitation this episode: no meeting, and no row a hook could answer yes to
            ctx.lasting["meeting_calendar"] = True
        step = _step_of(ctx, rows)
        calendar = step[1]
        left = rows
        # the step's answer for the function's kind and titles, looked up before it is worked out; not asked of a
        # step of new events and invitations alone (a booking), none of which it leaves out
        if keys[3] and (calendar is None or not calendar[2] or not rows):
            kept: Sequence[ChangeRow] | None = step[2].get(keys[4])
            if kept is None:
                kept = step[2][keys[4]] = _rows_left(ctx, keys[3], rows, keys[2])
            if not kept:
                return {}  # every row is one the hook answers no to whatever the meeting
            left = kept
        if calendar is None:
            calendar = step[1] = _calendar_rows(rows)
        any_calendar, _, inserts, booked = calendar
        found: list[int] = []
        several = False  # more than one meeting touched: their positions are sorted (checks are decided in order)
        for meeting, title, positions in keys[1]:
            hit: bool | None = None
            if any_calendar:
                known = booked.get(title) or _booked(ctx, title, calendar)
                if known[1]:
                    hit = True
                elif inserts and (own or not known[0]):
                    hit = False  # only new events and invitations, none the meeting's (or there is none)
            elif not _meetings(ctx, title):
                hit = False
            if hit is None:  # the hook itself, asked once per meeting and row set for the functions that share it
                hit = step[2].get(meeting)
                if hit is None:
                    hit = step[2][meeting] = _touched(ctx, touches, left, params[positions[0]])
            if hit:
                several = bool(found)
                found += positions
        out: dict[int, Any] = dict.fromkeys(sorted(found) if several else found)
        if decide is not None:  # ``decide_step``: in this frame, not a wrapper's (a frame fewer a function a step)
            for pos in out:
                try:
                    out[pos] = decide(ctx, bare=True, **params[pos])
                except Exception:
                    out[pos] = None
        return out

    return on_step


def _rows_left(ctx: GradingContext, kind: str, rows: Sequence[ChangeRow], titles: Sequence[str]) -> Sequence[ChangeRow]:
    """The step's rows a hook of ``kind`` may answer yes to for some meeting of ``titles`` (``rows`` if all may).

    Left out, as every such hook answers them for every meeting: a new channel; a coworker's post (only the
    agent's asks, escalations and announcements count); for ``_agreed_touches`` a coworker's memory written
    after the latest booking (answers after it do not count) or while nothing is booked; for
    ``_invitee_touches`` an answer to an invitation, for ``_own_touches`` one that does not change whether its
    invitee declined, and for the double-booking hooks one that leaves the invitee as busy as before and still
    a participant. Why: a ``wait`` lets coworkers reply and accept
    invitations, and each of those rows asked every hook of every booked meeting.
    """
    agreed, invitee, clash, own = kind == "agreed", kind == "invitee", kind == "clash", kind == "own"
    actor = ctx.actor_id
    latest: Any = False  # the latest booking of ``titles`` (None: none booked), looked up at the first memory row
    left: list[ChangeRow] = []
    for r in rows:
        table, c = r.table, r.changes
        if r.op == "insert":
            if table == "channels" or (table == "posts" and c.get("author_id") != actor):
                continue
            if agreed and table == "npc_memory":
                if latest is False:
                    latest = _latest_booking(ctx, titles)
                if latest is None:
                    continue
                when = c.get("at")
                if type(when) is str:  # ``_logged_time`` inlined: a frame fewer a coworker's memory in a wait
                    when = datetime.fromisoformat(when)
                    if (when if when.tzinfo is not None else when.replace(tzinfo=UTC)) > latest:
                        continue
        elif r.op == "update" and table == "event_attendees":
            if (invitee and _ANSWER.issuperset(c)) or (own and _still_going(c)):
                continue
            if clash and _HARMLESS["event_attendees"].issuperset(c):
                old, new = c.get("rsvp", ("", ""))
                if (old in _COMMITTED) == (new in _COMMITTED) and (old == "declined") == (new == "declined"):
                    continue
        left.append(r)
    return rows if len(left) == len(rows) else left


_ANSWER = frozenset(("rsvp", "optional"))


def _latest_booking(ctx: GradingContext, titles: Sequence[str]) -> datetime | None:
    """When the latest of the meetings of ``titles`` the agreement checks read was booked (None: none is)."""
    latest = None
    for title in titles:
        found = _meetings(ctx, title)
        if found and (latest is None or found[-1].created_at > latest):
            latest = found[-1].created_at
    return latest


def _by_meeting(
    touches: Callable[..., bool], params: Sequence[Mapping[str, Any]]
) -> list[tuple[tuple[Any, ...], str, list[int]]]:
    """A function's checks grouped by meeting (hook, title, attendees): its title and the checks' positions.

    Why: every hook reads of a check's params only the meeting's title and attendees, so ``touch_step`` asks
    once per meeting, not once per check (1:1s have two per-person checks a meeting of each such function).
    """
    groups: dict[tuple[Any, ...], tuple[tuple[Any, ...], str, list[int]]] = {}
    for pos, kw in enumerate(params):
        meeting = (touches, kw["title_pattern"], tuple(kw.get("attendees") or ()))
        groups.setdefault(meeting, (meeting, kw["title_pattern"], []))[2].append(pos)
    return list(groups.values())


Verdict = tuple[float, str, dict[str, Any]]
"""A check's (score, evidence, details), as ``graders.progress`` keeps it and an ``on_step`` evaluator gives it."""


def verdict(passed: bool, evidence: str, event_id: int | None = None) -> Verdict:
    """What ``CheckOutcome.of(passed, evidence[, event_id=...])`` says, as a tuple (no dataclass to build)."""
    return (1.0 if passed else 0.0, evidence, {} if event_id is None else {"event_id": event_id})


def outcome(found: Verdict | float) -> CheckOutcome:
    """A decided verdict as the check function's outcome (the function and its ``on_step`` share the decision).

    A check function decides with ``bare=False``, so ``found`` is a verdict; a bare score has no evidence to give.
    """
    if isinstance(found, float):
        raise TypeError("a check function's decision carries its evidence (bare=False)")
    return CheckOutcome(score=found[0], evidence=found[1], details=found[2])


def decide_step(
    touches: Callable[..., bool], decide: Callable[..., Verdict | float], like: str | None = None
) -> Callable[..., dict[int, Any]]:
    """``touch_step`` that decides each check a row touches with ``decide`` instead of re-running it.

    Why: a booking touches every check of its meeting, and each re-run paid the check machinery (the call
    chain, the outcome dataclass, the copy of its details) on top of the verdict. ``decide`` is the check
    function's own decision (the function returns ``outcome(decide(...))``), so both give the same verdict by
    construction; it shares the step's lookups (the meeting, its invitations, the calendar) with the other
    checks through ``ctx.kept``/``ctx.memo``. One that raises leaves its check to be re-run (exactness first).

    Asked with ``bare=True`` it gives the score alone, from the same reads and the same tests, stopping before any
    evidence is written (the meeting's head, each person's local time, the listing of clashes): the score is
    all an episode reads, and the check function writes the text when the results are asked for.
    """
    return touch_step(touches, decide, like)


def _booked(ctx: GradingContext, title_pattern: str, calendar: _Rows) -> tuple[bool, bool]:
    """(is the meeting booked, is its event among the step's calendar rows), once per title a step.

    Why: every check function of a meeting (six to nine, by hook) asked it for each meeting of the rubric (one
    per report in 1:1s), though neither answer depends on the hook; kept in the step's ``_calendar_rows``.
    """
    found = calendar[3].get(title_pattern)
    if found is None:
        try:
            meetings = _meetings(ctx, title_pattern)
            named = calendar[1]
            mine = False
            for m in meetings:  # a loop, not ``any`` over a generator: a frame fewer per title and row set
                if m.id in named:
                    mine = True
                    break
            found = (bool(meetings), mine)
        except Exception:  # the hooks would raise too: every check re-runs, exactness first
            found = (True, True)
        calendar[3][title_pattern] = found
    return found


_CALENDAR = frozenset(("events", "event_attendees"))
_OWN_HOOKS = frozenset((_own_touches, _invitee_touches, _agreed_touches))
"""The hooks that answer a new event or invitation by whether it is the meeting's (no other event matters)."""


_Rows = tuple[bool, set[Any], bool, dict[str, tuple[bool, bool]]]
"""``_calendar_rows``' answer: a calendar row?, the events named, all new?, and ``_booked``'s answers by title."""


def _step_of(ctx: GradingContext, rows: Sequence[ChangeRow]) -> list[Any]:
    """The step's answers about one row set, shared by the meeting functions given it: [rows, calendar, answers].

    The calendar answer is ``_calendar_rows``' (None: not worked out yet); the answers are ``_rows_left``'s by
    (kind, titles) and ``_touched``'s by meeting. Why by the list's identity and not by its rows' seqs: the
    framework hands the functions reading the same tables the same list in a step, and a tuple of seqs built
    and hashed for each function's every lookup cost more than the answers it found. The entry holds the list,
    so its id names no other list while the step's answers are kept (``ctx.memo``, emptied every step). A row set
    starting with a new event (a booking) has its calendar answer worked out at once: a booking's rows are all
    new events and invitations, which no kind leaves out, so ``_rows_left`` is not asked of them (a wait's rows,
    answers to invitations among them, are asked first: most leave nothing, and need no calendar answer).
    """
    steps: dict[int, list[Any]] | None = ctx.memo.get("meeting_steps")
    if steps is None:
        steps = ctx.memo["meeting_steps"] = {}
    found = steps.get(id(rows))
    if found is None or found[0] is not rows:
        booking = bool(rows) and rows[0].table == "events" and rows[0].op == "insert"
        found = steps[id(rows)] = [rows, _calendar_rows(rows) if booking else None, {}]
    return found


def _calendar_rows(rows: Sequence[ChangeRow]) -> _Rows:
    """What every hook answers alike about a step's rows, once a row set: (a calendar row?, events named, all new?).

    The events named are those of an event row (any change) or of a new invitation: a meeting among them is
    touched whatever the hook. All new: every row is a new event or invitation.
    """
    named: set[Any] = set()
    calendar, inserts = False, True
    for r in rows:
        if r.table == "events":
            calendar = True
            named.add(r.key[0])
            inserts = inserts and r.op == "insert"
        elif r.table == "event_attendees":
            calendar = True
            if r.op == "insert":
                named.add(r.changes.get("event_id"))
            else:
                inserts = False
        else:
            inserts = False
    return (calendar, named, inserts, {})


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


def _in_hours(
    ctx: GradingContext, title_pattern: str, start_before: datetime | None = None, *, bare: bool = False
) -> Verdict | float:
    """``meeting_in_working_hours``'s verdict (also its ``on_step``'s; ``bare``: the score alone)."""
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        return 0.0 if bare else verdict(False, head)
    people = _people(ctx, [m.organizer_id, *_invitees(ctx, m.id)[0]])
    start, end = m.start_at, m.end_at
    if bare:
        for p in people.values():
            if not works(p, start, end):
                return 0.0
        return 0.0 if start_before is not None and start >= start_before else 1.0
    outside = []
    for p in people.values():  # a loop, not a comprehension (a frame)
        if not works(p, start, end):
            outside.append(f"@{p.username} ({local_time(start, p.timezone)} {p.timezone})")
    late = start_before is not None and start >= start_before
    problems = [f"outside working hours of {listing(outside, 5)}"] * bool(outside)
    problems += [f"starts after the deadline {start_before.isoformat() if start_before else ''}"] * late
    if problems:
        return verdict(False, f"{head}: {'; '.join(problems)}", m.id)
    return verdict(True, f"{head}: inside working hours of all {len(people)} participants", m.id)


@check_fn(
    "meeting_in_working_hours",
    reads=("events", "event_attendees", "employees"),
    touches=_invitee_touches,
    on_step=decide_step(_invitee_touches, _in_hours),
)
def meeting_in_working_hours(
    ctx: GradingContext, title_pattern: Regex, start_before: AwareDatetime | None = None
) -> CheckOutcome:
    """The meeting lies inside every participant's working hours (own zone and workdays), before the deadline.

    Participants are the organiser and every invitee, declined or not: the agent chose the time, and an NPC
    declining a slot outside its hours must not turn that slot into a pass.
    """
    return outcome(_in_hours(ctx, title_pattern, start_before))


def _invited(
    ctx: GradingContext, title_pattern: str, attendees: Sequence[str], *, bare: bool = False
) -> Verdict | float:
    """``meeting_attendees``'s verdict (also its ``on_step``'s; ``bare``: the score alone)."""
    if not ctx.lasting.get("meeting_people", _NONE).issuperset(attendees):  # noted once: no call after that
        _expect(ctx, attendees)
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        return 0.0 if bare else verdict(False, head)
    invited = _invitees(ctx, m.id)[2]
    if bare:
        return 1.0 if invited.issuperset(attendees) else 0.0
    missing = [a for a in attendees if a not in invited] if not invited.issuperset(attendees) else []
    if missing:
        return verdict(False, f"{head}: not invited: {', '.join(map(_AT, missing))}", m.id)
    return verdict(True, f"{head}: invites {', '.join(map(_AT, attendees))}", m.id)


_AT = "@".__add__
"""``@name`` of a name: mapped over the names with no Python frame (a generator's resumes cost one a name)."""


@check_fn(
    "meeting_attendees",
    reads=("events", "event_attendees", "employees"),
    touches=_invitee_touches,
    on_step=decide_step(_invitee_touches, _invited),
)
def meeting_attendees(ctx: GradingContext, title_pattern: Regex, attendees: Sequence[str]) -> CheckOutcome:
    """Every named coworker is invited to the meeting (any answer: an invitation is what the agent controls)."""
    return outcome(_invited(ctx, title_pattern, attendees))


def _clash_touches(ctx: GradingContext, row: ChangeRow, title_pattern: str, **kwargs: Any) -> bool:
    """``_meeting_touches`` for the double-booking check, which reads other events only at the meeting's time.

    Another new event, or an invitation to one, matters only if it is live and overlaps the meeting: onboarding
    books its meetings one after another on different days, and each booking re-ran every meeting's check.
    """
    if row.op == "insert" and row.table in ("events", "event_attendees"):
        event = row.key[0] if row.table == "events" else row.changes.get("event_id")
        key = ("clash_touch", title_pattern, event)  # the step's answer: ``_free_touches`` asks the same of it
        hit: bool | None = ctx.memo.get(key)
        if hit is None:
            hit = ctx.memo[key] = _clashes_with(ctx, title_pattern, event)
        return hit
    if row.table == "event_attendees" and row.op == "update" and _HARMLESS["event_attendees"].issuperset(row.changes):
        old, new = row.changes.get("rsvp", ("", ""))
        if (old in _COMMITTED) == (new in _COMMITTED) and (old == "declined") == (new == "declined"):
            return False  # needs_action -> accepted: as busy as before, and still a participant
    return _meeting_touches(ctx, row, title_pattern, **kwargs)


def _clashes_with(ctx: GradingContext, title_pattern: str, event: Any) -> bool:
    """Whether a new event (or an invitation to it) may move the double-booking verdicts of the meeting."""
    found = _meetings(ctx, title_pattern)
    if not isinstance(event, int):
        return True
    for m in found:  # a loop, not ``any`` over a generator: no frame a meeting
        if m.id == event:
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


def _no_clash(ctx: GradingContext, title_pattern: str, *, bare: bool = False) -> Verdict | float:
    """``meeting_no_double_booking``'s verdict (also its ``on_step``'s; ``bare``: the score alone)."""
    found = _meetings(ctx, title_pattern)
    if not found:
        Calendar.of(ctx).preload(ctx)
        return 0.0 if bare else verdict(False, f"no live meeting organised by the agent matches /{title_pattern}/")
    if len(found) > 1:
        if bare:
            return 0.0
        shown = listing([f"#{m.id} at {m.start_at.isoformat()}" for m in found])
        return verdict(False, f"{len(found)} live meetings match /{title_pattern}/ (book one): {shown}")
    m = found[0]
    org = m.organizer_id
    ids = [org]  # the participants: the organiser, then every invitee who has not declined (in username order)
    going = []
    for a in _attendees(ctx, m.id):  # loops and C calls, not comprehensions (a frame each)
        if a.rsvp != "declined" and a.employee_id != org:
            ids.append(a.employee_id)
            going.append(a)
    busy, room = Calendar.of(ctx).clashes(ctx, sorted(set(ids)), m.room_id, (m.start_at, m.end_at))
    if bare:  # a clash is an event in the window other than the meeting (what ``_labels`` lists); no name read
        mid = m.id
        for emp in ids:
            if len(busy[emp]) > (mid in busy[emp]):
                return 0.0
        return 0.0 if len(room) > (mid in room) else 1.0
    found_org = _people(ctx, [org]).get(org)
    who = [(org, found_org.username if found_org is not None else "?")]
    for a in going:
        who.append((a.employee_id, a.username))
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
        return verdict(False, f"{head}: {'; '.join(problems)}", m.id)
    return verdict(True, f"{head}: no clash for {len(who)} participants or the room", m.id)


_KIND = {_own_touches: "own", _invitee_touches: "invitee", _agreed_touches: "agreed", _clash_touches: "clash"}
"""The kind of rows each hook answers no to whatever the meeting (``_rows_left``), read when progress starts."""


@check_fn(
    "meeting_no_double_booking",
    reads=("events", "event_attendees", "employees"),
    touches=_clash_touches,
    on_step=decide_step(_clash_touches, _no_clash),
)
def meeting_no_double_booking(ctx: GradingContext, title_pattern: Regex) -> CheckOutcome:
    """Exactly one live meeting, and neither a participant nor its room is committed elsewhere at that time.

    A participant's commitments are what the calendar counts as busy: events they organise, or were invited
    to and have not declined. Recurring events are expanded.
    """
    return outcome(_no_clash(ctx, title_pattern))


def _in_room(ctx: GradingContext, title_pattern: str, location: str, *, bare: bool = False) -> Verdict | float:
    """``meeting_room``'s verdict (also its ``on_step``'s; ``bare``: the score alone)."""
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        _room(ctx, None)  # every room read now, before the booking
        return 0.0 if bare else verdict(False, head)
    if m.room_id is None:
        return 0.0 if bare else verdict(False, f"{head}: no room booked", m.id)
    name, capacity, where = _room(ctx, m.room_id)
    people, org = 1, m.organizer_id
    for a in _attendees(ctx, m.id):  # a loop, not ``sum`` over a generator: no frame an invitee
        if a.rsvp != "declined" and a.employee_id != org:
            people += 1
    if bare:
        return 1.0 if where.lower() == location.lower() and capacity >= people else 0.0
    problems = [f"it is in {where}, not {location}"] * (where.lower() != location.lower())
    problems += [f"it holds {capacity}, not {people}"] * (capacity < people)
    text = f"{head} in {name} ({where}, {capacity} seats)"
    return verdict(not problems, text + (f": {'; '.join(problems)}" if problems else ""), m.id)


@check_fn(
    "meeting_room",
    reads=("events", "event_attendees", "employees", "rooms", "locations"),
    touches=_own_touches,
    on_step=decide_step(_own_touches, _in_room),
)
def meeting_room(ctx: GradingContext, title_pattern: Regex, location: str) -> CheckOutcome:
    """The meeting has a room in ``location`` that holds every participant who has not declined."""
    return outcome(_in_room(ctx, title_pattern, location))


def _announced(
    ctx: GradingContext, title_pattern: str, channel: str, key: str, *, bare: bool = False
) -> Verdict | float:
    """``meeting_announced``'s verdict (also its ``on_step``'s; ``bare``: the score alone).

    The score alone is read from the agent's logged posts (``announce_score``) while they tell, so the booking
    step does not fold the asking phase's posts to find the announcement is not there yet.
    """
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        know_channels(ctx, [channel.lstrip("~#")])  # its id read before the booking, not with the announcement
        return 0.0 if bare else verdict(False, head)
    if bare:
        told = announce_score(ctx, m.start_at, channel, key)
        if told is not None:
            return told
    posts = new_posts(ctx)
    mine = [p for p in posts if p.channel == channel.lstrip("~#") and p.author_id == ctx.actor_id]
    key_rx = _key_rx(key)
    for p in mine:
        if key_rx.search(p.message) and m.start_at in _instants(p.message):
            if bare:
                return 1.0
            return verdict(True, f"post #{p.id} in ~{p.channel} names {key} and {m.start_at.isoformat()}")
    if bare:
        return 0.0
    shown = listing([f"#{p.id} {snippet(p.message)}" for p in mine]) or "none"
    return verdict(False, f"no new post by the agent in ~{channel} names {key} and {head}; posts: {shown}")


@check_fn(
    "meeting_announced",
    reads=("events", "posts", "channels"),
    touches=_own_touches,
    on_step=decide_step(_own_touches, _announced),
)
def meeting_announced(ctx: GradingContext, title_pattern: Regex, channel: str, key: str) -> CheckOutcome:
    """The agent posted in ``channel`` a live message naming ``key`` and the meeting's start (ISO 8601 with offset).

    The time is compared as an instant, so ``15:00Z`` and ``16:00+01:00`` are the same announcement.
    """
    return outcome(_announced(ctx, title_pattern, channel, key))


def _answers(ctx: GradingContext) -> dict[int, list[tuple[Any, datetime | None, str]]]:
    """Each coworker's answers (``did`` memories) in order, with the instant and the word each agreement gave.

    Why kept per coworker and not per meeting: it was rebuilt over every memory at each booking (a new event
    is a new meeting), though only a memory row changes it; a booking's agreement check now reads the few
    answers of its coworkers, each parsed once (``told``). Read from the logged ``did`` rows alone while every
    memory was inserted whole (``meeting_words.answers_from_log``); else from ``memories``, brought up to date
    from the rows past the last list's end while it only appended (``memory_epoch``).
    """

    def build() -> dict[int, list[tuple[Any, datetime | None, str]]]:
        logged = answers_from_log(ctx, told)  # the answers alone, while the log tells (every memory inserted)
        if logged is not None:
            return logged
        found = memories(ctx)
        epoch = memory_epoch(ctx)
        kept = ctx.lasting.get("meeting_answers")
        if kept is not None and kept[0] == epoch and kept[1] <= len(found):
            did: dict[int, list[tuple[Any, datetime | None, str]]] = kept[2]
            new = found[kept[1] :]
        else:
            did, new = {}, found
        for r in new:
            if r.kind == "did":
                did.setdefault(r.employee_id, []).append((r, *told(r)))
        ctx.lasting["meeting_answers"] = (epoch, len(found), did)
        return did

    return ctx.kept("meeting_answers", ("npc_memory",), build)


def _agreed(
    ctx: GradingContext, title_pattern: str, attendees: Sequence[str], answer_minutes: int = 180, *, bare: bool = False
) -> Verdict | float:
    """``meeting_agreed``'s verdict (also its ``on_step``'s; ``bare``: the score alone, no note written)."""
    if not ctx.lasting.get("meeting_people", _NONE).issuperset(attendees):  # noted once: no call after that
        _expect(ctx, attendees)
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        _dm_channels(ctx, attendees)  # read before the booking: the hook asks after it (the announcement)
        return 0.0 if bare else verdict(False, head)
    ids, unknown = _resolve(ctx, attendees)
    covered, notes = 0, [f"unknown employee {u!r}" for u in unknown] if unknown else []
    posts: list[Any] | None = None
    agent_name = ""
    did = _answers(ctx)
    start, booked = m.start_at, m.created_at
    for name, emp in ids.items():
        mem: list[Any] = []  # the answers given before the booking, and what each said of the start
        said: list[str | None] = []
        for row, when, word in did.get(emp, ()):  # one loop, not three comprehensions (a frame each)
            if row.at <= booked:
                mem.append(row)
                said.append(word if when is not None and when == start else None)
        if "yes" in said and "no" not in said:
            covered += 1
            if not bare:
                notes.append(f"@{name} agreed at {mem[said.index('yes')].at:%H:%M}")
            continue
        if "no" in said:  # rule 3: a "no" means another time, and neither a later yes nor escalation undoes it
            if not bare:
                notes.append(f"@{name} said no to that time at {mem[said.index('no')].at:%H:%M}, yet it was booked")
            continue
        if posts is None:  # read only for someone who did not agree (the posts fold is most of a booking's cost)
            posts = new_posts(ctx)
            agent_name = p.username if (p := _people(ctx, [ctx.actor_id]).get(ctx.actor_id)) else ""
        person = _people(ctx, [emp])[emp]  # only here: someone who agreed needs no record (a booking's usual case)
        why = escalation(ctx, person, posts, mem, m.start_at, m.created_at, agent_name, answer_minutes)
        covered += why.startswith("escalated")
        notes.append(f"@{name} {why}")
    total = len(attendees)
    if bare:
        return covered / total if total else 0.0
    return (
        covered / total if total else 0.0,
        f"{head}: {covered} of {total} covered: {listing(notes, 5)}",
        {"event_id": m.id},
    )


@check_fn(
    "meeting_agreed",
    reads=("events", "employees", "posts", "channels", "npc_memory"),
    touches=_agreed_touches,
    on_step=decide_step(_agreed_touches, _agreed),
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
    return outcome(_agreed(ctx, title_pattern, attendees, answer_minutes))

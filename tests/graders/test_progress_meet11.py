"""The meeting checks' round-ten paths (branch meet11) give what a full grade gives, after every step (issue 14).

Round ten cut what a booking touches: ``checks_meetings.touch_step`` keeps a step's answers by the row list the
framework hands it (``_step_of``, no tuple of seqs built and hashed per function) and works out a booking's
calendar answer first, so ``_rows_left`` is not asked of a step of new events and invitations; the bare agreement
and double-booking verdicts read no employee record they do not need; a meeting's attendees and invitees are
built in one kept pass (``_invitation_view``); and the kept calendar builds a new event's entry once for its
organiser, invitees and room (``Calendar._fold``). Each test plays its steps through
``test_progress_meet5._play``, which compares every verdict, its evidence and the value with a full grade after
every step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from graders import checks_meetings, meeting_log
from graders.base import GradingContext
from graders.changes import ChangeRow
from tests.graders.test_progress_meet import CHECKS, MEET
from tests.graders.test_progress_meet4 import PERSON
from tests.graders.test_progress_meet5 import _play
from tests.graders.test_progress_meet7 import _calendar, _calls, _progress
from worlds.rawsql import Sql

RETRO: list[tuple[str, str, dict[str, Any]]] = [
    ("retro-hours", "meeting_in_working_hours", {"title_pattern": "Retro"}),
    ("retro-invited", "meeting_attendees", {"title_pattern": "Retro", "attendees": ["carol"]}),
    ("retro-agreed", "meeting_agreed", {"title_pattern": "Retro", "attendees": ["carol"]}),
    ("retro-free-carol", "meeting_person_free", {"title_pattern": "Retro", "username": "carol"}),
    ("retro-room", "meeting_room", {"title_pattern": "Retro", "location": "HQ"}),
]


def _checks(*groups: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """The rubric's checks (id, function, params), the earlier rounds' lists and this one's together."""
    return [check for group in groups for check in group]


_DM = {"team_id": 1, "display_name": "", "type": "D", "purpose": "", "header": "", "creator_id": 1}
_POST = {"root_id": None, "edited_at": None, "deleted_at": None, "is_pinned": False}


def test_bookings_answers_moves_and_cancellations_agree_with_a_full_grade(world: Any) -> None:
    rubric, progress = _progress(world, _checks(CHECKS, PERSON, RETRO))
    at = [""]
    sql = Sql.of(world.session)
    said, book = _calendar(sql, world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        said(2, MEET, "yes")
        yield "bob says yes"
        world.later()
        ask = sql.insert("channels", {**_DM, "name": "1__3", "created_at": world.clock.now()})
        sql.insert(
            "posts",
            {
                **_POST,
                "created_at": world.clock.now(),
                "channel_id": ask,
                "author_id": 1,
                "message": "Does 14:00 Tuesday suit you?",
            },
        )
        yield "the agent asks carol"
        world.later()
        pushed = {"employee_id": 3, "at": world.clock.now(), "turn": 1, "kind": "did", "subject": "alice"}
        sql.insert("npc_memory", {**pushed, "data": {"said": "not this week"}})
        yield "carol pushes back"
        world.later()
        boss = sql.insert("channels", {**_DM, "name": "1__1", "created_at": world.clock.now()})  # her manager: alice
        sql.insert(
            "posts",
            {
                **_POST,
                "created_at": world.clock.now(),
                "channel_id": boss,
                "author_id": 1,
                "message": "@carol pushed back on the sync",
            },
        )
        yield "the agent escalates to carol's manager"  # the agreement reads her record, and only hers
        world.later()
        sync = book("Sync ENG-1", MEET, 2, 3, room=1)
        yield "the sync booked in a room"  # a step starting with its event: its calendar answer first
        world.later()
        said(3, MEET + timedelta(minutes=10), "yes")
        world.later()
        retro = book("Retro", MEET + timedelta(minutes=10), 3, room=1, rule="FREQ=WEEKLY")
        yield "a weekly retro booked over the sync"  # entered in the sync's kept windows: carol, alice, the room
        world.later()
        sql.update("event_attendees", 4, {"rsvp": ("needs_action", "accepted")})  # bob accepts the sync
        said(2, MEET, "yes")
        yield "bob accepts and repeats himself"  # a step starting with an answer: no calendar answer first
        world.later()
        sql.update("event_attendees", 5, {"rsvp": ("needs_action", "declined")})  # carol declines the sync
        yield "carol declines the sync"
        world.later()
        sql.update("events", retro, {"cancelled": (False, True)})
        sql.update("event_attendees", 4, {"rsvp": ("accepted", "declined")})
        yield "the retro cancelled, bob declines"  # an event update first, then an answer: not all new
        world.later()
        book("Lunch", MEET + timedelta(minutes=5))
        yield "alice books her lunch over the sync"  # the organiser alone clashes (both invitees declined)
        world.later()
        sql.update("event_attendees", 3, {"event_id": (3, sync)})  # dave's planning invitation moved to the sync
        yield "an old invitation moved to the sync"  # the invitations fold cannot tell: the view reads the table
        world.later()
        book("Sync ENG-1", MEET + timedelta(days=1), 2)
        yield "a second sync booked"

    evidence = _play(world, rubric, steps(), progress, at)
    assert "@bob agreed at" in evidence["the sync booked in a room"]["agreed"], evidence
    assert "@carol escalated after pushing back" in evidence["the sync booked in a room"]["agreed"], evidence
    assert "@carol is also in" in evidence["a weekly retro booked over the sync"]["clash"], evidence
    assert "the room is also booked" in evidence["a weekly retro booked over the sync"]["clash"], evidence
    assert "declined" in evidence["carol declines the sync"]["free-carol"], evidence
    assert "@alice is also in" in evidence["alice books her lunch over the sync"]["clash"], evidence
    assert evidence["a second sync booked"]["clash"].startswith("2 live meetings"), evidence


def test_a_step_answer_is_kept_for_its_row_list_and_never_handed_to_another(world: Any) -> None:
    ctx = GradingContext(session=world.session, trace=[], actor_id=1)
    event = ChangeRow(1, "events", (9,), "insert", {"title": "Sync"})
    answer = ChangeRow(2, "event_attendees", (4,), "update", {"rsvp": ("needs_action", "accepted")})
    booking, wait = [event], [answer]
    first = checks_meetings._step_of(ctx, booking)
    assert first[0] is booking and first[1] is not None and first[1][1] == {9}  # its calendar answer at once
    assert checks_meetings._step_of(ctx, booking) is first  # the same list: the same answers
    assert checks_meetings._step_of(ctx, wait)[1] is None  # an answer first: worked out only if asked
    moved = [ChangeRow(3, "events", (9,), "update", {"cancelled": (False, True)})]
    assert checks_meetings._step_of(ctx, moved)[1] is None  # nor a step starting with an event's update
    # a list another list's entry is filed under (an id reused once the first is gone): answers of its own
    steps = ctx.memo["meeting_steps"]
    other = [answer]
    steps[id(other)] = first
    fresh = checks_meetings._step_of(ctx, other)
    assert fresh is not first and fresh[0] is other and fresh[1] is None, fresh
    assert checks_meetings._step_of(ctx, []) [0] == []  # fmt: skip


def test_a_booking_enters_its_event_once_for_everyone_it_commits(world: Any, monkeypatch: Any) -> None:
    rubric, progress = _progress(world, _checks(CHECKS, PERSON, RETRO))
    at = [""]
    labels: Counter[str] = Counter()  # step -> calendar entries built by the progress score
    real = meeting_log._label

    def label(event_id: int, title: str) -> str:
        if at[0] != "full grade":
            labels[at[0]] += 1
        return real(event_id, title)

    monkeypatch.setattr(meeting_log, "_label", label)
    sql = Sql.of(world.session)
    said, book = _calendar(sql, world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        said(2, MEET, "yes")
        said(3, MEET, "yes")
        yield "bob and carol say yes"
        world.later()
        book("Sync ENG-1", MEET, 2, 3, room=1)
        yield "booked"  # alice's, bob's, carol's and the room's events read (an entry each)
        world.later()
        book("Retro", MEET - timedelta(minutes=15), 2, 3, room=1)
        yield "the retro booked over it"  # folded into what is kept for the four, and into the sync's window

    evidence = _play(world, rubric, steps(), progress, at)
    assert "@bob is also in" in evidence["the retro booked over it"]["clash"], evidence
    assert "the room is also booked" in evidence["the retro booked over it"]["clash"], evidence
    # alice, bob, carol and the room are kept: one entry for the retro, not one each (four)
    assert labels["the retro booked over it"] == 1, labels


def test_a_booking_reads_the_invitations_once_for_attendees_and_invitees(world: Any, monkeypatch: Any) -> None:
    rubric, progress = _progress(world, _checks(CHECKS, PERSON))
    at = [""]
    built = _calls(monkeypatch, "invitations", progress, at)  # step -> invitation folds asked by the meetings' view
    sql = Sql.of(world.session)
    said, book = _calendar(sql, world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        said(2, MEET, "yes")
        yield "bob says yes"
        world.later()
        book("Sync ENG-1", MEET, 2, 3)
        yield "booked"
        world.later()
        sql.update("event_attendees", 5, {"rsvp": ("needs_action", "declined")})
        yield "carol declines"

    evidence = _play(world, rubric, steps(), progress, at)
    assert "declined" in evidence["carol declines"]["free-carol"], evidence
    # one kept view a step an invitation changed: the attendees (room, double booking) and the invitees (hours,
    # invited, per person) are filed in the same pass
    assert built["booked"] == 1 and built["carol declines"] == 1, built

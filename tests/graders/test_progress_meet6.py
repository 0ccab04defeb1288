"""The agreement check reads each coworker's answers from one index kept until a memory changes.

``checks_meetings._answers`` files the NPCs' ``did`` memories by coworker once (with each agreement's instant
and word parsed), and each meeting keeps only the answers given before it was booked. Two meetings booked at
different times share the index, so the test books one, lets an answer arrive, books a second, and checks
that the answer counts for the second meeting only, comparing every verdict with a full grade after each step
and counting the index's builds (a new memory rebuilds it when next asked; a booking alone does not).

``touch_step`` asks whether a meeting is booked and whether the step's rows name its event once per title and
row set (``_booked``), not once per check function: the second test counts those lookups at a booking.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from graders import checks_meetings
from graders.base import Check, GradingContext, Rubric
from graders.progress import Progress
from tests.graders.test_progress_meet import CHECKS as MEET_CHECKS
from tests.graders.test_progress_meet import MEET, SETUP
from tests.graders.test_progress_meet4 import PERSON, _asking
from tests.graders.test_progress_meet5 import _play
from tests.graders.test_progress_meet7 import _calls
from worlds.rawsql import Sql
from worlds.rows import insert_rows

RETRO = MEET + timedelta(days=1)
CHECKS = [
    ("agreed-sync", "meeting_agreed", {"title_pattern": "Sync", "attendees": ["bob", "carol"]}),
    ("agreed-retro", "meeting_agreed", {"title_pattern": "Retro", "attendees": ["carol"]}),
]


def _steps(sql: Sql, world: Any) -> Iterator[str]:
    """Answers and bookings in turn (the name says what the step did)."""

    def said(who: int, start: Any, word: str) -> None:
        fact = {"intent": "agreement", "subject": start.isoformat(), "said": word}
        memory = {"employee_id": who, "at": world.clock.now(), "turn": 1, "kind": "did", "subject": "alice"}
        sql.insert("npc_memory", {**memory, "data": {"fact": fact}})

    def book(title: str, start: Any, *invited: int) -> None:
        ev = {"description": "", "rrule": None, "until": None, "room_id": None, "cancelled": False}
        end = start + timedelta(minutes=30)
        made = {"organizer_id": 1, "title": title, "start_at": start, "end_at": end, "created_at": world.clock.now()}
        event = sql.insert("events", {**ev, **made})
        for who in invited:
            invite = {"event_id": event, "employee_id": who, "rsvp": "needs_action", "optional": False}
            sql.insert("event_attendees", invite)

    yield "nothing yet"
    said(2, MEET, "yes")
    yield "bob says yes to the sync"
    world.later()
    book("Sync ENG-1", MEET, 2, 3)
    yield "the sync booked"
    world.later()
    said(3, MEET, "yes")
    said(3, RETRO, "yes")
    yield "carol says yes to both times, after the sync was booked"
    world.later()
    book("Retro ENG-2", RETRO, 3)
    yield "the retro booked"
    world.later()
    book("Retro ENG-2 again", RETRO + timedelta(hours=1), 3)
    yield "the retro booked again an hour later"


def test_an_answer_counts_only_for_a_meeting_booked_after_it(world, monkeypatch):
    insert_rows(world.session.connection(), SETUP)
    checks = [Check(id=i, description="d", fn=fn, params=p) for i, fn, p in CHECKS]
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    at = [""]
    # step -> builds of the answers index by the progress score (its build reads the logged answers first)
    builds = _calls(monkeypatch, "answers_from_log", progress, at)
    evidence = _play(world, rubric, _steps(Sql.of(world.session), world), progress, at)
    sync = evidence["carol says yes to both times, after the sync was booked"]["agreed-sync"]
    assert "@bob agreed at" in sync and "@carol agreed" not in sync and "1 of 2 covered" in sync, sync
    retro = evidence["the retro booked"]
    assert "@carol agreed at" in retro["agreed-retro"] and "1 of 1 covered" in retro["agreed-retro"], retro
    assert "1 of 2 covered" in retro["agreed-sync"], retro  # her later yes still does not count for the sync
    again = evidence["the retro booked again an hour later"]["agreed-retro"]
    assert "0 of 1 covered" in again, again  # her yes was to the first retro's time
    # built when a booking first asks after a memory changed (the sync; the retro, after her answers), and
    # not for the third booking: no memory changed since, and the index is not a meeting's
    assert builds == {"the sync booked": 1, "the retro booked": 1}, builds


def test_a_booking_asks_each_meeting_once_per_row_set_not_once_per_check_function(world, monkeypatch):
    insert_rows(world.session.connection(), SETUP)
    checks = [Check(id=i, description="d", fn=fn, params=p) for i, fn, p in MEET_CHECKS + PERSON]
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    at = [""]
    asked: dict[str, Counter[str]] = {}  # step -> title pattern -> meetings looked up by touch_step (``_booked``)
    real = checks_meetings._meetings

    def meetings(ctx: GradingContext, title_pattern: str) -> Any:
        if sys._getframe(1).f_code.co_name == "_booked":
            asked.setdefault(at[0], Counter())[title_pattern] += 1
        return real(ctx, title_pattern)

    monkeypatch.setattr(checks_meetings, "_meetings", meetings)
    _play(world, rubric, _asking(Sql.of(world.session), world), progress, at)
    functions = len({fn for _, fn, _ in MEET_CHECKS + PERSON})
    booking = asked["the meeting booked: bob's standup clashes"]
    # a title is asked once per row set the functions read (their tables), not once per function and meeting
    assert set(booking) == {"Sync", "Retro"} and max(booking.values()) <= 2 < functions, (booking, functions)

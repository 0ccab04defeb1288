"""The meeting checks' round-9 shortcuts give what a full grade gives, and are taken where the rows allow.

``checks_meetings.touch_step`` leaves out the rows a hook answers no to for every meeting (``_rows_left``): a
coworker's post, a memory written after the latest booking, an answer to an invitation that leaves its invitee
as busy as before; so a ``wait`` of such rows asks no hook. The double-booking hooks answer a new event once a
step per meeting (``_clashes_with``), and ``graders.progress`` gives an ``on_step`` group reading every table a
booking wrote the step's rows from the log. Each test plays its steps through ``test_progress_meet5._play``,
which compares every verdict and the value with a full grade after every step, and counts that the shortcut
was taken, and where it must not be (a row that can move a verdict), that it was not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from graders import checks_meetings
from graders.base import GradingContext
from graders.progress import Progress
from tests.graders.test_progress_meet import CHECKS, MEET
from tests.graders.test_progress_meet4 import PERSON
from tests.graders.test_progress_meet5 import _play
from tests.graders.test_progress_meet7 import _calendar, _calls, _progress
from worlds.rawsql import Sql

RETRO = MEET + timedelta(days=1)
WAIT = "a wait: bob replies, remembers it and accepts"


def _post(sql: Sql, world: Any, author: int, message: str) -> None:
    """A post in the agent's direct channel with bob (``1__2``, channel 3 of the setup)."""
    post = {"root_id": None, "edited_at": None, "deleted_at": None, "is_pinned": False, "created_at": world.clock.now()}
    sql.insert("posts", {**post, "channel_id": 3, "author_id": author, "message": message})


def test_a_wait_of_replies_and_answers_asks_no_hook(world, monkeypatch):
    rubric, progress = _progress(world, CHECKS + PERSON)
    at = [""]
    asked: dict[str, Counter[str]] = {}  # step -> hook -> meetings it was asked about (by the progress score)
    real = checks_meetings._touched

    def touched(ctx: GradingContext, hook: Any, rows: Any, kw: Any) -> bool:
        if ctx is progress.ctx and at[0] != "full grade":
            asked.setdefault(at[0], Counter())[hook.__name__] += 1
        return real(ctx, hook, rows, kw)

    monkeypatch.setattr(checks_meetings, "_touched", touched)
    sql = Sql.of(world.session)
    said, book = _calendar(sql, world)
    early = world.clock.now()

    def steps() -> Iterator[str]:
        yield "nothing yet"
        said(2, MEET, "yes")
        yield "bob says yes"
        world.later()
        book("Sync ENG-1", MEET, 2, 3)
        yield "the sync booked"
        world.later()
        _post(sql, world, 2, "Sounds good, see you then")
        said(2, MEET, "yes")
        sql.update("event_attendees", 4, {"rsvp": ("needs_action", "accepted")})  # bob's invitation to the sync
        yield WAIT
        world.later()
        _post(sql, world, 1, "Thanks Bob, booked")
        yield "the agent thanks bob"
        sql.update("event_attendees", 5, {"rsvp": ("needs_action", "declined")})  # carol's
        yield "carol declines"
        said(3, MEET, "no", at=early)
        yield "carol's no, dated before the booking"

    evidence = _play(world, rubric, steps(), progress, at)
    assert WAIT not in asked, asked[WAIT]  # every row of the wait is one each hook answers no to
    # the agent's own post may be an ask (asked of the agreement hook); an invitee declining frees her calendar
    # and moves the room's head count (asked of the double-booking and room hooks); a memory dated before the
    # booking may be an answer (asked of the agreement hook), and it moves the verdict
    assert asked["the agent thanks bob"]["_agreed_touches"] == 1, asked
    assert asked["carol declines"].keys() >= {"_clash_touches", "_free_touches", "_own_touches"}, asked
    assert "_invitee_touches" not in asked["carol declines"], asked
    assert asked["carol's no, dated before the booking"]["_agreed_touches"] == 1, asked
    assert "@carol said no to that time" in evidence["carol's no, dated before the booking"]["agreed"], evidence
    assert "@carol declined it" in evidence["carol declines"]["free-carol"], evidence


def test_a_new_event_is_weighed_against_a_meeting_once_a_step(world, monkeypatch):
    rubric, progress = _progress(world, CHECKS + PERSON)
    at = [""]
    weighed: dict[str, Counter[tuple[str, Any]]] = {}  # step -> (title, event) -> answers worked out
    real = checks_meetings._clashes_with

    def clashes_with(ctx: GradingContext, title_pattern: str, event: Any) -> bool:
        if ctx is progress.ctx and at[0] != "full grade":
            weighed.setdefault(at[0], Counter())[(title_pattern, event)] += 1
        return real(ctx, title_pattern, event)

    monkeypatch.setattr(checks_meetings, "_clashes_with", clashes_with)
    said, book = _calendar(Sql.of(world.session), world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        book("Sync ENG-1", MEET, 2, 3)
        yield "the sync booked"
        world.later()
        book("Lunch", MEET + timedelta(minutes=15), 2)
        yield "a lunch booked over the sync, bob invited"

    evidence = _play(world, rubric, steps(), progress, at)
    # the double-booking check and bob's and carol's calendar checks all ask about the lunch; it is weighed once
    lunch = weighed["a lunch booked over the sync, bob invited"]
    assert list(lunch.values()) == [1] and next(iter(lunch))[0] == "Sync", lunch
    assert "@bob is also in" in evidence["a lunch booked over the sync, bob invited"]["free-bob"], evidence


def test_a_group_reading_every_table_of_a_booking_gets_its_rows_in_seq_order(world, monkeypatch):
    rubric, progress = _progress(world, CHECKS + PERSON)
    at = [""]
    given: dict[str, list[list[int]]] = {}  # step -> the seqs each multi-table meeting group was given
    real = Progress._start

    def start(self: Progress) -> None:
        real(self)
        for key, (on_step, checks, params) in list(self._grouped.items()):

            def wrapped(ctx: GradingContext, rows: Any, params_: Any, on_step: Any = on_step) -> Any:
                if {r.table for r in rows} == {"events", "event_attendees"}:
                    given.setdefault(at[0], []).append([r.seq for r in rows])
                return on_step(ctx, rows, params_)

            self._grouped[key] = (wrapped, checks, params)

    monkeypatch.setattr(Progress, "_start", start)
    said, book = _calendar(Sql.of(world.session), world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        book("Sync ENG-1", MEET, 2, 3)
        yield "the sync booked"

    _play(world, rubric, steps(), progress, at)
    booked = given["the sync booked"]
    step = [r.seq for r in progress.ctx.log[-3:]]
    assert len(booked) >= 4 and all(seqs == step for seqs in booked), (booked, step)
    assert step == sorted(step) and len(set(step)) == 3, step


def test_a_booking_finds_every_title_s_meetings_in_one_pass(world, monkeypatch):
    titled = [("agreed-retro", "meeting_agreed", {"title_pattern": "Retro", "attendees": ["carol"]})]
    rubric, progress = _progress(world, CHECKS + PERSON + titled)
    at = [""]
    passes = _calls(monkeypatch, "_new_events", progress, at)  # step -> passes over the new events to find meetings
    said, book = _calendar(Sql.of(world.session), world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        book("Sync ENG-1", MEET, 2, 3)
        yield "the sync booked"
        world.later()
        book("Retro ENG-2", RETRO, 3)
        yield "the retro booked"

    evidence = _play(world, rubric, steps(), progress, at)
    # each title is found when first asked (the first step grades everything), then both (Sync, Retro) in one
    # pass at each booking, though every check of each asks
    assert passes == {"nothing yet": 2, "the sync booked": 1, "the retro booked": 1}, passes
    assert evidence["the retro booked"]["agreed-retro"].startswith("event #6 'Retro ENG-2'"), evidence

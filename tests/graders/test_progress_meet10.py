"""The meeting checks' round-10 shortcuts give what a full grade gives, and are taken where the rows allow.

A meeting check's ``on_step`` answers the progress score a bare score (``decide(bare=True)``): no evidence is
written in the step, the check writes it when ``results`` asks. The announcement's score is read from the
agent's logged posts (``meeting_words.announce_score``) while they tell, without the posts fold, and from the
fold once a post is edited or sits in a channel neither the log nor the read before the booking names. Each
test plays its steps through ``test_progress_meet5._play``, which compares every verdict and the value with a
full grade after every step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from graders import meeting_log
from graders.base import GradingContext
from graders.progress import Progress
from tests.graders.test_progress_meet import CHECKS, MEET
from tests.graders.test_progress_meet4 import PERSON
from tests.graders.test_progress_meet5 import _play
from tests.graders.test_progress_meet7 import _calendar, _calls, _progress
from worlds.rawsql import Sql

BOOKED = "the sync booked"
_POST = {"root_id": None, "edited_at": None, "deleted_at": None, "is_pinned": False}


def test_a_booking_writes_no_evidence_and_results_write_it(world, monkeypatch):
    rubric, progress = _progress(world, CHECKS + PERSON)
    at = [""]
    texts: dict[str, Counter[str]] = {}  # step -> meeting function -> verdicts stored with evidence, by update
    real = Progress._store

    def store(self: Progress, i: int, out: Any) -> None:
        if at[0] != "full grade" and out[1]:
            texts.setdefault(at[0], Counter())[self._checks[i].fn] += 1
        real(self, i, out)

    monkeypatch.setattr(Progress, "_store", store)
    said, book = _calendar(Sql.of(world.session), world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        said(2, MEET, "yes")
        said(3, MEET, "yes")
        yield "bob and carol say yes"
        world.later()
        book("Sync ENG-1", MEET, 2, 3)
        yield BOOKED

    evidence = _play(world, rubric, steps(), progress, at)
    # every meeting check was settled at the booking with its score alone (event_exists is not one of them) ...
    stored = {fn for fn in texts.get(BOOKED, {}) if fn.startswith("meeting_")}
    assert stored == set(), texts[BOOKED]
    # ... and the results that followed wrote the evidence a full grade writes (``_play`` compared every one)
    assert "2 of 2 covered" in evidence[BOOKED]["agreed"], evidence[BOOKED]
    assert "@bob is also in #1 'Standup'" in evidence[BOOKED]["clash"], evidence[BOOKED]


def test_the_announcement_is_scored_from_the_logged_posts_until_they_cannot_tell(world, monkeypatch):
    rubric, progress = _progress(world, CHECKS)
    at = [""]
    folded = _calls(monkeypatch, "new_posts", progress, at)  # step -> the posts fold asked for by the progress score
    sql = Sql.of(world.session)
    said, book = _calendar(sql, world)
    text = f"ENG-1 sync booked for {MEET.isoformat()}"

    def post(channel: int, message: str) -> int:
        made = {"channel_id": channel, "author_id": 1, "message": message, "created_at": world.clock.now()}
        return sql.insert("posts", {**_POST, **made})

    def steps() -> Iterator[str]:
        yield "nothing yet"
        said(2, MEET, "yes")  # both agreed: the agreement check reads no post for an escalation
        said(3, MEET, "yes")
        world.later()
        book("Sync ENG-1", MEET, 2)
        yield "booked"
        world.later()
        first = post(1, text)
        yield "announced in general"
        sql.update("channels", 1, {"name": ("general", "lobby")})
        yield "general renamed"
        sql.update("channels", 1, {"name": ("lobby", "general")})
        yield "renamed back"
        sql.update("posts", first, {"message": (text, "booked, see the calendar")})
        yield "the announcement edited"
        world.later()
        post(1, text)
        yield "announced again"

    evidence = _play(world, rubric, steps(), progress, at)
    assert evidence["booked"]["announced"].startswith("no new post"), evidence["booked"]
    assert evidence["announced in general"]["announced"].startswith("post #"), evidence["announced in general"]
    assert evidence["general renamed"]["announced"].startswith("no new post"), evidence["general renamed"]
    assert evidence["announced again"]["announced"].startswith("post #"), evidence["announced again"]
    # the booking, the announcement and the renames were scored from the log; an edit hands it to the fold
    assert set(folded) == {"the announcement edited", "announced again"}, folded


def test_a_post_in_a_channel_the_log_does_not_name_is_read_from_the_fold(world, monkeypatch):
    rubric, progress = _progress(world, CHECKS)
    at = [""]
    folded = _calls(monkeypatch, "new_posts", progress, at)
    sql = Sql.of(world.session)
    said, book = _calendar(sql, world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        said(2, MEET, "yes")  # both agreed: the agreement check reads no post for an escalation
        said(3, MEET, "yes")
        world.later()
        book("Sync ENG-1", MEET, 2)
        yield "booked"
        world.later()
        # the direct channel with bob is older than the episode: no logged row names it, nor was it read
        sql.insert(
            "posts",
            {**_POST, "channel_id": 3, "author_id": 1, "message": f"ENG-1 at {MEET.isoformat()}",
             "created_at": world.clock.now()},
        )  # fmt: skip
        yield "told bob directly"

    evidence = _play(world, rubric, steps(), progress, at)
    assert evidence["told bob directly"]["announced"].startswith("no new post"), evidence["told bob directly"]
    assert set(folded) == {"told bob directly"}, folded


def test_a_booking_asks_which_rows_are_left_once_and_a_wait_still_asks(world, monkeypatch):
    rubric, progress = _progress(world, CHECKS + PERSON)
    at = [""]
    asked = _calls(monkeypatch, "_rows_left", progress, at)  # step -> ``_rows_left`` calls by the progress score
    sql = Sql.of(world.session)
    said, book = _calendar(sql, world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        said(2, MEET, "yes")
        yield "bob says yes"
        world.later()
        book("Sync ENG-1", MEET, 2, 3)
        yield BOOKED
        world.later()
        said(2, MEET, "yes")
        sql.update("event_attendees", 4, {"rsvp": ("needs_action", "accepted")})  # bob's invitation to the sync
        sql.update("event_attendees", 5, {"rsvp": ("needs_action", "declined")})  # carol's
        yield "bob accepts, carol declines"

    evidence = _play(world, rubric, steps(), progress, at)
    assert "declined" in evidence["bob accepts, carol declines"]["free-carol"], evidence
    # the booking's rows are all new events and invitations, none left out: not asked at all (meet11: a row set
    # starting with an event row has its calendar answer worked out first, ``checks_meetings._step_of``; meet10
    # asked once per row set, 2), not once per function and kind (six)
    assert asked[BOOKED] == 0, asked
    # answers to invitations are what the kinds leave out (or not): asked as before, of each kind and title set
    assert asked["bob accepts, carol declines"] == 5, asked


def test_a_wait_before_any_booking_looks_for_the_calendar_once(world, monkeypatch):
    rubric, progress = _progress(world, CHECKS)
    at = [""]
    looked: Counter[str] = Counter()  # step -> the event log asked for by the progress score
    real = GradingContext.changed_rows

    def changed_rows(self: GradingContext, table: str) -> Any:
        if self is progress.ctx and table == "events" and at[0] != "full grade":
            looked[at[0]] += 1
        return real(self, table)

    monkeypatch.setattr(GradingContext, "changed_rows", changed_rows)
    sql = Sql.of(world.session)
    said, book = _calendar(sql, world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        made = {"channel_id": 3, "author_id": 2, "message": "Works for me", "created_at": world.clock.now()}
        sql.insert("posts", {**_POST, **made})
        said(2, MEET, "yes")
        yield "a wait: bob answers"
        world.later()
        book("Sync ENG-1", MEET, 2)
        yield BOOKED

    _play(world, rubric, steps(), progress, at)
    # the agreement and announcement functions read posts and memories: the first finds no event logged yet, and
    # the second reads that answer of the step
    assert looked["a wait: bob answers"] == 1, looked


def test_a_window_decides_a_series_as_recurs_in_does():
    start = MEET - timedelta(days=7)
    series = [  # (start, end, rule, until): weekly 15 minutes, the same with an until, a Tue/Thu half hour
        (start, start + timedelta(minutes=15), "FREQ=WEEKLY", None),
        (start, start + timedelta(minutes=15), "FREQ=WEEKLY", MEET + timedelta(days=7)),
        (start + timedelta(hours=2), start + timedelta(hours=2, minutes=30), "FREQ=WEEKLY;BYDAY=TU,TH", None),
    ]
    busy = {i: (s, i, f"#{i}", s, e, rule, until) for i, (s, e, rule, until) in enumerate(series, 1)}
    windows = [  # (start, minutes): on an occurrence, ending as one starts, starting as one ends, between, past until
        (MEET, 30), (MEET - timedelta(minutes=30), 30), (MEET + timedelta(minutes=15), 30),
        (MEET + timedelta(days=1), 60), (MEET + timedelta(days=14), 15), (MEET + timedelta(days=2, hours=2), 1),
        (MEET + timedelta(days=300), 30),
    ]  # fmt: skip
    hits = 0
    for begin, minutes in windows:
        w = (begin, begin + timedelta(minutes=minutes))
        found = meeting_log.Calendar()._window({}, busy, w)
        expected = {
            i for i, (s, e, rule, until) in enumerate(series, 1) if meeting_log._recurs_in(s, e, rule, until, w)
        }
        assert set(found) == expected, (w, set(found), expected)
        hits += len(expected)
    assert hits >= 4  # the windows meet occurrences, not only the gaps between them


def test_the_answers_are_read_from_the_logged_answers_until_a_memory_changes(world, monkeypatch):
    rubric, progress = _progress(world, CHECKS)
    at = [""]
    folded = _calls(monkeypatch, "memories", progress, at)  # step -> the memories' fold asked for by the progress score
    sql = Sql.of(world.session)
    said, book = _calendar(sql, world)
    memory = {"employee_id": 2, "turn": 1, "subject": "alice"}
    yes = {"fact": {"intent": "agreement", "subject": MEET.isoformat(), "said": "yes"}}
    no = {"fact": {"intent": "agreement", "subject": MEET.isoformat(), "said": "no"}}

    def steps() -> Iterator[str]:
        yield "nothing yet"
        sql.insert("npc_memory", {**memory, "at": world.clock.now(), "kind": "perceived", "data": {"text": "hi"}})
        answer = sql.insert("npc_memory", {**memory, "at": world.clock.now(), "kind": "did", "data": yes})
        said(3, MEET, "yes")
        yield "bob and carol say yes"
        world.later()
        book("Sync ENG-1", MEET, 2, 3)
        yield BOOKED
        sql.update("npc_memory", answer, {"data": (yes, no)})
        yield "bob's answer rewritten to no"

    evidence = _play(world, rubric, steps(), progress, at)
    assert "2 of 2 covered" in evidence[BOOKED]["agreed"], evidence[BOOKED]
    assert "@bob said no to that time" in evidence["bob's answer rewritten to no"]["agreed"], evidence
    # the booking read the logged answers alone; an edited memory hands the index to the fold
    assert set(folded) == {"bob's answer rewritten to no"}, folded

"""The meeting checks' round-7 shortcuts give what a full grade gives, and are taken where the rows allow.

``checks_meetings._answers`` files only the NPC memories past the last list's end while the memory fold only
appended to it (``meeting_log.memory_epoch``), and everything again once the fold sorted (a row out of order);
``event_exists`` answers ``LATER`` for a failing check a step touches only with events it cannot match, and
finds a passing event before writing any note about the others; ``touch_step`` asks each meeting's hook once
for a function's checks of it; the per-person items keep a participant per meeting and username for the step;
the calendar's window compares an event's end and a series' starts inline, so an event ending as the meeting
starts (kept, added to a kept window, or a series' occurrence) is no clash. Each test plays its steps through
``test_progress_meet5._play``, which compares every verdict and the value with a full grade after every step,
and counts that the shortcut was taken (else these tests could not fail when one silently stops working); a
full grade runs the same functions, so the evidence a path shared with it must give is written out here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from graders import checks_meetings
from graders.base import Check, GradingContext, Rubric
from graders.checks_comms import _fits
from graders.progress import Progress
from tests.graders.test_progress_meet import MEET, SETUP
from tests.graders.test_progress_meet5 import _play
from worlds.rawsql import Sql
from worlds.rows import insert_rows

RETRO = MEET + timedelta(days=1)
AGREED = [
    ("agreed-sync", "meeting_agreed", {"title_pattern": "Sync", "attendees": ["bob"]}),
    ("agreed-retro", "meeting_agreed", {"title_pattern": "Retro", "attendees": ["carol"]}),
]


def _calendar(sql: Sql, world: Any) -> tuple[Any, Any]:
    """(said, book): an NPC's agreement answer, and the agent booking a meeting with invitations."""

    def said(who: int, start: Any, word: str, at: Any = None) -> None:
        fact = {"intent": "agreement", "subject": start.isoformat(), "said": word}
        when = at if at is not None else world.clock.now()
        memory = {"employee_id": who, "at": when, "turn": 1, "kind": "did", "subject": "alice"}
        sql.insert("npc_memory", {**memory, "data": {"fact": fact}})

    def book(title: str, start: Any, *invited: int, room: int | None = None, rule: str | None = None) -> int:
        """The agent books an event (a series with ``rule``) and invites ``invited``; the event's id."""
        ev = {"description": "", "rrule": rule, "until": None, "room_id": room, "cancelled": False}
        end = start + timedelta(minutes=30)
        made = {"organizer_id": 1, "title": title, "start_at": start, "end_at": end, "created_at": world.clock.now()}
        event = sql.insert("events", {**ev, **made})
        for who in invited:
            sql.insert(
                "event_attendees", {"event_id": event, "employee_id": who, "rsvp": "needs_action", "optional": False}
            )
        return int(event)

    return said, book


def _progress(world: Any, checks: list[tuple[str, str, dict[str, Any]]]) -> tuple[Rubric, Progress]:
    insert_rows(world.session.connection(), SETUP)
    rubric = Rubric(
        id="t",
        version=1,
        description="t",
        checks=tuple(Check(id=i, description="d", fn=f, params=p) for i, f, p in checks),
    )
    return rubric, Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))


def _calls(monkeypatch: Any, name: str, progress: Progress, at: list[str]) -> Counter[str]:
    """Calls of ``checks_meetings.<name>`` for ``progress``'s context, by the step under way (full grades not counted).

    The function is replaced by a spy for the test; its first argument must be the grading context.
    """
    calls: Counter[str] = Counter()
    real = getattr(checks_meetings, name)

    def spy(ctx: Any, *args: Any) -> Any:
        if ctx is progress.ctx and at[0] != "full grade":
            calls[at[0]] += 1
        return real(ctx, *args)

    monkeypatch.setattr(checks_meetings, name, spy)
    return calls


def _filed(monkeypatch: Any, progress: Progress, at: list[str]) -> dict[str, int]:
    """Memories filed into the answers index by the progress score, by step (not by the full grades)."""
    filed: dict[str, int] = {}
    real = checks_meetings.told  # ``meeting_words.told`` (moved there, meet11), as ``_answers`` names it

    def told(row: Any) -> Any:
        if at[0] != "full grade":
            filed[at[0]] = filed.get(at[0], 0) + 1
        return real(row)

    monkeypatch.setattr(checks_meetings, "told", told)
    return filed


def test_the_answers_index_files_only_the_new_memories(world, monkeypatch):
    rubric, progress = _progress(world, AGREED)
    at = [""]
    filed = _filed(monkeypatch, progress, at)
    said, book = _calendar(Sql.of(world.session), world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        said(2, MEET, "yes")
        yield "bob says yes to the sync"
        world.later()
        book("Sync ENG-1", MEET, 2)
        yield "the sync booked"
        world.later()
        said(3, RETRO, "no")
        world.later()
        said(3, RETRO, "yes")
        yield "carol says no, then yes, to the retro"
        world.later()
        book("Retro ENG-2", RETRO, 3)
        yield "the retro booked"

    evidence = _play(world, rubric, steps(), progress, at)
    assert "@carol said no to that time" in evidence["the retro booked"]["agreed-retro"]
    # the sync's booking filed bob's answer; the retro's only carol's two, not bob's again
    assert filed == {"the sync booked": 1, "the retro booked": 2}, filed


def test_a_memory_out_of_order_files_every_memory_again(world, monkeypatch):
    rubric, progress = _progress(world, AGREED)
    at = [""]
    filed = _filed(monkeypatch, progress, at)
    said, book = _calendar(Sql.of(world.session), world)
    early = world.clock.now()

    def steps() -> Iterator[str]:
        yield "nothing yet"
        world.later()
        said(2, MEET, "yes")
        yield "bob says yes to the sync"
        world.later()
        book("Sync ENG-1", MEET, 2)
        yield "the sync booked"
        world.later()
        said(3, RETRO, "yes")
        said(3, RETRO, "yes", at=early)  # logged later, yet earlier than bob's: the fold sorts again
        yield "carol says yes to the retro twice, the second dated before bob's answer"
        world.later()
        book("Retro ENG-2", RETRO, 3)
        yield "the retro booked"

    evidence = _play(world, rubric, steps(), progress, at)
    # her first answer by time is the one named (filed after bob's, it would have named the other one)
    assert f"@carol agreed at {early:%H:%M}" in evidence["the retro booked"]["agreed-retro"], evidence
    # each filed once, the earlier one put in its place (round nine: read from the log; the memories' fold, which
    # sorted again, filed all three again)
    assert filed == {"the sync booked": 1, "the retro booked": 2}, filed


EXISTS = [
    ("exists-sync", "event_exists", {"title_pattern": "Sync", "attendees": ["bob"]}),
    ("exists-retro", "event_exists", {"title_pattern": "Retro", "attendees": ["carol"], "room": "Orca"}),
    ("clash-sync", "meeting_no_double_booking", {"title_pattern": "Sync"}),
]


def test_a_failing_event_check_waits_while_only_other_meetings_are_booked(world, monkeypatch):
    rubric, progress = _progress(world, EXISTS)
    at = [""]
    decided: dict[str, Counter[str]] = {}  # step -> check id -> verdicts the event checks' on_step gave
    real = Progress._step_groups

    def groups(self: Progress, by_table: Any, stale: set[int]) -> None:
        before = list(self._outcomes)
        real(self, by_table, stale)
        for i, check in enumerate(self._checks):
            if check.fn == "event_exists" and self._outcomes[i] is not before[i]:
                decided.setdefault(at[0], Counter())[check.id] += 1

    monkeypatch.setattr(Progress, "_step_groups", groups)
    said, book = _calendar(Sql.of(world.session), world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        book("Sync ENG-1", MEET, 2)
        yield "the sync booked"
        world.later()
        book("Sync ENG-1 again", MEET + timedelta(hours=1), 2)
        yield "a second sync booked"
        world.later()
        book("Retro ENG-2", RETRO, 3)
        yield "the retro booked without a room"
        world.later()
        book("Retro ENG-2 in Orca", RETRO, 3, room=1)
        yield "the retro booked in Orca"

    evidence = _play(world, rubric, steps(), progress, at)
    # the retro's check still fails at the syncs' bookings: waited (LATER), and the full grade agreed each time
    assert "exists-retro" not in decided.get("the sync booked", {}), decided
    assert "exists-retro" not in decided.get("a second sync booked", {}), decided
    assert (
        "#6 'Sync ENG-1 again': missing carol, title does not match" in evidence["a second sync booked"]["exists-retro"]
    )
    # a retro it can match is decided at once: the room is missing, then it fits (the value moved with it)
    assert decided["the retro booked without a room"]["exists-retro"] == 1, decided
    assert "room is None" in evidence["the retro booked without a room"]["exists-retro"]
    assert evidence["the retro booked in Orca"]["exists-retro"].endswith("fits"), evidence
    assert decided["the retro booked in Orca"]["exists-retro"] == 1, decided


def test_event_exists_names_the_first_event_that_fits_and_every_problem_otherwise(world):
    said, book = _calendar(Sql.of(world.session), world)
    book("Sync ENG-1", MEET, 3)  # carol, not bob
    book("Sync ENG-1", MEET + timedelta(days=9), 2)  # bob, too late
    book("Sync ENG-1", MEET + timedelta(hours=2), 2)  # fits
    book("Sync ENG-1", MEET + timedelta(hours=3), 2)  # fits too, but later in id order
    world.session.flush()
    window = {"start_after": MEET, "start_before": MEET + timedelta(days=1)}
    score, evidence, details = _fits(world.ctx(), "Sync", ["bob"], **window)  # type: ignore[arg-type]
    assert (score, details) == (1.0, {"event_id": 3}) and evidence.startswith("event #3 'Sync ENG-1' at "), evidence
    score, evidence, _ = _fits(world.ctx(), "Sync", ["dave"], room="Orca", **window)  # type: ignore[arg-type]
    late = (MEET + timedelta(days=9)).isoformat()
    assert score == 0.0
    assert f"#2 'Sync ENG-1': missing dave, starts {late}, room is None" in evidence, evidence
    assert "#1 'Sync ENG-1': missing dave, room is None" in evidence, evidence


def test_a_function_asks_each_meeting_once_and_decides_every_check_of_it(world, monkeypatch):
    person = [  # each function's checks of the two meetings interleaved: a meeting's checks are not adjacent
        (f"{fn}-{who}-{title}", fn, {"title_pattern": title, "username": who})
        for fn in ("meeting_person_free", "meeting_person_in_hours")
        for who in ("alice", "bob")
        for title in ("Sync", "Retro")
    ]
    rubric, progress = _progress(world, person)
    at = [""]
    asked: dict[str, Counter[str]] = {}  # step -> title -> hook asked by _touched
    real = checks_meetings._touched

    def touched(ctx: Any, hook: Any, rows: Any, kw: Any) -> bool:
        asked.setdefault(at[0], Counter())[kw["title_pattern"]] += 1
        return real(ctx, hook, rows, kw)

    monkeypatch.setattr(checks_meetings, "_touched", touched)
    decided: dict[str, list[str]] = {}  # step -> the checks given a new verdict by their function's on_step
    real_groups = Progress._step_groups

    def groups(self: Progress, by_table: Any, stale: set[int]) -> None:
        before = list(self._outcomes)
        real_groups(self, by_table, stale)
        # a new verdict, or a bare score (round nine: the meeting checks' evidence is written when results are asked)
        decided[at[0]] = [
            c.id for i, c in enumerate(self._checks) if self._outcomes[i] is not before[i] or i in self._lagging
        ]

    monkeypatch.setattr(Progress, "_step_groups", groups)
    said, book = _calendar(Sql.of(world.session), world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        book("Retro ENG-2", RETRO, 2)
        book("Sync ENG-1", MEET + timedelta(days=7), 2)
        yield "both booked in one step"
        world.later()
        book("Sync ENG-1", MEET, 2)
        yield "the sync booked again"

    evidence = _play(world, rubric, steps(), progress, at)
    again = evidence["the sync booked again"]
    assert "@bob has nothing else then" in again["meeting_person_free-bob-Retro"]
    # each person's checks read that person (the step keeps a participant per meeting and username)
    assert "@bob is also in #1 'Standup'" in again["meeting_person_free-bob-Sync"], again
    assert "@alice has nothing else then" in again["meeting_person_free-alice-Sync"], again
    # both meetings touched in one step: every check of each decided (each meeting's positions, all of them)
    assert decided["both booked in one step"] == [c for c, _, _ in person], decided
    assert decided["the sync booked again"] == [c for c, _, _ in person if c.endswith("Sync")], decided
    # at the second sync the retro's free checks (two people, one meeting) ask its hook once; the working
    # hours checks need not ask (their hook reads of the calendar only the meeting itself)
    assert asked["the sync booked again"] == {"Retro": 1}, asked


def test_an_event_ending_as_the_meeting_starts_is_no_clash(world):
    free = [
        ("free-carol", "meeting_person_free", {"title_pattern": "Sync", "username": "carol"}),
        ("free-bob", "meeting_person_free", {"title_pattern": "Retro", "username": "bob"}),
    ]
    rubric, progress = _progress(world, free)
    said, book = _calendar(Sql.of(world.session), world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        book("Sync ENG-1", MEET + timedelta(hours=3), 3)  # carol's dentist (14:00+2h, an hour) ends as it starts
        book("Retro ENG-2", MEET + timedelta(minutes=15), 2)  # bob's weekly standup (15 minutes) ends as it starts
        yield "both booked"
        world.later()
        book("Prep", MEET + timedelta(hours=2, minutes=30), 3)  # added to carol's kept window: ends as it starts
        yield "a prep ending as the sync starts"
        world.later()
        book("Overrun", MEET + timedelta(hours=2, minutes=31), 3)  # ends a minute into it
        yield "an overrun"

    evidence = _play(world, rubric, steps(), progress, [""])
    assert evidence["both booked"]["free-carol"].endswith("@carol has nothing else then"), evidence
    assert evidence["both booked"]["free-bob"].endswith("@bob has nothing else then"), evidence
    assert evidence["a prep ending as the sync starts"]["free-carol"].endswith("nothing else then"), evidence
    assert "@carol is also in #8 'Overrun'" in evidence["an overrun"]["free-carol"], evidence

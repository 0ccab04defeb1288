"""The checks the dense2 rubrics (sprint-plan, sprint-execute, one-on-ones-book v2) added or lean on (issue 14).

``meeting_length`` is judged on the tiny test world: the asked length passes, a retimed meeting of another
length fails and says how long it is, and the progress score (its ``touches`` hook) follows each edit exactly
as a full grade does. The per-person checks of a meeting (``meeting_person_free``, ``meeting_person_in_hours``)
re-run only on rows that can change them (an answer to the invitation or a meeting at another time re-runs
neither; a clash at the meeting's time re-runs the calendar ones), and still match a full grade. The families'
episodes are held to a full grade after every step by ``tests/graders/test_progress.py`` (its CASES list); the
rubrics' items and their older versions by ``tests/scenarios/test_sprint_story.py`` and
``test_one_on_ones_story.py``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.checks_items import meeting_length
from graders.progress import Progress
from tests.graders.conftest import T0, employee
from worlds.schema import Event, EventAttendee

TITLE = r"^1:1 with @bob$"


def test_meeting_length__the_asked_length_passes_another_fails_with_its_length(world):
    ctx = world.ctx()
    assert "no live meeting" in meeting_length(ctx, title_pattern=TITLE, minutes=30).evidence
    event = Event(organizer_id=1, title="1:1 with @bob", start_at=T0 + timedelta(hours=2),
                  end_at=T0 + timedelta(hours=3), created_at=world.clock.now())  # fmt: skip
    world.add(event)
    out = meeting_length(world.ctx(), title_pattern=TITLE, minutes=30)
    assert out.score == 0.0 and out.evidence.endswith("lasts 60 minutes, not 30"), out.evidence
    assert meeting_length(world.ctx(), title_pattern=TITLE, minutes=60).score == 1.0


def test_meeting_length__progress_follows_each_edit_as_a_full_grade(world):
    checks = (Check(id="length", description="d", fn="meeting_length", params={"title_pattern": TITLE,
                                                                                  "minutes": 30}),)  # fmt: skip
    rubric = Rubric(id="t", version=1, description="t", checks=checks)
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    seq, seen = world.start_seq, []
    other = Event(organizer_id=1, title="Planning", start_at=T0, end_at=T0 + timedelta(minutes=45),
                  created_at=world.clock.now())  # fmt: skip
    one = Event(organizer_id=1, title="1:1 with @bob", start_at=T0 + timedelta(hours=2),
                end_at=T0 + timedelta(hours=2, minutes=30), created_at=world.clock.now())  # fmt: skip
    edits = [
        lambda: world.add(other),  # another meeting: not the 1:1
        lambda: world.add(one),
        lambda: world.add(EventAttendee(event_id=one.id, employee_id=employee(world.session, "bob").id)),
        lambda: setattr(one, "end_at", T0 + timedelta(hours=3)),  # retimed to an hour
        lambda: setattr(one, "cancelled", True),
    ]
    for edit in edits:
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq if rows else seq
        value = progress.update(rows)  # type: ignore[arg-type]
        full = grade(rubric, world.ctx())
        assert [(c.score, c.evidence) for c in progress.results()] == [(c.score, c.evidence) for c in full.checks]
        assert value == full.value
        seen.append(full.checks[0].evidence)
    assert seen[0].startswith("no live meeting") and seen[2].endswith("lasts 30 minutes")
    assert seen[3].endswith("lasts 60 minutes, not 30") and seen[4].startswith("no live meeting")


def test_person_free_and_hours_rerun_only_when_a_row_can_change_them_and_match_a_full_grade(world, monkeypatch):
    """Answers to the invitation and a meeting at another time re-run neither per-person check; a clash does."""
    names = ("alice", "bob", "carol")
    checks = tuple(
        Check(id=f"{fn}-{u}", description="d", fn=fn, params={"title_pattern": r"\bENG-1\b", "username": u})
        for fn in ("meeting_person_free", "meeting_person_in_hours")
        for u in names
    )
    rubric = Rubric(id="t", version=1, description="t", checks=checks)
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    runs: list[str] = []  # the checks asked for a new verdict: re-run, or decided by their on_step (meet5)
    real = Progress._store
    monkeypatch.setattr(Progress, "_store", lambda self, i, out: runs.append(self._checks[i].id) or real(self, i, out))
    at = T0 + timedelta(hours=2)
    sync = Event(organizer_id=1, title="Review ENG-1", start_at=at, end_at=at + timedelta(minutes=30),
                 created_at=world.clock.now())  # fmt: skip
    invites: dict[str, EventAttendee] = {}

    def book() -> None:
        world.add(sync)
        for u in ("bob", "carol"):
            invites[u] = EventAttendee(event_id=sync.id, employee_id=employee(world.session, u).id, rsvp="needs_action")
            world.add(invites[u])

    def call(who: str, start: Any) -> None:  # someone else's event, bob invited
        world.as_(who)
        e = Event(organizer_id=4, title="Customer call", start_at=start, end_at=start + timedelta(minutes=30),
                  created_at=world.clock.now())  # fmt: skip
        world.add(e)
        world.add(EventAttendee(event_id=e.id, employee_id=employee(world.session, "bob").id, rsvp="accepted"))
        world.as_("alice")

    steps = {
        "booked": book,
        "bob accepts": lambda: setattr(invites["bob"], "rsvp", "accepted"),
        "a call the next day": lambda: call("dave", at + timedelta(days=1)),
        "a call over the review": lambda: call("dave", at),
        "carol declines": lambda: setattr(invites["carol"], "rsvp", "declined"),
    }
    seq, reran = world.start_seq, {}
    for name, edit in steps.items():
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq if rows else seq
        runs.clear()
        value = progress.update(rows)  # type: ignore[arg-type]
        runs.extend(progress._checks[i].id for i in progress._lagging)  # a bare score: decided, evidence to come
        reran[name] = sorted(set(runs))
        full = grade(rubric, world.ctx())
        assert [(c.score, c.evidence) for c in progress.results()] == [(c.score, c.evidence) for c in full.checks]
        assert value == full.value, name
    assert reran["bob accepts"] == [] and reran["a call the next day"] == [], reran
    assert reran["a call over the review"] == [f"meeting_person_free-{u}" for u in names], reran
    assert reran["carol declines"] == [f"meeting_person_free-{u}" for u in names], reran
    final = {c.id: c.evidence for c in grade(rubric, world.ctx()).checks}
    assert "@bob is also in" in final["meeting_person_free-bob"] and "declined" in final["meeting_person_free-carol"]

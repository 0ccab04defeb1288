"""The dense2 rubrics (sprint-plan v2, sprint-execute v2, one-on-ones-book v2) and ``meeting_length`` (issue 14).

``meeting_length`` is judged on the tiny test world: the asked length passes, a retimed meeting of another
length fails and says how long it is, and the progress score (its ``touches`` hook) follows each edit exactly
as a full grade does. The families' new checks are held to a full grade after every step of an oracle episode
by ``tests/graders/test_progress.py`` (its CASES list); here the rubrics' shapes: each new version keeps the
old one for rescoring, with the same fingerprint the instance had before, and a wrong item loses its own check.
"""

from __future__ import annotations

from datetime import timedelta

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

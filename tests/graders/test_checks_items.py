"""Per-person meeting checks (``graders.checks_items``): whose hours and whose calendar a booking broke."""

from datetime import timedelta

from graders.checks_items import meeting_person_free, meeting_person_in_hours
from tests.graders.conftest import T0, employee
from worlds.schema import Event, EventAttendee

TITLE = r"\bENG-1\b"


def _book(world, start, minutes=30, invite=("bob", "carol"), declined=()):
    """Alice (the agent) books the review of ENG-1 at ``start`` with ``invite``."""
    end = start + timedelta(minutes=minutes)
    event = Event(organizer_id=1, title="Design review ENG-1", start_at=start, end_at=end, created_at=world.clock.now())
    world.add(event)
    for name in invite:
        rsvp = "declined" if name in declined else "needs_action"
        world.add(EventAttendee(event_id=event.id, employee_id=employee(world.session, name).id, rsvp=rsvp))
    return event


def test_checks_items__hours_are_judged_per_person_with_their_local_time(world):
    employee(world.session, "carol").work_end_minute = 16 * 60  # carol stops at 16:00 UTC
    world.session.flush()
    _book(world, T0 + timedelta(hours=7, minutes=30))  # Monday 16:30-17:00 UTC
    ctx = world.ctx()
    alice = meeting_person_in_hours(ctx, title_pattern=TITLE, username="alice")
    carol = meeting_person_in_hours(ctx, title_pattern=TITLE, username="carol")
    assert alice.score == 1.0 and "Mon 16:30 UTC, inside 09:00-17:00 on MTWTF" in alice.evidence
    assert carol.score == 0.0 and "@carol" in carol.evidence and "outside 09:00-16:00" in carol.evidence


def test_checks_items__someone_not_invited_fails_and_says_so(world):
    _book(world, T0 + timedelta(hours=2))
    out = meeting_person_in_hours(world.ctx(), title_pattern=TITLE, username="dave")
    assert out.score == 0.0 and "@dave is neither its organiser nor invited" in out.evidence


def test_checks_items__a_clash_fails_only_the_person_who_has_it(world):
    world.as_("carol")
    world.add(Event(organizer_id=3, title="Customer call", start_at=T0 + timedelta(hours=2),
                    end_at=T0 + timedelta(hours=3), created_at=T0))  # fmt: skip
    world.as_("alice")
    _book(world, T0 + timedelta(hours=2, minutes=30))
    ctx = world.ctx()
    carol = meeting_person_free(ctx, title_pattern=TITLE, username="carol")
    bob = meeting_person_free(ctx, title_pattern=TITLE, username="bob")
    assert carol.score == 0.0 and "@carol is also in" in carol.evidence and "Customer call" in carol.evidence
    assert bob.score == 1.0 and "@bob has nothing else then" in bob.evidence


def test_checks_items__a_declined_invitee_keeps_their_other_event(world):
    world.as_("carol")
    world.add(Event(organizer_id=3, title="Customer call", start_at=T0 + timedelta(hours=2),
                    end_at=T0 + timedelta(hours=3), created_at=T0))  # fmt: skip
    world.as_("alice")
    _book(world, T0 + timedelta(hours=2), declined=("carol",))
    out = meeting_person_free(world.ctx(), title_pattern=TITLE, username="carol")
    assert out.score == 1.0 and "declined" in out.evidence


def test_checks_items__no_meeting_fails_every_person(world):
    ctx = world.ctx()
    for check in (meeting_person_free, meeting_person_in_hours):
        out = check(ctx, title_pattern=TITLE, username="bob")
        assert out.score == 0.0 and "no live meeting" in out.evidence

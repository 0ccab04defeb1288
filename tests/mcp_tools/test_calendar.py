"""The calendar app on the tiny company: time zones and working hours, recurrence, rooms, access, bad input.

T0 is Monday 2026-03-02 09:00 UTC (10:00 in Berlin). Everyone works 09:00-17:00 Monday-Friday local time;
the fixture moves dev.two to Tokyo.
"""

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, update

from mcp_tools.errors import AppError
from worlds.schema import Employee, Event, EventAttendee, Room

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


@pytest.fixture
def cal(app):
    s = app.session
    s.execute(insert(Room), [dict(id=1, name="Berlin Atlas", location_id=1, capacity=4)])
    s.execute(update(Employee).where(Employee.username == "dev.two").values(timezone="Asia/Tokyo"))
    # lena.lead's weekly Monday stand-up 10:00-10:30 Berlin (09:00 UTC), dev.one invited; and a one-off in the room.
    s.execute(
        insert(Event),
        [
            dict(
                id=1,
                organizer_id=2,
                title="Stand-up",
                description="",
                start_at=T0 + timedelta(days=-7),
                end_at=T0 + timedelta(days=-7, minutes=30),
                rrule="FREQ=WEEKLY;BYDAY=MO",
                until=None,
                room_id=None,
                cancelled=False,
                created_at=T0 - timedelta(days=30),
            ),
            dict(
                id=2,
                organizer_id=1,
                title="Board prep",
                description="",
                start_at=T0 + timedelta(days=1, hours=4),
                end_at=T0 + timedelta(days=1, hours=5),
                rrule=None,
                until=None,
                room_id=1,
                cancelled=False,
                created_at=T0 - timedelta(days=3),
            ),
        ],
    )
    s.execute(
        insert(EventAttendee),
        [
            dict(event_id=1, employee_id=2, rsvp="accepted", optional=False),
            dict(event_id=1, employee_id=3, rsvp="needs_action", optional=False),
            dict(event_id=2, employee_id=1, rsvp="accepted", optional=False),
        ],
    )
    s.flush()
    return app


def z(dt):
    return dt.isoformat()


def test_list_events__expands_recurrence_and_shows_others_as_busy_blocks(cal):
    mine = cal.call("calendar_list_events", start=z(T0), end=z(T0 + timedelta(days=14)))["events"]
    assert [e["start"] for e in mine if e.get("title") == "Stand-up"] == [
        "2026-03-02T09:00:00+00:00",
        "2026-03-09T09:00:00+00:00",
    ]
    ceo = cal.call("calendar_list_events", start=z(T0), end=z(T0 + timedelta(days=3)), username="cora.ceo")
    assert ceo["events"] == [{"start": "2026-03-03T13:00:00+00:00", "end": "2026-03-03T14:00:00+00:00", "busy": True}]


def test_find_free_slots__respects_time_zones_working_hours_and_meetings(cal):
    got = cal.call(
        "calendar_find_free_slots",
        usernames="dev.one",
        duration_minutes=30,
        start=z(T0),
        end=z(T0 + timedelta(hours=8)),
        step_minutes=30,
        limit=50,
    )
    starts = [s["start"] for s in got["slots"]]
    assert "2026-03-02T09:00:00+00:00" not in starts  # the stand-up (both are in it)
    assert starts[0] == "2026-03-02T09:30:00+00:00" and starts[-1] == "2026-03-02T15:30:00+00:00"  # 17:00 Berlin
    # Tokyo (UTC+9) works 00:00-08:00 UTC; Berlin 08:00-16:00 UTC: no overlap at all.
    none = cal.call(
        "calendar_find_free_slots", usernames="dev.two", duration_minutes=30, start=z(T0), end=z(T0 + timedelta(days=2))
    )
    assert none["slots"] == []


def test_create_event__room_and_organizer_clashes_are_refused_attendee_clashes_reported(cal):
    before = cal.hash()
    with pytest.raises(AppError) as room:
        cal.call(
            "calendar_create_event",
            actor=cal.dev,
            title="Clash",
            start="2026-03-03T13:30:00Z",
            end="2026-03-03T14:30:00Z",
            room="berlin atlas",
        )
    assert room.value.code == "conflict" and "Board prep" in str(room.value)
    with pytest.raises(AppError) as mine:
        cal.call("calendar_create_event", title="Overlap", start="2026-03-09T09:15:00Z", end="2026-03-09T09:45:00Z")
    assert mine.value.code == "conflict" and "Stand-up" in str(mine.value)
    assert cal.hash() == before
    made = cal.call(
        "calendar_create_event",
        actor=cal.dev,
        title="Review",
        start="2026-03-03T13:00:00+00:00",
        end="2026-03-03T13:30:00+00:00",
        attendees="cora.ceo, lena.lead",
    )
    assert made["attendee_conflicts"] == ["cora.ceo"]
    assert {a["username"]: a["rsvp"] for a in made["attendees"]} == {
        "cora.ceo": "needs_action",
        "dev.one": "accepted",
        "lena.lead": "needs_action",
    }
    assert [r.table_name for r in cal.log()][-4:] == ["events", "event_attendees", "event_attendees", "event_attendees"]


def test_only_the_organizer_changes_and_only_invitees_answer(cal):
    with pytest.raises(AppError) as info:
        cal.call("calendar_cancel_event", actor=cal.dev, event_id=1)
    assert info.value.code == "forbidden"
    with pytest.raises(AppError) as hidden:
        cal.call("calendar_get_event", actor=cal.outsider, event_id=1)
    assert hidden.value.code == "not_found"
    assert cal.call("calendar_rsvp", actor=cal.dev, event_id=1, response="declined")["rsvp"] == "declined"
    assert cal.call("calendar_cancel_event", event_id=1)["cancelled"] is True
    after = cal.call("calendar_list_events", actor=cal.dev, start=z(T0), end=z(T0 + timedelta(days=7)))
    assert after["events"] == []


def test_book_room__checks_every_occurrence_and_capacity(cal):
    cal.call("calendar_book_room", event_id=1, room="Berlin Atlas")
    assert cal.call("calendar_get_event", event_id=1)["room"] == "Berlin Atlas"
    cal.call("calendar_invite", event_id=1, usernames="cora.ceo,dev.two,olaf.out")
    with pytest.raises(AppError) as full:
        cal.call("calendar_book_room", event_id=1, room="Berlin Atlas")
    assert full.value.code == "conflict" and "holds 4" in str(full.value)


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("calendar_list_events", {"start": "2026-03-02T09:00:00", "end": "2026-03-03T09:00:00Z"}, "invalid_argument"),
        ("calendar_list_events", {"start": "2026-03-02T09:00:00Z", "end": "2026-06-02T09:00:00Z"}, "invalid_argument"),
        ("calendar_list_events", {"start": "yesterday", "end": "today"}, "invalid_argument"),
        (
            "calendar_create_event",
            {"title": "x", "start": "2026-03-01T10:00:00Z", "end": "2026-03-01T11:00:00Z"},
            "invalid_argument",
        ),
        (
            "calendar_create_event",
            {"title": "x", "start": "2026-03-05T10:00:00Z", "end": "2026-03-05T09:00:00Z"},
            "invalid_argument",
        ),
        (
            "calendar_create_event",
            {"title": "x", "start": "2026-03-05T10:00:00Z", "end": "2026-03-05T11:00:00Z", "rrule": "FREQ=SECONDLY"},
            "invalid_argument",
        ),
        (
            "calendar_create_event",
            {"title": "x", "start": "2026-03-05T10:00:00Z", "end": "2026-03-05T11:00:00Z", "attendees": "nobody.here"},
            "not_found",
        ),
        (
            "calendar_find_free_slots",
            {
                "usernames": "dev.one",
                "duration_minutes": 0,
                "start": "2026-03-02T09:00:00Z",
                "end": "2026-03-03T09:00:00Z",
            },
            "invalid_argument",
        ),
        ("calendar_rsvp", {"event_id": 1, "response": "maybe"}, "invalid_argument"),
        ("calendar_book_room", {"event_id": 1, "room": "Moon Base"}, "not_found"),
        ("calendar_get_event", {"event_id": 999}, "not_found"),
    ],
)
def test_bad_input__gives_a_stable_code_and_changes_nothing(cal, tool, args, code):
    before = cal.hash()
    with pytest.raises(AppError) as info:
        cal.call(tool, **args)
    assert info.value.code == code
    assert cal.hash() == before


def test_reads__never_change_state(cal):
    before, logged = cal.hash(), cal.log_count()
    cal.call("calendar_list_events", start=z(T0), end=z(T0 + timedelta(days=30)))
    cal.call(
        "calendar_find_free_slots",
        usernames="dev.one,cora.ceo",
        duration_minutes=60,
        start=z(T0),
        end=z(T0 + timedelta(days=5)),
    )
    cal.call("calendar_list_rooms", location="berlin")
    cal.call("calendar_get_event", event_id=1)
    assert cal.hash() == before and cal.log_count() == logged

"""The calendar tools: thin, documented wrappers over ``mcp_tools.calendar.service``.

Times are ISO 8601 with an offset (``2026-03-02T10:00:00+01:00`` or ``...Z``); results are in UTC.
"""

from __future__ import annotations

from typing import Any

from mcp_tools.base import READ, WRITE, ToolSet, current_context
from mcp_tools.calendar import service

calendar = ToolSet("calendar")


@calendar.tool(READ)
def list_events(start: str, end: str, username: str | None = None) -> dict[str, Any]:
    """List event occurrences in a time range, recurring ones expanded; another person's shows busy blocks.

    Args:
        start: Range start, ISO 8601 with an offset.
        end: Range end (at most 62 days after start).
        username: Whose calendar; yours when omitted.
    """
    return service.list_events(current_context(), start, end, username)


@calendar.tool(READ)
def get_event(event_id: int) -> dict[str, Any]:
    """Read an event you organize or are invited to, with its attendees and their answers.

    Args:
        event_id: Id of the event.
    """
    return service.get_event(current_context(), event_id)


@calendar.tool(READ)
def find_free_slots(
    usernames: str, duration_minutes: int, start: str, end: str, step_minutes: int = 30, limit: int = 10
) -> dict[str, Any]:
    """Find times when you and everyone named are in working hours (their own time zones) and free.

    Args:
        usernames: Comma-separated usernames to meet with.
        duration_minutes: Meeting length in minutes (5-480).
        start: Earliest start, ISO 8601 with an offset.
        end: Latest end (at most 14 days after start).
        step_minutes: Grid of candidate starts: 5, 10, 15, 30 or 60.
        limit: How many slots to return (1-50).
    """
    return service.find_free_slots(current_context(), usernames, duration_minutes, start, end, step_minutes, limit)


@calendar.tool(WRITE)
def create_event(
    title: str,
    start: str,
    end: str,
    attendees: str = "",
    room: str | None = None,
    description: str = "",
    rrule: str | None = None,
) -> dict[str, Any]:
    """Create an event you organize and invite people; clashes of yours or the room's are refused.

    Attendees' own clashes do not block it: they are listed in attendee_conflicts.

    Args:
        title: What the meeting is.
        start: Start, ISO 8601 with an offset.
        end: End (up to 8 hours after start).
        attendees: Comma-separated usernames to invite.
        room: Room name to book (see calendar_list_rooms).
        description: Agenda or notes.
        rrule: Recurrence such as FREQ=WEEKLY;BYDAY=MO (DAILY or WEEKLY, INTERVAL, BYDAY, COUNT).
    """
    return service.create_event(current_context(), title, start, end, attendees, room, description, rrule)


@calendar.tool(WRITE)
def update_event(
    event_id: int,
    title: str | None = None,
    start: str | None = None,
    end: str | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    """Change an event you organize; omitted fields stay.

    Args:
        event_id: Id of the event.
        title: New title.
        start: New start, ISO 8601 with an offset.
        end: New end.
        description: New description.
    """
    return service.update_event(current_context(), event_id, title, start, end, description)


@calendar.tool(WRITE)
def cancel_event(event_id: int) -> dict[str, Any]:
    """Cancel an event you organize.

    Args:
        event_id: Id of the event.
    """
    return service.cancel_event(current_context(), event_id)


@calendar.tool(WRITE)
def invite(event_id: int, usernames: str, optional: bool = False) -> dict[str, Any]:
    """Invite more people to an event you organize.

    Args:
        event_id: Id of the event.
        usernames: Comma-separated usernames.
        optional: Invite them as optional attendees.
    """
    return service.invite(current_context(), event_id, usernames, optional)


@calendar.tool(WRITE)
def rsvp(event_id: int, response: str) -> dict[str, Any]:
    """Answer an invitation.

    Args:
        event_id: Id of the event.
        response: One of accepted, declined, tentative.
    """
    return service.rsvp(current_context(), event_id, response)


@calendar.tool(READ)
def list_rooms(location: str | None = None, min_capacity: int = 0) -> dict[str, Any]:
    """List meeting rooms with their capacity and location.

    Args:
        location: Only rooms in this location (e.g. Berlin).
        min_capacity: Only rooms holding at least this many people.
    """
    return service.list_rooms(current_context(), location, min_capacity)


@calendar.tool(WRITE)
def book_room(event_id: int, room: str) -> dict[str, Any]:
    """Book a room for an event you organize (every occurrence must find it free).

    Args:
        event_id: Id of the event.
        room: Room name.
    """
    return service.book_room(current_context(), event_id, room)


EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "calendar_list_events": [{"start": "{today}T00:00:00+00:00", "end": "{in_week}T00:00:00+00:00"}],
    "calendar_get_event": [{"event_id": "{event}"}],
    "calendar_find_free_slots": [
        {"usernames": "{coworker}", "duration_minutes": 30, "start": "{today}T00:00:00Z", "end": "{in_week}T00:00:00Z"}
    ],
    "calendar_create_event": [
        {"title": "Sync", "start": "{slot_start}", "end": "{slot_end}", "attendees": "{coworker}", "room": "{room}"}
    ],
    "calendar_update_event": [{"event_id": "{my_event}", "title": "Sync (moved)"}],
    "calendar_cancel_event": [{"event_id": "{my_event}"}],
    "calendar_invite": [{"event_id": "{my_event}", "usernames": "{member}"}],
    "calendar_rsvp": [{"event_id": "{invited_event}", "response": "tentative"}],
    "calendar_list_rooms": [{}, {"min_capacity": 8}],
    "calendar_book_room": [{"event_id": "{my_event}", "room": "{room}"}],
}
"""Example calls for ``mcp_tools.check.check_app`` (placeholders are filled from the world)."""

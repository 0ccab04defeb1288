"""Calendar: rooms, events (with RFC 5545 recurrence rules), attendees and their RSVPs."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, UTCDateTime, intpk, name_str, text, utc_ts

RSVP_STATES: tuple[str, ...] = ("needs_action", "accepted", "declined", "tentative")


class Room(Base):
    """A bookable meeting room in one location."""

    __tablename__ = "rooms"

    id: Mapped[intpk]
    name: Mapped[name_str] = mapped_column(unique=True)
    location_id: Mapped[int] = mapped_column(ForeignKey("locations.id"), index=True)
    capacity: Mapped[int] = mapped_column(Integer)


class Event(Base):
    """A meeting. ``rrule`` (e.g. ``FREQ=WEEKLY;BYDAY=MO``) makes it recur from ``start_at`` until ``until``."""

    __tablename__ = "events"

    id: Mapped[intpk]
    organizer_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    title: Mapped[str] = mapped_column(String(300))
    description: Mapped[text] = mapped_column(default="")
    start_at: Mapped[utc_ts] = mapped_column(index=True)
    end_at: Mapped[utc_ts]
    rrule: Mapped[str | None] = mapped_column(String(200))
    until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    room_id: Mapped[int | None] = mapped_column(ForeignKey("rooms.id"), index=True)
    cancelled: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[utc_ts]


class EventAttendee(Base):
    """An invitee and their answer."""

    __tablename__ = "event_attendees"
    __table_args__ = (UniqueConstraint("event_id", "employee_id"),)

    id: Mapped[intpk]
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id"), index=True)
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    rsvp: Mapped[str] = mapped_column(String(15), default="needs_action")
    optional: Mapped[bool] = mapped_column(default=False)

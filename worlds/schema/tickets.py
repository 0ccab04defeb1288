"""Tickets, sprints, labels, links, comments and status history (workflow in ``worlds.workflow``)."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, UTCDateTime, intpk, name_str, text, utc_ts


class Sprint(Base):
    """A two-week iteration of one project."""

    __tablename__ = "sprints"

    id: Mapped[intpk]
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), index=True)
    name: Mapped[name_str]
    start_date: Mapped[date] = mapped_column()
    end_date: Mapped[date] = mapped_column()
    state: Mapped[str] = mapped_column(String(10), doc="future | active | closed")


class Ticket(Base):
    """A unit of work; ``key`` is ``<project key>-<number>``."""

    __tablename__ = "tickets"

    id: Mapped[intpk]
    key: Mapped[str] = mapped_column(String(20), unique=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    type: Mapped[str] = mapped_column(String(10))
    title: Mapped[str] = mapped_column(String(300))
    description: Mapped[text]
    status: Mapped[str] = mapped_column(String(20), index=True)
    priority: Mapped[str] = mapped_column(String(10), index=True)
    assignee_id: Mapped[int | None] = mapped_column(ForeignKey("employees.id"), index=True)
    reporter_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    sprint_id: Mapped[int | None] = mapped_column(ForeignKey("sprints.id"), index=True)
    story_points: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[utc_ts]
    updated_at: Mapped[utc_ts]
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class TicketLabel(Base):
    """A free-form label on a ticket."""

    __tablename__ = "ticket_labels"
    __table_args__ = (UniqueConstraint("ticket_id", "label"),)

    id: Mapped[intpk]
    ticket_id: Mapped[int] = mapped_column(ForeignKey("tickets.id"), index=True)
    label: Mapped[str] = mapped_column(String(50), index=True)


class TicketLink(Base):
    """A directed relation between two tickets (``blocks``, ``relates_to``, ``duplicates``)."""

    __tablename__ = "ticket_links"
    __table_args__ = (UniqueConstraint("source_id", "target_id", "kind"),)

    id: Mapped[intpk]
    source_id: Mapped[int] = mapped_column(ForeignKey("tickets.id"), index=True)
    target_id: Mapped[int] = mapped_column(ForeignKey("tickets.id"), index=True)
    kind: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[utc_ts]


class TicketComment(Base):
    """A comment on a ticket."""

    __tablename__ = "ticket_comments"

    id: Mapped[intpk]
    ticket_id: Mapped[int] = mapped_column(ForeignKey("tickets.id"), index=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    body: Mapped[text]
    created_at: Mapped[utc_ts]


class TicketStatusChange(Base):
    """One step of a ticket's status history; the first row has ``from_status`` null (creation)."""

    __tablename__ = "ticket_status_changes"

    id: Mapped[intpk]
    ticket_id: Mapped[int] = mapped_column(ForeignKey("tickets.id"), index=True)
    from_status: Mapped[str | None] = mapped_column(String(20))
    to_status: Mapped[str] = mapped_column(String(20))
    actor_id: Mapped[int] = mapped_column(ForeignKey("employees.id"))
    changed_at: Mapped[utc_ts]

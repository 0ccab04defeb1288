"""Projects, their members and milestones."""

from __future__ import annotations

from datetime import date

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, intpk, name_str, text

PROJECT_STATUSES: tuple[str, ...] = ("planned", "active", "paused", "completed")


class Project(Base):
    """A body of work owned by a team; its ``key`` prefixes ticket keys (``ENG-123``)."""

    __tablename__ = "projects"

    id: Mapped[intpk]
    key: Mapped[str] = mapped_column(String(10), unique=True)
    name: Mapped[name_str]
    description: Mapped[text]
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    lead_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    status: Mapped[str] = mapped_column(String(20))
    start_date: Mapped[date] = mapped_column()
    target_date: Mapped[date | None] = mapped_column()
    next_ticket_number: Mapped[int] = mapped_column(default=1)


class ProjectMember(Base):
    """Membership gives permission to work on a project's tickets."""

    __tablename__ = "project_members"
    __table_args__ = (UniqueConstraint("project_id", "employee_id"),)

    id: Mapped[intpk]
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), index=True)
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    role: Mapped[str] = mapped_column(String(20), doc="lead | member | viewer")


class Milestone(Base):
    """A dated goal inside a project."""

    __tablename__ = "milestones"

    id: Mapped[intpk]
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), index=True)
    name: Mapped[name_str]
    due_date: Mapped[date] = mapped_column()
    done: Mapped[bool] = mapped_column(default=False)

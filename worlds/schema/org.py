"""Company, org chart and people: the directory every other context points at."""

from __future__ import annotations

from datetime import date

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, cents, day, intpk, json_list, name_str

ROLES: tuple[str, ...] = ("employee", "manager", "executive", "hr", "finance", "it_admin", "legal")
LEVELS: tuple[str, ...] = ("IC1", "IC2", "IC3", "IC4", "IC5", "M1", "M2", "M3", "E1", "E2")


class Company(Base):
    """The one company of a world."""

    __tablename__ = "companies"

    id: Mapped[intpk]
    name: Mapped[name_str]
    domain: Mapped[str] = mapped_column(String(100), unique=True)
    industry: Mapped[str] = mapped_column(String(40))
    founded: Mapped[day]
    headquarters: Mapped[name_str]


class Location(Base):
    """An office (or 'Remote') with its IANA time zone."""

    __tablename__ = "locations"

    id: Mapped[intpk]
    name: Mapped[name_str] = mapped_column(unique=True)
    timezone: Mapped[str] = mapped_column(String(60))


class Department(Base):
    """A top-level unit headed by an executive (Engineering, Sales, ...)."""

    __tablename__ = "departments"

    id: Mapped[intpk]
    name: Mapped[name_str] = mapped_column(unique=True)
    code: Mapped[str] = mapped_column(String(10), unique=True)
    head_id: Mapped[int | None] = mapped_column(
        ForeignKey("employees.id", use_alter=True, deferrable=True, initially="DEFERRED"), index=True
    )


class Team(Base):
    """A working group inside a department, led by a manager."""

    __tablename__ = "teams"

    id: Mapped[intpk]
    department_id: Mapped[int] = mapped_column(ForeignKey("departments.id"), index=True)
    name: Mapped[name_str] = mapped_column(unique=True)
    slug: Mapped[str] = mapped_column(String(60), unique=True)
    lead_id: Mapped[int | None] = mapped_column(
        ForeignKey("employees.id", use_alter=True, deferrable=True, initially="DEFERRED"), index=True
    )


class Employee(Base):
    """A person; ``manager_id`` is null only for the CEO."""

    __tablename__ = "employees"

    id: Mapped[intpk]
    first_name: Mapped[str] = mapped_column(String(80))
    last_name: Mapped[str] = mapped_column(String(80))
    username: Mapped[str] = mapped_column(String(80), unique=True)
    email: Mapped[str] = mapped_column(String(200), unique=True)
    title: Mapped[name_str]
    level: Mapped[str] = mapped_column(String(4))
    # Deferred: after a reorg a manager may have a higher id than their report (the new lead manages the old).
    manager_id: Mapped[int | None] = mapped_column(
        ForeignKey("employees.id", deferrable=True, initially="DEFERRED"), index=True
    )
    department_id: Mapped[int] = mapped_column(ForeignKey("departments.id"), index=True)
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id"), index=True)
    location_id: Mapped[int] = mapped_column(ForeignKey("locations.id"))
    timezone: Mapped[str] = mapped_column(String(60))
    work_start_minute: Mapped[int] = mapped_column(Integer, doc="Start of the working day, local minutes.")
    work_end_minute: Mapped[int] = mapped_column(Integer, doc="End of the working day, local minutes.")
    workdays: Mapped[str] = mapped_column(String(7), doc="Seven 0/1 flags, Monday first.")
    skills: Mapped[json_list]
    hire_date: Mapped[date] = mapped_column()
    active: Mapped[bool] = mapped_column(default=True)
    # The last working day of someone who left inside the generated history (null for everyone else, and for
    # people an episode deactivates: the change log dates those).
    leave_date: Mapped[date | None] = mapped_column(default=None)


class EmployeeRole(Base):
    """An access-control role held by an employee (see ``ROLES``)."""

    __tablename__ = "employee_roles"
    __table_args__ = (UniqueConstraint("employee_id", "role"),)

    id: Mapped[intpk]
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    role: Mapped[str] = mapped_column(String(30))


class EmployeePrivate(Base):
    """Restricted fields, readable only by roles that may see them (HR, finance, the person's managers)."""

    __tablename__ = "employee_private"

    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), primary_key=True)
    salary_cents: Mapped[cents]
    performance_rating: Mapped[int] = mapped_column(Integer, doc="1 (low) to 5 (high).")
    personal_email: Mapped[str] = mapped_column(String(200))
    personal_phone: Mapped[str] = mapped_column(String(40))


class ReportingChange(Base):
    """One person's move in a reorg: who they reported to and which team they were in, before and after.

    Why a table: the directory only holds today's reporting lines, yet mail, 1:1 series and meeting notes written
    before the change name the manager of that time; this record is what lets a reader (or ``worlds.coherence``)
    tell a stale artifact from a historical one. ``effective_on`` is the first day the new line holds.
    """

    __tablename__ = "reporting_changes"

    id: Mapped[intpk]
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    effective_on: Mapped[day]
    old_manager_id: Mapped[int | None] = mapped_column(ForeignKey("employees.id"))
    new_manager_id: Mapped[int | None] = mapped_column(ForeignKey("employees.id"))
    old_team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id"))
    new_team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id"))
    old_title: Mapped[name_str]
    new_title: Mapped[name_str]
    reason: Mapped[name_str]

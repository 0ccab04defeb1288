"""Coherence checks of the org's history: reporting lines over time, quarterly budgets, and actuals vs receipts.

Why a module of its own: ``worlds.coherence`` holds the reference and time checks; these three read the
``reporting_changes`` record and the finance sheets the generator writes (``worlds.generate.reorg`` and
``worlds.generate.budgets``), and register in ``COHERENCE_CHECKS`` there like any other check.

Episode writes are not the history's: rows inserted through the change log are skipped, and so is anybody whose
directory row an episode updated (a scenario may give someone a new manager; the record of the past stays true).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from sqlalchemy import Connection, select

from worlds.schema import (
    ChangeLog,
    ChannelMember,
    Department,
    Document,
    Employee,
    EmployeePrivate,
    Event,
    EventAttendee,
    Mailbox,
    MailMessage,
    Post,
    ReportingChange,
    Team,
    Ticket,
)
from worlds.workflow import TERMINAL_STATUSES

RECEIPT_NUMBER = re.compile(r"R\d{4}-\d{4,}")
"""How a generated receipt is numbered (``worlds.generate.budgets``)."""
_FIELD = re.compile(r"^(Receipt|Date|Amount): (.+)$", re.MULTILINE)
_QUARTER_DOC = re.compile(r"^(Budget|Actuals) Q([1-4]) (\d{4})\.")
_FAR = datetime(9999, 1, 1, tzinfo=UTC)


class _Tally(Protocol):
    checked: int

    def fail(self, problem: str) -> None: ...


def _touched(conn: Connection, table: str, op: str) -> set[int]:
    """Ids of ``table`` rows an episode wrote with ``op`` (through the change log)."""
    return {
        int(json.loads(key)[0])
        for key in conn.scalars(select(ChangeLog.row_key).where(ChangeLog.table_name == table, ChangeLog.op == op))
    }


def _cells(content: Any, sheet: str) -> dict[tuple[str, int], Any]:
    """(column, row) -> cached value of one sheet of a parsed workbook."""
    sheets = content.get("sheets", []) if isinstance(content, dict) else []
    found = next((s for s in sheets if s.get("name") == sheet and isinstance(s.get("cells"), dict)), None)
    out: dict[tuple[str, int], Any] = {}
    for ref, cell in (found or {}).get("cells", {}).items():
        m = re.fullmatch(r"([A-Z]+)(\d+)", ref)
        if m:
            out[(m[1], int(m[2]))] = cell[0] if isinstance(cell, list) else cell
    return out


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


# -- reporting lines ------------------------------------------------------------------------------------------


class _Lines:
    """Who reported to whom at any time: the recorded changes before their first day, the directory after."""

    def __init__(self, conn: Connection) -> None:
        self.today = {i: (m, t, title) for i, m, t, title in conn.execute(
            select(Employee.id, Employee.manager_id, Employee.team_id, Employee.title)
        )}  # fmt: skip
        self.hired = dict(conn.execute(select(Employee.id, Employee.hire_date)).all())
        self.users = dict(conn.execute(select(Employee.username, Employee.id)).all())
        self.skip = _touched(conn, "employees", "update") | _touched(conn, "employees", "insert")
        self.changes: dict[int, list[tuple[datetime, Any]]] = {}
        for row in conn.execute(select(ReportingChange).order_by(ReportingChange.effective_on, ReportingChange.id)):
            self.changes.setdefault(row.employee_id, []).append((_midnight(row.effective_on), row))

    def manager_at(self, emp: int, t: datetime) -> int | None:
        """The manager of ``emp`` at ``t``."""
        for at, row in self.changes.get(emp, []):
            if t < at:
                return row.old_manager_id  # type: ignore[no-any-return]
        history = self.changes.get(emp)
        return history[-1][1].new_manager_id if history else self.today[emp][0]

    def holds(self, emp: int, boss: int, lo: datetime, hi: datetime) -> bool:
        """``boss`` managed ``emp`` from ``lo`` (or the hire, if later) to just before ``hi``."""
        lo = max(lo, _midnight(self.hired[emp]))
        if lo >= hi:
            return True  # joined after the span: nothing to agree with
        if self.manager_at(emp, lo) != boss or self.manager_at(emp, min(hi, _FAR) - timedelta(seconds=1)) != boss:
            return False
        return all(row.new_manager_id == boss for at, row in self.changes.get(emp, []) if lo < at < hi)


def _announcements(conn: Connection, lines: _Lines, tally: _Tally) -> None:
    """Today's directory is the last recorded line, lines chain, and each reorg was announced before it held."""
    for emp, history in sorted(lines.changes.items()):
        if emp in lines.skip:
            continue
        tally.checked += 1
        last = history[-1][1]
        manager, team, title = lines.today[emp]
        if (last.new_manager_id, last.new_team_id, last.new_title) != (manager, team, title):
            now = (last.new_manager_id, last.new_team_id, last.new_title)
            tally.fail(f"employee {emp}: the directory says {(manager, team, title)}, the last reporting change {now}")
        elif any(a[1].new_manager_id != b[1].old_manager_id for a, b in zip(history, history[1:], strict=False)):
            tally.fail(f"employee {emp}: reporting changes do not chain (a new manager is not the next old one)")
    has_mail = conn.execute(select(Mailbox.id).where(Mailbox.employee_id.is_not(None)).limit(1)).first() is not None
    if not has_mail:
        return
    heads = {
        tid: (name, head)
        for tid, name, head in conn.execute(
            select(Team.id, Team.name, Department.head_id).join(Department, Department.id == Team.department_id)
        )
    }
    reorgs = sorted({(row.new_team_id, row.effective_on) for h in lines.changes.values() for _, row in h})
    for team, day in reorgs:
        if team is None:
            continue
        name, head = heads[team]
        tally.checked += 1
        sent = conn.scalars(
            select(MailMessage.sent_at)
            .join(Mailbox, Mailbox.id == MailMessage.sender_mailbox_id)
            .where(
                Mailbox.employee_id == head, MailMessage.in_reply_to_id.is_(None), MailMessage.subject.contains(name)
            )
            .order_by(MailMessage.sent_at)
        ).first()
        if sent is None:
            tally.fail(f"the {name} reorg of {day} was never announced by the department head")
        elif sent >= _midnight(day):
            tally.fail(f"the {name} reorg of {day} was announced at {sent:%Y-%m-%d %H:%M}, after it took effect")


def _series(conn: Connection, lines: _Lines, tally: _Tally) -> None:
    """1:1 and team weekly series are organised by the attendees' manager for as long as each series runs."""
    inserted = _touched(conn, "events", "insert")
    people: dict[int, list[int]] = {}
    for eid, emp in conn.execute(select(EventAttendee.event_id, EventAttendee.employee_id)):
        people.setdefault(eid, []).append(emp)
    for eid, title, org, start, until in conn.execute(
        select(Event.id, Event.title, Event.organizer_id, Event.start_at, Event.until)
        .where(Event.rrule.is_not(None), (Event.title.like("1:1 %")) | (Event.title.like("% weekly")))
        .order_by(Event.id)
    ):
        if eid in inserted:
            continue
        others = sorted(set(people.get(eid, [])) - {org} - lines.skip)
        if title.startswith("1:1 ") and len(others) != 1:
            continue
        tally.checked += 1
        end = until or _FAR
        wrong = [a for a in others if not lines.holds(a, org, start, end)]
        if wrong:
            boss = lines.manager_at(wrong[0], max(start, _midnight(lines.hired[wrong[0]])))
            tally.fail(f"event {eid} ({title}) from {start:%Y-%m-%d} is organised by employee {org}, but employee "
                       f"{wrong[0]} reported to {boss} then")  # fmt: skip


def _notes(conn: Connection, lines: _Lines, tally: _Tally) -> None:
    """Weekly notes (as generated) are written by the lead the attendees reported to that week."""
    mention = re.compile(r"@([a-z][a-z0-9._]*[a-z0-9])")
    for did, name, content, owner, at in conn.execute(
        select(Document.id, Document.name, Document.content, Document.owner_id, Document.created_at)
        .where(Document.name.like("% weekly notes %"), Document.version == 1)
        .order_by(Document.id)
    ):
        attendees = _attendees(content)
        who = [lines.users[u] for u in mention.findall(attendees) if u in lines.users]
        who = [a for a in who if a != owner and a not in lines.skip and lines.hired[a] <= at.date()]
        if not who:
            continue
        tally.checked += 1
        wrong = [a for a in who if lines.manager_at(a, at) != owner]
        if wrong:
            tally.fail(f"document {did} ({name}) is written by employee {owner}, but attendee {wrong[0]} reported "
                       f"to {lines.manager_at(wrong[0], at)} that day")  # fmt: skip


def _attendees(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    for section in content.get("sections", []):
        if section.get("heading") == "Attendees":
            return str(section.get("body", ""))
    blocks = content.get("blocks", [])
    for i, (level, text) in enumerate(blocks):
        if level and text == "Attendees" and i + 1 < len(blocks):
            return str(blocks[i + 1][1])
    return ""


def reorg(conn: Connection, tally: _Tally) -> None:
    """Reporting lines over time: the directory is the last change, announced before it held.

    And every 1:1 series, team weekly and weekly notes names the manager of its own time.
    """
    lines = _Lines(conn)
    _announcements(conn, lines, tally)
    _series(conn, lines, tally)
    _notes(conn, lines, tally)


# -- money ----------------------------------------------------------------------------------------------------


def budget_quarters(conn: Connection, tally: _Tally) -> None:
    """Each quarter's budget counts the people on the payroll the day it was written, and their quarter's pay."""
    new = _touched(conn, "employees", "insert")
    depts: dict[str, int] = dict(conn.execute(select(Department.name, Department.id)).all())
    staff: dict[int, list[tuple[date, date | None, int]]] = {}
    for emp, dept, hired, left, cents in conn.execute(
        select(
            Employee.id, Employee.department_id, Employee.hire_date, Employee.leave_date, EmployeePrivate.salary_cents
        )
        .join(EmployeePrivate, EmployeePrivate.employee_id == Employee.id)
        .order_by(Employee.id)
    ):
        if emp not in new:
            staff.setdefault(dept, []).append((hired, left, cents))
    for name, content, at in conn.execute(
        select(Document.name, Document.content, Document.created_at)
        .where(Document.name.like("Budget Q%"), Document.version == 1)
        .order_by(Document.id)
    ):
        cells = _cells(content, "Budget")
        if not _QUARTER_DOC.match(name) or cells.get(("F", 1)) != "Quarter total":
            continue  # a task's own budget sheet
        for row in sorted(r for c, r in cells if c == "A" and r > 1):
            if cells[("A", row)] not in depts:
                continue
            dept = depts[cells[("A", row)]]
            tally.checked += 1
            on = [
                c
                for hired, left, c in staff.get(dept, [])
                if hired <= at.date() and (left is None or left >= at.date())
            ]
            payroll = round(sum(on) / 400)
            count, pay, total = cells.get(("C", row)), cells.get(("D", row)), cells.get(("F", row))
            if count != len(on):
                tally.fail(f"{name}: {cells[('A', row)]} counts {count} people, the payroll on {at:%Y-%m-%d} {len(on)}")
            elif pay != payroll:
                tally.fail(f"{name}: {cells[('A', row)]} payroll {pay} is not its people's quarter pay {payroll}")
            elif not isinstance(total, int | float) or not payroll <= total <= 2 * payroll:
                tally.fail(f"{name}: {cells[('A', row)]} total {total} is outside 1-2x its payroll {payroll}")


def actuals(conn: Connection, tally: _Tally) -> None:
    """The actuals sheets list exactly the receipts mailed in the history: number, date, amount and sender."""
    inserted = _touched(conn, "mail_messages", "insert")
    mailed: dict[str, tuple[str, float, str]] = {}
    for mid, body, user in conn.execute(
        select(MailMessage.id, MailMessage.body, Employee.username)
        .join(Mailbox, Mailbox.id == MailMessage.sender_mailbox_id)
        .join(Employee, Employee.id == Mailbox.employee_id)
        .where(MailMessage.body.contains("Receipt: R"))
        .order_by(MailMessage.id)
    ):
        fields = dict(_FIELD.findall(body))
        number = fields.get("Receipt", "").strip()
        if mid in inserted or not RECEIPT_NUMBER.fullmatch(number):
            continue
        mailed[number] = (fields.get("Date", "").strip(), round(float(fields["Amount"].split()[0]), 2), user)
    booked: dict[str, tuple[str, float, str, str]] = {}
    for name, content in conn.execute(
        select(Document.name, Document.content)
        .where(Document.name.like("Actuals Q%"), Document.version == 1)
        .order_by(Document.id)
    ):
        cells = _cells(content, "Actuals")
        quarter = _QUARTER_DOC.match(name)
        if quarter is None or (cells.get(("A", 1)), cells.get(("B", 1))) != ("Date", "Receipt"):
            continue
        for row in sorted(r for c, r in cells if c == "B" and r > 1):
            number = str(cells[("B", row)])
            if RECEIPT_NUMBER.fullmatch(number):
                amount = cells.get(("F", row))
                booked[number] = (
                    str(cells.get(("A", row))),
                    round(float(amount), 2) if isinstance(amount, int | float) else -1.0,
                    str(cells.get(("C", row))),
                    f"Q{quarter[2]} {quarter[3]}",
                )
    for number, (day, amount, user) in sorted(mailed.items()):
        tally.checked += 1
        if number not in booked:
            tally.fail(f"receipt {number} mailed by @{user} is in no actuals sheet")
            continue
        b_day, b_amount, b_user, b_quarter = booked[number]
        q = f"Q{(int(day[5:7]) - 1) // 3 + 1} {day[:4]}" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) else "?"
        if (b_day, b_amount, b_user) != (day, amount, user):
            tally.fail(f"receipt {number}: mailed as {day}, {amount:.2f} by @{user}; booked as {b_day}, "
                       f"{b_amount:.2f} by @{b_user}")  # fmt: skip
        elif b_quarter != q:
            tally.fail(f"receipt {number} of {day} is booked in the actuals of {b_quarter}")
    for number in sorted(set(booked) - set(mailed)):
        tally.checked += 1
        tally.fail(f"actuals line {number} ({booked[number][3]}) has no receipt mail")


# -- leavers --------------------------------------------------------------------------------------------------


def last_moments(conn: Connection) -> dict[int, datetime]:
    """Each generated leaver's last moment: the end of their ``leave_date`` in their own time zone (UTC)."""
    out: dict[int, datetime] = {}
    for emp, day, tz in conn.execute(
        select(Employee.id, Employee.leave_date, Employee.timezone)
        .where(Employee.leave_date.is_not(None))
        .order_by(Employee.id)
    ):
        if day is not None:
            out[emp] = datetime.combine(day + timedelta(days=1), time(0), tzinfo=ZoneInfo(tz)).astimezone(UTC)
    return out


def leaver_trail(conn: Connection, tally: _Tally) -> None:
    """A generated leaver is inactive, said goodbye, holds no open ticket, no channel seat and no later meeting."""
    gone = last_moments(conn)
    if not gone:
        return
    # A world generated without chat and mail has nowhere to say goodbye.
    talk = conn.scalar(select(Post.id).limit(1)) is not None or conn.scalar(select(MailMessage.id).limit(1)) is not None
    for emp, active, first in conn.execute(
        select(Employee.id, Employee.active, Employee.first_name).where(Employee.id.in_(gone)).order_by(Employee.id)
    ):
        tally.checked += 1
        said = conn.scalar(
            select(Post.id).where(Post.author_id == emp, Post.created_at > gone[emp] - timedelta(days=1)).limit(1)
        )
        mailed = conn.scalar(select(MailMessage.id).where(MailMessage.subject == f"Farewell {first}").limit(1))
        if active:
            tally.fail(f"employee {emp} has a last day but is active")
        elif said is None and mailed is None and talk:
            tally.fail(f"employee {emp} left without a goodbye post or a farewell mail")
    for key, who in conn.execute(
        select(Ticket.key, Ticket.assignee_id)
        .where(Ticket.assignee_id.in_(gone), Ticket.status.not_in(TERMINAL_STATUSES))
        .order_by(Ticket.id)
    ):
        tally.checked += 1
        tally.fail(f"ticket {key} is open and still assigned to employee {who}, who has left")
    for cid, who in conn.execute(
        select(ChannelMember.channel_id, ChannelMember.employee_id)
        .where(ChannelMember.employee_id.in_(gone))
        .order_by(ChannelMember.id)
    ):
        tally.checked += 1
        tally.fail(f"employee {who} has left but is still in channel {cid}")
    booked = _touched(conn, "event_attendees", "insert")
    for aid, eid, who, start, rrule, until in conn.execute(
        select(EventAttendee.id, Event.id, EventAttendee.employee_id, Event.start_at, Event.rrule, Event.until)
        .join(Event, Event.id == EventAttendee.event_id)
        .where(EventAttendee.employee_id.in_(gone))
        .order_by(EventAttendee.id)
    ):
        if aid in booked:
            continue
        tally.checked += 1
        end = (until or _FAR) if rrule else start
        if end > gone[who]:
            tally.fail(f"event {eid} has employee {who} attending after their last day {gone[who]:%Y-%m-%d}")

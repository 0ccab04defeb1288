"""Coherence checks: does the company's story agree with itself? (issue 12 item 4; run by ``check_world``).

Why: a world can keep every foreign key and still read false: a mail titled "Status of DAT-31" asking about
GRO-2, a chat post naming a ticket filed a week later, a budget of $0.9M for a 40-person department. An agent
trained there learns that references mean nothing. Each check here counts the items it looked at and the ones
that failed, so ``companysim world check`` can print "1,204 checked, 0 failed" per check.

What counts as a reference: a ticket key is ``KEY-N`` whose ``KEY`` is a project of the world (so "ISO-8601" in
free text is not a reference, while "DAT-99999" is a dangling one); a mention is ``@username`` not preceded by
a word character (so email addresses are not mentions). Commit messages live in the git repositories, not in
the database, so only merge requests and their notes are checked for code references here.

What counts as activity (working hours): rows the generator wrote, i.e. posts, mails, ticket comments and
status changes that no change-log row inserted. Episode writes happen on the episode's clock and are the
agent's or a coworker's business, not the history's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Connection, select

from worlds.coherence_org import actuals, budget_quarters, last_moments, leaver_trail, reorg
from worlds.schema import (
    ChangeLog,
    Channel,
    Department,
    Document,
    Employee,
    EmployeePrivate,
    Mailbox,
    MailMessage,
    MailThread,
    MergeRequest,
    MergeRequestNote,
    Post,
    Project,
    ProjectMember,
    Reaction,
    Ticket,
    TicketComment,
    TicketStatusChange,
)

MAX_SHOWN = 50
"""Violation messages kept per check; the counts stay exact."""

BUDGET_OVERHEAD = (1.0, 2.0)
"""A department's annual budget lies between its payroll and twice its payroll (salaries plus overhead)."""

_KEY = re.compile(r"\b([A-Z][A-Z0-9]{1,9})-(\d+)\b")
_MENTION = re.compile(r"(?<![\w.@])@([a-z][a-z0-9._]*[a-z0-9])")


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """One named check over a world: how many items it looked at, how many failed, and the first messages."""

    name: str
    about: str
    checked: int
    failed: int
    problems: tuple[str, ...]
    expected_to_fail: str = ""

    @property
    def ok(self) -> bool:
        """No item failed."""
        return self.failed == 0


@dataclass(kw_only=True)
class Tally:
    """The running count of one check; a check function adds to it."""

    checked: int = 0
    failed: int = 0
    problems: list[str] = field(default_factory=list)
    expected_to_fail: str = ""

    def fail(self, problem: str) -> None:
        """Count one failed item and keep its message (the first ``MAX_SHOWN``)."""
        self.failed += 1
        if len(self.problems) < MAX_SHOWN:
            self.problems.append(problem)

    def fail_all(self, problems: list[str]) -> None:
        """Count each message as one failed item."""
        for p in problems:
            self.fail(p)

    def result(self, name: str, about: str) -> CheckResult:
        """The finished row."""
        return CheckResult(
            name=name,
            about=about,
            checked=max(self.checked, self.failed),
            failed=self.failed,
            problems=tuple(self.problems),
            expected_to_fail=self.expected_to_fail,
        )


@dataclass(frozen=True, kw_only=True)
class _Refs:
    """What references resolve against: tickets by key (with creation time and assignee) and usernames."""

    projects: frozenset[str]
    tickets: dict[str, tuple[datetime, int | None]]
    usernames: frozenset[str]

    def keys(self, text: str) -> list[str]:
        """The ticket references in ``text``, in order, without repeats."""
        found = [f"{m[0]}-{m[1]}" for m in _KEY.findall(text) if m[0] in self.projects]
        return list(dict.fromkeys(found))

    def check_text(self, tally: Tally, where: str, text: str, at: datetime | None, mentions: bool = True) -> None:
        """Count one item if ``text`` names anything; fail it on a dangling key, an unknown user or a future key."""
        keys = self.keys(text)
        users = _MENTION.findall(text) if mentions else []
        if not keys and not users:
            return
        tally.checked += 1
        bad = [k for k in keys if k not in self.tickets]
        if bad:
            tally.fail(f"{where} names ticket {bad[0]}, which does not exist")
            return
        unknown = [u for u in users if u not in self.usernames]
        if unknown:
            tally.fail(f"{where} mentions @{unknown[0]}, who is not an employee")
            return
        late = [k for k in keys if at is not None and self.tickets[k][0] > at]
        if late:
            tally.fail(f"{where} at {at:%Y-%m-%d %H:%M} names {late[0]}, created later")


def _refs(conn: Connection) -> _Refs:
    return _Refs(
        projects=frozenset(conn.scalars(select(Project.key)).all()),
        tickets={k: (at, a) for k, at, a in conn.execute(select(Ticket.key, Ticket.created_at, Ticket.assignee_id))},
        usernames=frozenset(conn.scalars(select(Employee.username)).all()),
    )


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k in sorted(value):
            yield from _strings(value[k])
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# -- references -----------------------------------------------------------------------------------------------


def _mail_refs(conn: Connection, tally: Tally) -> None:
    """Tickets named in mail exist, existed when the mail was sent, and subject and body name the same one."""
    refs = _refs(conn)
    for mid, subject, body, at in conn.execute(
        select(MailMessage.id, MailMessage.subject, MailMessage.body, MailMessage.sent_at).order_by(MailMessage.id)
    ):
        before = tally.failed
        refs.check_text(tally, f"mail {mid}", f"{subject}\n{body}", at, mentions=False)
        in_subject, in_body = set(refs.keys(subject)), set(refs.keys(body))
        if tally.failed == before and in_subject and in_body and not in_subject & in_body:
            tally.fail(f"mail {mid}: subject names {sorted(in_subject)[0]} but the body {sorted(in_body)[0]}")


def _chat_refs(conn: Connection, tally: Tally) -> None:
    """Tickets and people named in chat posts exist, and each ticket existed when the post was written."""
    refs = _refs(conn)
    for pid, message, at in conn.execute(select(Post.id, Post.message, Post.created_at).order_by(Post.id)):
        refs.check_text(tally, f"post {pid}", message, at)


def _ticket_refs(conn: Connection, tally: Tally) -> None:
    """Tickets named in ticket comments and descriptions exist and were filed before the text naming them."""
    refs = _refs(conn)
    for cid, body, at in conn.execute(
        select(TicketComment.id, TicketComment.body, TicketComment.created_at).order_by(TicketComment.id)
    ):
        refs.check_text(tally, f"comment {cid}", body, at)
    for key, desc, at in conn.execute(select(Ticket.key, Ticket.description, Ticket.created_at).order_by(Ticket.id)):
        refs.check_text(tally, f"ticket {key} description", desc, at)


def _document_refs(conn: Connection, tally: Tally) -> None:
    """Tickets and people named in documents (specs, meeting notes, sheets) exist as of the document's date."""
    refs = _refs(conn)
    for did, name, content, at in conn.execute(
        select(Document.id, Document.name, Document.content, Document.updated_at).order_by(Document.id)
    ):
        refs.check_text(tally, f"document {did} ({name})", "\n".join(_strings(content)), at)


def _code_refs(conn: Connection, tally: Tally) -> None:
    """Tickets named in merge requests and their notes exist and predate them; merges come after approvals."""
    refs = _refs(conn)
    created: dict[int, datetime] = {}
    merged: dict[int, datetime] = {}
    for mid, title, desc, at, merged_at in conn.execute(
        select(
            MergeRequest.id, MergeRequest.title, MergeRequest.description, MergeRequest.created_at,
            MergeRequest.merged_at,
        ).order_by(MergeRequest.id)
    ):  # fmt: skip
        refs.check_text(tally, f"merge request {mid}", f"{title}\n{desc}", at, mentions=False)
        created[mid] = at
        if merged_at is not None:
            merged[mid] = merged_at
    approved: dict[int, datetime] = {}
    for nid, mr, kind, body, at in conn.execute(
        select(
            MergeRequestNote.id, MergeRequestNote.merge_request_id, MergeRequestNote.kind, MergeRequestNote.body,
            MergeRequestNote.created_at,
        ).order_by(MergeRequestNote.id)
    ):  # fmt: skip
        refs.check_text(tally, f"merge request note {nid}", body, at, mentions=False)
        tally.checked += 1
        if at < created[mr]:
            tally.fail(f"merge request note {nid} is before its merge request {mr} was opened")
        if kind == "approve":
            approved[mr] = min(at, approved.get(mr, at))
    for mr, at in sorted(merged.items()):
        tally.checked += 1
        if at < created[mr]:
            tally.fail(f"merge request {mr} was merged before it was opened")
        elif mr in approved and approved[mr] > at:
            tally.fail(f"merge request {mr} was merged at {at:%Y-%m-%d %H:%M}, before its first approval")


# -- time -----------------------------------------------------------------------------------------------------


def _causal(conn: Connection, tally: Tally) -> None:
    """Replies after what they answer (mail, chat reactions), threads open at their first mail, fixes after reports."""
    sent: dict[int, datetime] = {}
    first_in_thread: dict[int, datetime] = {}
    for mid, thread, reply_to, at in conn.execute(
        select(MailMessage.id, MailMessage.thread_id, MailMessage.in_reply_to_id, MailMessage.sent_at).order_by(
            MailMessage.id
        )
    ):
        tally.checked += 1
        sent[mid] = at
        first_in_thread.setdefault(thread, at)
        if reply_to is not None and reply_to in sent and at < sent[reply_to]:
            tally.fail(f"mail {mid} replies to mail {reply_to} but was sent before it")
    for thread, at in conn.execute(select(MailThread.id, MailThread.created_at).order_by(MailThread.id)):
        if thread in first_in_thread and first_in_thread[thread] < at:
            tally.fail(f"mail thread {thread} starts with a mail sent before the thread was created")
    posted = dict(conn.execute(select(Post.id, Post.created_at)).all())
    for rid, post, at in conn.execute(select(Reaction.id, Reaction.post_id, Reaction.created_at).order_by(Reaction.id)):
        tally.checked += 1
        if at < posted[post]:
            tally.fail(f"reaction {rid} is before its post {post}")
    for key, created, resolved in conn.execute(
        select(Ticket.key, Ticket.created_at, Ticket.resolved_at).order_by(Ticket.id)
    ):
        tally.checked += 1
        if resolved is not None and resolved < created:
            tally.fail(f"ticket {key} was resolved before it was reported")


def _inserted(conn: Connection, table: str) -> set[int]:
    """Ids of ``table`` rows inserted through the change log (written in an episode, not generated)."""
    return {
        int(json.loads(key)[0])
        for key in conn.scalars(
            select(ChangeLog.row_key).where(ChangeLog.table_name == table, ChangeLog.op == "insert")
        )
    }


def _updated(conn: Connection, table: str) -> set[int]:
    """Ids of ``table`` rows an episode changed (a history request merged in an episode is the episode's act)."""
    return {
        int(json.loads(key)[0])
        for key in conn.scalars(
            select(ChangeLog.row_key).where(ChangeLog.table_name == table, ChangeLog.op == "update")
        )
    }


def _activity(conn: Connection) -> Iterator[tuple[str, str, int, datetime]]:
    """(table, row id, employee, time) of every post, mail, ticket comment, status change and code act, in order."""
    yield from (
        ("posts", str(i), a, t)
        for i, a, t in conn.execute(select(Post.id, Post.author_id, Post.created_at).order_by(Post.id))
    )
    for i, a, t in conn.execute(
        select(MailMessage.id, Mailbox.employee_id, MailMessage.sent_at)
        .join(Mailbox, Mailbox.id == MailMessage.sender_mailbox_id)
        .where(Mailbox.employee_id.is_not(None))
        .order_by(MailMessage.id)
    ):
        if a is not None:
            yield "mail_messages", str(i), a, t
    yield from (
        ("ticket_comments", str(i), a, t)
        for i, a, t in conn.execute(
            select(TicketComment.id, TicketComment.author_id, TicketComment.created_at).order_by(TicketComment.id)
        )
    )
    for i, a, t in conn.execute(
        select(TicketStatusChange.id, TicketStatusChange.actor_id, TicketStatusChange.changed_at)
        .where(TicketStatusChange.actor_id.is_not(None))
        .order_by(TicketStatusChange.id)
    ):
        if a is not None:
            yield "ticket_status_changes", str(i), a, t
    # Code work: opening a merge request, a review note, a merge (the merge is its merger's act at merged_at).
    for i, a, t, by, merged in conn.execute(
        select(
            MergeRequest.id, MergeRequest.author_id, MergeRequest.created_at, MergeRequest.merged_by_id,
            MergeRequest.merged_at,
        ).order_by(MergeRequest.id)
    ):  # fmt: skip
        yield "merge_requests", str(i), a, t
        if by is not None and merged is not None:
            yield "merge_requests", str(i), by, merged
    yield from (
        ("merge_request_notes", str(i), a, t)
        for i, a, t in conn.execute(
            select(MergeRequestNote.id, MergeRequestNote.author_id, MergeRequestNote.created_at).order_by(
                MergeRequestNote.id
            )
        )
    )


def _leavers(conn: Connection, tally: Tally) -> None:
    """Nobody acts after their last day.

    The last day is a generated leaver's ``leave_date`` (to its end, in their time zone), else the change-log time
    an episode set their ``active`` flag false.
    """
    left: dict[int, datetime] = last_moments(conn)
    for key, changes, at in conn.execute(
        select(ChangeLog.row_key, ChangeLog.changes, ChangeLog.at)
        .where(ChangeLog.table_name == "employees", ChangeLog.op == "update")
        .order_by(ChangeLog.seq)
    ):
        flag = changes.get("active") if isinstance(changes, dict) else None
        if isinstance(flag, list) and flag[-1] is False:
            left.setdefault(int(json.loads(key)[0]), at)
    if not left:
        return
    for table, rid, who, at in _activity(conn):
        if who in left:
            tally.checked += 1
            if at > left[who]:
                tally.fail(f"{table} {rid} by employee {who} is after their last day {left[who]:%Y-%m-%d}")


def _working_hours(conn: Connection, tally: Tally) -> None:
    """Every generated post, mail, comment and status change falls on its author's workday, in their hours."""
    hours = {
        i: (ZoneInfo(tz), lo, hi, days)
        for i, tz, lo, hi, days in conn.execute(
            select(
                Employee.id, Employee.timezone, Employee.work_start_minute, Employee.work_end_minute,
                Employee.workdays,
            )
        )
    }  # fmt: skip
    tables = ("posts", "mail_messages", "ticket_comments", "ticket_status_changes", "merge_request_notes")
    episode = {t: _inserted(conn, t) for t in tables}
    episode["merge_requests"] = _inserted(conn, "merge_requests") | _updated(conn, "merge_requests")
    for table, rid, who, at in _activity(conn):
        if int(rid) in episode[table]:
            continue
        tally.checked += 1
        tz, lo, hi, days = hours[who]
        local = at.astimezone(tz)
        minute = local.hour * 60 + local.minute
        if days[local.weekday()] != "1" or not lo <= minute <= hi:
            tally.fail(f"{table} {rid} by employee {who} is at {local:%a %H:%M} {tz.key}, outside their hours")


_ACTION = re.compile(r"^@([a-z][a-z0-9._]*[a-z0-9]): (.+)\.$")
ACTION_PREFIX = "Action item from the "
"""How an action-item ticket's description starts (``worlds.generate.meetings`` writes it)."""


def _section(content: Any, heading: str) -> list[str]:
    """The lines under ``heading`` in a text document, as generated (sections) or as parsed from ODT/DOCX (blocks)."""
    if not isinstance(content, dict):
        return []
    for section in content.get("sections", []):
        if section.get("heading") == heading:
            return str(section.get("body", "")).split("\n")
    lines: list[str] = []
    inside = False
    for level, text in content.get("blocks", []):
        if level:
            inside = text == heading
        elif inside:
            lines.append(str(text))
    return lines


def _meeting_actions(conn: Connection, tally: Tally) -> None:
    """Each new action item in weekly notes is a ticket owned by the person named, filed after the meeting.

    Both directions: a notes line ``@owner: <title>.`` has a ticket with that title assigned to ``owner`` whose
    description names the notes and whose creation follows the notes; an action-item ticket names notes that
    exist, were written before it, and list it for its assignee. Notes edited since generation are skipped.
    """
    users = dict(conn.execute(select(Employee.id, Employee.username)).all())
    notes: dict[str, tuple[int, datetime, set[tuple[str, str]]]] = {}
    for did, name, content, at, version in conn.execute(
        select(Document.id, Document.name, Document.content, Document.created_at, Document.version)
        .where(Document.name.like("%weekly notes%"))
        .order_by(Document.id)
    ):
        items = {(m[1], m[2]) for line in _section(content, "Action items") if (m := _ACTION.match(line.strip()))}
        if version == 1:
            notes[name.rsplit(".", 1)[0]] = (did, at, items)
    listed: set[tuple[str, str, str]] = set()
    for key, title, desc, owner, at in conn.execute(
        select(Ticket.key, Ticket.title, Ticket.description, Ticket.assignee_id, Ticket.created_at)
        .where(Ticket.description.like(f"{ACTION_PREFIX}%"))
        .order_by(Ticket.id)
    ):
        meeting = desc[len(ACTION_PREFIX) :].split(":", 1)[0]
        if meeting not in notes:
            continue  # notes edited or deleted in an episode
        tally.checked += 1
        did, written, items = notes[meeting]
        who = users.get(owner, "") if owner is not None else ""
        listed.add((meeting, who, title))
        if (who, title) not in items:
            tally.fail(f"ticket {key} is an action item of document {did} ({meeting}), not listed there for @{who}")
        elif at <= written:
            tally.fail(f"ticket {key} was filed at {at:%Y-%m-%d %H:%M}, before its meeting's notes ({meeting})")
    for meeting, (did, _, items) in sorted(notes.items()):
        for who, title in sorted(items):
            tally.checked += 1
            if (meeting, who, title) not in listed:
                tally.fail(f"document {did} ({meeting}) gives @{who} the action {title!r}, but no such ticket exists")


def _postmortems(conn: Connection, tally: Tally) -> None:
    """A postmortem follows its incident: resolved before it, discussed in ~incidents before it, same times.

    Reads generated postmortems (``Postmortem <KEY> <date>``, version 1): the ticket is an incident that was
    resolved before the document was written; ~incidents has a post naming the key written before the document;
    the timeline names the ticket's filing and resolution minutes; the people named work on the ticket's project.
    """
    tickets = {
        key: (tid, kind, created, resolved, project, reporter)
        for tid, key, kind, created, resolved, project, reporter in conn.execute(
            select(
                Ticket.id, Ticket.key, Ticket.type, Ticket.created_at, Ticket.resolved_at, Ticket.project_id,
                Ticket.reporter_id,
            )
        )
    }  # fmt: skip
    first_post: dict[str, datetime] = {}
    refs = _refs(conn)
    for message, at in conn.execute(
        select(Post.message, Post.created_at)
        .join(Channel, Channel.id == Post.channel_id)
        .where(Channel.name == "incidents")
        .order_by(Post.id)
    ):
        for key in refs.keys(message):
            first_post[key] = min(at, first_post.get(key, at))
    members: dict[int, set[str]] = {}
    for project, username in conn.execute(
        select(ProjectMember.project_id, Employee.username).join(Employee, Employee.id == ProjectMember.employee_id)
    ):
        members.setdefault(project, set()).add(username)
    users = dict(conn.execute(select(Employee.id, Employee.username)).all())
    has_chat = conn.execute(select(Channel.id).where(Channel.name == "incidents")).first() is not None
    for did, name, content, written in conn.execute(
        select(Document.id, Document.name, Document.content, Document.created_at)
        .where(Document.name.like("Postmortem %"), Document.version == 1)
        .order_by(Document.id)
    ):
        tally.checked += 1
        key = name.split(" ")[1]
        if key not in tickets:
            tally.fail(f"document {did} ({name}) is the postmortem of {key}, which does not exist")
            continue
        _, kind, created, resolved, project, reporter = tickets[key]
        timeline = " ".join(_section(content, "Timeline"))
        named = set(_MENTION.findall(" ".join(_section(content, "People"))))
        if kind != "incident" or resolved is None or resolved > written:
            tally.fail(f"document {did} ({name}) was written before {key} was resolved (or {key} is no incident)")
        elif has_chat and not (key in first_post and first_post[key] <= written):
            tally.fail(f"document {did} ({name}) has no ~incidents post about {key} before it")
        elif f"{created:%Y-%m-%d %H:%M}" not in timeline or f"{resolved:%Y-%m-%d %H:%M}" not in timeline:
            tally.fail(f"document {did} ({name}): the timeline does not give {key}'s filing and resolution times")
        elif not named <= members.get(project, set()) | {users.get(reporter, "")}:
            tally.fail(f"document {did} ({name}) names people outside {key}'s project: {sorted(named)}")


def _releases(conn: Connection, tally: Tally) -> None:
    """Release notes list only tickets of their project that were done before the notes were written.

    Reads generated notes (``Release notes <milestone>``, version 1, titled ``... (KEY)``): every ticket under
    "Shipped" belongs to project KEY, is done now and was resolved no later than the notes.
    """
    tickets = {
        key: (project, status, resolved)
        for key, project, status, resolved in conn.execute(
            select(Ticket.key, Project.key, Ticket.status, Ticket.resolved_at).join(
                Project, Project.id == Ticket.project_id
            )
        )
    }
    refs = _refs(conn)
    for did, name, content, written in conn.execute(
        select(Document.id, Document.name, Document.content, Document.created_at)
        .where(Document.name.like("Release notes %"), Document.version == 1)
        .order_by(Document.id)
    ):
        title = content.get("sections", [{}])[0].get("heading", "") if "sections" in content else ""
        if not title and "blocks" in content and content["blocks"]:
            title = str(content["blocks"][0][1])
        owner = title.rsplit("(", 1)[-1].rstrip(")")
        for key in refs.keys(" ".join(_section(content, "Shipped"))):
            tally.checked += 1
            project, status, resolved = tickets.get(key, ("", "", None))
            if project != owner:
                tally.fail(f"document {did} ({name}) ships {key}, which is not a ticket of {owner}")
            elif status != "done" or resolved is None or resolved > written:
                tally.fail(f"document {did} ({name}) ships {key}, which was not done when the notes were written")


# -- money ----------------------------------------------------------------------------------------------------


def _sheet(content: Any, name: str) -> dict[str, Any] | None:
    sheets = content.get("sheets", []) if isinstance(content, dict) else []
    found = next((s for s in sheets if s.get("name") == name and isinstance(s.get("cells"), dict)), None)
    return found["cells"] if found else None


def _column(cells: dict[str, Any], col: str) -> dict[int, Any]:
    """Row number -> value of one column of a parsed sheet (values as the apps cache them: ``[value, formula]``)."""
    out: dict[int, Any] = {}
    for ref, cell in cells.items():
        m = re.fullmatch(r"([A-Z]+)(\d+)", ref)
        if m and m[1] == col:
            out[int(m[2])] = cell[0] if isinstance(cell, list) else cell
    return out


def _budgets(conn: Connection, tally: Tally) -> None:
    """The generated budget covers each department's payroll (within ``BUDGET_OVERHEAD``); headcount plans count it.

    Only documents still at version 1 are read: an edited budget is the agent's, not the generator's.
    """
    depts = dict(conn.execute(select(Department.name, Department.id)).all())
    people: dict[int, int] = {}
    payroll: dict[int, int] = {}
    for dept, cents in conn.execute(
        select(Employee.department_id, EmployeePrivate.salary_cents)
        .join(EmployeePrivate, EmployeePrivate.employee_id == Employee.id)
        .where(Employee.active | Employee.leave_date.is_not(None))  # leavers were there when it was written
    ):
        people[dept] = people.get(dept, 0) + 1
        payroll[dept] = payroll.get(dept, 0) + cents
    lo, hi = BUDGET_OVERHEAD
    for did, name, content in conn.execute(
        select(Document.id, Document.name, Document.content).where(Document.version == 1).order_by(Document.id)
    ):
        budget, plan = _sheet(content, "Budget"), _sheet(content, "Headcount")
        for cells, col, header in ((budget, "G", "Total"), (plan, "B", "Current")):
            if cells is None or _column(cells, col).get(1) != header:  # another layout (a task's own sheet)
                continue
            names, values = _column(cells, "A"), _column(cells, col)
            for row, dept_name in sorted(names.items()):
                if row == 1 or dept_name not in depts:
                    continue
                tally.checked += 1
                dept, value = depts[dept_name], values.get(row)
                if not isinstance(value, int | float):
                    tally.fail(f"document {did} ({name}): {dept_name} has no number in column {col}")
                elif cells is plan and value != people.get(dept, 0):
                    tally.fail(f"{name}: {dept_name} counts {value} people, the directory {people.get(dept, 0)}")
                elif cells is budget and not lo * payroll.get(dept, 0) <= value * 100 <= hi * payroll.get(dept, 0):
                    pay = payroll.get(dept, 0) / 100
                    tally.fail(f"{name}: {dept_name} budget {value:,.0f} is outside {lo}-{hi}x its payroll {pay:,.0f}")


COHERENCE_CHECKS: tuple[tuple[str, str, Callable[[Connection, Tally], None]], ...] = (
    ("refs_mail", "tickets named in mail exist, predate it, and subject and body agree", _mail_refs),
    ("refs_chat", "tickets and @people named in chat exist; tickets predate the post", _chat_refs),
    ("refs_tickets", "tickets named in comments and descriptions exist and predate them", _ticket_refs),
    ("refs_documents", "tickets and @people named in documents exist as of the document", _document_refs),
    ("refs_code", "merge requests name existing tickets; notes and merges follow opening and approval", _code_refs),
    ("causal", "replies after what they answer, reactions after posts, fixes after reports", _causal),
    ("leavers", "nothing by a leaver after their last day", _leavers),
    ("leaver_trail", "leavers said goodbye, hold no open ticket, channel seat or later meeting", leaver_trail),
    ("working_hours", "each person's activity falls in their own working hours and time zone", _working_hours),
    ("meeting_actions", "weekly notes' action items are tickets of the named person, filed later", _meeting_actions),
    ("postmortems", "postmortems follow their incident's resolution and ~incidents posts, same times", _postmortems),
    ("releases", "release notes ship only their project's tickets done by then", _releases),
    ("budget_headcount", "budgets cover payroll; headcount plans match the directory", _budgets),
    ("reorg", "reporting lines over time: announced first, 1:1s/weeklies/notes name that time's manager", reorg),
    ("budget_quarters", "each quarter's budget counts that day's people and their pay", budget_quarters),
    ("actuals", "actuals sheets list exactly the receipts mailed to finance", actuals),
)

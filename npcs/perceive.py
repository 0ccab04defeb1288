"""What reaches an NPC: DMs, @mentions, ticket comments, assignments, mail, invites, merge requests, access requests.

One function, ``inbound``, serves two callers: the population's ``poke`` (everyone, since the last poke, to
schedule reactive turns) and one NPC's perceive step (itself, since its own cursor). Each source is one
indexed query on ids greater than a cursor, so the cost per agent step does not grow with the world's history.
Items written by the recipient itself are never inbound.

App items (``app_inbound``): a calendar invitation still awaiting the NPC's answer (``invite``, cursor on
``event_attendees.id``), a merge request opened in a repository of the NPC's team or naming it (``@user``) in
its title or description (``merge_request``, cursor on ``merge_requests.id``), a later note on such a request
(``mr_note``, cursor on ``merge_request_notes.id``: how "CI is green now, please look again" reaches a
reviewer), and an access request the NPC decides as data owner (``access_request``, cursor on
``access_requests.id``). ``decide`` re-reads the current state of each, so an item answered or withdrawn in
the meantime is simply skipped.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from npcs.hours import WorkHours
from worlds.rawsql import Sql, iso

KINDS: tuple[str, ...] = (
    "dm",
    "mention",
    "ticket_comment",
    "assigned",
    "mail",
    "invite",
    "merge_request",
    "mr_note",
    "access_request",
    "incident",
)
APP_KINDS: frozenset[str] = frozenset({"invite", "merge_request", "mr_note", "access_request", "incident"})
CURSOR_OF: dict[str, str] = {"dm": "post", "mention": "post", "ticket_comment": "comment", "mail": "mail"}
CURSOR_OF |= {"incident": "post"}
CURSOR_OF |= {"invite": "attendee", "merge_request": "mr", "mr_note": "mr_note", "access_request": "access"}
"""Which id cursor (a key of ``persona.maxima``) an inbound kind advances; ``assigned`` uses the time cursor."""


@dataclass(frozen=True, order=True)
class Stimulus:
    """One inbound item for ``recipient_id``; ``ref`` is the post, comment, ticket or mail message id."""

    at: str
    kind: str
    ref: int
    recipient_id: int
    sender_id: int | None
    sender: str
    text: str
    ticket: str | None = None
    channel: str | None = None
    item: int | None = None  # the event, merge request or access request an app item is about

    @property
    def marker(self) -> str:
        """A stable name for the item (``dm:42``), used to key latency draws."""
        return f"{self.kind}:{self.ref}"

    @property
    def when(self) -> datetime:
        """``at`` as an aware datetime."""
        return datetime.fromisoformat(self.at)


_DM = (
    "SELECT m.employee_id, p.created_at, p.id, p.author_id, a.username, p.message, c.name FROM posts p"
    " JOIN channels c ON c.id = p.channel_id AND c.type = 'D'"
    " JOIN channel_members m ON m.channel_id = p.channel_id AND m.employee_id != p.author_id"
    " JOIN employees a ON a.id = p.author_id WHERE p.id > ? AND p.deleted_at IS NULL AND p.created_at <= ?"
)
_MENTION = (
    "SELECT n.employee_id, p.created_at, p.id, p.author_id, a.username, p.message, c.name FROM mentions n"
    " JOIN posts p ON p.id = n.post_id JOIN channels c ON c.id = p.channel_id AND c.type != 'D'"
    " JOIN employees a ON a.id = p.author_id"
    " WHERE p.id > ? AND n.employee_id != p.author_id AND p.deleted_at IS NULL AND p.created_at <= ?"
)
_COMMENT = (
    "SELECT t.assignee_id, k.created_at, k.id, k.author_id, a.username, k.body, t.key FROM ticket_comments k"
    " JOIN tickets t ON t.id = k.ticket_id JOIN employees a ON a.id = k.author_id"
    " WHERE k.id > ? AND t.assignee_id IS NOT NULL AND t.assignee_id != k.author_id AND k.created_at <= ?"
)
_MAIL = (
    "SELECT b.employee_id, m.sent_at, m.id, s.employee_id, s.address, m.subject, m.body"
    " FROM mail_recipients r JOIN mailboxes b ON b.id = r.mailbox_id JOIN mail_messages m ON m.id = r.message_id"
    " JOIN mailboxes s ON s.id = m.sender_mailbox_id"
    " WHERE m.id > ? AND b.employee_id IS NOT NULL AND r.mailbox_id != m.sender_mailbox_id AND m.sent_at <= ?"
)
_ASSIGNED = (
    "SELECT t.assignee_id, t.updated_at, t.id, t.key, t.title FROM tickets t"
    " WHERE t.assignee_id IS NOT NULL AND t.updated_at >= ? AND t.updated_at <= ?"
)

_INVITE = (
    "SELECT a.employee_id, v.created_at, a.id, v.organizer_id, o.username, v.title, v.id FROM event_attendees a"
    " JOIN events v ON v.id = a.event_id JOIN employees o ON o.id = v.organizer_id"
    " WHERE a.id > ? AND a.rsvp = 'needs_action' AND a.employee_id != v.organizer_id AND v.cancelled = ?"
    " AND v.created_at <= ?"
)
_MR = (
    "SELECT m.id, m.created_at, m.author_id, a.username, m.title, m.description, r.team_id FROM merge_requests m"
    " JOIN repositories r ON r.id = m.repository_id JOIN employees a ON a.id = m.author_id"
    " WHERE m.id > ? AND m.created_at <= ?"
)
_MR_NOTE = (
    "SELECT n.id, n.created_at, n.author_id, a.username, n.body, m.id, m.title, m.description, r.team_id"
    " FROM merge_request_notes n JOIN merge_requests m ON m.id = n.merge_request_id"
    " JOIN repositories r ON r.id = m.repository_id JOIN employees a ON a.id = n.author_id"
    " WHERE n.id > ? AND n.created_at <= ? AND m.state = 'open'"
)
_ACCESS = (
    "SELECT q.owner_id, q.created_at, q.id, q.requester_id, e.username, q.reason FROM access_requests q"
    " JOIN employees e ON e.id = q.requester_id"
    " WHERE q.id > ? AND q.status = 'pending' AND q.owner_id != q.requester_id AND q.created_at <= ?"
)
_INCIDENT = (
    "SELECT p.id, p.created_at, p.author_id, a.username, p.message FROM posts p"
    " JOIN channels c ON c.id = p.channel_id AND c.name = 'incidents' JOIN employees a ON a.id = p.author_id"
    " WHERE p.id > ? AND p.root_id IS NULL AND p.deleted_at IS NULL AND p.created_at <= ?"
)
_KEY = re.compile(r"\b([A-Z][A-Z0-9]*)-\d+\b")
URGENT: dict[str, float] = {"incident": 0.25}
"""Kinds that are answered faster than the NPC's usual latency (a factor on it): an outage does not wait."""
_HANDLE = re.compile(r"@([A-Za-z0-9_][A-Za-z0-9_.\-]*[A-Za-z0-9_])")


def handles(text: str) -> set[str]:
    """The ``@username`` handles in ``text`` (how a merge request or a note asks someone to review)."""
    return set(_HANDLE.findall(text or ""))


def _later(at: Any, floor: datetime | None) -> str:
    """``at`` as ISO, but never before ``floor``: an invitee added to an old event was invited just now."""
    when = datetime.fromisoformat(iso(at) or "")
    return (max(when, floor) if floor is not None else when).astimezone(UTC).isoformat()


def app_inbound(sql: Sql, since: Mapping[str, Any], until: datetime, who: set[int]) -> list[Stimulus]:
    """Invites, merge requests, merge request notes and access requests for ``who`` (see the module doc).

    Args:
        sql: The world.
        since: ``{"attendee", "mr", "mr_note", "access"}`` id cursors (missing ones count as 0) and ``"at"``.
        until: Nothing written after this instant is perceived yet.
        who: Employee ids to collect for.
    """
    end = sql.bind(until)
    floor = datetime.fromisoformat(since["at"]) if since.get("at") else None
    out: list[Stimulus] = []
    invites = sql.all(f"{_INVITE} ORDER BY a.id", (since.get("attendee", 0), False, end))
    for rcpt, at, ref, sender_id, sender, title, event in invites:
        if rcpt in who:
            out.append(Stimulus(_later(at, floor), "invite", ref, rcpt, sender_id, sender, title, item=event))
    mrs = sql.all(f"{_MR} ORDER BY m.id", (since.get("mr", 0), end))
    notes = sql.all(f"{_MR_NOTE} ORDER BY n.id", (since.get("mr_note", 0), end))
    teams = {t for *_, t in mrs} | {t for *_, t in notes}
    names = {h for r in mrs for h in handles(f"{r[4]}\n{r[5]}")}
    names |= {h for r in notes for h in handles(f"{r[4]}\n{r[7]}")}
    team_of: dict[int, list[int]] = {t: [] for t in teams}
    if teams:
        marks = ", ".join("?" * len(teams))
        for emp, team in sql.all(
            f"SELECT id, team_id FROM employees WHERE active = ? AND team_id IN ({marks}) ORDER BY id",  # noqa: S608
            (True, *sorted(teams)),
        ):
            team_of[team].append(int(emp))
    ids: dict[str, int] = {}
    if names:
        marks = ", ".join("?" * len(names))
        query = f"SELECT username, id FROM employees WHERE username IN ({marks}) ORDER BY id"  # noqa: S608
        ids = dict(sql.all(query, sorted(names)))

    def readers(team: int, text: str, author: int) -> list[int]:
        named = {ids[h] for h in handles(text) if h in ids}
        return sorted(r for r in (set(team_of.get(team, [])) | named) & who if r != author)

    for ref, at, author, sender, title, desc, team in mrs:
        for rcpt in readers(team, f"{title}\n{desc}", author):
            out.append(Stimulus(iso(at) or "", "merge_request", ref, rcpt, author, sender, title, item=ref))
    for ref, at, author, sender, body, mr_id, title, desc, team in notes:
        for rcpt in readers(team, f"{body}\n{title}\n{desc}", author):
            out.append(Stimulus(iso(at) or "", "mr_note", ref, rcpt, author, sender, body, item=mr_id))
    for rcpt, at, ref, sender_id, sender, reason in sql.all(f"{_ACCESS} ORDER BY q.id", (since.get("access", 0), end)):
        if rcpt in who:
            out.append(Stimulus(iso(at) or "", "access_request", ref, rcpt, sender_id, sender, reason, item=ref))
    out += _incidents(sql, since, end, who)
    return out


def _incidents(sql: Sql, since: Mapping[str, Any], end: Any, who: set[int]) -> list[Stimulus]:
    """A new thread in ~incidents naming a ticket of a project reaches every member of that project's team.

    Why the team and not the channel: an outage post is everybody's to read but the owning team's to answer,
    and a channel-wide stimulus would wake the whole company for every post. When nobody of the team is at
    work at the post's time (a US team, a post at 09:00 in London), it reaches the channel's other members
    instead, so someone awake can say it is seen and hold it until the team's day starts.
    """
    posts = sql.all(f"{_INCIDENT} ORDER BY p.id", (since.get("post", 0), end))
    keys = {m for *_, text in posts for m in _KEY.findall(text or "")}
    if not keys:
        return []
    marks = ", ".join("?" * len(keys))
    team_of_project = dict(
        sql.all(
            f"SELECT key, team_id FROM projects WHERE key IN ({marks}) AND team_id IS NOT NULL ORDER BY id",  # noqa: S608
            sorted(keys),
        )
    )
    teams = sorted({int(t) for t in team_of_project.values()})
    members: dict[int, list[tuple[int, WorkHours]]] = {t: [] for t in teams}
    if teams:
        marks = ", ".join("?" * len(teams))
        for emp, team, *hours in sql.all(
            "SELECT id, team_id, timezone, work_start_minute, work_end_minute, workdays FROM employees"  # noqa: S608
            f" WHERE active = ? AND team_id IN ({marks}) ORDER BY id",
            (True, *teams),
        ):
            members[int(team)].append((int(emp), WorkHours(str(hours[0]), int(hours[1]), int(hours[2]), str(hours[3]))))
    channel = set(
        sql.column(
            "SELECT m.employee_id FROM channel_members m JOIN channels c ON c.id = m.channel_id"
            " WHERE c.name = 'incidents' ORDER BY m.employee_id"
        )
    )
    out: list[Stimulus] = []
    for ref, at, author, sender, text in posts:
        found = _KEY.search(text or "")
        team = team_of_project.get(found.group(1)) if found else None
        if team is None:
            continue
        when = datetime.fromisoformat(iso(at) or "")
        crew = {e for e, h in members.get(int(team), []) if e != author}
        awake = any(h.is_open(when) for e, h in members.get(int(team), []) if e in crew)
        for rcpt in sorted((crew if awake else channel - {author}) & who):
            if rcpt != author:
                key = found.group(0) if found else None
                out.append(Stimulus(iso(at) or "", "incident", ref, rcpt, author, sender, text, ticket=key, item=ref))
    return out


def inbound(
    sql: Sql,
    since: Mapping[str, Any],
    until: datetime,
    recipients: Collection[int],
    assigned: Mapping[int, Collection[int]],
) -> list[Stimulus]:
    """Inbound items for ``recipients`` with ids above ``since`` and times up to ``until``, in time order.

    Args:
        sql: The world.
        since: ``{"post", "comment", "mail"}`` id cursors, ``"at"`` (ISO time) for assignment changes, and the
            app cursors of ``app_inbound``.
        until: Nothing written after this instant is perceived yet.
        recipients: Employee ids to collect for (others are dropped in Python: the sets are small).
        assigned: Per recipient, ticket ids already known as theirs (a ticket outside it is a new assignment).
    """
    end = sql.bind(until)
    out: list[Stimulus] = []
    who = set(recipients)
    rows: list[tuple[str, Any]] = [("dm", r) for r in sql.all(f"{_DM} ORDER BY p.id", (since["post"], end))]
    rows += [("mention", r) for r in sql.all(f"{_MENTION} ORDER BY p.id, n.employee_id", (since["post"], end))]
    for kind, (rcpt, at, ref, sender_id, sender, text, channel) in rows:
        if rcpt in who:
            out.append(Stimulus(iso(at) or "", kind, ref, rcpt, sender_id, sender, text, channel=channel))
    for rcpt, at, ref, sender_id, sender, text, key in sql.all(f"{_COMMENT} ORDER BY k.id", (since["comment"], end)):
        if rcpt in who:
            out.append(Stimulus(iso(at) or "", "ticket_comment", ref, rcpt, sender_id, sender, text, ticket=key))
    mail = sql.all(f"{_MAIL} ORDER BY m.id, b.employee_id", (since["mail"], end))
    for rcpt, at, ref, sender_id, sender, subject, body in mail:
        if rcpt in who:
            out.append(Stimulus(iso(at) or "", "mail", ref, rcpt, sender_id, sender, f"{subject}\n{body}"))
    start = sql.bind(datetime.fromisoformat(since["at"])) if since.get("at") else end
    for rcpt, at, ref, key, title in sql.all(f"{_ASSIGNED} ORDER BY t.id", (start, end)):
        if rcpt in who and ref not in assigned.get(rcpt, ()):
            out.append(Stimulus(iso(at) or "", "assigned", ref, rcpt, None, "", title, ticket=key))
    out += app_inbound(sql, since, until, who)
    out.sort()
    return out

"""What reaches an NPC: direct messages, @mentions, comments on its tickets, new assignments and mail.

One function, ``inbound``, serves two callers: the population's ``poke`` (everyone, since the last poke, to
schedule reactive turns) and one NPC's perceive step (itself, since its own cursor). Each source is one
indexed query on ids greater than a cursor, so the cost per agent step does not grow with the world's history.
Items written by the recipient itself are never inbound.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from worlds.rawsql import Sql, iso

KINDS: tuple[str, ...] = ("dm", "mention", "ticket_comment", "assigned", "mail")


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
        since: ``{"post", "comment", "mail"}`` id cursors and ``"at"`` (ISO time) for assignment changes.
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
    out.sort()
    return out

"""Checks that follow one case across apps: the ticket filed for a reference, its reply, its incident post.

A case is identified by a reference the task gives (``REF-4821`` in a customer's mail), not by a ticket key,
because keys depend on the order the agent files things. Each check starts from this episode's inserted
tickets (change log), so it costs O(rows changed).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BindParameter, bindparam, select

from graders.base import CheckOutcome, GradingContext, check_fn
from graders.checks import FieldValue, TicketField, _mismatch, _tickets
from graders.checks_common import inserted_ids, listing
from worlds.schema import Channel, Mailbox, MailMessage, MailRecipient, Post, Project, Ticket

_IDS: BindParameter[Any] = bindparam("ids", expanding=True)
_NEW_TICKETS = (
    select(Ticket.id, Ticket.key, Ticket.title, Ticket.description, Project.key.label("project"))
    .join(Project, Project.id == Ticket.project_id)
    .where(Ticket.id.in_(_IDS))
    .order_by(Ticket.id)
)
_SENT_TO = (
    select(MailMessage.id, MailMessage.body, MailMessage.in_reply_to_id, Mailbox.address)
    .join(MailRecipient, MailRecipient.message_id == MailMessage.id)
    .join(Mailbox, Mailbox.id == MailRecipient.mailbox_id)
    .where(MailMessage.id.in_(_IDS))
    .order_by(MailMessage.id)
)
_POSTS = (
    select(Post.id, Post.message, Post.author_id, Post.deleted_at, Channel.name)
    .join(Channel, Channel.id == Post.channel_id)
    .where(Post.id.in_(_IDS))
    .order_by(Post.id)
)


_READS = {
    "case_tickets": ("tickets", "projects"),
    "case_mails": ("mail_messages", "mail_recipients", "mailboxes"),
    "case_posts": ("posts", "channels"),
}


def _memo(ctx: GradingContext, name: str, stmt: Any, table: str) -> list[Any]:
    """The rows ``stmt`` gives for this episode's inserts into ``table``, queried once per grade.

    Every case's checks read the same new tickets, mails and posts: one query each, not one per check, and
    the per-step progress score re-queries one only after a step that changed a table it reads.
    """

    def query() -> list[Any]:
        ids = inserted_ids(ctx, table)
        return list(ctx.db.execute(stmt, {"ids": ids}).all()) if ids else []

    return ctx.kept(name, _READS[name], query)


def _new_tickets_for(ctx: GradingContext, reference: str) -> list[Any]:
    ref = reference.lower()
    rows = _memo(ctx, "case_tickets", _NEW_TICKETS, "tickets")
    return [r for r in rows if ref in f"{r.title}\n{r.description}".lower()]


def _case_reads(reply_to: str | None = None, incident_channel: str | None = None, **_: Any) -> tuple[str, ...]:
    """What one part of a case reads: its ticket, and the mail or the post when the part asks for one."""
    return (
        ("tickets",)
        + ("mail_messages", "mail_recipients") * (reply_to is not None)
        + ("posts",) * (incident_channel is not None)
    )


@check_fn("ticket_for_reference", reads=_case_reads)
def ticket_for_reference(
    ctx: GradingContext,
    project: str,
    reference: str,
    fields: dict[TicketField, FieldValue] | None = None,
    reply_to: str | None = None,
    incident_channel: str | None = None,
) -> CheckOutcome:
    """Exactly one ticket filed this episode in ``project`` mentions ``reference``, with ``fields``.

    With ``reply_to``, a mail the agent sent to that address carries the new ticket's key; with
    ``incident_channel``, a live post of the agent's in that channel carries the key and the reference.
    """
    found = _new_tickets_for(ctx, reference)
    if len(found) != 1:
        keys = ", ".join(r.key for r in found)
        return CheckOutcome.of(
            False, f"{len(found)} tickets filed for {reference} (want exactly 1){': ' + keys * bool(keys)}"
        )
    ticket = found[0]
    if ticket.project != project.upper():
        return CheckOutcome.of(False, f"{ticket.key} for {reference} is in {ticket.project}, not {project}")
    row = _tickets(ctx, [ticket.key])[ticket.key]
    assert row is not None
    wrong = [m for f, v in sorted((fields or {}).items()) if (m := _mismatch(ticket.key, row, f, v))]
    if wrong:
        return CheckOutcome.of(False, listing(wrong))
    said = [f"{ticket.key} filed for {reference}"]
    if reply_to is not None:
        mails = _memo(ctx, "case_mails", _SENT_TO, "mail_messages")
        hit = [m.id for m in mails if m.address.lower() == reply_to.lower() and ticket.key.lower() in m.body.lower()]
        if not hit:
            return CheckOutcome.of(False, f"{ticket.key} filed, but no mail to {reply_to} gives its key")
        said.append(f"mail #{hit[0]} to {reply_to} gives the key")
    if incident_channel is not None:
        posts = _memo(ctx, "case_posts", _POSTS, "posts")
        hit = [
            p.id
            for p in posts
            if p.name == incident_channel
            and p.author_id == ctx.actor_id
            and p.deleted_at is None
            and ticket.key.lower() in p.message.lower()
            and reference.lower() in p.message.lower()
        ]
        if not hit:
            return CheckOutcome.of(
                False, f"{ticket.key} filed, but no post in ~{incident_channel} names it and {reference}"
            )
        said.append(f"post #{hit[0]} in ~{incident_channel}")
    return CheckOutcome.of(True, "; ".join(said), key=ticket.key)


@check_fn("no_ticket_for_reference", reads=("tickets",))
def no_ticket_for_reference(ctx: GradingContext, reference: str) -> CheckOutcome:
    """No ticket filed this episode mentions ``reference`` (it was already tracked: a duplicate is wrong)."""
    found = _new_tickets_for(ctx, reference)
    if found:
        return CheckOutcome.of(False, f"duplicate ticket(s) filed for {reference}: {', '.join(r.key for r in found)}")
    return CheckOutcome.of(True, f"no new ticket mentions {reference}")

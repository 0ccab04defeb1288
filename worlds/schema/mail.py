"""Mail: mailboxes, folders, threads, messages, recipients and per-mailbox delivery state."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, UTCDateTime, intpk, json_list, text, utc_ts

DEFAULT_FOLDERS: tuple[str, ...] = ("Inbox", "Sent", "Archive", "Drafts", "Trash")
RECIPIENT_KINDS: tuple[str, ...] = ("to", "cc", "bcc")


class Mailbox(Base):
    """A mailbox: an employee's, or an external address (customers, vendors) with ``employee_id`` null."""

    __tablename__ = "mailboxes"

    id: Mapped[intpk]
    address: Mapped[str] = mapped_column(String(200), unique=True)
    display_name: Mapped[str] = mapped_column(String(200))
    employee_id: Mapped[int | None] = mapped_column(ForeignKey("employees.id"), unique=True)


class MailFolder(Base):
    """A folder inside one mailbox."""

    __tablename__ = "mail_folders"
    __table_args__ = (UniqueConstraint("mailbox_id", "name"),)

    id: Mapped[intpk]
    mailbox_id: Mapped[int] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))


class MailThread(Base):
    """A conversation; messages share it through In-Reply-To."""

    __tablename__ = "mail_threads"

    id: Mapped[intpk]
    subject: Mapped[str] = mapped_column(String(300))
    created_at: Mapped[utc_ts]


class MailMessage(Base):
    """One sent message (stored once, delivered to many mailboxes through ``MailDelivery``)."""

    __tablename__ = "mail_messages"

    id: Mapped[intpk]
    thread_id: Mapped[int] = mapped_column(ForeignKey("mail_threads.id"), index=True)
    message_id: Mapped[str] = mapped_column(String(200), unique=True, doc="RFC 5322 Message-ID.")
    in_reply_to_id: Mapped[int | None] = mapped_column(ForeignKey("mail_messages.id"))
    sender_mailbox_id: Mapped[int] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    subject: Mapped[str] = mapped_column(String(300))
    body: Mapped[text]
    sent_at: Mapped[utc_ts] = mapped_column(index=True)
    attachment_document_ids: Mapped[json_list]


class MailRecipient(Base):
    """An addressee of a message (to, cc or bcc)."""

    __tablename__ = "mail_recipients"
    __table_args__ = (UniqueConstraint("message_id", "mailbox_id", "kind"),)

    id: Mapped[intpk]
    message_id: Mapped[int] = mapped_column(ForeignKey("mail_messages.id"), index=True)
    mailbox_id: Mapped[int] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    kind: Mapped[str] = mapped_column(String(3))


class MailDelivery(Base):
    """A message as it sits in one mailbox: its folder and read/flag state."""

    __tablename__ = "mail_deliveries"
    __table_args__ = (UniqueConstraint("message_id", "mailbox_id"),)

    id: Mapped[intpk]
    message_id: Mapped[int] = mapped_column(ForeignKey("mail_messages.id"), index=True)
    mailbox_id: Mapped[int] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    folder_id: Mapped[int] = mapped_column(ForeignKey("mail_folders.id"), index=True)
    is_read: Mapped[bool] = mapped_column(default=False)
    is_flagged: Mapped[bool] = mapped_column(default=False)
    read_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

"""The mail tools: thin, documented wrappers over ``mcp_tools.mail.service``.

Addresses are given as one comma-separated string (flat arguments only): each item is a coworker's username
(``jane.doe``), an address (``ops@customer.example``) or ``Name <address>``.
"""

from __future__ import annotations

from typing import Any

from mcp_tools.base import READ, WRITE, ToolSet, current_context
from mcp_tools.mail import service

mail = ToolSet("mail")


@mail.tool(READ)
def list_folders() -> dict[str, Any]:
    """List your mail folders with how many messages each holds and how many are unread."""
    return service.list_folders(current_context())


@mail.tool(WRITE)
def create_folder(name: str) -> dict[str, Any]:
    """Create a new folder in your mailbox (to file messages into with mail_move).

    Args:
        name: Folder name (1-100 characters), unique among your folders ignoring case.
    """
    return service.create_folder(current_context(), name)


@mail.tool(READ)
def list_messages(folder: str = "Inbox", unread_only: bool = False, limit: int = 30, offset: int = 0) -> dict[str, Any]:
    """List the messages of one of your folders, newest first (reading a list marks nothing read).

    Args:
        folder: Folder name such as Inbox, Sent, Archive, Drafts, Trash or one you created.
        unread_only: Only messages you have not read.
        limit: How many messages to return (1-100).
        offset: How many messages to skip (for paging).
    """
    return service.list_messages(current_context(), folder, unread_only, limit, offset)


@mail.tool(READ)
def read_message(message_id: int) -> dict[str, Any]:
    """Read one message of your mailbox in full; it stays unread until you call mail_mark_read.

    Args:
        message_id: The message id shown by mail_list_messages or mail_search.
    """
    return service.read_message(current_context(), message_id)


@mail.tool(READ)
def read_thread(thread_id: int) -> dict[str, Any]:
    """Read the messages of a conversation that are in your mailbox, oldest first.

    Args:
        thread_id: The thread id shown with every message.
    """
    return service.read_thread(current_context(), thread_id)


@mail.tool(READ)
def search(text: str = "", sender: str | None = None, folder: str | None = None, limit: int = 30) -> dict[str, Any]:
    """Search your mailbox for messages whose subject or body contains some text, newest first.

    Args:
        text: Text to find literally (case-insensitive) in the subject or body.
        sender: Only messages whose sender address or name contains this text.
        folder: Only this folder.
        limit: How many messages to return (1-100).
    """
    return service.search(current_context(), text, sender, folder, limit)


@mail.tool(WRITE)
def send(to: str, subject: str, body: str, cc: str = "", bcc: str = "", attachments: str = "") -> dict[str, Any]:
    """Send a new message; it lands in each coworker's Inbox and in your Sent folder.

    Args:
        to: Comma-separated usernames or email addresses, such as "jane.doe, ops@customer.example".
        subject: One-line subject (up to 300 characters).
        body: The message text.
        cc: Comma-separated usernames or addresses to copy.
        bcc: Comma-separated usernames or addresses to copy blind (hidden from everyone else).
        attachments: Comma-separated ids of documents you own or that are shared with you, such as "12,15".
    """
    return service.send(current_context(), to, cc, bcc, subject, body, attachments)


@mail.tool(WRITE)
def reply(message_id: int, body: str, attachments: str = "") -> dict[str, Any]:
    """Reply to the sender of a message, in the same thread with a "Re:" subject.

    Args:
        message_id: Id of the message to reply to.
        body: The reply text.
        attachments: Comma-separated ids of documents you own or that are shared with you.
    """
    return service.reply(current_context(), message_id, body, attachments, False)


@mail.tool(WRITE)
def reply_all(message_id: int, body: str, attachments: str = "") -> dict[str, Any]:
    """Reply to the sender and every visible to/cc recipient of a message except you, in the same thread.

    Args:
        message_id: Id of the message to reply to.
        body: The reply text.
        attachments: Comma-separated ids of documents you own or that are shared with you.
    """
    return service.reply(current_context(), message_id, body, attachments, True)


@mail.tool(WRITE)
def forward(
    message_id: int, to: str, body: str = "", cc: str = "", bcc: str = "", attachments: str = ""
) -> dict[str, Any]:
    """Forward a message with its attachments to other people, with your note above the quoted original.

    Args:
        message_id: Id of the message to forward.
        to: Comma-separated usernames or email addresses.
        body: Your note above the forwarded message.
        cc: Comma-separated usernames or addresses to copy.
        bcc: Comma-separated usernames or addresses to copy blind.
        attachments: Comma-separated ids of extra documents to attach (you must own them or have them shared).
    """
    return service.forward(current_context(), message_id, to, cc, bcc, body, attachments)


@mail.tool(WRITE)
def move(message_id: int, folder: str) -> dict[str, Any]:
    """Move a message of your mailbox to another of your folders (only your copy moves).

    Args:
        message_id: Id of the message.
        folder: Target folder name such as Archive or Trash.
    """
    return service.move(current_context(), message_id, folder)


@mail.tool(WRITE)
def flag(message_id: int, flagged: bool = True) -> dict[str, Any]:
    """Flag a message of your mailbox for follow-up, or clear the flag.

    Args:
        message_id: Id of the message.
        flagged: True to flag, false to unflag.
    """
    return service.flag(current_context(), message_id, flagged)


@mail.tool(WRITE)
def mark_read(message_id: int, read: bool = True) -> dict[str, Any]:
    """Mark a message of your mailbox as read or unread.

    Args:
        message_id: Id of the message.
        read: True for read, false for unread.
    """
    return service.mark_read(current_context(), message_id, read)


EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "mail_list_folders": [{}],
    "mail_create_folder": [{"name": "Check App"}],
    "mail_list_messages": [{"limit": 5}, {"folder": "Sent", "unread_only": True}],
    "mail_read_message": [{"message_id": "{message}"}],
    "mail_read_thread": [{"thread_id": "{thread}"}],
    "mail_search": [{"text": "the", "limit": 5}],
    "mail_send": [{"to": "{coworker}", "subject": "Update on {ticket}", "body": "Done.", "cc": "{me}"}],
    "mail_reply": [{"message_id": "{message}", "body": "Thanks."}],
    "mail_reply_all": [{"message_id": "{message}", "body": "Noted, all."}],
    "mail_forward": [{"message_id": "{message}", "to": "{coworker_email}", "body": "FYI"}],
    "mail_move": [{"message_id": "{message}", "folder": "Archive"}],
    "mail_flag": [{"message_id": "{message}", "flagged": True}],
    "mail_mark_read": [{"message_id": "{message}", "read": True}, {"message_id": "{message}", "read": False}],
}
"""Example calls for ``mcp_tools.check.check_app`` (placeholders are filled from the world)."""

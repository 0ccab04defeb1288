"""Setup helpers the office families share: documents, spreadsheets, posts and mail written as the apps write them.

A family's ``build`` writes its task into the forked world through raw statements (``worlds.rawsql.Sql``), so
the change log tags every row ``setup`` exactly as an app call would log it. Documents go through the document
store (``mcp_tools.docs.store.create``) so their bytes, version row and cached model are the ones the tools
would have written; formulas are computed by the Python engine, which world generation also uses, so setup
bytes never depend on whether LibreOffice is installed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from mcp_tools.base import Actor, ToolContext
from mcp_tools.docs import store
from mcp_tools.docs.service import parse_text
from mcp_tools.errors import Conflict
from worlds.clock import Clock, FixedClock
from worlds.office import formula
from worlds.office.model import Cell, Sheet, TextDoc, Workbook
from worlds.rawsql import Sql, iso

Row = list[str | float | None]

NEW_DOCUMENT_CHANGES: list[dict[str, Any]] = [
    {"table": "documents", "ops": ["insert", "update"]},
    {"table": "document_versions", "ops": ["insert"]},
    {"table": "document_shares", "ops": ["insert", "update"]},
    {"table": "blobs", "ops": ["insert"]},
    {"table": "doc_folders", "ops": ["insert"]},
]
"""What a task whose work is writing and sharing a new document may change (its no_collateral_changes list)."""


def service_repo(sql: Sql, rng: Any) -> tuple[str, int, str, list[str]]:
    """A ``*-service`` repository picked by ``rng``: (name, owning team, project key, the team's active usernames).

    The code families plant their task in a team service, so they pick the repository, its project and the
    people who may touch it the same way (one draw from ``rng``, so a family's later draws do not move).
    """
    repos = sql.all(
        "SELECT r.name, r.team_id, p.key FROM repositories r JOIN projects p ON p.id = r.project_id"
        " WHERE r.name LIKE ? ORDER BY r.id",
        ("%-service",),
    )
    repo, team_id, project = repos[int(rng.integers(len(repos)))]
    people = sql.column("SELECT username FROM employees WHERE team_id = ? AND active = ? ORDER BY id", (team_id, True))
    return str(repo), int(team_id), str(project), [str(u) for u in people]


def workbook(sheet: str, rows: list[Row]) -> Workbook:
    """A one-sheet workbook from rows (``=`` starts a formula), with every formula computed."""
    grid = Sheet(name=sheet)
    for r, row in enumerate(rows):
        for c, v in enumerate(row):
            if v is None:
                continue
            grid.cells[(r, c)] = Cell(formula=v[1:]) if isinstance(v, str) and v.startswith("=") else Cell(value=v)
    book = Workbook(sheets=[grid])
    for (si, r, c), computed in formula.recalculate(book).items():
        book.sheets[si].cells[(r, c)].value = computed
    return book


def create_document(
    session: Session, clock: Clock, owner: int, folder: str, name: str, model: Workbook | str, at: datetime
) -> dict[str, Any]:
    """A document owned by ``owner`` in ``folder`` (a spreadsheet from a Workbook, a text from Markdown-like text).

    ``at`` is when it was written (a policy written last week reads as last week's in ``docs_versions``). When the
    folder already holds a document of that name (a campaign plays the task again on the world an earlier
    episode left), the same content is kept as it is, and other content becomes its next version, written by
    its owner no earlier than its last version: the task's document is the one the prompt names either way.
    """
    sql = Sql.of(session)
    kind, content = (
        ("spreadsheet", model) if isinstance(model, Workbook) else ("text", TextDoc(blocks=parse_text(model)))
    )
    ctx = ToolContext(session=session, actor=Actor.load(session, owner), clock=FixedClock(at))
    try:
        return store.create(ctx, sql, folder, name, kind, None, content)
    except Conflict:
        pass
    row = sql.one(
        "SELECT d.id, d.owner_id, d.updated_at FROM documents d WHERE d.folder_id = ? AND lower(d.name) = lower(?)",
        (store.resolve_folder(sql, folder), name),
    )
    later = max(at, datetime.fromisoformat(str(iso(row[2]))))
    keeper = ToolContext(session=session, actor=Actor.load(session, int(row[1])), clock=FixedClock(later))
    doc = store.open_doc(keeper, sql, str(row[0]), "edit", kind)
    data, _ = store.encode(content, doc.fmt)
    current = sql.one("SELECT blob_sha256 FROM documents WHERE id = ?", (doc.id,))
    if store.blob(sql, str(current[0])) == data:
        return {"id": doc.id, "path": doc.path, "format": doc.fmt, "version": doc.version, "size": len(data)}
    return store.save(keeper, sql, doc, content, "reissued")


def share(sql: Sql, document: int, employee: int, permission: str) -> None:
    """Give ``employee`` ``permission`` on ``document`` (a new share row, or the existing one changed to it)."""
    row = sql.one(
        "SELECT id, permission FROM document_shares WHERE document_id = ? AND employee_id = ?", (document, employee)
    )
    if row is None:
        sql.insert("document_shares", {"document_id": document, "employee_id": employee, "permission": permission})
    elif row[1] != permission:
        sql.update("document_shares", int(row[0]), {"permission": (row[1], permission)})


def label(sql: Sql, ticket: int, name: str) -> None:
    """Put label ``name`` on ``ticket`` unless it already has it (a campaign may label the same week again)."""
    if sql.one("SELECT 1 FROM ticket_labels WHERE ticket_id = ? AND label = ?", (ticket, name)) is None:
        sql.insert("ticket_labels", {"ticket_id": ticket, "label": name})


def ensure_member(sql: Sql, channel: int, employee: int, now: datetime) -> None:
    """Make ``employee`` a member of ``channel`` (joined a month ago) unless they already are."""
    if sql.one("SELECT 1 FROM channel_members WHERE channel_id = ? AND employee_id = ?", (channel, employee)):
        return
    values = {"channel_id": channel, "employee_id": employee, "joined_at": now - timedelta(days=30)}
    sql.insert("channel_members", {**values, "last_viewed_at": None})


def post(sql: Sql, channel: int, author: int, message: str, at: datetime, *, pinned: bool = False) -> int:
    """A top-level post in ``channel``."""
    return sql.insert(
        "posts",
        {
            "channel_id": channel,
            "author_id": author,
            "root_id": None,
            "message": message,
            "created_at": at,
            "edited_at": None,
            "deleted_at": None,
            "is_pinned": pinned,
        },
    )


def inbox(sql: Sql, employee: int) -> tuple[int, int] | None:
    """(Inbox folder id, mailbox id) of an employee, or None without a mailbox."""
    row = sql.one(
        "SELECT f.id, b.id FROM mailboxes b JOIN mail_folders f ON f.mailbox_id = b.id AND f.name = 'Inbox'"
        " WHERE b.employee_id = ? ORDER BY b.id LIMIT 1",
        (employee,),
    )
    return None if row is None else (int(row[0]), int(row[1]))


def mail(sql: Sql, sender: int, to_box: int, folder: int, subject: str, body: str, at: datetime) -> int:
    """One message in a new thread, delivered unread to ``to_box``'s ``folder``; returns the message id."""
    thread = sql.insert("mail_threads", {"subject": subject, "created_at": at})
    message = sql.insert(
        "mail_messages",
        {
            "thread_id": thread,
            "message_id": f"<setup-{thread}-{sender}@mail.example>",
            "in_reply_to_id": None,
            "sender_mailbox_id": sender,
            "subject": subject,
            "body": body,
            "sent_at": at,
            "attachment_document_ids": [],
        },
    )
    sql.insert("mail_recipients", {"message_id": message, "mailbox_id": to_box, "kind": "to"})
    sql.insert(
        "mail_deliveries",
        {
            "message_id": message,
            "mailbox_id": to_box,
            "folder_id": folder,
            "is_read": False,
            "is_flagged": False,
            "read_at": None,
        },
    )
    return message

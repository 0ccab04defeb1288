"""Mail operations acting as an Actor.

Model (``worlds.schema.mail``): a message is stored once with its addressees (``mail_recipients``: to, cc,
bcc) and sits in every mailbox that holds it as one ``mail_deliveries`` row carrying that mailbox's folder,
read and flag state. Sending gives each recipient a delivery in their Inbox and the sender one in Sent.

Access rule: an actor sees only the deliveries of their own mailbox. A message or thread without a delivery
there is ``not_found``, never ``forbidden``, so ids do not reveal that other people's mail exists. Bcc
addressees are shown only to the sender (and a bcc recipient sees only themselves).

External addresses: as in the generated world, people outside the company are mailboxes with no
``employee_id``. A known one that has an Inbox (the generated customers and vendors) gets a delivery like an
employee; a new address is accepted, gets a mailbox row (the recipient row needs one) and no delivery. An
unknown address in the company's own domain is refused: the company's mail server would bounce it.

Reads never write: reading a message does not mark it read (``mark_read`` does). Every write validates all of
its input before its first statement, so a refused call changes nothing. Queries are raw SQL through
``worlds.rawsql.Sql``; Message-IDs are ``<m{row id}@{company domain}>`` (deterministic, no uuid or clock).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.errors import Conflict, Forbidden, InvalidArgument, NotFound
from worlds.rawsql import Sql, iso, like_pattern
from worlds.schema.mail import DEFAULT_FOLDERS, RECIPIENT_KINDS

MAX_RECIPIENTS = 50
MAX_ATTACHMENTS = 20
MAX_SUBJECT = 300
MAX_BODY = 16_000
MAX_FOLDER = 100
MAX_THREAD = 100
ADDRESS = re.compile(r"^[a-z0-9._%+\-]+@[a-z0-9\-]+(\.[a-z0-9\-]+)+$")
NAMED = re.compile(r"^[^<>]*<([^<>]*)>$")  # "Display Name <address>"
RE = re.compile(r"^\s*re:", re.I)
FWD = re.compile(r"^\s*(fwd?|fw):", re.I)
_MSG = (
    "SELECT m.id, m.thread_id, m.message_id, m.in_reply_to_id, m.sender_mailbox_id, s.address, s.display_name,"
    " m.subject, m.body, m.sent_at, m.attachment_document_ids, d.id, f.name, d.is_read, d.is_flagged, d.read_at"
    " FROM mail_deliveries d JOIN mail_messages m ON m.id = d.message_id"
    " JOIN mailboxes s ON s.id = m.sender_mailbox_id JOIN mail_folders f ON f.id = d.folder_id"
)
# Positions in a ``_MSG`` row.
ID, THREAD, HEADER, PARENT, SENDER, FROM, FROM_NAME, SUBJECT, BODY, SENT, DOCS = range(11)
DELIVERY, FOLDER, READ, FLAGGED, READ_AT = range(11, 16)
# A resolved addressee: (kind, mailbox id or None for a new external address, address, is an employee's).
Rcpt = tuple[str, int | None, str, bool]


def _mailbox(ctx: ToolContext, sql: Sql) -> tuple[int, str]:
    """(id, address) of the actor's own mailbox."""
    row = sql.one("SELECT id, address FROM mailboxes WHERE employee_id = ?", (ctx.actor.employee_id,))
    if row is None:
        raise NotFound(f"expected a mailbox for @{ctx.actor.username}; found none")
    return row[0], row[1]


def _domain(sql: Sql, address: str) -> str:
    """The company's mail domain (falling back to the actor's own address's domain)."""
    domain = sql.scalar("SELECT domain FROM companies ORDER BY id LIMIT 1")
    return str(domain or address.rpartition("@")[2]).lower()


def _folder(sql: Sql, box: int, name: str) -> tuple[int, str]:
    """(id, name) of a folder of mailbox ``box``, matched case-insensitively."""
    row = sql.one(
        "SELECT id, name FROM mail_folders WHERE mailbox_id = ? AND lower(name) = lower(?) ORDER BY id LIMIT 1",
        (box, name.strip()),
    )
    if row is None:
        names = sql.column("SELECT name FROM mail_folders WHERE mailbox_id = ? ORDER BY name, id", (box,))
        raise NotFound(f"expected one of your folders ({', '.join(names) or 'none'}); found no folder {name!r}")
    return row[0], row[1]


def _ensure_folder(sql: Sql, box: int, name: str) -> int:
    """The id of folder ``name`` of ``box``, created if missing (write phase only)."""
    fid = sql.scalar("SELECT id FROM mail_folders WHERE mailbox_id = ? AND name = ? ORDER BY id LIMIT 1", (box, name))
    return int(fid) if fid is not None else sql.insert("mail_folders", {"mailbox_id": box, "name": name})


def _delivery(sql: Sql, box: int, message_id: int) -> Any:
    """The ``_MSG`` row of a message in the actor's mailbox; anything else is not_found."""
    row = sql.one(f"{_MSG} WHERE d.mailbox_id = ? AND d.message_id = ?", (box, message_id))
    if row is None:
        raise NotFound(f"expected the id of a message in your mailbox; found no message {message_id}")
    return row


def _page(limit: int, offset: int = 0) -> None:
    if not 1 <= limit <= 100 or offset < 0:
        raise InvalidArgument(f"limit must be 1-100 and offset >= 0; got limit={limit}, offset={offset}")


def _doc_ids(value: Any) -> list[int]:
    """The attachment ids of a message (JSON text on SQLite, a list on PostgreSQL)."""
    ids = json.loads(value) if isinstance(value, str) else value
    return [int(i) for i in ids or []]


def _summary(row: Any) -> dict[str, Any]:
    return {
        "id": row[ID],
        "thread_id": row[THREAD],
        "from": row[FROM],
        "from_name": row[FROM_NAME],
        "subject": row[SUBJECT],
        "sent_at": iso(row[SENT]),
        "folder": row[FOLDER],
        "is_read": bool(row[READ]),
        "is_flagged": bool(row[FLAGGED]),
        "has_attachments": bool(_doc_ids(row[DOCS])),
    }


def _full(sql: Sql, box: int, rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Messages with addressees, body and attachments as ``box``'s owner may see them (two queries a page)."""
    if not rows:
        return []
    ids = [r[ID] for r in rows]
    marks = ", ".join("?" * len(ids))
    rcpts: dict[int, list[tuple[str, str, int]]] = {}
    for mid, kind, address, mailbox in sql.all(
        "SELECT r.message_id, r.kind, b.address, r.mailbox_id FROM mail_recipients r"  # noqa: S608 - marks only
        f" JOIN mailboxes b ON b.id = r.mailbox_id WHERE r.message_id IN ({marks}) ORDER BY r.message_id, r.id",
        ids,
    ):
        rcpts.setdefault(mid, []).append((kind, address, mailbox))
    docs = sorted({d for r in rows for d in _doc_ids(r[DOCS])})
    names: dict[int, str] = {}
    if docs:
        doc_marks = ", ".join("?" * len(docs))
        names = dict(sql.all(f"SELECT id, name FROM documents WHERE id IN ({doc_marks}) ORDER BY id", docs))  # noqa: S608
    out = []
    for row in rows:
        mine = row[SENDER] == box
        shown: dict[str, list[str]] = {kind: [] for kind in RECIPIENT_KINDS}
        for kind, address, mailbox in rcpts.get(row[ID], []):
            if kind != "bcc" or mine or mailbox == box:
                shown[kind].append(address)
        out.append(
            {
                **_summary(row),
                "message_id": row[HEADER],
                "in_reply_to": row[PARENT],
                **shown,
                "body": row[BODY],
                "attachments": [{"id": d, "name": names.get(d)} for d in _doc_ids(row[DOCS])],
            }
        )
    return out


# -- validation (no writes) -----------------------------------------------------------------------------------


def _tokens(value: str) -> list[str]:
    return [t.strip() for t in value.split(",") if t.strip()]


def _resolve(sql: Sql, domain: str, kind: str, token: str) -> Rcpt:
    """One addressee: a coworker's username, a known mailbox, or a new external address."""
    named = NAMED.match(token)
    text = (named.group(1) if named else token).strip().lower()
    if "@" not in text.lstrip("@"):
        row = sql.one(
            "SELECT b.id, b.address FROM employees e JOIN mailboxes b ON b.employee_id = e.id"
            " WHERE lower(e.username) = ? ORDER BY b.id LIMIT 1",
            (text.lstrip("@"),),
        )
        if row is None:
            raise NotFound(f"{kind}: expected an address or a coworker's username; found no one called {token!r}")
        return kind, row[0], row[1], True
    row = sql.one("SELECT id, address, employee_id FROM mailboxes WHERE lower(address) = ? ORDER BY id", (text,))
    if row is not None:
        return kind, row[0], row[1], row[2] is not None
    if not ADDRESS.match(text):
        raise InvalidArgument(f"{kind}: expected an email address such as jane.doe@{domain}; got {token!r}")
    if text.endswith("@" + domain):
        raise NotFound(f"{kind}: expected an existing mailbox of {domain}; found no mailbox {token!r}")
    return kind, None, text, False


def _recipients(sql: Sql, domain: str, to: Sequence[str], cc: Sequence[str], bcc: Sequence[str]) -> list[Rcpt]:
    """The addressees, each once (to before cc before bcc), at least one and at most MAX_RECIPIENTS."""
    count = len(to) + len(cc) + len(bcc)
    if count == 0:
        raise InvalidArgument("expected at least one recipient in to, cc or bcc; got none")
    if count > MAX_RECIPIENTS:
        raise InvalidArgument(f"expected at most {MAX_RECIPIENTS} recipients in to, cc and bcc; got {count}")
    out: list[Rcpt] = []
    seen: set[int | str] = set()
    for kind, tokens in zip(RECIPIENT_KINDS, (to, cc, bcc), strict=True):
        for token in tokens:
            rcpt = _resolve(sql, domain, kind, token)
            key = rcpt[1] if rcpt[1] is not None else rcpt[2]
            if key not in seen:
                seen.add(key)
                out.append(rcpt)
    return out


def _attachments(ctx: ToolContext, sql: Sql, value: str) -> list[int]:
    """Ids of documents the actor owns or that are shared with them."""
    tokens = _tokens(value)
    if len(tokens) > MAX_ATTACHMENTS:
        raise InvalidArgument(f"expected at most {MAX_ATTACHMENTS} attachments; got {len(tokens)}")
    ids: list[int] = []
    for token in tokens:
        if not (token.isascii() and token.isdigit() and len(token) <= 15):
            raise InvalidArgument(f"attachments: expected comma-separated document ids such as 12,15; got {token!r}")
        if int(token) not in ids:
            ids.append(int(token))
    for doc in ids:
        owner = sql.one("SELECT owner_id FROM documents WHERE id = ?", (doc,))
        if owner is None:
            raise NotFound(f"attachments: expected ids of documents you can read; found no document {doc}")
        shared = sql.one(
            "SELECT 1 FROM document_shares WHERE document_id = ? AND employee_id = ?", (doc, ctx.actor.employee_id)
        )
        if owner[0] != ctx.actor.employee_id and shared is None:
            raise Forbidden(f"attachments: document {doc} is neither owned by nor shared with @{ctx.actor.username}")
    return ids


def _text(subject: str, body: str, need_body: bool = False) -> tuple[str, str]:
    subject = subject.strip()
    if len(subject) > MAX_SUBJECT or "\n" in subject or "\r" in subject:
        raise InvalidArgument(f"subject must be one line of at most {MAX_SUBJECT} characters; got {len(subject)}")
    if len(body) > MAX_BODY:
        raise InvalidArgument(f"body is {len(body)} characters; the limit is {MAX_BODY}")
    if need_body and not body.strip():
        raise InvalidArgument("expected a non-empty body; got an empty one")
    if not subject and not body.strip():
        raise InvalidArgument("expected a subject or a body; got both empty")
    return subject, body


def _prefixed(prefix: str, pattern: re.Pattern[str], subject: str) -> str:
    """``Re: subject`` (or ``Fwd:``) without doubling a prefix the subject already has."""
    return (subject if pattern.match(subject) else f"{prefix} {subject}")[:MAX_SUBJECT]


# -- the one write path ---------------------------------------------------------------------------------------


def _deliver(sql: Sql, msg: int, mailbox: int, folder: int, read: bool) -> None:
    """Put a message in a mailbox's folder (unflagged; read_at stays null, as for generated mail)."""
    row = {"message_id": msg, "mailbox_id": mailbox, "folder_id": folder, "is_read": read, "is_flagged": False}
    sql.insert("mail_deliveries", {**row, "read_at": None})


def _write(
    ctx: ToolContext,
    sql: Sql,
    box: tuple[int, str],
    rcpts: Sequence[Rcpt],
    subject: str,
    body: str,
    docs: Sequence[int],
    thread: int | None = None,
    parent: int | None = None,
) -> dict[str, Any]:
    """Store a validated message, its addressees and deliveries; returns it as the sender sees it in Sent."""
    now = ctx.clock.now()
    domain = _domain(sql, box[1])
    if thread is None:
        thread = sql.insert("mail_threads", {"subject": subject or "(no subject)", "created_at": now})
    # The Message-ID names the row id; predict it (SQLite assigns max + 1) and correct it if the backend did not.
    guess = int(sql.scalar("SELECT coalesce(max(id), 0) FROM mail_messages")) + 1
    values = {
        "thread_id": thread,
        "message_id": f"<m{guess}@{domain}>",
        "in_reply_to_id": parent,
        "sender_mailbox_id": box[0],
        "subject": subject,
        "body": body,
        "sent_at": now,
        "attachment_document_ids": list(docs),
    }
    msg = sql.insert("mail_messages", values)
    if msg != guess:
        sql.update("mail_messages", msg, {"message_id": (values["message_id"], f"<m{msg}@{domain}>")})
    delivered = {box[0]}
    _deliver(sql, msg, box[0], _ensure_folder(sql, box[0], "Sent"), True)
    for kind, mailbox, address, employee in rcpts:
        if mailbox is None:
            mailbox = sql.insert("mailboxes", {"address": address, "display_name": address, "employee_id": None})
        sql.insert("mail_recipients", {"message_id": msg, "mailbox_id": mailbox, "kind": kind})
        inbox = sql.scalar("SELECT id FROM mail_folders WHERE mailbox_id = ? AND name = 'Inbox'", (mailbox,))
        if employee and inbox is None:
            inbox = _ensure_folder(sql, mailbox, "Inbox")
        if inbox is not None and mailbox not in delivered:
            delivered.add(mailbox)
            _deliver(sql, msg, mailbox, inbox, False)
    return _full(sql, box[0], [_delivery(sql, box[0], msg)])[0]


# -- tools ----------------------------------------------------------------------------------------------------


def list_folders(ctx: ToolContext) -> dict[str, Any]:
    """The actor's folders (default ones first) with message and unread counts."""
    sql = Sql.of(ctx.session)
    box, address = _mailbox(ctx, sql)
    rows = sql.all(
        "SELECT f.name, count(d.id), coalesce(sum(CASE WHEN d.id IS NOT NULL AND NOT d.is_read THEN 1 ELSE 0 END), 0)"
        " FROM mail_folders f LEFT JOIN mail_deliveries d ON d.folder_id = f.id AND d.mailbox_id = f.mailbox_id"
        " WHERE f.mailbox_id = ? GROUP BY f.id, f.name ORDER BY f.name, f.id",
        (box,),
    )
    rank = {name: i for i, name in enumerate(DEFAULT_FOLDERS)}
    rows.sort(key=lambda r: rank.get(r[0], len(rank)))
    return {"address": address, "folders": [{"name": n, "total": t, "unread": int(u)} for n, t, u in rows]}


def create_folder(ctx: ToolContext, name: str) -> dict[str, Any]:
    """A new, empty folder in the actor's mailbox."""
    clean = name.strip()
    if not clean or len(clean) > MAX_FOLDER or any(not c.isprintable() for c in clean):
        raise InvalidArgument(f"folder name must be 1-{MAX_FOLDER} printable characters; got {name!r}")
    sql = Sql.of(ctx.session)
    box, _ = _mailbox(ctx, sql)
    dup = sql.scalar(
        "SELECT name FROM mail_folders WHERE mailbox_id = ? AND lower(name) = lower(?) ORDER BY id LIMIT 1",
        (box, clean),
    )
    if dup is not None:
        raise Conflict(f"expected a new folder name; you already have a folder {dup!r}")
    sql.insert("mail_folders", {"mailbox_id": box, "name": clean})
    return {"name": clean, "total": 0, "unread": 0}


def list_messages(ctx: ToolContext, folder: str, unread_only: bool, limit: int, offset: int) -> dict[str, Any]:
    """A page of a folder's messages, newest first, with the folder's matching total."""
    _page(limit, offset)
    sql = Sql.of(ctx.session)
    box, _ = _mailbox(ctx, sql)
    fid, fname = _folder(sql, box, folder)
    cond, params = (" AND d.is_read = ?", [box, fid, False]) if unread_only else ("", [box, fid])
    total = sql.scalar(
        f"SELECT count(d.id) FROM mail_deliveries d WHERE d.mailbox_id = ? AND d.folder_id = ?{cond}",  # noqa: S608
        params,
    )
    rows = sql.all(
        f"{_MSG} WHERE d.mailbox_id = ? AND d.folder_id = ?{cond} ORDER BY m.sent_at DESC, m.id DESC LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return {"folder": fname, "total": total, "messages": [_summary(r) for r in rows]}


def read_message(ctx: ToolContext, message_id: int) -> dict[str, Any]:
    """One message in full; does not mark it read."""
    sql = Sql.of(ctx.session)
    box, _ = _mailbox(ctx, sql)
    return _full(sql, box, [_delivery(sql, box, message_id)])[0]


def read_thread(ctx: ToolContext, thread_id: int) -> dict[str, Any]:
    """The actor's messages of a thread, oldest first (the latest MAX_THREAD of them)."""
    sql = Sql.of(ctx.session)
    box, _ = _mailbox(ctx, sql)
    rows = sql.all(
        f"{_MSG} WHERE d.mailbox_id = ? AND m.thread_id = ? ORDER BY m.sent_at DESC, m.id DESC LIMIT ?",
        (box, thread_id, MAX_THREAD + 1),
    )
    if not rows:
        raise NotFound(f"expected the id of a thread in your mailbox; found no thread {thread_id}")
    subject = sql.scalar("SELECT subject FROM mail_threads WHERE id = ?", (thread_id,))
    shown = rows[:MAX_THREAD][::-1]
    return {
        "thread_id": thread_id,
        "subject": subject,
        "truncated": len(rows) > MAX_THREAD,
        "messages": _full(sql, box, shown),
    }


def search(ctx: ToolContext, text: str, sender: str | None, folder: str | None, limit: int) -> dict[str, Any]:
    """The actor's messages whose subject or body contains ``text`` literally (case-insensitive), newest first."""
    _page(limit)
    if not text.strip() and not (sender or "").strip():
        raise InvalidArgument("expected text or a sender to search for; got neither")
    sql = Sql.of(ctx.session)
    box, _ = _mailbox(ctx, sql)
    where: list[str] = ["d.mailbox_id = ?"]
    params: list[Any] = [box]
    if text.strip():
        pattern = like_pattern(text.lower())
        where.append("(lower(m.subject) LIKE ? ESCAPE '\\' OR lower(m.body) LIKE ? ESCAPE '\\')")
        params += [pattern, pattern]
    if sender and sender.strip():
        pattern = like_pattern(sender.strip().lower())
        where.append("(lower(s.address) LIKE ? ESCAPE '\\' OR lower(s.display_name) LIKE ? ESCAPE '\\')")
        params += [pattern, pattern]
    if folder:
        where.append("d.folder_id = ?")
        params.append(_folder(sql, box, folder)[0])
    rows = sql.all(
        f"{_MSG} WHERE {' AND '.join(where)} ORDER BY m.sent_at DESC, m.id DESC LIMIT ?",  # noqa: S608
        [*params, limit],
    )
    return {"messages": [_summary(r) for r in rows]}


def send(ctx: ToolContext, to: str, cc: str, bcc: str, subject: str, body: str, attachments: str) -> dict[str, Any]:
    """Send a new message, starting a new thread."""
    sql = Sql.of(ctx.session)
    box = _mailbox(ctx, sql)
    subject, body = _text(subject, body)
    rcpts = _recipients(sql, _domain(sql, box[1]), _tokens(to), _tokens(cc), _tokens(bcc))
    docs = _attachments(ctx, sql, attachments)
    return _write(ctx, sql, box, rcpts, subject, body, docs)


def reply(ctx: ToolContext, message_id: int, body: str, attachments: str, everyone: bool) -> dict[str, Any]:
    """Reply in a message's thread: to its sender, or with ``everyone`` to its sender, to and cc but yourself.

    Replying to your own message goes to its recipients again; bcc addressees are never included.
    """
    sql = Sql.of(ctx.session)
    box = _mailbox(ctx, sql)
    row = _delivery(sql, box[0], message_id)
    subject, body = _text(_prefixed("Re:", RE, row[SUBJECT]), body, need_body=True)
    others = sql.all(
        "SELECT r.kind, b.address FROM mail_recipients r JOIN mailboxes b ON b.id = r.mailbox_id"
        " WHERE r.message_id = ? AND r.mailbox_id != ? AND r.kind != 'bcc' ORDER BY r.id",
        (row[ID], box[0]),
    )
    mine = row[SENDER] == box[0]
    to = ([] if mine else [row[FROM]]) + [a for k, a in others if k == "to" and (everyone or mine)]
    cc = [a for k, a in others if k == "cc" and everyone]
    rcpts = _recipients(sql, _domain(sql, box[1]), to or [box[1]], cc, [])
    docs = _attachments(ctx, sql, attachments)
    return _write(ctx, sql, box, rcpts, subject, body, docs, thread=row[THREAD], parent=row[ID])


def forward(
    ctx: ToolContext, message_id: int, to: str, cc: str, bcc: str, body: str, attachments: str
) -> dict[str, Any]:
    """Forward a message with its attachments (plus any new ones) as a new thread, quoting it below ``body``."""
    sql = Sql.of(ctx.session)
    box = _mailbox(ctx, sql)
    row = _delivery(sql, box[0], message_id)
    subject, note = _text(_prefixed("Fwd:", FWD, row[SUBJECT]), body)
    original = _full(sql, box[0], [row])[0]
    quoted = (
        f"{note}\n\n---------- Forwarded message ----------\nFrom: {row[FROM_NAME]} <{row[FROM]}>\n"
        f"Date: {original['sent_at']}\nSubject: {row[SUBJECT]}\nTo: {', '.join(original['to'])}\n\n{row[BODY]}"
    )
    rcpts = _recipients(sql, _domain(sql, box[1]), _tokens(to), _tokens(cc), _tokens(bcc))
    extra = _attachments(ctx, sql, attachments)
    docs = list(dict.fromkeys([*_doc_ids(row[DOCS]), *extra]))
    return _write(ctx, sql, box, rcpts, subject, quoted, docs)


def _set(ctx: ToolContext, message_id: int, **new: Any) -> dict[str, Any]:
    """Apply ``new`` column values to the actor's delivery of a message; returns its summary and whether it changed."""
    sql = Sql.of(ctx.session)
    box, _ = _mailbox(ctx, sql)
    row = _delivery(sql, box, message_id)
    diff: dict[str, tuple[Any, Any]] = {}
    if "folder" in new:
        fid, _ = _folder(sql, box, new["folder"])
        old = sql.scalar("SELECT folder_id FROM mail_deliveries WHERE id = ?", (row[DELIVERY],))
        diff["folder_id"] = (old, fid)
    if "is_flagged" in new:
        diff["is_flagged"] = (bool(row[FLAGGED]), new["is_flagged"])
    if "is_read" in new and bool(row[READ]) != new["is_read"]:
        diff["is_read"] = (bool(row[READ]), new["is_read"])
        diff["read_at"] = (iso(row[READ_AT]), ctx.clock.now() if new["is_read"] else None)
    changed = sql.update("mail_deliveries", row[DELIVERY], diff)
    return {**_summary(_delivery(sql, box, message_id)), "changed": changed}


def move(ctx: ToolContext, message_id: int, folder: str) -> dict[str, Any]:
    """Move the actor's copy of a message to one of their folders."""
    return _set(ctx, message_id, folder=folder)


def flag(ctx: ToolContext, message_id: int, flagged: bool) -> dict[str, Any]:
    """Flag or unflag the actor's copy of a message."""
    return _set(ctx, message_id, is_flagged=flagged)


def mark_read(ctx: ToolContext, message_id: int, read: bool) -> dict[str, Any]:
    """Mark the actor's copy of a message read (stamping read_at) or unread."""
    return _set(ctx, message_id, is_read=read)

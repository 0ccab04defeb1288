"""Text documents (real ODT and DOCX files), folders and sharing, acting as an Actor.

Paths, access and storage are ``mcp_tools.docs.store``'s (read: ``view``; comment: ``comment``; change:
``edit``; share: owner or editor). Every change parses nothing it does not need, builds the new ``TextDoc``,
and ends in one ``store.save``; all input is validated first, so a refused call changes nothing.

Text in: Markdown-like. ``# Heading`` to ``###### Heading`` start headings (levels 1-6); blank lines separate
paragraphs; single newlines inside a paragraph are line breaks. Text out: sections, each a heading (None for
text before the first heading), its level and its paragraphs, plus the comments with the heading they are on.
A section spans from its heading to the next heading of the same or a higher level, so replacing a section
replaces its subsections too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.docs import store
from mcp_tools.errors import Conflict, Forbidden, InvalidArgument, NotFound, TooLarge
from worlds.office import files
from worlds.office.model import Block, Comment, TextDoc
from worlds.rawsql import Sql, iso, like_pattern

MAX_TEXT = 20_000
MAX_COMMENT = 5_000
MAX_LIST = 200
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def parse_text(text: str, what: str = "text") -> list[Block]:
    """Blocks of Markdown-like text (see the module docstring).

    Raises:
        InvalidArgument: control characters.
        TooLarge: more than ``MAX_TEXT`` characters.
    """
    if len(text) > MAX_TEXT:
        raise TooLarge(f"{what}: at most {MAX_TEXT} characters per call; got {len(text)}")
    if _CONTROL.search(text):
        raise InvalidArgument(f"{what}: control characters are not allowed")
    blocks: list[Block] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            blocks.append(Block(level=0, text="\n".join(para)))
            para.clear()

    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        m = _HEADING.match(line)
        if m and m.group(2).strip():
            flush()
            blocks.append(Block(level=len(m.group(1)), text=m.group(2).strip()))
        elif not line.strip():
            flush()
        else:
            para.append(line.rstrip())
    flush()
    return blocks


def _sections(doc: TextDoc) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in doc.blocks:
        if b.level or not out:
            out.append({"heading": b.text if b.level else None, "level": b.level, "paragraphs": []})
            if b.level:
                continue
        out[-1]["paragraphs"].append(b.text)
    return out


def _heading_of(doc: TextDoc, index: int) -> str | None:
    for b in reversed(doc.blocks[: index + 1]):
        if b.level:
            return b.text
    return None


def _comments(doc: TextDoc) -> list[dict[str, Any]]:
    return [
        {"id": i + 1, "author": c.author, "date": c.date, "text": c.text, "heading": _heading_of(doc, c.anchor)}
        for i, c in enumerate(doc.comments)
    ]


def _span(doc: TextDoc, heading: str) -> tuple[int, int]:
    """(heading index, end index exclusive) of the section with that heading.

    Raises:
        NotFound: no such heading (the headings are listed).
        Conflict: several sections have it.
    """
    want = " ".join(heading.split()).casefold()
    hits = [i for i, b in enumerate(doc.blocks) if b.level and " ".join(b.text.split()).casefold() == want]
    if not hits:
        names = ", ".join(repr(b.text) for b in doc.blocks if b.level)[:500] or "none"
        raise NotFound(f"expected one of the document's headings; found no {heading[:80]!r} (headings: {names})")
    if len(hits) > 1:
        raise Conflict(f"{len(hits)} sections are headed {heading[:80]!r}; rename one first")
    start = hits[0]
    level = doc.blocks[start].level
    end = next((j for j in range(start + 1, len(doc.blocks)) if 0 < doc.blocks[j].level <= level), len(doc.blocks))
    return start, end


def _open(ctx: ToolContext, document: str, need: str) -> tuple[Sql, store.Doc, TextDoc]:
    sql = Sql.of(ctx.session)
    doc = store.open_doc(ctx, sql, document, need, "text")
    return sql, doc, store.load_text(sql, doc)


def read(ctx: ToolContext, document: str, heading: str | None) -> dict[str, Any]:
    """The document as sections and comments (one section and its subsections with ``heading``)."""
    _, doc, text = _open(ctx, document, "view")
    if heading is not None and heading.strip():
        start, end = _span(text, heading)
        part = TextDoc(blocks=text.blocks[start:end])
        notes = [c for c in _comments(text) if start <= text.comments[c["id"] - 1].anchor < end]
        return {**store.describe(doc), "sections": _sections(part), "comments": notes}
    return {**store.describe(doc), "sections": _sections(text), "comments": _comments(text)}


def create(ctx: ToolContext, name: str, folder: str, text: str, fmt: str | None) -> dict[str, Any]:
    """A new text document you own, with ``text`` as its content."""
    sql = Sql.of(ctx.session)
    blocks = parse_text(text)
    return store.create(ctx, sql, folder, name, "text", fmt, TextDoc(blocks=blocks))


def append(ctx: ToolContext, document: str, text: str) -> dict[str, Any]:
    """Add text (paragraphs and headings) at the end."""
    sql, doc, model = _open(ctx, document, "edit")
    blocks = parse_text(text)
    if not blocks:
        raise InvalidArgument("text: expected something to append; got only whitespace")
    model.blocks.extend(blocks)
    out = store.save(ctx, sql, doc, model, f"append {len(blocks)} blocks")
    return {**out, "appended": len(blocks), "sections": len(_sections(model))}


def replace_section(ctx: ToolContext, document: str, heading: str, text: str) -> dict[str, Any]:
    """Replace the body of the section under ``heading`` (its subsections included); the heading stays."""
    sql, doc, model = _open(ctx, document, "edit")
    start, end = _span(model, heading)
    body = parse_text(text)
    removed = end - start - 1
    delta = len(body) - removed
    for c in model.comments:
        if start < c.anchor < end:
            c.anchor = start
        elif c.anchor >= end:
            c.anchor += delta
    model.blocks[start + 1 : end] = body
    out = store.save(ctx, sql, doc, model, f"replace section {model.blocks[start].text[:100]}")
    return {**out, "heading": model.blocks[start].text, "removed_blocks": removed, "added_blocks": len(body)}


def comment(ctx: ToolContext, document: str, text: str, heading: str | None) -> dict[str, Any]:
    """Add a comment on a section (or the start of the document)."""
    sql, doc, model = _open(ctx, document, "comment")
    body = text.strip()
    if not body or len(body) > MAX_COMMENT or _CONTROL.search(body):
        raise InvalidArgument(f"text: expected 1-{MAX_COMMENT} characters without control characters")
    anchor = _span(model, heading)[0] if heading is not None and heading.strip() else 0
    row = sql.one("SELECT first_name, last_name FROM employees WHERE id = ?", (ctx.actor.employee_id,))
    author = f"{row[0]} {row[1]}" if row else ctx.actor.username
    initials = "".join(p[:1] for p in author.split()[:3]).upper()
    when = ctx.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    model.comments.append(Comment(author=author, date=when, text=body, anchor=anchor, initials=initials))
    out = store.save(ctx, sql, doc, model, "comment")
    return {**out, "comment": _comments(model)[-1]}


# -- folders, listing, sharing, history ----------------------------------------------------------------------------


def _doc_rows(sql: Sql, ctx: ToolContext, where: str, args: tuple[Any, ...], limit: int) -> list[dict[str, Any]]:
    me = ctx.actor.employee_id
    query = (
        "SELECT d.id, d.folder_id, d.name, d.kind, d.mime_type, d.owner_id, d.version, d.updated_at, e.username,"  # noqa: S608 - fixed text
        " s.permission FROM documents d JOIN employees e ON e.id = d.owner_id"
        " LEFT JOIN document_shares s ON s.document_id = d.id AND s.employee_id = ?"
        " WHERE (d.owner_id = ? OR s.permission IS NOT NULL) AND " + where  # where: fixed text from callers
    )
    rows = sql.all(query + " ORDER BY d.folder_id, d.name, d.id LIMIT ?", (me, me, *args, limit))
    return [
        {
            "id": r[0],
            "path": f"{store.folder_path(sql, int(r[1]))}/{r[2]}",
            "kind": r[3],
            "format": files.FORMAT_OF_MIME.get(str(r[4]), "unknown"),
            "owner": r[8],
            "permission": "owner" if r[5] == me else r[9],
            "version": r[6],
            "updated_at": iso(r[7]),
        }
        for r in rows
    ]


def list_items(ctx: ToolContext, folder: str | None, query: str | None, limit: int) -> dict[str, Any]:
    """Subfolders and the documents you can open in a folder; or, with ``query``, documents by name."""
    sql = Sql.of(ctx.session)
    if not 1 <= limit <= MAX_LIST:
        raise InvalidArgument(f"limit must be 1-{MAX_LIST}; got {limit}")
    folder_id = store.resolve_folder(sql, folder) if folder is not None and folder.strip() else None
    q = (query or "").strip()
    if len(q) > 200:
        raise InvalidArgument("query: at most 200 characters")
    cond = "parent_id IS NULL" if folder_id is None else "parent_id = ?"
    sub = sql.all(
        f"SELECT id, name FROM doc_folders WHERE {cond} ORDER BY name, id",  # noqa: S608 - fixed text
        () if folder_id is None else (folder_id,),
    )
    folders = [{"path": store.folder_path(sql, int(r[0])), "name": r[1]} for r in sub]
    if q:
        where = "lower(d.name) LIKE lower(?) ESCAPE '\\'"
        args: tuple[Any, ...] = (like_pattern(q),)
        if folder_id is not None:
            where, args = where + " AND d.folder_id = ?", (*args, folder_id)
        docs = _doc_rows(sql, ctx, where, args, limit)
    elif folder_id is not None:
        docs = _doc_rows(sql, ctx, "d.folder_id = ?", (folder_id,), limit)
    else:
        docs = []
    where_name = store.folder_path(sql, folder_id) if folder_id is not None else "/"
    return {"folder": where_name, "folders": folders[:limit], "documents": docs}


def create_folder(ctx: ToolContext, name: str, parent: str | None) -> dict[str, Any]:
    """A new folder (top-level without ``parent``)."""
    sql = Sql.of(ctx.session)
    parent_id = store.resolve_folder(sql, parent, "parent") if parent is not None and parent.strip() else None
    clean = store.check_name(name)
    cond = "parent_id IS NULL" if parent_id is None else "parent_id = ?"
    taken = sql.column(
        f"SELECT name FROM doc_folders WHERE {cond} ORDER BY id",  # noqa: S608 - fixed text
        () if parent_id is None else (parent_id,),
    )
    if any(str(t).casefold() == clean.casefold() for t in taken):
        raise Conflict(f"a folder named {clean!r} already exists there")
    depth = len(store.folder_path(sql, parent_id).split("/")) if parent_id is not None else 0
    if depth + 1 > store.MAX_DEPTH:
        raise TooLarge(f"folders nest at most {store.MAX_DEPTH} deep")
    fid = sql.insert(
        "doc_folders",
        {"parent_id": parent_id, "name": clean, "owner_id": ctx.actor.employee_id, "created_at": ctx.clock.now()},
    )
    return {"id": fid, "path": store.folder_path(sql, fid)}


def share(ctx: ToolContext, document: str, username: str, permission: str) -> dict[str, Any]:
    """Give a person view, comment or edit access (``none`` removes it); owner or editors only."""
    sql = Sql.of(ctx.session)
    perm = permission.strip().lower()
    if perm not in (*store.PERMISSIONS, "none"):
        raise InvalidArgument(f"permission: expected view, comment, edit or none; got {permission[:20]!r}")
    doc = store.open_doc(ctx, sql, document, "view")
    if store.RANK[doc.permission] < store.RANK["edit"]:
        raise Forbidden(f"only the owner or an editor may share {doc.path}; @{ctx.actor.username} has {doc.permission}")
    who = username.strip().lstrip("@")
    row = sql.one("SELECT id, username FROM employees WHERE username = ? AND active = ?", (who, True))
    if row is None:
        raise NotFound(f"expected an active employee's username; found none named {who[:60]!r}")
    target = int(row[0])
    if target == doc.owner_id:
        raise Conflict(f"@{row[1]} owns {doc.path}; owners always have full access")
    current = sql.one(
        "SELECT id, permission FROM document_shares WHERE document_id = ? AND employee_id = ?", (doc.id, target)
    )
    before = current[1] if current else "none"
    if perm == "none":
        if current is not None:
            old = {"id": current[0], "document_id": doc.id, "employee_id": target, "permission": current[1]}
            sql.delete("document_shares", {"id": current[0]}, old)
    elif current is None:
        sql.insert("document_shares", {"document_id": doc.id, "employee_id": target, "permission": perm})
    else:
        sql.update("document_shares", int(current[0]), {"permission": (current[1], perm)})
    return {"id": doc.id, "path": doc.path, "username": row[1], "permission": perm, "previous": before}


def versions(ctx: ToolContext, document: str, limit: int) -> dict[str, Any]:
    """The document's versions, newest first."""
    sql = Sql.of(ctx.session)
    if not 1 <= limit <= MAX_LIST:
        raise InvalidArgument(f"limit must be 1-{MAX_LIST}; got {limit}")
    doc = store.open_doc(ctx, sql, document, "view")
    rows = sql.all(
        "SELECT v.version, e.username, v.created_at, v.content, v.blob_sha256, b.size FROM document_versions v"
        " JOIN employees e ON e.id = v.author_id LEFT JOIN blobs b ON b.sha256 = v.blob_sha256"
        " WHERE v.document_id = ? ORDER BY v.version DESC LIMIT ?",
        (doc.id, limit),
    )
    out = []
    for r in rows:
        content = json.loads(r[3]) if isinstance(r[3], str) else (r[3] or {})
        change = content.get("change") if isinstance(content, dict) and "change" in content else "generated"
        out.append({"version": r[0], "author": r[1], "at": iso(r[2]), "change": change, "sha256": r[4], "size": r[5]})
    return {**store.describe(doc), "versions": out}

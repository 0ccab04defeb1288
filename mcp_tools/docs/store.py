r"""The document store shared by the docs and sheets apps: paths, access, file bytes, versions.

Paths. A folder or document is named by its path from a root folder, ``Shared/Finance/Budget 2026`` (a leading
``/`` is allowed), or a document by its id (``"12"``). Everything lives in the world database; no path is ever
joined to a filesystem path. Names are still validated as strictly as if they were: a name is 1-200 characters,
NFC-normalised, trimmed, and refused (``invalid_path``) when it, or its NFKC compatibility form, contains ``/`` or
``\\``, is made only of dots, contains a percent-escape (``%2e``, ``%c0%ae``, ``%252e``), or contains control,
format (bidi overrides, zero-width), separator or private-use characters. So ``../``, ``%2e%2e/``, ``．．／`` and
``..\\`` are refused in every spelling, and a refused name never reaches the database.

Access. Each document has an owner and per-person shares with a permission ``view`` < ``comment`` < ``edit``.
Reading needs any of them, commenting ``comment``, changing ``edit``; the owner has every right. Sharing is done
by the owner or an editor. Without access a document is ``forbidden`` (its existence is not secret: it shows
in its folder's listing only to people with access, but a path names it). Folders are visible to everyone in
the company (they are the shared drive's structure); anyone may create a folder or a document in one.
The directory app's field rule (``mcp_tools.directory.access``) is about people's private fields, not files,
so it does not apply here.

Bytes. The file bytes are the truth: ``blobs`` holds them by SHA-256 (shared by every version and document with
the same bytes), ``documents.blob_sha256`` points at the current bytes, and every change adds a
``document_versions`` row. ``documents.content`` caches the parsed model tagged with the SHA-256 it was parsed
from, so reads skip the parse while the tag matches. Documents generated before files existed (``blob_sha256``
null) are read from their structured content and get their first file on their first change.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp_tools.base import ToolContext
from mcp_tools.errors import (
    AppError,
    Conflict,
    CorruptFile,
    Forbidden,
    InvalidArgument,
    InvalidCell,
    InvalidFormula,
    InvalidPath,
    NotFound,
    TooLarge,
    UnsupportedFormat,
)
from worlds.blobs import put_blob, read_blob
from worlds.office import errors as oe
from worlds.office import files
from worlds.office.model import TextDoc, Workbook, text_from_json, text_json, workbook_from_json, workbook_json
from worlds.rawsql import Sql, iso

MAX_NAME = 200
MAX_PATH = 1000
MAX_DEPTH = 20
RANK = {"view": 1, "comment": 2, "edit": 3, "owner": 4}
PERMISSIONS = ("view", "comment", "edit")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_EXT = re.compile(r"\.([A-Za-z][A-Za-z0-9]{1,4})$")
_Model = TypeVar("_Model", Workbook, TextDoc)
_DOC = "SELECT id, folder_id, name, kind, mime_type, owner_id, blob_sha256, version FROM documents"


@dataclass(frozen=True, kw_only=True)
class Doc:
    """A document as the actor sees it: where it is, its format and the actor's permission."""

    id: int
    folder_id: int
    name: str
    kind: str
    fmt: str
    owner_id: int
    sha256: str | None
    version: int
    path: str
    permission: str


def check_name(name: str, what: str = "name") -> str:
    """A folder or document name, trimmed and NFC-normalised.

    Raises:
        InvalidPath: see the module docstring for what is refused.
    """
    if not isinstance(name, str) or len(name) > MAX_NAME * 4:
        raise InvalidPath(f"{what}: expected at most {MAX_NAME} characters")
    out = unicodedata.normalize("NFC", name).strip()
    compat = unicodedata.normalize("NFKC", out)
    if not out or len(out) > MAX_NAME:
        raise InvalidPath(f"{what}: expected 1-{MAX_NAME} characters; got {len(out)}")
    if any(ch in s for s in (out, compat) for ch in "/\\"):
        raise InvalidPath(f"{what}: a name may not contain '/' or '\\'; got {out[:60]!r}")
    if compat.strip().strip(".") == "" or out.strip(".") == "":
        raise InvalidPath(f"{what}: a name may not be only dots; got {out[:60]!r}")
    if _PERCENT.search(out) or _PERCENT.search(compat):
        raise InvalidPath(f"{what}: percent-escapes such as %2e are not allowed in names; got {out[:60]!r}")
    if any(unicodedata.category(ch) in _BAD_CATEGORIES for ch in out):
        raise InvalidPath(f"{what}: control, format or private-use characters are not allowed; got {out[:60]!r}")
    return out


def split_path(path: str, what: str = "path") -> list[str]:
    """The checked components of a path (``Shared/Finance``; one leading ``/`` allowed, one trailing too).

    Raises:
        InvalidPath: empty, too long, too deep, ``//``, or a bad component.
    """
    if not isinstance(path, str) or len(path) > MAX_PATH:
        raise InvalidPath(f"{what}: expected a path of at most {MAX_PATH} characters")
    text = path.strip()
    text = text[1:] if text.startswith("/") else text
    text = text[:-1] if text.endswith("/") else text
    if not text:
        raise InvalidPath(f"{what}: expected a path such as Shared/Finance; got {path[:60]!r}")
    parts = text.split("/")
    if len(parts) > MAX_DEPTH:
        raise InvalidPath(f"{what}: at most {MAX_DEPTH} levels; got {len(parts)}")
    return [check_name(p, what) for p in parts]


def folder_path(sql: Sql, folder_id: int) -> str:
    """``Shared/Finance`` for a folder id (cycle-safe)."""
    names: list[str] = []
    seen: set[int] = set()
    current: int | None = folder_id
    while current is not None and current not in seen and len(names) <= MAX_DEPTH:
        seen.add(current)
        row = sql.one("SELECT name, parent_id FROM doc_folders WHERE id = ?", (current,))
        if row is None:
            break
        names.append(str(row[0]))
        current = row[1]
    return "/".join(reversed(names))


def _child_folder(sql: Sql, parent: int | None, name: str) -> int | None:
    cond = "parent_id IS NULL" if parent is None else "parent_id = ?"
    args: tuple[Any, ...] = () if parent is None else (parent,)
    rows = sql.all(f"SELECT id, name FROM doc_folders WHERE {cond} ORDER BY id", args)  # noqa: S608 - fixed text
    exact = [r[0] for r in rows if r[1] == name]
    loose = [r[0] for r in rows if str(r[1]).casefold() == name.casefold()]
    if exact:
        return int(exact[0])
    return int(loose[0]) if len(loose) == 1 else None


def resolve_folder(sql: Sql, path: str, what: str = "folder") -> int:
    """The id of the folder at ``path``.

    Raises:
        InvalidPath: a malformed path.
        NotFound: no such folder.
    """
    current: int | None = None
    for i, name in enumerate(split_path(path, what)):
        found = _child_folder(sql, current, name)
        if found is None:
            where = "/".join(split_path(path, what)[:i]) or "the top level"
            raise NotFound(f"{what}: expected an existing folder; {where} has no folder {name!r}")
        current = found
    assert current is not None
    return current


def permission(sql: Sql, ctx: ToolContext, doc_id: int, owner_id: int) -> str | None:
    """The actor's permission on a document: ``owner``, ``edit``, ``comment``, ``view`` or None."""
    if owner_id == ctx.actor.employee_id:
        return "owner"
    row = sql.one(
        "SELECT permission FROM document_shares WHERE document_id = ? AND employee_id = ?",
        (doc_id, ctx.actor.employee_id),
    )
    return str(row[0]) if row is not None and row[0] in RANK else None


def _row_to_doc(sql: Sql, ctx: ToolContext, row: Any) -> tuple[Doc, str | None]:
    perm = permission(sql, ctx, int(row[0]), int(row[5]))
    try:
        fmt = files.format_of_mime(str(row[4]))
    except oe.UnsupportedFormat as exc:
        raise UnsupportedFormat(str(exc)) from None
    doc = Doc(
        id=int(row[0]),
        folder_id=int(row[1]),
        name=str(row[2]),
        kind=str(row[3]),
        fmt=fmt,
        owner_id=int(row[5]),
        sha256=row[6],
        version=int(row[7]),
        path=f"{folder_path(sql, int(row[1]))}/{row[2]}",
        permission=perm or "",
    )
    return doc, perm


def open_doc(ctx: ToolContext, sql: Sql, ref: str, need: str, kind: str | None = None) -> Doc:
    """The document named by ``ref`` (a path or an id) if the actor holds at least ``need``.

    Raises:
        InvalidPath: a malformed path.
        NotFound: no such document.
        Forbidden: the actor lacks ``need`` on it.
        InvalidArgument: it is not of ``kind`` (a spreadsheet given to a text tool or the reverse).
    """
    text = ref.strip() if isinstance(ref, str) else ""
    if text.isascii() and text.isdigit() and len(text) <= 15:
        row = sql.one(f"{_DOC} WHERE id = ?", (int(text),))  # noqa: S608 - fixed text
        if row is None:
            raise NotFound(f"expected a document id or path; found no document {text}")
    else:
        parts = split_path(ref, "document")
        if len(parts) < 2:
            raise NotFound(f"expected a document path such as Shared/Finance/Budget; {ref[:60]!r} names no document")
        folder = resolve_folder(sql, "/".join(parts[:-1]), "document")
        rows = sql.all(f"{_DOC} WHERE folder_id = ? ORDER BY id", (folder,))  # noqa: S608 - fixed text
        exact = [r for r in rows if r[2] == parts[-1]]
        loose = [r for r in rows if str(r[2]).casefold() == parts[-1].casefold()]
        row = exact[0] if exact else loose[0] if len(loose) == 1 else None
        if row is None:
            raise NotFound(f"expected an existing document; folder {'/'.join(parts[:-1])} has no {parts[-1]!r}")
    doc, perm = _row_to_doc(sql, ctx, row)
    if perm is None or RANK[perm] < RANK[need]:
        have = f"only {perm} access" if perm else "no access"
        raise Forbidden(f"{doc.path} needs {need} access; @{ctx.actor.username} has {have} (ask the owner to share it)")
    if kind is not None and doc.kind != kind:
        other = "sheets_* tools" if doc.kind == "spreadsheet" else "docs_* tools"
        raise InvalidArgument(f"{doc.path} is a {doc.kind}, not a {kind}; use the {other}")
    return doc


_OFFICE_ERRORS: dict[type[oe.OfficeError], type[AppError]] = {
    oe.CorruptFile: CorruptFile,
    oe.UnsupportedFormat: UnsupportedFormat,
    oe.FileTooLarge: TooLarge,
    oe.InvalidCell: InvalidCell,
    oe.InvalidFormula: InvalidFormula,
}


def office_error(exc: oe.OfficeError) -> AppError:
    """The AppError for an office-layer error (the same stable code for every tool)."""
    return _OFFICE_ERRORS.get(type(exc), CorruptFile)(str(exc))


# -- bytes, cache, versions ----------------------------------------------------------------------------------


def blob(sql: Sql, sha: str) -> bytes:
    """The bytes of a blob.

    Raises:
        CorruptFile: the blob is missing or does not hash to its address.
    """
    data = read_blob(sql, sha)
    if data is None:
        raise CorruptFile(f"the document's file {sha[:12]} is missing from the store or fails its checksum")
    return data


def _cached(sql: Sql, doc: Doc) -> dict[str, Any]:
    raw = sql.scalar("SELECT content FROM documents WHERE id = ?", (doc.id,))
    data = json.loads(raw) if isinstance(raw, str) else raw
    return data if isinstance(data, dict) else {}


def load_workbook(sql: Sql, doc: Doc) -> Workbook:
    """The document's workbook: from the cache when it matches the current bytes, else parsed from the bytes.

    Raises:
        CorruptFile, UnsupportedFormat, TooLarge: the stored file cannot be read.
    """
    return _load(sql, doc, workbook_from_json, files.read_workbook, "spreadsheet")


def load_text(sql: Sql, doc: Doc) -> TextDoc:
    """The document's text model (cache or bytes, as ``load_workbook``).

    Raises:
        CorruptFile, UnsupportedFormat, TooLarge: the stored file cannot be read.
    """
    return _load(sql, doc, text_from_json, files.read_text, "document")


def _load(
    sql: Sql,
    doc: Doc,
    from_json: Callable[[dict[str, Any]], _Model],
    parse: Callable[[bytes, str], _Model],
    what: str,
) -> _Model:
    try:
        content = _cached(sql, doc)
        if doc.sha256 is None or content.get("sha256") == doc.sha256:
            return from_json(content)
        return parse(blob(sql, doc.sha256), doc.fmt)
    except oe.OfficeError as exc:
        raise office_error(exc) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptFile(f"the stored {what} cannot be read ({type(exc).__name__})") from None


def encode(model: Workbook | TextDoc, fmt: str) -> tuple[bytes, dict[str, Any]]:
    """File bytes and the content cache (tagged with the bytes' hash) for a model.

    Raises:
        TooLarge: over the caps of ``worlds.office.files``.
    """
    try:
        if isinstance(model, Workbook):
            data = files.write_workbook(model, fmt)
            content = workbook_json(model)
        else:
            data = files.write_text(model, fmt)
            content = text_json(model)
    except oe.OfficeError as exc:
        raise office_error(exc) from None
    content.update(format=fmt, sha256=hashlib.sha256(data).hexdigest())
    return data, content


def save(ctx: ToolContext, sql: Sql, doc: Doc, model: Workbook | TextDoc, change: str) -> dict[str, Any]:
    """Write a new version of ``doc``: bytes to blobs, pointer and cache on the document, a version row."""
    data, content = encode(model, doc.fmt)
    sha = put_blob(sql, data)
    now = ctx.clock.now()
    old = sql.one("SELECT content, blob_sha256, version, updated_at FROM documents WHERE id = ?", (doc.id,))
    version = int(old[2]) + 1
    sql.update(
        "documents",
        doc.id,
        {
            "content": (json.loads(old[0]) if isinstance(old[0], str) else old[0], content),
            "blob_sha256": (old[1], sha),
            "version": (old[2], version),
            "updated_at": (iso(old[3]), now),
        },
    )
    sql.insert(
        "document_versions",
        {
            "document_id": doc.id,
            "version": version,
            "author_id": ctx.actor.employee_id,
            "content": {"format": doc.fmt, "change": change[:300]},
            "blob_sha256": sha,
            "created_at": now,
        },
    )
    return {"id": doc.id, "path": doc.path, "version": version, "sha256": sha, "size": len(data)}


def format_for(name: str, fmt: str | None, kind: str) -> str:
    """The format of a new document: ``fmt`` if given, else the name's extension, else ODF.

    Raises:
        UnsupportedFormat: an extension or format outside the kind's two formats.
        InvalidArgument: ``fmt`` contradicts the name's extension.
    """
    allowed = files.SHEET_FORMATS if kind == "spreadsheet" else files.TEXT_FORMATS
    m = _EXT.search(name)
    ext = m.group(1).lower() if m else None
    if fmt is not None:
        want = fmt.strip().lower().lstrip(".")
        if want not in allowed:
            raise UnsupportedFormat(f"format: expected one of {', '.join(allowed)}; got {fmt[:20]!r}")
        if ext is not None and ext in files.MIME and ext != want:
            raise InvalidArgument(f"the name ends in .{ext} but the format is {want}")
        return want
    if ext is None:
        return allowed[1]
    if ext not in allowed:
        raise UnsupportedFormat(f"a {kind} can be {' or '.join('.' + a for a in allowed)}; the name ends in .{ext}")
    return ext


def create(
    ctx: ToolContext, sql: Sql, folder: str, name: str, kind: str, fmt: str | None, model: Workbook | TextDoc
) -> dict[str, Any]:
    """A new document owned by the actor in ``folder``, with its first file and version.

    Raises:
        InvalidPath, NotFound: a bad folder or name.
        Conflict: the folder already holds a document of that name.
        UnsupportedFormat, TooLarge: see ``format_for`` and ``encode``.
    """
    folder_id = resolve_folder(sql, folder)
    clean = check_name(name, "name")
    fmt = format_for(clean, fmt, kind)
    taken = sql.column("SELECT name FROM documents WHERE folder_id = ? ORDER BY id", (folder_id,))
    if any(str(t).casefold() == clean.casefold() for t in taken):
        raise Conflict(f"{folder_path(sql, folder_id)} already has a document named {clean!r}")
    data, content = encode(model, fmt)
    sha = put_blob(sql, data)
    now = ctx.clock.now()
    doc_id = sql.insert(
        "documents",
        {
            "folder_id": folder_id,
            "name": clean,
            "kind": kind,
            "mime_type": files.MIME[fmt],
            "owner_id": ctx.actor.employee_id,
            "content": content,
            "blob_sha256": sha,
            "version": 1,
            "created_at": now,
            "updated_at": now,
        },
    )
    sql.insert(
        "document_versions",
        {
            "document_id": doc_id,
            "version": 1,
            "author_id": ctx.actor.employee_id,
            "content": {"format": fmt, "change": "create"},
            "blob_sha256": sha,
            "created_at": now,
        },
    )
    path = f"{folder_path(sql, folder_id)}/{clean}"
    return {"id": doc_id, "path": path, "format": fmt, "version": 1, "sha256": sha, "size": len(data)}


def describe(doc: Doc) -> dict[str, Any]:
    """The header every read shows."""
    return {"id": doc.id, "path": doc.path, "format": doc.fmt, "version": doc.version, "permission": doc.permission}

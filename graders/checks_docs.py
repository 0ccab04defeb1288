"""State checks on documents and spreadsheets: a cell's value, a row by its key, a fact in a section (or none), a share.

Documents are named by path as the tools name them (``Shared/Finance/Budget Q2 2026.xlsx``); a document the
agent created without an extension matches a path that has one (the tools store the name as typed and pick
ODF). The checks read the document's cached model (``documents.content``, tagged with the hash of the bytes it
came from) and parse the bytes only when the tag is stale, so a check costs one indexed lookup and one JSON
parse per document per grade (memoised in ``ctx.memo``). Cell values are the ones the last write stored after
recalculation (LibreOffice or the Python engine), so a formula whose inputs changed is checked at its new value.

Each check declares ``reads`` (documents and their shares) and ``rows`` (the one document row, once it
exists), so the per-step progress score re-runs it only after a step that changed that document.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from pydantic import Field

from graders.base import CheckOutcome, GradingContext, check_fn
from graders.checks_common import Regex, listing, rx, snippet
from worlds.blobs import read_blob
from worlds.office import files
from worlds.office.a1 import col_index, parse_cell, split_sheet
from worlds.office.model import Err, Sheet, TextDoc, Workbook, text_from_json, workbook_from_json
from worlds.rawsql import Sql

Primitive = str | float | int | bool | None
_EXTENSIONS = (".odt", ".docx", ".ods", ".xlsx")
_DOC_ROW = "SELECT id, name, kind, mime_type, content, blob_sha256, version FROM documents WHERE folder_id = ?"
_PERMISSION_RANK = {"view": 1, "comment": 2, "edit": 3}


def _folder_id(sql: Sql, parts: list[str]) -> int | None:
    current: int | None = None
    for name in parts:
        cond = "parent_id IS NULL" if current is None else "parent_id = ?"
        args: tuple[Any, ...] = () if current is None else (current,)
        rows = sql.all(f"SELECT id, name FROM doc_folders WHERE {cond} ORDER BY id", args)  # noqa: S608
        found = [r[0] for r in rows if str(r[1]).casefold() == name.casefold()]
        if not found:
            return None
        current = int(found[0])
    return current


def _stem(name: str) -> str:
    low = name.casefold()
    return next((low[: -len(e)] for e in _EXTENSIONS if low.endswith(e)), low)


def _document(ctx: GradingContext, path: str) -> tuple[Any, ...] | None:
    """The document row at ``path`` (exact name first, then the same name without an extension), or None."""
    key = ("document", path)
    if key not in ctx.memo:
        parts = [p.strip() for p in path.strip("/").split("/")]
        sql = Sql.of(ctx.session)
        folder = _folder_id(sql, parts[:-1]) if len(parts) > 1 else None
        row = None
        if folder is not None:
            rows = sql.all(f"{_DOC_ROW} ORDER BY id", (folder,))
            exact = [r for r in rows if str(r[1]).casefold() == parts[-1].casefold()]
            loose = [r for r in rows if _stem(str(r[1])) == _stem(parts[-1])]
            row = exact[0] if exact else loose[0] if loose else None
        ctx.memo[key] = tuple(row) if row is not None else None
    found: tuple[Any, ...] | None = ctx.memo[key]
    return found


def _content(ctx: GradingContext, row: tuple[Any, ...]) -> dict[str, Any] | bytes:
    raw = row[4]
    content = json.loads(raw) if isinstance(raw, str) else raw
    if isinstance(content, dict) and (row[5] is None or content.get("sha256") == row[5]):
        return content
    data = read_blob(Sql.of(ctx.session), str(row[5]))
    if data is None:
        raise ValueError(f"document {row[1]!r}: its file is missing from the store")
    return data


def _workbook(ctx: GradingContext, row: tuple[Any, ...]) -> Workbook:
    key = ("workbook", row[0], row[6])
    if key not in ctx.memo:
        content = _content(ctx, row)
        fmt = files.format_of_mime(str(row[3]))
        ctx.memo[key] = workbook_from_json(content) if isinstance(content, dict) else files.read_workbook(content, fmt)
    book: Workbook = ctx.memo[key]
    return book


def _text(ctx: GradingContext, row: tuple[Any, ...]) -> TextDoc:
    key = ("text", row[0], row[6])
    if key not in ctx.memo:
        content = _content(ctx, row)
        fmt = files.format_of_mime(str(row[3]))
        ctx.memo[key] = text_from_json(content) if isinstance(content, dict) else files.read_text(content, fmt)
    doc: TextDoc = ctx.memo[key]
    return doc


def _doc_rows(ctx: GradingContext, document: str, **_: Any) -> set[tuple[str, tuple[Any, ...]]] | None:
    """The document row a check reads (for ``graders.progress``); None while no such document exists."""
    row = _document(ctx, document)
    return None if row is None else {("documents", (int(row[0]),))}


def _sheet(book: Workbook, name: str | None) -> Sheet | None:
    if name is None:
        return book.sheets[0] if book.sheets else None
    return next((s for s in book.sheets if s.name.casefold() == name.casefold()), None)


def _show(value: Any) -> str:
    if isinstance(value, Err):
        return value.code
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _same(actual: Any, expected: Primitive, tolerance: float) -> bool:
    if isinstance(expected, bool) or expected is None:
        return bool(actual == expected)
    if isinstance(expected, int | float):
        return isinstance(actual, float) and math.isclose(actual, float(expected), abs_tol=tolerance)
    return isinstance(actual, str) and actual.strip().casefold() == expected.strip().casefold()


@check_fn("sheet_cell_equals", reads=("documents",), rows=_doc_rows)
def sheet_cell_equals(
    ctx: GradingContext,
    document: str,
    cell: str,
    value: Primitive,
    tolerance: Annotated[float, Field(ge=0)] = 0.005,
    formula: bool = False,
    label: str | None = None,
) -> CheckOutcome:
    """Cell ``cell`` (``B7`` or ``Budget!B7``) of spreadsheet ``document`` holds ``value`` after recalculation.

    Numbers match within ``tolerance``; text matches trimmed and case-insensitively. With ``formula=True`` the
    cell must also still hold a formula (a total typed over as a number does not recalculate next quarter).
    """
    name = label or cell
    row = _document(ctx, document)
    if row is None:
        return CheckOutcome.of(False, f"{name}: no document {document}")
    if row[2] != "spreadsheet":
        return CheckOutcome.of(False, f"{name}: {document} is a {row[2]}, not a spreadsheet")
    sheet_name, ref = split_sheet(cell)
    sheet = _sheet(_workbook(ctx, row), sheet_name)
    if sheet is None:
        return CheckOutcome.of(False, f"{name}: {document} has no sheet {sheet_name!r}")
    held = sheet.cells.get(parse_cell(ref))
    actual = held.value if held is not None else None
    shown = f"{name}: {cell} is {_show(actual)} (expected {_show(value)})"
    if formula and (held is None or held.formula is None):
        return CheckOutcome.of(False, f"{shown}, but it holds no formula")
    return CheckOutcome.of(_same(actual, value, tolerance), shown)


def _key_rows(ctx: GradingContext, sheet: Sheet, column: int) -> dict[str, list[int]]:
    """Rows of ``sheet`` by the text in ``column`` (trimmed, casefolded: ``_same``'s rule for text), once per grade.

    A rubric checks one row per expense item; each check looking its key up here, rather than scanning every
    cell, keeps re-grading a sheet after each edit O(cells) instead of O(checks x cells).
    """
    memo_key = ("key_rows", id(sheet), column)
    if memo_key not in ctx.memo:
        index: dict[str, list[int]] = {}
        for (r, c), v in sheet.cells.items():
            if c == column and isinstance(v.value, str):
                index.setdefault(v.value.strip().casefold(), []).append(r)
        ctx.memo[memo_key] = (sheet, index)  # the sheet is kept too, so its id is not reused while memoised
    found: dict[str, list[int]] = ctx.memo[memo_key][1]
    return found


@check_fn("sheet_row_matches", reads=("documents",), rows=_doc_rows)
def sheet_row_matches(
    ctx: GradingContext,
    document: str,
    key_column: str,
    key: str,
    expected: Annotated[dict[str, Primitive], Field(min_length=1)],
    sheet: str | None = None,
    tolerance: Annotated[float, Field(ge=0)] = 0.005,
) -> CheckOutcome:
    """Exactly one row of ``sheet`` has ``key`` in column ``key_column``; partial credit per expected column.

    ``expected`` maps column letters to values (``{"E": 42.5, "D": "Travel"}``). No row, or the key on two
    rows (a duplicate recorded twice), scores 0.
    """
    row = _document(ctx, document)
    if row is None:
        return CheckOutcome.of(False, f"{key}: no document {document}")
    found = _sheet(_workbook(ctx, row), sheet) if row[2] == "spreadsheet" else None
    if found is None:
        return CheckOutcome.of(False, f"{key}: {document} has no sheet {sheet or '(first)'}")
    hits = sorted(_key_rows(ctx, found, col_index(key_column.upper())).get(key.strip().casefold(), ()))
    if len(hits) != 1:
        what = "no row" if not hits else f"{len(hits)} rows (rows {', '.join(str(r + 1) for r in hits)})"
        return CheckOutcome.of(False, f"{key}: {what} of {document} hold it in column {key_column}")
    line = hits[0]
    problems: list[str] = []
    for letter in sorted(expected):
        cell = found.cells.get((line, col_index(letter.upper())))
        actual = cell.value if cell is not None else None
        if not _same(actual, expected[letter], tolerance):
            problems.append(f"{letter}{line + 1} is {_show(actual)} (expected {_show(expected[letter])})")
    good = len(expected) - len(problems)
    evidence = f"{key} on row {line + 1}: {good}/{len(expected)} columns match"
    if problems:
        evidence += f"; {listing(problems, 4)}"
    return CheckOutcome(score=good / len(expected), evidence=evidence, details={"row": line + 1})


def _text_sections(ctx: GradingContext, document: str, name: str) -> list[tuple[str, str]] | CheckOutcome:
    """The sections of text document ``document``, or the failing outcome saying why there is none to read."""
    row = _document(ctx, document)
    if row is None:
        return CheckOutcome.of(False, f"{name}: no document {document}")
    if row[2] != "text":
        return CheckOutcome.of(False, f"{name}: {document} is a {row[2]}, not a text document")
    return _text(ctx, row).sections()


@check_fn("doc_section_contains", reads=("documents",), rows=_doc_rows)
def doc_section_contains(
    ctx: GradingContext,
    document: str,
    heading: Regex,
    pattern: Regex,
    only_there: bool = True,
    label: str | None = None,
) -> CheckOutcome:
    """Text document ``document`` has a section whose heading matches ``heading`` with text matching ``pattern``.

    With ``only_there`` (default), no other section's text may match ``pattern`` either: a ticket listed under
    both Done and Blocked states two facts, one of them wrong.
    """
    name = label or pattern
    sections = _text_sections(ctx, document, name)
    if isinstance(sections, CheckOutcome):
        return sections
    inside = [(h, t) for h, t in sections if h and rx(heading).search(h)]
    if not inside:
        shown = listing([repr(h) for h, _ in sections if h], 6) or "none"
        return CheckOutcome.of(False, f"{name}: no section heading matches /{heading}/ (headings: {shown})")
    hits = [h for h, t in inside if rx(pattern).search(t)]
    elsewhere = [
        h or "(before the first heading)" for h, t in sections if (h, t) not in inside and rx(pattern).search(t)
    ]
    if not hits:
        where = f"found under {listing([repr(h) for h in elsewhere])}" if elsewhere else "found in no section"
        body = snippet(" ".join(t for _, t in inside), 80)
        return CheckOutcome.of(False, f"{name}: not in section {inside[0][0]!r} ({where}; it holds {body})")
    if only_there and elsewhere:
        return CheckOutcome.of(False, f"{name}: in {hits[0]!r} but also in {listing([repr(h) for h in elsewhere])}")
    return CheckOutcome.of(True, f"{name}: in section {hits[0]!r}")


@check_fn("doc_mentions_none", reads=("documents",), rows=_doc_rows)
def doc_mentions_none(ctx: GradingContext, document: str, pattern: Regex, label: str | None = None) -> CheckOutcome:
    """Text document ``document`` exists and none of its headings or text matches ``pattern``.

    Per-item checks see only the items that should be there; a report that also lists what should not (last
    week's ticket under Done) states a wrong fact none of them notices. A missing document fails, so writing
    nothing earns nothing here.
    """
    name = label or pattern
    sections = _text_sections(ctx, document, name)
    if isinstance(sections, CheckOutcome):
        return sections
    found = [
        f"{m.group(0)} under {h!r}" if h else f"{m.group(0)} before the first heading"
        for h, t in sections
        for m in rx(pattern).finditer(f"{h}\n{t}")
    ]
    if found:
        return CheckOutcome.of(False, f"{name}: the document mentions {listing(found, 4)}")
    return CheckOutcome.of(True, f"{name}: none in {document}")


def _check_permission(kw: dict[str, Any]) -> None:
    if kw["permission"] not in _PERMISSION_RANK:
        raise ValueError(f"permission must be one of {', '.join(_PERMISSION_RANK)}; got {kw['permission']!r}")


@check_fn("doc_shared_with", validate=_check_permission, reads=("documents", "document_shares"))
def doc_shared_with(
    ctx: GradingContext,
    document: str,
    username: str,
    permission: str = "view",
) -> CheckOutcome:
    """``username`` holds at least ``permission`` (view < comment < edit) on ``document``, or owns it."""
    row = _document(ctx, document)
    if row is None:
        return CheckOutcome.of(False, f"no document {document} to share with {username}")
    sql = Sql.of(ctx.session)
    found = sql.one(
        "SELECT s.permission, d.owner_id = e.id FROM employees e JOIN documents d ON d.id = ?"
        " LEFT JOIN document_shares s ON s.document_id = d.id AND s.employee_id = e.id WHERE e.username = ?",
        (int(row[0]), username),
    )
    if found is None:
        return CheckOutcome.of(False, f"unknown employee {username!r}")
    held, owner = found[0], bool(found[1])
    if owner:
        return CheckOutcome.of(True, f"{username} owns {document}")
    ok = held is not None and _PERMISSION_RANK.get(str(held), 0) >= _PERMISSION_RANK[permission]
    return CheckOutcome.of(ok, f"{username} has {held or 'no'} access to {document} (needs {permission})")


@check_fn("doc_not_shared", reads=("documents", "document_shares"))
def doc_not_shared(ctx: GradingContext, document: str) -> CheckOutcome:
    """Nobody was given access to ``document`` during the episode (no share added or raised on it).

    For a document a request must not reach: whoever the share went to, it is the fulfilment the task forbids.
    A document that does not exist passes (there is nothing to share).
    """
    row = _document(ctx, document)
    if row is None:
        return CheckOutcome.of(True, f"no document {document}, so nothing of it was shared")
    ids = sorted({int(r.key[0]) for r in ctx.changed_rows("document_shares") if r.op != "delete"})
    if not ids:
        return CheckOutcome.of(True, f"no share changed during the episode, {document} included")
    marks = ", ".join("?" * len(ids))
    found = Sql.of(ctx.session).all(
        "SELECT e.username, s.permission FROM document_shares s JOIN employees e ON e.id = s.employee_id"  # noqa: S608
        f" WHERE s.document_id = ? AND s.id IN ({marks}) ORDER BY e.username",
        (int(row[0]), *ids),
    )
    if not found:
        return CheckOutcome.of(True, f"{len(ids)} shares changed, none of them on {document}")
    shown = listing([f"{u} ({p})" for u, p in found])
    return CheckOutcome.of(False, f"{document} was shared during the episode with {shown}")


@check_fn("doc_lacks", reads=("documents",), rows=_doc_rows)
def doc_lacks(ctx: GradingContext, document: str, pattern: Regex, label: str | None = None) -> CheckOutcome:
    """Text document ``document`` exists and no part of it matches ``pattern``.

    For what must stay out of a document (a change reverted before the release, a ticket an earlier release
    shipped): a document that does not exist scores 0, so leaving the work undone earns nothing here.
    """
    name = label or pattern
    row = _document(ctx, document)
    if row is None:
        return CheckOutcome.of(False, f"{name}: no document {document}")
    if row[2] != "text":
        return CheckOutcome.of(False, f"{name}: {document} is a {row[2]}, not a text document")
    hits = [h or "(before the first heading)" for h, t in _text(ctx, row).sections() if rx(pattern).search(f"{h}\n{t}")]
    if hits:
        return CheckOutcome.of(False, f"{name}: found under {listing([repr(h) for h in hits])}")
    return CheckOutcome.of(True, f"{name}: named nowhere in {document}")

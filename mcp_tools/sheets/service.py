"""Spreadsheet operations on real XLSX and ODS files, acting as an Actor.

Every operation opens the document through ``mcp_tools.docs.store`` (paths, access: reading needs ``view``,
changing needs ``edit``), works on the ``Workbook`` model, and a change ends in one ``store.save``: formulas
validated (syntax, supported function, existing sheet or name, no cycle), every formula recalculated by the
configured engine (``mcp_tools.sheets.engine``), the file written, a new version recorded. Everything is checked
before the first write, so a refused call changes nothing.

Values on the way in: numbers, booleans and text; a string starting with ``=`` is a formula; a leading ``'``
makes the rest literal text (``'=not a formula``). ``write_cell`` types text the way a spreadsheet does
(``42`` a number, ``TRUE`` a boolean). On the way out: numbers (whole ones as integers), text, booleans, errors
as their code (``#DIV/0!``), empty cells as null.

Limits: a read returns at most ``MAX_READ`` cells and a write sets at most ``MAX_WRITE``; workbook, file and
formula caps are in ``worlds.office.files`` and ``worlds.office.formula``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.docs import store
from mcp_tools.errors import Conflict, InvalidArgument, InvalidCell, TooLarge, Unavailable
from mcp_tools.sheets import engine as engines
from worlds.office import errors as oe
from worlds.office import formula
from worlds.office.a1 import Area, area, cell_name, check_sheet_name, parse_cell, parse_range
from worlds.office.model import Cell, Err, Sheet, Value, Workbook
from worlds.rawsql import Sql

MAX_READ = 10_000
MAX_WRITE = 10_000
MAX_SHEETS = 50
MAX_NAMES = 200
MAX_TEXT = 32_767
"""The longest text a cell holds (Excel's limit)."""
_NAME = re.compile(r"[A-Za-z_\\][A-Za-z0-9_.]{0,254}")
_LOOKS_LIKE_CELL = re.compile(r"([A-Za-z]{1,3}[0-9]+|[Rr][0-9]*[Cc][0-9]*|[Rr]|[Cc])")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def show(v: Value) -> Any:
    """A cell value for a tool result."""
    if isinstance(v, Err):
        return v.code
    if isinstance(v, float) and v == int(v) and abs(v) < 2**53:
        return int(v)
    return v


def _open(ctx: ToolContext, document: str, need: str) -> tuple[Sql, store.Doc, Workbook]:
    sql = Sql.of(ctx.session)
    doc = store.open_doc(ctx, sql, document, need, "spreadsheet")
    return sql, doc, store.load_workbook(sql, doc)


def _sheet(book: Workbook, name: str | None) -> tuple[int, Sheet]:
    try:
        sheet = book.sheet(name)
    except KeyError:
        names = ", ".join(s.name for s in book.sheets)
        raise InvalidCell(f"no sheet named {name!r}; the sheets are: {names}") from None
    return book.sheets.index(sheet), sheet


def _named(book: Workbook, text: str) -> Area | None:
    for key, value in book.names.items():
        if key.lower() == text.strip().lower():
            return value
    return None


def _area(book: Workbook, ref: str | None) -> tuple[int, Sheet, Area]:
    """The sheet and area of a range in A1 notation, a defined name, or (None) the first sheet's used range."""
    if ref is None or not ref.strip():
        si, sheet = _sheet(book, None)
        rows, cols = sheet.extent()
        return si, sheet, area(sheet.name, (0, 0), (max(rows, 1) - 1, max(cols, 1) - 1))
    found = _named(book, ref)
    if found is None and _NAME.fullmatch(ref.strip()) and not _LOOKS_LIKE_CELL.fullmatch(ref.strip()):
        defined = ", ".join(sorted(book.names)) or "none"
        raise InvalidCell(f"{ref!r} is neither a range like A1:C3 nor a defined name (defined: {defined})")
    try:
        a = found or parse_range(ref)
    except oe.InvalidCell as exc:
        raise InvalidCell(str(exc)) from None
    si, sheet = _sheet(book, a.sheet)
    return si, sheet, a


def _grid(sheet: Sheet, a: Area) -> list[list[Any]]:
    cells = sheet.cells
    return [
        [show(cells[(r, c)].value) if (r, c) in cells else None for c in range(a.c1, a.c2 + 1)]
        for r in range(a.r1, a.r2 + 1)
    ]


def _formulas(sheet: Sheet, a: Area) -> dict[str, str]:
    return {
        cell_name(r, c): "=" + cell.formula
        for (r, c), cell in sorted(sheet.cells.items())
        if cell.formula is not None and a.r1 <= r <= a.r2 and a.c1 <= c <= a.c2
    }


def list_sheets(ctx: ToolContext, document: str) -> dict[str, Any]:
    """The sheets with their used size, and the defined names."""
    _, doc, book = _open(ctx, document, "view")
    sheets = []
    for s in book.sheets:
        rows, cols = s.extent()
        used = f"A1:{cell_name(rows - 1, cols - 1)}" if rows else None
        sheets.append({"name": s.name, "rows": rows, "columns": cols, "used_range": used, "cells": len(s.cells)})
    return {**store.describe(doc), "sheets": sheets, "names": _names(book)}


def _names(book: Workbook) -> list[dict[str, str]]:
    return [{"name": k, "range": v.a1(absolute=True)} for k, v in sorted(book.names.items(), key=lambda kv: kv[0])]


def read_range(ctx: ToolContext, document: str, range_: str | None) -> dict[str, Any]:
    """Values (and formulas) of a range, a defined name, or the first sheet's used range."""
    _, doc, book = _open(ctx, document, "view")
    _, sheet, a = _area(book, range_)
    if a.size > MAX_READ:
        raise TooLarge(f"{a.a1(with_sheet=False)} has {a.size} cells; read at most {MAX_READ} at once")
    return {
        **store.describe(doc),
        "sheet": sheet.name,
        "range": a.a1(with_sheet=False),
        "values": _grid(sheet, a),
        "formulas": _formulas(sheet, a),
    }


def list_names(ctx: ToolContext, document: str) -> dict[str, Any]:
    """The defined names of a workbook with the ranges they stand for."""
    _, doc, book = _open(ctx, document, "view")
    return {**store.describe(doc), "names": _names(book)}


# -- changes --------------------------------------------------------------------------------------------------


def typed(text: str) -> Cell | None:
    """A cell from typed text: ``=`` formula, ``'`` literal, number, TRUE/FALSE, else text; "" clears."""
    if text == "":
        return None
    if text.startswith("'"):
        return Cell(value=text[1:])
    if text.startswith("="):
        return Cell(formula=text[1:])
    stripped = text.strip()
    if _NUMBER.fullmatch(stripped):
        x = float(stripped)
        if math.isfinite(x):
            return Cell(value=x)
    if stripped.upper() in ("TRUE", "FALSE"):
        return Cell(value=stripped.upper() == "TRUE")
    return Cell(value=text)


def _from_json(v: Any, where: str) -> Cell | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return Cell(value=v)
    if isinstance(v, int | float):
        if not math.isfinite(float(v)):
            raise InvalidArgument(f"values{where}: numbers must be finite")
        return Cell(value=float(v))
    if isinstance(v, str):
        if v.startswith("="):
            return Cell(formula=v[1:])
        return Cell(value=v[1:] if v.startswith("'") else v)
    raise InvalidArgument(f"values{where}: expected a number, text, true/false or null; got {type(v).__name__}")


def _check_cell(cell: Cell | None, book: Workbook, where: str) -> None:
    if cell is None:
        return
    if isinstance(cell.value, str) and (
        len(cell.value) > MAX_TEXT or re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", cell.value)
    ):
        raise InvalidArgument(f"{where}: text must be at most {MAX_TEXT} characters without control characters")
    if cell.formula is not None:
        try:
            formula.validate(book, cell.formula)
        except oe.InvalidFormula as exc:
            raise store.office_error(exc) from None


def recalculate(book: Workbook, fmt: str) -> str:
    """Set every formula cell's cached value; returns the engine that computed them.

    The Python engine always runs first: it validates (cycles, missing sheets or names) and is the fallback
    when LibreOffice was chosen by ``auto`` but fails.

    Raises:
        InvalidFormula: a cycle or a dangling reference.
        Unavailable: ``COMPANYSIM_RECALC=libreoffice`` and LibreOffice failed.
    """
    try:
        values = formula.recalculate(book)
    except oe.OfficeError as exc:
        raise store.office_error(exc) from None
    engine = engines.get_engine()
    used = "python"
    if engine.name != "python":
        try:
            values = engine.recalculate(book, fmt)
            used = engine.name
        except Unavailable:
            if engines.choice() == "libreoffice":
                raise
    for (si, r, c), v in values.items():
        book.sheets[si].cells[(r, c)].value = v
    return used


def _commit(ctx: ToolContext, sql: Sql, doc: store.Doc, book: Workbook, change: str) -> dict[str, Any]:
    """Recalculate and save a new version."""
    used = recalculate(book, doc.fmt)
    out = store.save(ctx, sql, doc, book, change)
    out["engine"] = used
    return out


def _apply(book: Workbook, sheet: Sheet, cells: dict[tuple[int, int], Cell | None]) -> None:
    for key, cell in cells.items():
        if cell is None:
            sheet.cells.pop(key, None)
        else:
            sheet.cells[key] = cell


def write_range(ctx: ToolContext, document: str, range_: str, values: str) -> dict[str, Any]:
    """Write a JSON array of rows into a range (or from its top-left cell); returns the recalculated range."""
    sql, doc, book = _open(ctx, document, "edit")
    try:
        rows = json.loads(values)
    except (ValueError, RecursionError):
        raise InvalidArgument('values: expected a JSON array of rows such as [["Q1", 100], ["Q2", 120]]') from None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
        raise InvalidArgument('values: expected a non-empty JSON array of rows such as [["Q1", 100]]')
    height, width = len(rows), max(len(r) for r in rows)
    si, sheet, a = _area(book, range_)
    if a.size > 1 and (a.shape != (height, width)):
        raise InvalidArgument(f"{a.a1(with_sheet=False)} is {a.shape[0]}x{a.shape[1]}; values are {height}x{width}")
    if height * width > MAX_WRITE:
        raise TooLarge(f"values have {height * width} cells; write at most {MAX_WRITE} at once")
    try:
        target = area(sheet.name, (a.r1, a.c1), (a.r1 + height - 1, a.c1 + width - 1))
        parse_cell(cell_name(target.r2, target.c2))
    except (oe.InvalidCell, ValueError):
        raise InvalidCell(f"values from {cell_name(a.r1, a.c1)} would run off the sheet (XFD1048576)") from None
    cells: dict[tuple[int, int], Cell | None] = {}
    for i, row in enumerate(rows):
        for j in range(width):
            cells[(a.r1 + i, a.c1 + j)] = _from_json(row[j] if j < len(row) else None, f"[{i}][{j}]")
    _apply(book, sheet, cells)
    for key, cell in cells.items():
        _check_cell(cell, book, cell_name(*key))
    out = _commit(ctx, sql, doc, book, f"write {sheet.name}!{target.a1(with_sheet=False)}")
    return {**out, "sheet": sheet.name, "range": target.a1(with_sheet=False), "values": _grid(book.sheets[si], target)}


def write_cell(ctx: ToolContext, document: str, cell: str, value: str) -> dict[str, Any]:
    """Set one cell from typed text (number, TRUE/FALSE, =formula, 'literal, or "" to clear)."""
    sql, doc, book = _open(ctx, document, "edit")
    si, sheet, a = _area(book, cell)
    if a.size != 1:
        raise InvalidCell(f"expected one cell such as B7; got the range {a.a1(with_sheet=False)}")
    new = typed(value)
    _apply(book, sheet, {(a.r1, a.c1): new})
    _check_cell(new, book, cell_name(a.r1, a.c1))
    out = _commit(ctx, sql, doc, book, f"write {sheet.name}!{cell_name(a.r1, a.c1)}")
    after = book.sheets[si].cells.get((a.r1, a.c1))
    return {
        **out,
        "sheet": sheet.name,
        "cell": cell_name(a.r1, a.c1),
        "value": show(after.value) if after else None,
        "formula": "=" + after.formula if after and after.formula else None,
    }


def add_sheet(ctx: ToolContext, document: str, name: str) -> dict[str, Any]:
    """Append an empty sheet."""
    sql, doc, book = _open(ctx, document, "edit")
    try:
        clean = check_sheet_name(name.strip())
    except oe.InvalidCell as exc:
        raise InvalidCell(str(exc)) from None
    if book.has_sheet(clean):
        raise Conflict(f"the workbook already has a sheet named {clean!r}")
    if len(book.sheets) >= MAX_SHEETS:
        raise TooLarge(f"a workbook may have at most {MAX_SHEETS} sheets")
    book.sheets.append(Sheet(name=clean))
    out = _commit(ctx, sql, doc, book, f"add sheet {clean}")
    return {**out, "sheet": clean, "sheets": [s.name for s in book.sheets]}


def define_name(ctx: ToolContext, document: str, name: str, range_: str) -> dict[str, Any]:
    """Define (or redefine) a workbook-wide name for a range."""
    sql, doc, book = _open(ctx, document, "edit")
    clean = name.strip()
    if not _NAME.fullmatch(clean) or _LOOKS_LIKE_CELL.fullmatch(clean) or clean.upper() in ("TRUE", "FALSE"):
        raise InvalidCell(
            "a name starts with a letter or _, has letters, digits, _ or . and does not look like a cell"
            f" such as A1; got {name[:40]!r}"
        )
    if _named(book, range_) is not None:
        raise InvalidCell(f"expected a range such as Budget!B2:B9 for {clean}; got the name {range_!r}")
    try:
        target = parse_range(range_)
    except oe.InvalidCell as exc:
        raise InvalidCell(str(exc)) from None
    _, sheet = _sheet(book, target.sheet)
    target = Area(sheet=sheet.name, r1=target.r1, c1=target.c1, r2=target.r2, c2=target.c2)
    old = next((k for k in book.names if k.lower() == clean.lower()), None)
    if old is None and len(book.names) >= MAX_NAMES:
        raise TooLarge(f"a workbook may have at most {MAX_NAMES} names")
    if old is not None:
        del book.names[old]
    book.names[clean] = target
    out = _commit(ctx, sql, doc, book, f"define {clean}")
    return {**out, "name": clean, "range": target.a1(absolute=True), "replaced": old is not None}


def create(ctx: ToolContext, name: str, folder: str, fmt: str | None, values: str | None) -> dict[str, Any]:
    """A new spreadsheet with one sheet, optionally filled from a JSON array of rows starting at A1."""
    sql = Sql.of(ctx.session)
    book = Workbook(sheets=[Sheet(name="Sheet1")])
    if values:
        try:
            rows = json.loads(values)
        except (ValueError, RecursionError):
            raise InvalidArgument('values: expected a JSON array of rows such as [["Q1", 100]]') from None
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise InvalidArgument('values: expected a JSON array of rows such as [["Q1", 100]]')
        if sum(len(r) for r in rows) > MAX_WRITE:
            raise TooLarge(f"values have more than {MAX_WRITE} cells")
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                made = _from_json(v, f"[{i}][{j}]")
                if made is not None:
                    book.sheets[0].cells[(i, j)] = made
        for (r, c), one in book.sheets[0].cells.items():
            _check_cell(one, book, cell_name(r, c))
    store.resolve_folder(sql, folder)
    chosen = store.format_for(store.check_name(name), fmt, "spreadsheet")
    used = recalculate(book, chosen)
    return {**store.create(ctx, sql, folder, name, "spreadsheet", chosen, book), "engine": used}

"""The in-memory forms of office files: a workbook of sheets of cells, and a text document of blocks.

Both formats of a kind read into and write from the same model (XLSX and ODS -> ``Workbook``; DOCX and ODT ->
``TextDoc``), so every tool, the recalculation engines and the generator work on one shape. ``to_json`` /
``from_json`` give the structured cache kept in ``documents.content``; the file bytes stay the truth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from worlds.office.a1 import Area, cell_name, check_sheet_name, parse_range

ERROR_CODES = ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A")


@dataclass(frozen=True)
class Err:
    """A spreadsheet error value such as ``#DIV/0!``."""

    code: str


Value = float | str | bool | Err | None
"""A cell value: numbers are floats (as in every spreadsheet), None is an empty cell."""


@dataclass(kw_only=True)
class Cell:
    """One cell: its value (for a formula, the cached result) and its formula in Excel syntax without ``=``."""

    value: Value = None
    formula: str | None = None


@dataclass(kw_only=True)
class Sheet:
    """A named grid of non-empty cells, keyed by 0-based (row, col)."""

    name: str
    cells: dict[tuple[int, int], Cell] = field(default_factory=dict)

    def extent(self) -> tuple[int, int]:
        """(rows, columns) of the used area counted from A1; (0, 0) when empty."""
        if not self.cells:
            return 0, 0
        return max(r for r, _ in self.cells) + 1, max(c for _, c in self.cells) + 1


@dataclass(kw_only=True)
class Workbook:
    """Sheets in order and defined names (``Revenue`` -> ``Budget!$B$2:$B$9``)."""

    sheets: list[Sheet] = field(default_factory=list)
    names: dict[str, Area] = field(default_factory=dict)

    def sheet(self, name: str | None) -> Sheet:
        """The sheet called ``name`` (case-insensitive), or the first sheet for None.

        Raises:
            KeyError: no such sheet.
        """
        if name is None:
            return self.sheets[0]
        low = name.lower()
        for s in self.sheets:
            if s.name.lower() == low:
                return s
        raise KeyError(name)

    def has_sheet(self, name: str) -> bool:
        """Whether a sheet of that name exists (case-insensitive)."""
        return any(s.name.lower() == name.lower() for s in self.sheets)

    def cell_count(self) -> int:
        """Non-empty cells over all sheets."""
        return sum(len(s.cells) for s in self.sheets)


@dataclass(kw_only=True)
class Block:
    """A paragraph (``level`` 0) or a heading (``level`` 1-6); a newline in ``text`` is a line break."""

    level: int
    text: str


@dataclass(kw_only=True)
class Comment:
    """A comment anchored at block ``anchor`` (its index), by ``author`` at ``date`` (ISO 8601)."""

    author: str
    date: str
    text: str
    anchor: int
    initials: str = ""


@dataclass(kw_only=True)
class TextDoc:
    """A text document: blocks in order, and comments."""

    blocks: list[Block] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)

    def char_count(self) -> int:
        """Characters of text over all blocks and comments."""
        return sum(len(b.text) for b in self.blocks) + sum(len(c.text) for c in self.comments)

    def sections(self) -> list[tuple[str, str]]:
        """(heading, body text) per section, as a reader sees them; text before the first heading has heading ''.

        A heading of any level starts a section; the body is its paragraphs joined by newlines.
        """
        out: list[tuple[str, list[str]]] = [("", [])]
        for block in self.blocks:
            if block.level > 0:
                out.append((block.text.strip(), []))
            else:
                out[-1][1].append(block.text)
        return [(h, "\n".join(body)) for h, body in out]


# -- JSON cache ---------------------------------------------------------------------------------------------


def value_json(v: Value) -> Any:
    """A value as JSON: errors become ``{"error": code}``, integral floats stay floats."""
    if isinstance(v, Err):
        return {"error": v.code}
    return v


def value_from_json(v: Any) -> Value:
    """Inverse of ``value_json``."""
    if isinstance(v, dict):
        return Err(str(v.get("error", "#VALUE!")))
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int | float) and math.isfinite(float(v)):
        return float(v)
    return None


def workbook_json(book: Workbook) -> dict[str, Any]:
    """The workbook as JSON: ``{"sheets": [{"name", "cells": {"A1": [value, formula]}}], "names": {..}}``."""
    return {
        "sheets": [
            {
                "name": s.name,
                "cells": {
                    cell_name(r, c): [value_json(cell.value), cell.formula] for (r, c), cell in sorted(s.cells.items())
                },
            }
            for s in book.sheets
        ],
        "names": {k: v.a1(absolute=True) for k, v in sorted(book.names.items())},
    }


def workbook_from_json(data: dict[str, Any]) -> Workbook:
    """Inverse of ``workbook_json``; also reads the legacy generated form ``{"cells": [[row values]]}``."""
    book = Workbook()
    for raw in data.get("sheets", []):
        sheet = Sheet(name=check_sheet_name(str(raw.get("name") or f"Sheet{len(book.sheets) + 1}")))
        cells = raw.get("cells", {})
        if isinstance(cells, list):  # legacy: rows of plain values, formulas as "=..." strings
            for r, row in enumerate(cells):
                for c, v in enumerate(row):
                    if isinstance(v, str) and v.startswith("="):
                        sheet.cells[(r, c)] = Cell(value=None, formula=v[1:])
                    elif v is not None and v != "":
                        sheet.cells[(r, c)] = Cell(value=value_from_json(v))
        else:
            for ref, (v, f) in cells.items():
                a = parse_range(ref)
                sheet.cells[(a.r1, a.c1)] = Cell(value=value_from_json(v), formula=f)
        book.sheets.append(sheet)
    for name, ref in data.get("names", {}).items():
        book.names[name] = parse_range(ref)
    return book


def text_json(doc: TextDoc) -> dict[str, Any]:
    """The document as JSON: blocks as ``[level, text]`` and comments as dicts."""
    return {
        "blocks": [[b.level, b.text] for b in doc.blocks],
        "comments": [
            {"author": c.author, "date": c.date, "text": c.text, "anchor": c.anchor, "initials": c.initials}
            for c in doc.comments
        ],
    }


def text_from_json(data: dict[str, Any]) -> TextDoc:
    """Inverse of ``text_json``; also reads the legacy generated form ``{"sections": [{heading, body}]}``."""
    doc = TextDoc()
    if "blocks" in data:
        doc.blocks = [Block(level=int(lv), text=str(t)) for lv, t in data["blocks"]]
        doc.comments = [Comment(**c) for c in data.get("comments", [])]
        return doc
    for section in data.get("sections", []):
        doc.blocks.append(Block(level=1, text=str(section.get("heading", ""))))
        for para in str(section.get("body", "")).split("\n\n"):
            if para.strip():
                doc.blocks.append(Block(level=0, text=para.strip()))
    return doc

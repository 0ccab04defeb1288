"""A1 notation: cells (``B7``, ``$B$7``), ranges (``A1:C3``), sheet-qualified ranges (``'Q1 plan'!A1:B2``).

Rows and columns are 0-based internally and 1-based / lettered on the outside, as spreadsheets show them. The
bounds are those of XLSX (1,048,576 rows, 16,384 columns, XFD); anything outside is ``InvalidCell``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from worlds.office.errors import InvalidCell

MAX_ROWS = 1_048_576
MAX_COLS = 16_384
_CELL = re.compile(r"\$?([A-Za-z]{1,3})\$?([0-9]{1,7})")
_SHEET_BAD = re.compile(r"[\[\]:*?/\\\x00-\x1f]")
SHEET_NAME_MAX = 31


def col_index(letters: str) -> int:
    """0-based column of ``letters`` (``A`` -> 0, ``AA`` -> 26)."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def col_letters(index: int) -> str:
    """Letters of the 0-based column ``index``."""
    out = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out


def cell_name(row: int, col: int) -> str:
    """``A1`` name of a 0-based (row, col)."""
    return f"{col_letters(col)}{row + 1}"


def parse_cell(text: str) -> tuple[int, int]:
    """0-based (row, col) of a cell such as ``B7`` or ``$B$7``.

    Raises:
        InvalidCell: not a cell reference, or outside A1:XFD1048576.
    """
    m = _CELL.fullmatch(text.strip())
    if m is None:
        raise InvalidCell(f"expected a cell in A1 notation such as B7; got {text[:60]!r}")
    col, row = col_index(m.group(1)), int(m.group(2)) - 1
    if not (0 <= row < MAX_ROWS and 0 <= col < MAX_COLS):
        raise InvalidCell(f"cell {text[:60]!r} is outside A1:XFD1048576")
    return row, col


@dataclass(frozen=True, kw_only=True)
class Area:
    """A rectangle of cells, optionally on a named sheet; corners are normalised (r1 <= r2, c1 <= c2)."""

    sheet: str | None
    r1: int
    c1: int
    r2: int
    c2: int

    @property
    def size(self) -> int:
        """Number of cells."""
        return (self.r2 - self.r1 + 1) * (self.c2 - self.c1 + 1)

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return self.r2 - self.r1 + 1, self.c2 - self.c1 + 1

    def a1(self, *, absolute: bool = False, with_sheet: bool = True) -> str:
        """The range in A1 notation (``Sheet1!A1:B2``; a single cell without the colon)."""
        d = "$" if absolute else ""
        first = f"{d}{col_letters(self.c1)}{d}{self.r1 + 1}"
        last = f"{d}{col_letters(self.c2)}{d}{self.r2 + 1}"
        body = first if (self.r1, self.c1) == (self.r2, self.c2) else f"{first}:{last}"
        return f"{quote_sheet(self.sheet)}!{body}" if with_sheet and self.sheet is not None else body


def area(sheet: str | None, a: tuple[int, int], b: tuple[int, int] | None = None) -> Area:
    """An Area from two corners in any order."""
    b = b or a
    return Area(sheet=sheet, r1=min(a[0], b[0]), c1=min(a[1], b[1]), r2=max(a[0], b[0]), c2=max(a[1], b[1]))


def quote_sheet(name: str) -> str:
    """A sheet name as it appears before ``!``: quoted (``'Q1 plan'``) unless it is a plain identifier."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and not _CELL.fullmatch(name):
        return name
    return "'" + name.replace("'", "''") + "'"


def split_sheet(text: str) -> tuple[str | None, str]:
    """(sheet or None, rest) of ``Sheet!A1`` / ``'My sheet'!A1:B2`` / ``A1``."""
    text = text.strip()
    if text.startswith("'"):
        m = re.fullmatch(r"'((?:[^']|'')+)'!(.*)", text, re.S)
        if m is None:
            raise InvalidCell(f"expected 'Sheet name'!A1 with the quote closed before !; got {text[:60]!r}")
        return m.group(1).replace("''", "'"), m.group(2)
    if "!" in text:
        sheet, _, rest = text.rpartition("!")
        return sheet, rest
    return None, text


def parse_range(text: str) -> Area:
    """An Area from ``A1``, ``A1:C3``, ``Sheet1!A1:C3`` or ``'Q1 plan'!B2``.

    Raises:
        InvalidCell: anything else (whole columns like ``A:A`` are not supported).
    """
    if len(text) > 300:
        raise InvalidCell(f"expected a range such as A1:C3; got {len(text)} characters")
    sheet, rest = split_sheet(text)
    if sheet is not None:
        check_sheet_name(sheet)
    first, sep, last = rest.partition(":")
    if sep and not last:
        raise InvalidCell(f"expected a range such as A1:C3; got {text[:60]!r}")
    return area(sheet, parse_cell(first), parse_cell(last) if sep else None)


def check_sheet_name(name: str) -> str:
    r"""``name`` if it can name a sheet in both XLSX and ODS.

    Raises:
        InvalidCell: empty, longer than 31 characters, with ``[]:*?/\\`` or control characters, or quoted.
    """
    if not name.strip() or len(name) > SHEET_NAME_MAX or _SHEET_BAD.search(name) or name[0] == "'" or name[-1] == "'":
        raise InvalidCell(
            f"expected a sheet name of 1-{SHEET_NAME_MAX} characters without []:*?/\\ or edge quotes; got {name[:40]!r}"
        )
    return name

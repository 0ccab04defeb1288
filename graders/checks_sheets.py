"""State checks on spreadsheets: a cell's recalculated value, a row found by its key with credit per column.

Documents are named by path as in ``graders.checks_docs`` (which finds the row, ``_document``). A check reads
the workbook parsed from the document's cached model; cell values are the ones the last write stored after
recalculation (LibreOffice or the Python engine), so a formula whose inputs changed is checked at its new value,
and a changed total shows up as a changed cell.

In the per-step progress score (``graders.progress``) a write to a spreadsheet costs O(changed cells), not
O(checks): each function has an ``on_step`` evaluator that settles all of a rubric's checks of it at once. On a
write the workbook is built from the last one with the cells that differ (``_book_of``, one diff per content),
and an index built once per episode (``_Watch``) maps those cells to the checks that read them: a cell check's
cell, a row check's key (a key written or cleared in its column) and the rows holding its key. Only those
checks are decided again; the others are left out, so their verdicts stand at no cost. A change the diff
cannot describe (a sheet added or renamed, a document replaced or renamed, content from the file store) reads
every check of that document again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import compress
from operator import ne
from typing import Annotated, Any

from pydantic import Field

from graders.base import ChangeRow, CheckOutcome, GradingContext, check_fn
from graders.checks_common import listing
from graders.checks_docs import _UNKNOWN, _content, _document
from worlds.office import files
from worlds.office.a1 import MAX_COLS, MAX_ROWS, col_index, parse_cell, parse_range, split_sheet
from worlds.office.model import Cell, Err, Sheet, Workbook, value_from_json, workbook_from_json

_PLAIN_CELL = re.compile(r"([A-Z]{1,3})([1-9][0-9]{0,6})")
Primitive = str | float | int | bool | None
Verdict = tuple[float, str, dict[str, Any]]
_TOLERANCE = 0.005
"""The default tolerance of both checks (the on_step evaluators read params as the rubric gave them)."""


def _workbook(ctx: GradingContext, row: tuple[Any, ...]) -> Workbook:
    key = ("workbook", row[0], row[6])
    if key not in ctx.memo:
        content = _content(ctx, row)
        fmt = files.format_of_mime(str(row[3]))
        ctx.memo[key] = (
            _book_of(ctx, int(row[0]), content) if isinstance(content, dict) else files.read_workbook(content, fmt)
        )
    book: Workbook = ctx.memo[key]
    return book


def _book_of(ctx: GradingContext, doc_id: int, content: dict[str, Any]) -> Workbook:
    """``workbook_from_json(content)``, reusing the cells of the last one built for this document.

    The per-step progress score re-reads a spreadsheet after every write, and a write changes a few cells of
    many: cells whose JSON is the same as in the previous content keep their parsed ``Cell``, and each cell
    name is parsed once per episode (``ctx.lasting``). Anything but the same sheets (names, order) and defined
    names as before is parsed afresh, so the result always equals a fresh parse of ``content``.
    """
    base = ctx.lasting.get(("workbook", doc_id))
    built = None
    if base is not None:
        try:
            built = _book_from_base(ctx, content, base)
        except Exception:  # malformed content: the fresh parse raises what the check reports
            built = None
    if built is not None and base is not None:
        book, moved = built
        ctx.lasting[("book_diff", doc_id)] = (base[1], book, moved, {})
    else:
        ctx.lasting.pop(("book_diff", doc_id), None)
        book = workbook_from_json(content)
        sheets = content.get("sheets", [])
        if not all(
            type(raw.get("cells")) is dict and len(s.cells) == len(raw["cells"])
            for raw, s in zip(sheets, book.sheets, strict=True)
        ):
            ctx.lasting.pop(("workbook", doc_id), None)  # two names for one cell: no base to diff against
            return book
    ctx.lasting[("workbook", doc_id)] = (content, book)
    return book


def _book_from_base(
    ctx: GradingContext, content: dict[str, Any], base: tuple[dict[str, Any], Workbook]
) -> tuple[Workbook, list[set[tuple[int, int]]]] | None:
    """The workbook of ``content`` built from ``base`` (content and workbook), or None if the shapes differ.

    Also the cells of each sheet that differ from the base's (written, cleared or added), which ``_Watch``
    maps to the checks that read them, so a check that read none keeps its verdict. The cells are compared in C
    (``map(ne, ...)``): a write changes a few of a sheet's hundreds, and a Python loop over all of them would
    cost what the checks save. The cells dict holds the same cells as a fresh parse's (its order may differ:
    graders only look cells up).
    """
    before, old = base
    sheets, old_sheets = content.get("sheets", []), before.get("sheets", [])
    if len(sheets) != len(old_sheets) or content.get("names", {}) != before.get("names", {}):
        return None
    for raw, was in zip(sheets, old_sheets, strict=True):
        if raw.get("name") != was.get("name") or type(raw.get("cells", {})) is not dict:
            return None
        if type(was.get("cells", {})) is not dict:
            return None
    book = Workbook(names=dict(old.names))
    moved: list[set[tuple[int, int]]] = []
    for raw, was, old_sheet in zip(sheets, old_sheets, old.sheets, strict=True):
        now, had = raw.get("cells", {}), was.get("cells", {})
        names = list(now)
        written = list(compress(names, map(ne, map(now.__getitem__, names), map(had.get, names))))
        added = sum(1 for ref in written if ref not in had)
        cleared = had.keys() - now.keys() if len(had) + added != len(now) else ()  # none gone: skip the O(n) set
        cells = dict(old_sheet.cells)
        changed: set[tuple[int, int]] = set()
        for ref in cleared:
            pos = _ref_pos(ref)
            del cells[pos]
            changed.add(pos)
        for ref in written:
            pos = _ref_pos(ref)
            v, f = now[ref]
            cells[pos] = Cell(value=value_from_json(v), formula=f)
            changed.add(pos)
        if len(cells) != len(now):
            return None  # two names for one cell: which one wins depends on their order, parse afresh
        moved.append(changed)
        book.sheets.append(Sheet(name=old_sheet.name, cells=cells))
    return book, moved


@lru_cache(maxsize=1 << 16)
def _ref_pos(ref: str) -> tuple[int, int]:
    """Where ``workbook_from_json`` puts cell ``ref``; cached, as every episode writes the same few cells.

    A plain name (``B7``, what ``workbook_json`` writes) is read here, ``parse_range``'s answer at a fraction
    of its cost; anything else (``$B$7``, a range, a bad name) goes through ``parse_range`` itself.
    """
    m = _PLAIN_CELL.fullmatch(ref)
    row, col = (int(m.group(2)) - 1, col_index(m.group(1))) if m is not None else (-1, -1)
    if not (0 <= row < MAX_ROWS and 0 <= col < MAX_COLS):
        a = parse_range(ref)
        row, col = a.r1, a.c1
    return row, col


_split_sheet = lru_cache(maxsize=4096)(split_sheet)
_parse_cell = lru_cache(maxsize=4096)(parse_cell)
"""``split_sheet`` and ``parse_cell``, cached: every write re-checks the same rubric cells (a bad name still raises)."""


def _index(book: Workbook, sheet: Sheet) -> int:
    """Where ``sheet`` is in ``book`` (by identity: two sheets may hold the same cells)."""
    return next(i for i, s in enumerate(book.sheets) if s is sheet)


@lru_cache(maxsize=1024)
def _column(letters: str) -> int:
    """``col_index`` of a rubric's column letters (any case), cached: every write re-checks the same columns."""
    return col_index(letters.upper())


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


class _Doc:
    """What a rubric's checks of one sheet function on one document keep between steps (``_Watch``'s index).

    ``row`` is the document row the verdicts were settled on (a step that leaves it the same object changed
    nothing they read) and ``book`` its workbook, the base the next write's diff must be taken from for the
    index to stand (None: settle every check again). ``cells`` maps (sheet, cell) to the cell checks reading
    it; ``keys`` holds, per (sheet, key column), the rows by the key text in that column, kept up to date from
    each diff rather than rebuilt; ``by_key`` maps (sheet, column, key) and ``by_row`` (sheet, row) to the row
    checks whose key it is or whose key is on that row; ``rows_of`` each row check's (sheet, column, key,
    rows), ``letters`` its expected columns (letters in order, and where), ``cell_of`` each cell check's
    (sheet, cell, its params) and ``shown`` its expected value as evidence shows it; ``filed`` the checks so
    indexed; ``sheets`` where each sheet name the checks give is. ``always``: checks whose params cannot be
    read (a bad cell name), left to their function on every write.
    """

    __slots__ = (
        "always",
        "book",
        "by_key",
        "by_row",
        "cell_of",
        "cells",
        "filed",
        "keys",
        "letters",
        "positions",
        "row",
        "rows_of",
        "sheets",
        "shown",
        "started",
    )

    def __init__(self, positions: list[int]) -> None:
        self.positions = positions
        self.row: Any = _UNKNOWN  # never a row: the first write to the document is always settled
        self.started = False
        self.forget()

    def forget(self) -> None:
        """Drop the index: the next write settles every check of the document again."""
        self.book: Workbook | None = None
        self.cells: dict[tuple[int, tuple[int, int]], list[int]] = {}
        self.cell_of: dict[int, tuple[int, tuple[int, int], tuple[str, str, Primitive, float, bool]]] = {}
        self.shown: dict[int, str] = {}
        self.keys: dict[tuple[int, int], dict[str, set[int]]] = {}
        self.by_key: dict[tuple[int, int, str], list[int]] = {}
        self.by_row: dict[tuple[int, int], set[int]] = {}
        self.rows_of: dict[int, tuple[int, int, str, frozenset[int]]] = {}
        self.letters: dict[int, tuple[tuple[str, int], ...]] = {}
        self.sheets: dict[str | None, int | None] = {}
        self.filed: dict[int, bool] = {}
        self.always: list[int] = []

    def sheet_at(self, book: Workbook, name: str | None) -> int | None:
        """Where ``_sheet(book, name)`` is in ``book`` (None: no such sheet), looked up once per name and index."""
        if name not in self.sheets:
            found = _sheet(book, name)
            self.sheets[name] = None if found is None else _index(book, found)
        return self.sheets[name]

    def key_index(self, book: Workbook, index: int, column: int) -> dict[str, set[int]]:
        """Rows of sheet ``index`` by the text in ``column`` (trimmed, casefolded: ``_same``'s rule for text)."""
        found = self.keys.get((index, column))
        if found is None:
            found = self.keys[(index, column)] = {}
            for (r, c), cell in book.sheets[index].cells.items():
                if c == column and isinstance(cell.value, str):
                    found.setdefault(cell.value.strip().casefold(), set()).add(r)
        return found

    def moved(self, old: Workbook, new: Workbook, moved: list[set[tuple[int, int]]]) -> set[int]:
        """The checks that read a cell a write changed (``moved``: per sheet, from ``old`` to ``new``).

        The key indexes are brought up to date on the way: a key cell written or cleared moves its row from
        the old key's rows to the new key's, and wakes the row checks of both keys.
        """
        woken: set[int] = set()
        cells, by_row = self.cells, self.by_row
        for (index, column), rows in self.keys.items():
            before, after = old.sheets[index].cells, new.sheets[index].cells
            for r, c in moved[index]:
                if c != column:
                    continue
                for side, add in ((before, False), (after, True)):
                    cell = side.get((r, c))
                    if cell is not None and isinstance(cell.value, str):
                        key = cell.value.strip().casefold()
                        if add:
                            rows.setdefault(key, set()).add(r)
                        else:
                            rows.get(key, set()).discard(r)
                        woken.update(self.by_key.get((index, column, key), ()))
        for index, changed in enumerate(moved):
            for pos in changed:
                found = cells.get((index, pos))
                if found:
                    woken.update(found)
                if by_row:
                    held = by_row.get((index, pos[0]))
                    if held:
                        woken |= held
        return woken

    def hold_rows(self, check: int, index: int, column: int, key: str, rows: frozenset[int]) -> None:
        """Index row check ``check`` by the rows now holding its key (instead of the ones before)."""
        was = self.rows_of.get(check)
        if was is not None:
            for r in was[3]:
                self.by_row[(index, r)].discard(check)
        else:
            self.by_key.setdefault((index, column, key), []).append(check)
        for r in rows:
            self.by_row.setdefault((index, r), set()).add(check)
        self.rows_of[check] = (index, column, key, rows)


class _Watch:
    """A sheet function's ``on_step``: its checks by document, and how one is indexed and decided.

    ``index(doc, book, params, check)`` files a check under what it reads (False: it cannot be decided from the
    book, as when its sheet is missing, and its verdict stands while the sheets do); ``decide(doc, book,
    params, check)`` gives its verdict from the book and the index, as its function would.
    """

    def __init__(self, name: str, index: Any, decide: Any) -> None:
        self.name, self.index, self.decide = name, index, decide

    def __call__(
        self, ctx: GradingContext, rows: list[ChangeRow], params: Sequence[Mapping[str, Any]]
    ) -> dict[int, Verdict | None]:
        kept = ctx.lasting.get(("sheet_watch", self.name))
        if kept is None or kept[0] is not params:
            by_document: dict[str, list[int]] = {}
            for check, p in enumerate(params):
                by_document.setdefault(str(p["document"]), []).append(check)
            kept = ctx.lasting[("sheet_watch", self.name)] = (params, {d: _Doc(c) for d, c in by_document.items()})
        verdicts: dict[int, Verdict | None] = {}
        for document, doc in kept[1].items():
            row = _document(ctx, document, query=False)
            if row is doc.row:
                continue  # the same row object: no write to this document
            try:
                self._settle(ctx, doc, row, params, verdicts)
            except Exception:  # the checks of this document are re-run, and their index rebuilt next time
                doc.row = _UNKNOWN
                doc.forget()
                verdicts.update(dict.fromkeys(doc.positions))
        return verdicts

    def _settle(
        self,
        ctx: GradingContext,
        doc: _Doc,
        row: Any,
        params: Sequence[Mapping[str, Any]],
        verdicts: dict[int, Verdict | None],
    ) -> None:
        """Decide the checks of ``doc`` a write to it may have moved, now that the document is ``row``.

        The first write since progress started is diffed too: the verdicts in place are then the ones the
        functions gave on the workbook the diff starts from (the one they built when progress started), so the
        checks are filed on that workbook and only the ones whose cells moved are decided.
        """
        first, doc.row, doc.started = not doc.started, row, True
        if row is _UNKNOWN or row is None or row[2] != "spreadsheet":
            doc.forget()  # no workbook to read: the functions say why (rare, and no cell to index)
            verdicts.update(dict.fromkeys(doc.positions))
            return
        book = _workbook(ctx, row)
        diff = ctx.lasting.get(("book_diff", int(row[0])))
        if diff is not None and diff[1] is book:
            if first and doc.book is None:
                self._file(doc, diff[0], params)
            if doc.book is not None and diff[0] is doc.book:
                doc.book = book
                for check in sorted(doc.moved(diff[0], book, diff[2])):
                    verdicts[check] = self.decide(doc, book, params[check], check)
                verdicts.update(dict.fromkeys(doc.always))
                return
        self._file(doc, book, params)
        for check in doc.positions:
            verdicts[check] = None if doc.filed.get(check) is None else self.decide(doc, book, params[check], check)

    def _file(self, doc: _Doc, book: Workbook, params: Sequence[Mapping[str, Any]]) -> None:
        """Index every check of ``doc`` afresh on ``book`` (``doc.filed``: the ones decided from the index)."""
        doc.forget()
        doc.book = book
        for check in doc.positions:
            try:
                if self.index(doc, book, params[check], check):
                    doc.filed[check] = True
            except Exception:  # bad params: the function raises what the check reports, every write
                doc.always.append(check)


def _cell_verdict(
    name: str, cell: str, value: Primitive, tolerance: float, formula: bool, held: Cell | None, shown: str
) -> Verdict:
    """``sheet_cell_equals``' verdict once the cell is found (``held``; None: empty); ``shown``: ``_show(value)``."""
    actual = held.value if held is not None else None
    said = f"{name}: {cell} is {_show(actual)} (expected {shown})"
    if formula and (held is None or held.formula is None):
        return 0.0, f"{said}, but it holds no formula", {}
    return (1.0 if _same(actual, value, tolerance) else 0.0), said, {}


def _file_cell(doc: _Doc, book: Workbook, p: Mapping[str, Any], check: int) -> bool:
    """Index cell check ``check`` by its sheet and cell; False if the sheet is missing (the verdict stands)."""
    sheet_name, ref = _split_sheet(p["cell"])
    pos = _parse_cell(ref)
    index = doc.sheet_at(book, sheet_name)
    if index is None:
        return False
    doc.cells.setdefault((index, pos), []).append(check)
    cell, value = p["cell"], p["value"]
    tolerance, formula = p.get("tolerance", _TOLERANCE), p.get("formula", False)
    doc.cell_of[check] = (index, pos, (p.get("label") or cell, cell, value, tolerance, formula))
    doc.shown[check] = _show(value)
    return True


def _decide_cell(doc: _Doc, book: Workbook, p: Mapping[str, Any], check: int) -> Verdict:
    """Cell check ``check``'s verdict on ``book``, from the cell it was filed under."""
    index, pos, (name, cell, value, tolerance, formula) = doc.cell_of[check]
    held = book.sheets[index].cells.get(pos)
    return _cell_verdict(name, cell, value, tolerance, formula, held, doc.shown[check])


@check_fn("sheet_cell_equals", reads=("documents",), on_step=_Watch("sheet_cell_equals", _file_cell, _decide_cell))
def sheet_cell_equals(
    ctx: GradingContext,
    document: str,
    cell: str,
    value: Primitive,
    tolerance: Annotated[float, Field(ge=0)] = _TOLERANCE,
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
    sheet_name, ref = _split_sheet(cell)
    book = _workbook(ctx, row)
    sheet = _sheet(book, sheet_name)
    if sheet is None:
        return CheckOutcome.of(False, f"{name}: {document} has no sheet {sheet_name!r}")
    held = sheet.cells.get(_parse_cell(ref))
    score, evidence, details = _cell_verdict(name, cell, value, tolerance, formula, held, _show(value))
    return CheckOutcome(score=score, evidence=evidence, details=details)


def _key_rows(ctx: GradingContext, sheet: Sheet, column: int) -> dict[str, list[int]]:
    """Rows of ``sheet`` by the text in ``column`` (trimmed, casefolded: ``_same``'s rule for text), once per grade.

    A rubric checks one row per expense item; each check looking its key up here, rather than scanning every
    cell, keeps a grade O(cells) instead of O(checks x cells).
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


def _file_row(doc: _Doc, book: Workbook, p: Mapping[str, Any], check: int) -> bool:
    """Index row check ``check`` by its key and the rows holding it; False if its sheet is missing."""
    index = doc.sheet_at(book, p.get("sheet"))
    if index is None:
        return False
    column = _column(p["key_column"])
    # a bad column raises now, not only once the key is on one row: such a check is left to its function
    doc.letters[check] = _letters(p["expected"])
    key = str(p["key"]).strip().casefold()
    doc.hold_rows(check, index, column, key, frozenset(doc.key_index(book, index, column).get(key, ())))
    return True


def _decide_row(doc: _Doc, book: Workbook, p: Mapping[str, Any], check: int) -> Verdict:
    """Row check ``check``'s verdict on ``book``, its key's rows read from the kept key index."""
    index, column, key, was = doc.rows_of[check]
    rows = doc.keys[(index, column)].get(key, set())
    if rows != was:
        doc.hold_rows(check, index, column, key, frozenset(rows))
    return _row_verdict(
        book.sheets[index].cells,
        p["document"],
        p["key_column"],
        p["key"],
        p["expected"],
        p.get("tolerance", _TOLERANCE),
        sorted(rows),
        doc.letters[check],
    )


@check_fn("sheet_row_matches", reads=("documents",), on_step=_Watch("sheet_row_matches", _file_row, _decide_row))
def sheet_row_matches(
    ctx: GradingContext,
    document: str,
    key_column: str,
    key: str,
    expected: Annotated[dict[str, Primitive], Field(min_length=1)],
    sheet: str | None = None,
    tolerance: Annotated[float, Field(ge=0)] = _TOLERANCE,
) -> CheckOutcome:
    """Exactly one row of ``sheet`` has ``key`` in column ``key_column``; partial credit per expected column.

    ``expected`` maps column letters to values (``{"E": 42.5, "D": "Travel"}``). No row, or the key on two
    rows (a duplicate recorded twice), scores 0.
    """
    row = _document(ctx, document)
    if row is None:
        return CheckOutcome.of(False, f"{key}: no document {document}")
    book = _workbook(ctx, row) if row[2] == "spreadsheet" else None
    found = _sheet(book, sheet) if book is not None else None
    if book is None or found is None:
        return CheckOutcome.of(False, f"{key}: {document} has no sheet {sheet or '(first)'}")
    column = _column(key_column)
    hits = sorted(_key_rows(ctx, found, column).get(key.strip().casefold(), ()))
    letters = _letters(expected) if len(hits) == 1 else ()
    score, evidence, details = _row_verdict(found.cells, document, key_column, key, expected, tolerance, hits, letters)
    return CheckOutcome(score=score, evidence=evidence, details=details)


def _letters(expected: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """The expected columns of a row check, in order, with where each is (raises on a bad column name)."""
    return tuple((letter, _column(letter)) for letter in sorted(expected))


def _row_verdict(
    cells: Mapping[tuple[int, int], Cell],
    document: str,
    key_column: str,
    key: str,
    expected: Mapping[str, Primitive],
    tolerance: float,
    hits: list[int],
    letters: tuple[tuple[str, int], ...],
) -> Verdict:
    """``sheet_row_matches``' verdict on a sheet's ``cells`` whose ``hits`` (sorted) hold the key.

    ``letters``: ``_letters(expected)``, worked out once per check (read only when the key is on one row).
    """
    if len(hits) != 1:
        what = "no row" if not hits else f"{len(hits)} rows (rows {', '.join(str(r + 1) for r in hits)})"
        return 0.0, f"{key}: {what} of {document} hold it in column {key_column}", {}
    line = hits[0]
    problems: list[str] = []
    for letter, column in letters:
        cell = cells.get((line, column))
        actual = cell.value if cell is not None else None
        if not _same(actual, expected[letter], tolerance):
            problems.append(f"{letter}{line + 1} is {_show(actual)} (expected {_show(expected[letter])})")
    good = len(expected) - len(problems)
    evidence = f"{key} on row {line + 1}: {good}/{len(expected)} columns match"
    if problems:
        evidence += f"; {listing(problems, 4)}"
    return good / len(expected), evidence, {"row": line + 1}

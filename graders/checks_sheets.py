"""State checks on spreadsheets: a cell's recalculated value, a row found by its key with credit per column.

Documents are named by path as in ``graders.checks_docs`` (which finds the row, ``_document``). A check reads
the workbook parsed from the document's cached model; cell values are the ones the last write stored after
recalculation (LibreOffice or the Python engine), so a formula whose inputs changed is checked at its new value,
and a changed total shows up as a changed cell.

In the per-step progress score (``graders.progress``) a write to a spreadsheet costs O(changed cells), not
O(checks): each function has an ``on_step`` evaluator that settles all of a rubric's checks of it at once, on the
content's JSON rather than a parsed workbook. A write's cells are diffed once against the content the checks were
last settled on (``graders.sheets_diff._cells_moved``, shared by both functions), and an index built when a
document is first seen (``_Doc``) maps those cells to the checks that read them: a cell check's cell, a row check's
key (a key written or cleared in its column) and the row holding its key. Only those checks are decided again, each
by an object that holds what it compares and says, worked out once (``_CellCheck``, ``_RowCheck``; the row checks
of one key together, ``_KeyRows``); a row check, and a cell check not holding its value to the letter, is answered
by its score alone (``graders.progress`` asks the function for the evidence when results are asked), a cell
check's passing verdict handed back by identity; the others are left out, so their verdicts stand at no cost.
The diff keeps which sheets hold no value equal to a boolean, so the next write looks for a number turned
boolean (``1.0 == True``) among its written cells alone. A change the diff cannot
describe (a sheet added or renamed, a cell named otherwise than ``workbook_json`` names it, content from the file
store) files the document's checks again on the new content, or leaves them to their functions when the JSON cannot
be read as they read it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any

from pydantic import Field

from graders.base import ChangeRow, CheckOutcome, GradingContext, check_fn
from graders.checks_common import listing
from graders.checks_docs import _UNKNOWN, _content, _document
from graders.sheets_diff import (
    _POSITIONS,
    _before,
    _book_of,
    _Cells,
    _cells_moved,
    _Moved,
    _plain,
    _ref_pos,
    _safe,
)
from worlds.office import files
from worlds.office.a1 import MAX_COLS, cell_name, col_index, parse_cell, split_sheet
from worlds.office.model import Cell, Err, Sheet, Workbook, value_from_json

Primitive = str | float | int | bool | None
Verdict = tuple[float, str, dict[str, Any]]
Answer = Verdict | float | None
"""What an ``on_step`` evaluator answers for a check: its verdict, its score alone, or None (run its function)."""
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


_split_sheet = lru_cache(maxsize=4096)(split_sheet)
_parse_cell = lru_cache(maxsize=4096)(parse_cell)
"""``split_sheet`` and ``parse_cell``, cached: every write re-checks the same rubric cells (a bad name still raises)."""


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


_EMPTY: frozenset[int] = frozenset()


def _diff(
    ctx: GradingContext, doc: _Doc, row: tuple[Any, ...], rows: list[ChangeRow], new: dict[str, Any]
) -> tuple[list[_Cells], list[_Moved]] | None:
    """``_cells_moved`` from what ``doc``'s checks were settled on to ``new``, once per write for every function.

    The old side is the step's before-image of the document (``_before``) when the step wrote it once from the
    version the checks were settled at, else the content they were settled on (``doc.content``). Kept in
    ``ctx.lasting`` by document: the next function asking in the same step (the same ``rows`` list, row and
    settled content) gets the same answer with no second look at the rows. When the settled content is the
    one the last diff ended on, that diff's flags say which of its sheets hold no value equal to a boolean,
    and so which of the old side's do (it equals the settled content cell for cell); when it is the content
    the checks were filed on, the flags ``_Doc.file`` worked out say it (the first write of an episode then
    scans no cell it did not write).
    """
    settled = doc.content
    assert settled is not None
    key = ("sheet_diff", row[0])
    kept = ctx.lasting.get(key)
    if kept is not None and kept[4] is rows and kept[5] is row and kept[1] is new and kept[6] is settled:
        if kept[7] == doc.version:
            found: tuple[list[_Cells], list[_Moved]] | None = kept[2]
            return found
    before = _before(rows, row, doc.version, new)
    old = settled if before is None else before
    if kept is not None and kept[1] is settled:
        safe = kept[3]
    else:
        safe = doc.safe if doc.safe_of is settled else None  # the flags worked out when the checks were filed
    found, flags = _cells_moved(old, new, safe)
    ctx.lasting[key] = (old, new, found, flags if found is not None else None, rows, row, settled, doc.version)
    return found


_isfinite, _isclose = math.isfinite, math.isclose


def _sheet_at(names: list[str], name: str | None) -> int | None:
    """Where ``_sheet`` finds sheet ``name`` among a workbook's sheet ``names`` (None: no such sheet)."""
    if name is None:
        return 0 if names else None
    return next((i for i, n in enumerate(names) if n.casefold() == name.casefold()), None)


class _Doc:
    """What a rubric's checks of one sheet function on one document keep between writes.

    ``row`` is the document row the verdicts were settled on (a step that leaves it the same object wrote
    nothing), ``source``/``blob``/``version`` its content, blob hash and version; ``content`` the JSON the index
    is of (None: file the checks afresh at the next write) and ``sheets`` its cells per sheet, the content's own
    dicts (read, never changed); ``safe`` per sheet of ``safe_of`` (the content filed) whether it holds no value
    equal to a boolean (``sheets_diff._safe``, for the first diff). The index: ``reads`` maps per sheet a cell
    name to the cell checks reading that cell, each as (position, ``_CellCheck``) in filing order; ``keys`` holds
    per sheet and key column the rows by key text, kept up to date from each diff; ``groups`` maps (sheet, column,
    key text) to the row checks of that key (``_KeyRows``) and ``lines`` per sheet a row to the groups whose key
    is on that row alone (a write to the row may move them). ``filed``: each indexed check, compiled; ``always``:
    checks whose params cannot be read (a bad cell name), left to their function on every write. A check in
    neither (its sheet is missing) keeps its verdict while the sheets stay as they are.
    """

    __slots__ = (
        "always",
        "blob",
        "content",
        "filed",
        "groups",
        "keys",
        "lines",
        "positions",
        "reads",
        "row",
        "safe",
        "safe_of",
        "sheets",
        "source",
        "version",
    )

    def __init__(self, positions: list[int]) -> None:
        self.positions = positions
        self.row: Any = _UNKNOWN  # never a row: the first call always settles the document
        self.forget()

    def forget(self) -> None:
        """Drop the index: the next write files every check of the document again."""
        self.source: Any = _UNKNOWN
        self.blob: Any = _UNKNOWN
        self.version: Any = _UNKNOWN
        self.content: dict[str, Any] | None = None
        self.sheets: list[_Cells] = []
        self.safe: list[bool] = []
        self.safe_of: dict[str, Any] | None = None
        self.reads: list[dict[str, list[tuple[int, _CellCheck]]]] = []
        self.keys: list[dict[int, dict[str, set[int]]]] = []
        self.groups: dict[tuple[int, int, str], _KeyRows] = {}
        self.lines: list[dict[int, dict[_KeyRows, None]]] = []
        self.filed: dict[int, Any] = {}  # a _CellCheck or _RowCheck (one kind per function)
        self.always: list[int] = []

    def file(self, book: Workbook, content: dict[str, Any]) -> list[str] | None:
        """Start an empty index on ``content`` (``book``: its parse); the sheet names, or None if it cannot tell.

        Every cell must be named plainly and hold [value, formula], as ``workbook_json`` writes them; then a
        cell found by name in the JSON is the one the parse holds, with the same value. O(cells), once per
        document (and after a change the diff cannot describe).
        """
        self.forget()
        sheets = content.get("sheets", [])
        if type(sheets) is not list or len(sheets) != len(book.sheets):
            return None
        cells_of: list[_Cells] = []
        for raw in sheets:
            cells = raw.get("cells", {})
            if type(cells) is not dict:
                return None
            for ref, cell in cells.items():
                if _plain(ref) is None or type(cell) is not list or len(cell) != 2:
                    return None
            cells_of.append(cells)
        self.content, self.sheets = content, cells_of
        self.safe, self.safe_of = [_safe(cells.values()) for cells in cells_of], content
        self.reads = [{} for _ in cells_of]
        self.lines = [{} for _ in cells_of]
        self.keys = [{} for _ in cells_of]
        return [s.name for s in book.sheets]

    def key_rows(self, sheet: int, column: int) -> dict[str, set[int]]:
        """Rows of ``sheet`` by the text in ``column`` (trimmed, casefolded: ``_same``'s rule for text)."""
        found = self.keys[sheet].get(column)
        if found is None:
            found = self.keys[sheet][column] = {}
            for ref, (value, _) in self.sheets[sheet].items():
                pos = _ref_pos(ref)
                if pos[1] == column and isinstance(value, str):
                    found.setdefault(value.strip().casefold(), set()).add(pos[0])
        return found

    def step_rows(self, old: list[_Cells], moved: list[_Moved], verdicts: dict[int, Answer]) -> None:
        """Decide the row checks' key groups a write may have moved (``moved``: per sheet, from ``old``'s cells).

        ``sheet_row_matches``' step (``_Watch.step``), called as ``_Doc.step_rows(doc, ...)``. A group wakes when
        a cell of the row holding its key changed, or its key was written or cleared in its column: the key
        indexes are brought up to date on the way (the row moves from the old key's rows to the new key's), and
        the groups are decided once they all are, in the order the cells were written (a dict, not a set of
        objects: the same order every run). One plain loop over the changed cells (a row's few and a total for
        an expense write): a write step runs after a tool call has evicted the caches, so what it costs is
        mostly the distinct code and objects it touches the first time, and a chain of C iterators (``map``,
        ``compress``, ``zip``, two getters and two bound ``__contains__``) touched once a step cost more than
        the loop's few turns, as did a frame between the walk and the decisions.
        """
        woken: dict[_KeyRows, None] = {}
        groups, positions = self.groups, _POSITIONS
        for index, changed in enumerate(moved):
            if not changed:
                continue
            lines, keys = self.lines[index], self.keys[index]
            for ref in changed:
                line, column = positions.get(ref) or _ref_pos(ref)
                found = lines.get(line)
                if found:
                    woken.update(found)
                rows = keys.get(column)
                if rows is None:
                    continue
                was, now = old[index].get(ref), self.sheets[index].get(ref)
                if was is not None and type(was[0]) is str:
                    key = was[0].strip().casefold()
                    rows.get(key, set()).discard(line)
                    group = groups.get((index, column, key))
                    if group is not None:
                        woken[group] = None
                if now is not None and type(now[0]) is str:
                    key = now[0].strip().casefold()
                    rows.setdefault(key, set()).add(line)
                    group = groups.get((index, column, key))
                    if group is not None:
                        woken[group] = None
        for group in woken:  # once every key index is up to date: a group reads where its key is now
            group.decide(self, verdicts)


_NUMBER, _TEXT, _EXACT = 1, 2, 3
"""How ``_same`` compares a cell with an expected value: within a tolerance, as trimmed casefolded text, or by ==."""


def _want(expected: Primitive) -> tuple[int, Any]:
    """How ``_same`` compares a cell with ``expected``, and the value it compares with (worked out once per check).

    Raises what ``_same`` raises for it (an int too large for a float), so a check with such params is left to
    its function.
    """
    if isinstance(expected, bool) or expected is None:
        return _EXACT, expected
    if isinstance(expected, int | float):
        return _NUMBER, float(expected)
    return _TEXT, expected.strip().casefold()


_NEVER: Any = object()
"""A value no cell's JSON is of the type of (``_exact``'s answer when no JSON value passes a check to the letter)."""


def _exact(expected: Primitive) -> Any:
    """The JSON value a cell holding exactly ``expected`` has, if ``_same`` passes it; else ``_NEVER``.

    That is a finite number as a float, or the very text. A row check compares it first, with ``==`` and the
    type: one comparison for the cells a write of the expected values fills, where trimming and case-folding
    allocate two strings and a number takes two calls.
    """
    if isinstance(expected, bool) or expected is None:
        return _NEVER  # ``bool(actual == expected)``: 1.0 == True, so no shortcut on equality alone
    if isinstance(expected, int | float):
        try:
            value = float(expected)
        except OverflowError:
            return _NEVER
        return value if math.isfinite(value) else _NEVER
    return expected


def _holds(kind: int, want: Any, tolerance: float, actual: Any) -> bool:
    """``_same(actual, expected, tolerance)`` for ``(kind, want) = _want(expected)``."""
    if kind == _NUMBER:
        return type(actual) is float and math.isclose(actual, want, abs_tol=tolerance)
    if kind == _TEXT:
        return type(actual) is str and actual.strip().casefold() == want
    return bool(actual == want)


class _CellCheck:
    """A ``sheet_cell_equals`` check as ``_Watch`` decides it: its cell, what it compares, its evidence's fixed parts.

    ``verdict`` gives the function's verdict (``_cell_verdict``) from the cell's JSON: a write that fills a
    budget decides a check per cell, so it is one call that reads the value and compares it itself.
    ``exact``/``hit``: the JSON value that is the expected one to the letter (a float for a number, the very
    string for text; None for the rest) and the passing verdict it gets, built once and handed back by
    identity. The cells such a write fills mostly hold exactly what is expected, so that verdict costs one
    comparison, no evidence built, and progress stores nothing when the check already had it.
    """

    __slots__ = ("exact", "formula", "head", "hit", "kind", "ref", "sheet", "tail", "tolerance", "want")

    def __init__(self, sheet: int, ref: str, p: Mapping[str, Any]) -> None:
        self.sheet, self.ref = sheet, ref
        self.kind, self.want = _want(p["value"])
        self.tolerance: float = p.get("tolerance", _TOLERANCE)
        self.formula: bool = p.get("formula", False)
        self.head = f"{p.get('label') or p['cell']}: {p['cell']} is "
        self.tail = f" (expected {_show(p['value'])})"
        self.exact: float | str | None = None
        self.hit: Verdict | None = None
        if self.kind != _EXACT:
            exact = float(p["value"]) if self.kind == _NUMBER else p["value"]
            found = self.verdict([exact, "="])  # the slow path's verdict, so the two cannot differ
            if found[0] == 1.0:  # (not for a NaN, which equals nothing)
                self.exact, self.hit = exact, found

    def decide(self, doc: _Doc) -> Verdict:
        """The check's verdict on ``doc``'s cells."""
        return self.verdict(doc.sheets[self.sheet].get(self.ref))

    def score(self, cell: list[Any] | None) -> float:
        """``verdict(cell)[0]``, with no evidence written: what a write's step answers unless the check passes.

        The cell a rubric checks is mostly a total a write moves without reaching its expected value; its
        evidence (a text naming the value) would be written every write and read by nothing during the episode.
        """
        if cell is None:
            actual = formula = None
        else:
            actual, formula = cell
            kind_of = type(actual)
            if not (kind_of is str or (kind_of is float and _isfinite(actual))):
                actual = value_from_json(actual)  # as ``verdict`` reads it
        if formula is None and self.formula:
            return 0.0
        return 1.0 if _holds(self.kind, self.want, self.tolerance, actual) else 0.0

    def verdict(self, cell: list[Any] | None) -> Verdict:
        """The check's verdict when its cell's JSON is ``cell`` (None: empty)."""
        if cell is not None:
            exact = self.exact
            if (
                type(cell[0]) is type(exact)
                and cell[0] == exact
                and (cell[1] is not None or not self.formula)
                and self.hit is not None
            ):
                return self.hit
        if cell is None:
            actual = formula = None
            shown = "None"
        else:
            actual, formula = cell
            if type(actual) is float and actual.is_integer():  # what the value of most checked cells is
                shown = str(int(actual))
            elif type(actual) is float and _isfinite(actual):  # a total: ``value_from_json`` keeps it
                shown = repr(actual)
            elif type(actual) is str:
                shown = repr(actual)
            else:
                actual = value_from_json(actual)
                shown = _show(actual)
        said = f"{self.head}{shown}{self.tail}"
        if formula is None and self.formula:
            return 0.0, f"{said}, but it holds no formula", {}
        return (1.0 if _holds(self.kind, self.want, self.tolerance, actual) else 0.0), said, {}


def _step_cells(doc: _Doc, old: list[_Cells], moved: list[_Moved], verdicts: dict[int, Answer]) -> None:
    """Decide the cell checks of the cells a write changed (``moved``, per sheet), each with its cell in hand.

    The cells are looked up in the index in one plain loop (an expense write moves a row's cells and a total,
    and one check reads the total; a chain of C iterators touched once a step costs more than the loop's few
    turns once a tool call has evicted the caches, as ``_Doc.step_rows`` says), and a cell holding exactly
    what its check expects gets the check's passing verdict here (``_CellCheck.verdict``'s first test,
    inlined): a budget's one write fills a cell per check, so a call per check would cost a frame each for that
    one comparison; any other verdict is the score alone (``_CellCheck.score``).
    """
    for index, changed in enumerate(moved):
        if changed:
            cells, reads = doc.sheets[index], doc.reads[index]
            for ref in changed:
                found = reads.get(ref)
                if found is None:
                    continue
                cell = cells.get(ref)
                for check, compiled in found:
                    hit = compiled.hit
                    if (
                        hit is not None
                        and cell is not None
                        and type(cell[0]) is type(compiled.exact)
                        and cell[0] == compiled.exact
                        and (cell[1] is not None or not compiled.formula)
                    ):
                        verdicts[check] = hit
                    else:
                        verdicts[check] = compiled.score(cell)


def _file_cell(doc: _Doc, names: list[str], p: Mapping[str, Any], check: int) -> _CellCheck | None:
    """Index cell check ``check`` by its sheet and cell; None if the sheet is missing (the verdict stands)."""
    sheet_name, ref = _split_sheet(p["cell"])
    pos = _parse_cell(ref)
    index = _sheet_at(names, sheet_name)
    if index is None:
        return None
    found = _CellCheck(index, cell_name(*pos), p)
    doc.reads[index].setdefault(found.ref, []).append((check, found))
    return found


def _cell_at(row: int, column: int) -> str:
    """The plain name of cell (``row``, ``column``); "" (no cell has it) for a column off the sheet (``??``).

    A row group keeps the names of its row's cells while its key stays on that row (``_KeyRows.refs``).
    """
    return cell_name(row, column) if 0 <= column < MAX_COLS else ""


class _RowCheck:
    """A ``sheet_row_matches`` check as ``_Watch`` decides it: what it compares on the row holding its key.

    ``wants``: per expected column (in ``_letters`` order) its letter, where it is, how it compares and with
    what, and the expected value as evidence shows it (the evidence is written only when the check is filed: a
    write's step answers the score alone, ``_KeyRows.decide``).
    """

    __slots__ = ("check", "column", "group", "key", "needle", "p", "sheet", "tolerance", "wants")

    def __init__(self, check: int, sheet: int, p: Mapping[str, Any]) -> None:
        self.check, self.sheet, self.p = check, sheet, p
        self.column = _column(p["key_column"])
        expected = p["expected"]
        # a bad column raises now, not only once the key is on one row
        self.wants = tuple(
            (letter, column, *_want(expected[letter]), _show(expected[letter]), _exact(expected[letter]))
            for letter, column in _letters(expected)
        )
        self.key: str = p["key"]
        self.needle = self.key.strip().casefold()
        self.tolerance: float = p.get("tolerance", _TOLERANCE)
        self.group: _KeyRows | None = None

    def decide(self, doc: _Doc) -> Verdict:
        """The check's verdict on ``doc``'s cells (when it is filed; a write decides its whole group at once)."""
        verdicts: dict[int, Answer] = {}
        assert self.group is not None  # filed by ``_file_row``
        self.group.decide(doc, verdicts, (self,))
        found = verdicts[self.check]
        assert type(found) is tuple  # ``checks`` given: the whole verdict
        return found


class _KeyRows:
    """The row checks of one key (sheet, key column, key text), decided together: they read the same row.

    A receipt's row is checked as a few checks of a few columns each, and a write fills the row at once, so the
    key's rows are looked up and the row indexed once for all of them, and each is decided in the same frame
    (``decide``): a write step runs with code the tool call in between has pushed out of the caches, so every
    call saved counts. ``rows``: the rows holding the key when last decided; ``line``: while that is one row,
    it (0-based), indexed in ``_Doc.lines``, else -1; ``refs``: the names of the cells of ``line`` the checks
    read, by column, filled as they are first read and emptied when the key moves (a write then looks each
    cell up by a name it keeps, where a cache by (row, column) built a tuple and probed a shared dict, memory
    the tool call before has evicted, for each cell of each check).
    """

    __slots__ = ("checks", "column", "line", "needle", "refs", "rows", "sheet")

    def __init__(self, sheet: int, column: int, needle: str) -> None:
        self.sheet, self.column, self.needle = sheet, column, needle
        self.checks: list[_RowCheck] = []
        self.rows: frozenset[int] = _EMPTY
        self.line = -1
        self.refs: dict[int, str] = {}

    def decide(self, doc: _Doc, verdicts: dict[int, Answer], checks: Sequence[_RowCheck] = ()) -> None:
        """Put in ``verdicts`` the verdict (``_row_verdict``'s) of each of ``checks`` (default: all of the group's).

        ``checks`` given (a check filed): the whole verdict. Else (a write moved the group): each check's score
        alone, a float (``graders.progress`` counts it at once and runs the check for its evidence only when
        results are asked): a row a write fills passes a few checks at once, and their evidence, a text each,
        is read by nothing during the episode.
        """
        rows = doc.keys[self.sheet][self.column].get(self.needle, _EMPTY)
        if rows != self.rows:  # the key moved: index the group under the row that holds it now, if one does
            lines = doc.lines[self.sheet]
            if self.line >= 0:
                del lines[self.line][self]
            self.rows, self.line, self.refs = frozenset(rows), -1, {}
            if len(rows) == 1:
                (self.line,) = rows
                lines.setdefault(self.line, {})[self] = None
        line = self.line
        if line < 0:  # the key on no row or on several
            if not checks:
                verdicts.update(dict.fromkeys([check.check for check in self.checks], 0.0))
                return
            hits = sorted(rows)
            for check in checks:
                p = check.p
                found = _row_verdict({}, p["document"], p["key_column"], check.key, p["expected"], 0, hits, ())
                verdicts[check.check] = found
            return
        cells, refs = doc.sheets[self.sheet], self.refs
        for check in checks or self.checks:
            bad = 0
            problems: list[str] | None = [] if checks else None  # the texts only for a whole verdict
            tolerance = check.tolerance
            for letter, column, kind, want, shown, exact in check.wants:
                ref = refs.get(column)
                if ref is None:
                    ref = refs[column] = _cell_at(line, column)
                cell = cells.get(ref)
                actual: Any = None if cell is None else cell[0]
                kind_of = type(actual)
                if kind_of is type(exact) and actual == exact:  # what a write of the expected value holds
                    continue
                if kind_of is str:
                    if kind == _TEXT and actual.strip().casefold() == want:
                        continue
                elif kind_of is float and kind == _NUMBER and _isfinite(actual):  # ``value_from_json`` keeps it
                    if _isclose(actual, want, abs_tol=tolerance):
                        continue
                elif actual is not None:
                    actual = value_from_json(actual)
                if not _holds(kind, want, tolerance, actual):
                    bad += 1
                    if problems is not None:
                        problems.append(f"{letter}{line + 1} is {_show(actual)} (expected {shown})")
            count = len(check.wants)
            if problems is None:
                verdicts[check.check] = (count - bad) / count  # ``_row_outcome``'s score, no text
            else:
                verdicts[check.check] = _row_outcome(check.key, line + 1, count, problems)


def _file_row(doc: _Doc, names: list[str], p: Mapping[str, Any], check: int) -> _RowCheck | None:
    """File row check ``check`` with the other checks of its key (``_KeyRows``); None if its sheet is missing."""
    index = _sheet_at(names, p.get("sheet"))
    if index is None:
        return None
    found = _RowCheck(check, index, p)
    where = (index, found.column, found.needle)
    group = doc.groups.get(where)
    if group is None:
        group = doc.groups[where] = _KeyRows(*where)
        doc.key_rows(index, found.column)  # the key column's index, kept up to date from each diff from now on
    group.checks.append(found)
    found.group = group
    return found


class _Watch:
    """A sheet function's ``on_step``: its checks by document, filed by ``file`` and decided by what it gives.

    ``file(doc, names, params, check)`` indexes a check under what it reads and gives it compiled (None: it
    cannot be decided from the content, as when its sheet is missing, and its verdict stands while the sheets
    do; raising: its params cannot be read, and its function is asked every write). ``step(doc, old, moved,
    verdicts)`` decides the checks a write's changed cells may have moved.
    """

    def __init__(self, name: str, file: Any, step: Any) -> None:
        self.name, self.file, self.step = name, file, step
        self.key = ("sheet_watch", name)

    def __call__(
        self, ctx: GradingContext, rows: list[ChangeRow], params: Sequence[Mapping[str, Any]]
    ) -> dict[int, Answer]:
        kept = ctx.lasting.get(self.key)
        if kept is None or kept[0] is not params:
            by_document: dict[str, list[int]] = {}
            for check, p in enumerate(params):
                by_document.setdefault(str(p["document"]), []).append(check)
            kept = ctx.lasting[self.key] = (params, {d: _Doc(c) for d, c in by_document.items()})
        verdicts: dict[int, Answer] = {}
        for document, doc in kept[1].items():
            row = _document(ctx, document, query=False)
            if row is doc.row:
                continue  # the same row object: no write to this document
            doc.row = row
            try:
                self._settle(ctx, doc, row, rows, params, verdicts)
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
        rows: list[ChangeRow],
        params: Sequence[Mapping[str, Any]],
        verdicts: dict[int, Answer],
    ) -> None:
        """Decide the checks of ``doc`` a write to it may have moved, now that the document is ``row``.

        The first call (when progress starts, after the functions graded the content) files the checks on the
        content in place, so the first write is diffed too and decides only the checks whose cells it moved.
        The new content is diffed against the step's own before-image of it when the step wrote it once (see
        ``_before``), else against the content the checks were settled on.
        """
        if row is _UNKNOWN or row is None or row[2] != "spreadsheet":
            doc.forget()  # no workbook to read: the functions say why (rare, and no cell to index)
            verdicts.update(dict.fromkeys(doc.positions))
            return
        source, blob = row[4], row[5]
        if source is doc.source and blob == doc.blob:
            return  # the row changed, not its content (a rename is not folded: it comes as _UNKNOWN)
        content = json.loads(source) if isinstance(source, str) else source
        if type(content) is not dict or (blob is not None and content.get("sha256") != blob):
            doc.forget()  # the file in the store is the truth: the functions read it
            verdicts.update(dict.fromkeys(doc.positions))
            return
        found = None
        if doc.content is not None:
            found = _diff(ctx, doc, row, rows, content)
        if found is None:
            self._file(ctx, doc, row, content, params, verdicts)
        else:
            old, doc.content, doc.sheets = doc.sheets, content, found[0]
            self.step(doc, old, found[1], verdicts)
            if doc.always:
                verdicts.update(dict.fromkeys(doc.always))
        doc.source, doc.blob, doc.version = source, blob, row[6]

    def _file(
        self,
        ctx: GradingContext,
        doc: _Doc,
        row: Any,
        content: dict[str, Any],
        params: Sequence[Mapping[str, Any]],
        verdicts: dict[int, Answer],
    ) -> None:
        """Index every check of ``doc`` afresh on ``content`` and decide it (None for the functions to)."""
        names = doc.file(_workbook(ctx, row), content)  # the parse raises what the functions report
        if names is None:
            verdicts.update(dict.fromkeys(doc.positions))
            return
        for check in doc.positions:
            try:
                found = self.file(doc, names, params[check], check)
            except Exception:  # bad params: the function raises what the check reports, every write
                doc.always.append(check)
                found = None
            if found is not None:
                doc.filed[check] = found
            verdicts[check] = None if found is None else found.decide(doc)


def _cell_verdict(
    name: str, cell: str, value: Primitive, tolerance: float, formula: bool, held: Cell | None, shown: str
) -> Verdict:
    """``sheet_cell_equals``' verdict once the cell is found (``held``; None: empty); ``shown``: ``_show(value)``."""
    actual = held.value if held is not None else None
    said = f"{name}: {cell} is {_show(actual)} (expected {shown})"
    if formula and (held is None or held.formula is None):
        return 0.0, f"{said}, but it holds no formula", {}
    return (1.0 if _same(actual, value, tolerance) else 0.0), said, {}


@check_fn("sheet_cell_equals", reads=("documents",), on_step=_Watch("sheet_cell_equals", _file_cell, _step_cells))
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


@check_fn("sheet_row_matches", reads=("documents",), on_step=_Watch("sheet_row_matches", _file_row, _Doc.step_rows))
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
    return _row_outcome(key, line + 1, len(expected), problems)


def _row_outcome(key: str, line: int, expected: int, problems: list[str]) -> Verdict:
    """A row check's verdict once its row (``line``, 1-based) is found and ``problems`` of ``expected`` columns."""
    good = expected - len(problems)
    evidence = f"{key} on row {line}: {good}/{expected} columns match"
    if problems:
        evidence += f"; {listing(problems, 4)}"
    return good / expected, evidence, {"row": line}

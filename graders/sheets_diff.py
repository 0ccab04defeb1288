"""The cell diff the sheet checks' per-step evaluators share, and the workbook parse they reuse between writes.

``graders.checks_sheets`` decides its checks from a write's changed cells; this module says which cells those
are (``_cells_moved``, against the step's before-image of the document when it has one, ``_before``) and
builds a parsed workbook from the last one built for the document (``_book_of``), so a check re-run during an
episode parses only the cells a write changed. Both read the content's JSON as ``workbook_json`` writes it:
plain cell names (``B7``, ``_plain``) holding [value, formula]; anything else is reported so the caller falls
back to a fresh parse or to the check functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import compress
from operator import itemgetter, ne
from typing import Any

from graders.base import ChangeRow, GradingContext
from worlds.office.a1 import MAX_COLS, MAX_ROWS, col_index, parse_range
from worlds.office.model import Cell, Sheet, Workbook, value_from_json, workbook_from_json

_PLAIN_CELL = re.compile(r"([A-Z]{1,3})([1-9][0-9]{0,6})")


def _book_of(ctx: GradingContext, doc_id: int, content: dict[str, Any]) -> Workbook:
    """``workbook_from_json(content)``, reusing the cells of the last one built for this document.

    A check re-run during an episode (or a document's checks filed again by ``_Watch``) reads a workbook a few
    writes newer than the last one built: cells whose JSON is the same as in that content keep their parsed
    ``Cell``, and each cell name is parsed once per episode (``ctx.lasting``). Anything but the same sheets
    (names, order) and defined names as before is parsed afresh, so the result always equals a fresh parse of
    ``content``.
    """
    base = ctx.lasting.get(("workbook", doc_id))
    book = None
    if base is not None:
        try:
            book = _book_from_base(content, base)
        except Exception:  # malformed content: the fresh parse raises what the check reports
            book = None
    if book is None:
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


def _book_from_base(content: dict[str, Any], base: tuple[dict[str, Any], Workbook]) -> Workbook | None:
    """The workbook of ``content`` built from ``base`` (content and workbook), or None if the shapes differ.

    The cells are compared in C (``map(ne, ...)``): a write changes a few of a sheet's hundreds, and a Python
    loop over all of them would cost what reusing the cells saves. ``1.0 == True``, so when either side holds a
    boolean the cells whose value turned from a number to one or back are taken as written too (``_flips``):
    a check run on the kept workbook must read ``True`` where the content holds it, as a fresh parse does. The
    cells dict holds the same cells as a fresh parse's (its order may differ: graders only look cells up).
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
    for raw, was, old_sheet in zip(sheets, old_sheets, old.sheets, strict=True):
        now, had = raw.get("cells", {}), was.get("cells", {})
        written = list(compress(now, map(ne, now.values(), map(had.get, now))))
        if bool in set(map(type, map(_first, now.values()))) or bool in set(map(type, map(_first, had.values()))):
            written = _flips(now, had, written)  # 1.0 == True: a number turned boolean (or back) is written too
        added = sum(1 for ref in written if ref not in had)
        cleared = [ref for ref in had if ref not in now] if len(had) + added != len(now) else ()
        cells = dict(old_sheet.cells)
        for ref in cleared:
            del cells[_ref_pos(ref)]
        for ref in written:
            v, f = now[ref]
            cells[_ref_pos(ref)] = Cell(value=value_from_json(v), formula=f)
        if len(cells) != len(now):
            return None  # two names for one cell: which one wins depends on their order, parse afresh
        book.sheets.append(Sheet(name=old_sheet.name, cells=cells))
    return book


_POSITIONS: dict[str, tuple[int, int]] = {}
"""``_plain``'s answer for each plain name seen, read on a write's path with ``dict.get`` (in C, through ``map``):
an ``lru_cache`` hit also moves its entry in a linked list, memory that a write step finds cold."""


_CAP = 1 << 16
"""How many answers each of those caches keeps before it starts again (a cache, not a leak)."""


def _plain(ref: str) -> tuple[int, int] | None:
    """Where cell ``ref`` is if it is a plain name (``B7``, what ``workbook_json`` writes), else None.

    Cached (``_POSITIONS``), as every episode writes the same few cells. The ``on_step`` evaluators look cells
    up by name in the content's JSON, which finds what a parse finds only while every name is plain (``$B$7``
    and ``B7`` are one cell to a parse), so content with any other name is left to the functions.
    """
    pos = _POSITIONS.get(ref)
    if pos is not None:
        return pos
    m = _PLAIN_CELL.fullmatch(ref)
    if m is None:
        return None
    row, col = int(m.group(2)) - 1, col_index(m.group(1))
    if row >= MAX_ROWS or col >= MAX_COLS:
        return None
    if len(_POSITIONS) >= _CAP:
        _POSITIONS.clear()
    pos = _POSITIONS[ref] = (row, col)
    return pos


@lru_cache(maxsize=1 << 16)
def _ref_pos(ref: str) -> tuple[int, int]:
    """Where ``workbook_from_json`` puts cell ``ref``: ``_plain``'s answer, else ``parse_range``'s (``$B$7``)."""
    pos = _plain(ref)
    if pos is None:
        a = parse_range(ref)
        pos = a.r1, a.c1
    return pos


_Cells = dict[str, list[Any]]
"""A sheet's cells as the content's JSON holds them: plain name (``B7``) -> [value, formula]."""
_Moved = list[str]
"""The names of the cells of a sheet a write changed (written, cleared or added)."""


def _cells_moved(
    old: dict[str, Any], new: dict[str, Any], safe: list[bool] | None = None
) -> tuple[tuple[list[_Cells], list[_Moved]] | None, list[bool]]:
    """The cells of each sheet of content ``new`` and those that differ from ``old``'s, or None if not all can tell.

    ``old`` (the content the checks were settled on, or the write's before-image, equal to it) has been read by
    ``_Doc.file`` or an earlier diff, so its cells are known to be plain names and [value, formula] pairs; the
    written ones of ``new`` are checked here (the others equal ``old``'s). None: the
    sheets or defined names differ, or a written cell is named or shaped otherwise (the checks are filed again
    on ``new``). The cells are compared in C (``map``): a write changes a few of a sheet's hundreds. The written
    ones are checked in one Python pass (shape, added name, boolean flag): that is a row's few cells for an
    expense write, and four passes in C over them cost more (a budget's one write, most of its cells, once).

    Also per sheet of ``new`` whether it holds no value equal to a boolean (``_safe``), given ``safe``, the
    same of ``old`` (None: not known, worked out here once). ``1.0 == True``, so the diff misses a value turning
    from number to boolean or back; such a cell equals a boolean on both sides, so a sheet of ``old`` holding
    no value equal to one cannot have it among the cells the diff calls unchanged, and only the written cells
    are looked at. A sheet of ``old`` that holds one (a 0 or 1 anywhere) has ``new``'s sheet checked whole
    (``_safe``, in C): a cell that turned boolean or back holds a value equal to a boolean in ``new``, so if
    none does the flag clears for the next write (an expense sheet's total starts at 0.0 and leaves it with the
    first approved line; a flag kept for good scanned both sides' types every write after); else every cell's
    type is scanned (``_flips``) and the flag stays set.
    """
    sheets, old_sheets = new.get("sheets", []), old.get("sheets", [])
    if type(sheets) is not list or len(sheets) != len(old_sheets) or new.get("names", {}) != old.get("names", {}):
        return None, []
    cells_of: list[_Cells] = []
    moved: list[_Moved] = []
    flags: list[bool] = []
    for index, (raw, was) in enumerate(zip(sheets, old_sheets, strict=True)):
        if type(raw) is not dict or raw.get("name") != was.get("name"):
            return None, []
        now, had = raw.get("cells", {}), was.get("cells", {})
        if type(now) is not dict:
            return None, []
        changed: _Moved = list(compress(now, map(ne, now.values(), map(had.get, now))))
        added = 0
        clean = had_clean = _safe(had.values()) if safe is None else safe[index]
        for ref in changed:  # a write's few cells, each checked in one pass as the rest of the diff needs it
            cell = now[ref]
            if type(cell) is not list or len(cell) != 2:
                return None, []
            if ref not in had:  # ``had``'s names are plain; an added one must be too
                added += 1
                if ref not in _POSITIONS and _plain(ref) is None:
                    return None, []
            if clean and cell[0] is not None and type(cell[0]) is not str:  # text or nothing equals no boolean
                kind = type(cell[0])
                clean = cell[0] not in _BOOLISH if kind is float or kind is int else _safe((cell,))
        if not had_clean:
            if _safe(now.values()):  # none of ours equals a boolean, so none turned one or back: the flag clears
                clean = True
            elif bool in set(map(type, map(_first, now.values()))) or bool in set(map(type, map(_first, had.values()))):
                changed = _flips(now, had, changed)
        if len(had) + added != len(now):  # some were cleared (a loop over the old cells only then)
            changed += [ref for ref in had if ref not in now]
        cells_of.append(now)
        moved.append(changed)
        flags.append(clean)
    return (cells_of, moved), flags


def _safe(cells: Iterable[list[Any]]) -> bool:
    """Whether none of ``cells`` ([value, formula]) holds a value equal to a boolean (``True``, ``1.0``, ``0``...).

    By hash when every value is text, a number or empty (what a sheet holds): ``0`` and ``1`` are in a set, so
    each value is one probe, and a number equal to either hashes as it does. ``True in values`` would compare
    each text with ``True`` through both types' comparisons, which costs more than the rest of the diff.
    """
    values = list(map(_first, cells))
    if set(map(type, values)) <= _HASHED:
        return _BOOLISH.isdisjoint(values)
    return True not in values and False not in values


_HASHED = frozenset({str, float, int, type(None)})
_BOOLISH = frozenset({0, 1})


_first = itemgetter(0)


def _flips(now: _Cells, had: _Cells, changed: _Moved) -> _Moved:
    """``changed`` and the cells whose value turned from a number to a boolean or back.

    ``1.0 == True`` and ``0.0 == False`` to Python, so the diff calls such a cell unchanged, but to the checks it
    is not (``True`` is no number). Asked only when a sheet holds a boolean (rare: the scan for one is in C).
    """
    moved = set(changed)
    for ref, cell in now.items():
        was = had.get(ref)
        if ref not in moved and was is not None and (type(cell[0]) is bool) != (type(was[0]) is bool):
            changed = [*changed, ref]
    return changed


def _before(rows: list[ChangeRow], row: tuple[Any, ...], version: Any, content: dict[str, Any]) -> Any:
    """The content document ``row`` held before this step, from the step's one write to it; None if not so plain.

    The write's before-image equals the content the checks were settled on (the log holds every write, and the
    version it replaced is the one they were settled at), and the change log has just compared it with the
    new content, so diffing the two reads memory that is still in the cache; the content kept from a write
    steps ago is not (in an episode, where the steps between evict it, that diff costs more than the checks).
    None (diff against the kept content) unless exactly one row of the step updated the document's content,
    to ``content`` itself, from version ``version``.
    """
    found = None
    for r in rows:
        if r.key[0] != row[0] or r.op != "update":
            continue
        images = r.changes.get("content")
        if images is None:
            continue
        if found is not None:
            return None  # two writes in one step: the kept content is the one the checks were settled on
        versions = r.changes.get("version")
        if images[1] is not content or versions is None or versions[0] != version or versions[1] != row[6]:
            return None
        found = images[0]
    return found if type(found) is dict else None

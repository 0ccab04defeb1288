"""The spreadsheet checks' ``on_step`` paths of the sixth round, each held to the functions after every write.

``graders.checks_sheets`` now decides a cell check whose cell holds exactly the expected value inside
``_step_cells`` (the index holds each check compiled, so no call per check), and the first diff after the checks
are filed reads the boolean flags ``_Doc.file`` worked out instead of scanning the old sheet. These tests play
writes as ``graders.progress`` does (``test_progress_sheets3._Play``: the functions are run on a fresh context
after every step and must agree) on what those shortcuts could get wrong: a cell equal to the expected value
but of another type (``True == 1.0``), a formula check whose cell is typed over, two checks on one cell, and a
sheet filed holding a 1.0 that the first write turns into ``True``, and a budget filled in one write.
"""

from __future__ import annotations

import operator
from typing import Any

import graders.sheets_diff
from tests.graders.test_progress_sheets3 import _book, _Play

_BASE = {"A1": ["Engineering", None], "B1": [None, None], "C1": [0.0, "=B1*2"]}


def test_a_cell_holding_the_expected_value_passes_in_the_step_only_when_its_type_and_formula_say_so():
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_cell_equals", {"cell": "B1", "value": 1, "label": "headcount"}),
        ("sheet_cell_equals", {"cell": "B1", "value": 1, "formula": True}),
        ("sheet_cell_equals", {"cell": "C1", "value": 2, "formula": True, "label": "cost"}),
        ("sheet_cell_equals", {"cell": "A1", "value": " engineering "}),
    ]
    play = _Play(asks, _book(_BASE))
    play.write("B1 set to True, C1 recalculated", _book({**_BASE, "B1": [True, None], "C1": [2.0, "=B1*2"]}))
    assert play.kept[("sheet_cell_equals", 0)][0] == 0.0, "True equals 1.0, yet it is no number"
    cost = play.kept[("sheet_cell_equals", 2)]
    assert cost[0] == 1.0
    play.write("B1 set to 1", _book({**_BASE, "B1": [1.0, None], "C1": [2.0, "=B1*2"], "A1": ["Sales", None]}))
    headcount = play.kept[("sheet_cell_equals", 0)]
    assert headcount[0] == 1.0 and play.kept[("sheet_cell_equals", 1)][0] == 0.0, "1 typed in holds no formula"
    assert "holds no formula" in play.kept[("sheet_cell_equals", 1)][1]
    play.write("C1 typed over", _book({**_BASE, "B1": [1.0, None], "C1": [2.0, None], "D1": [5.0, None]}))
    assert play.kept[("sheet_cell_equals", 2)][0] == 0.0, "the total typed over as a number fails its formula"
    play.write("B1 and C1 back", _book({**_BASE, "B1": [1.0, "=0+1"], "C1": [2.0, "=B1*2"]}))
    assert play.kept[("sheet_cell_equals", 0)] is headcount, "the passing verdict is handed back by identity"
    assert play.kept[("sheet_cell_equals", 1)][0] == 1.0 and play.kept[("sheet_cell_equals", 2)] is cost
    assert play.kept[("sheet_cell_equals", 3)][0] == 1.0


def test_the_first_write_reads_the_flags_of_the_filed_sheet_and_still_sees_a_one_turn_true(monkeypatch):
    """Filed holding a 1.0 (a value equal to a boolean), the sheet's first write turns it into ``True``."""
    asks: list[tuple[str, dict[str, Any]]] = [("sheet_cell_equals", {"cell": "D2", "value": 1})]
    filed = {**_BASE, "D2": [1.0, None]}
    play = _Play(asks, _book(filed))
    assert play.kept[("sheet_cell_equals", 0)][0] == 1.0
    scanned: list[list[Any]] = []
    real = graders.sheets_diff._safe

    def counting(cells: Any) -> bool:
        cells = list(cells)
        scanned.append(cells)
        return real(cells)

    monkeypatch.setattr(graders.sheets_diff, "_safe", counting)
    written = _book({**filed, "D2": [True, None], "B1": [3.0, None]})
    play.write("D2 turned True beside a written cell", written)
    assert play.kept[("sheet_cell_equals", 0)][0] == 0.0
    new_cells = written["sheets"][0]["cells"]
    # a flagged sheet's new side is checked whole (sheets8: the flag may clear), the old side's never again
    assert all(
        len(c) == len(new_cells) and all(map(operator.is_, c, new_cells.values())) for c in scanned if len(c) > 1
    ), "the first diff reads the flags worked out when the checks were filed"
    play.write("D2 back to 1.0", _book({**filed, "B1": [3.0, None]}))
    assert play.kept[("sheet_cell_equals", 0)][0] == 1.0


def _filled(rows: int, **extra: list[Any]) -> dict[str, Any]:
    """A budget of ``rows`` lines (department, headcount, cost a head, their product) and ``extra`` cells."""
    cells: dict[str, Any] = {"A1": ["Department", None]}
    for n in range(2, rows + 2):
        cells |= {f"A{n}": [f"Team {n}", None], f"B{n}": [float(n), None], f"C{n}": [2.5 * n, None]}
        cells[f"D{n}"] = [2.5 * n * n, f"=B{n}*C{n}"]
    return _book(cells | extra)


def test_a_budget_filled_in_one_write_is_diffed_and_its_flags_kept_for_the_next():
    """A write of most of a sheet's cells: shape, added names and the boolean flag of every written cell."""
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_cell_equals", {"cell": "D5", "value": 62.5, "formula": True}),
        ("sheet_cell_equals", {"cell": "F1", "value": 1}),
        ("sheet_row_matches", {"key_column": "A", "key": "team 3", "expected": {"B": 3, "D": 22.5}}),
    ]
    play = _Play(asks, _book({"A1": ["Department", None], "E9": ["draft", None]}))
    decided = play.write("the budget filled, a one beside it", _filled(4, F1=[1.0, None]))
    assert all(decided.values()), "a plain fill is diffed, not left to the functions"
    assert [play.kept[("sheet_cell_equals", i)][0] for i in (0, 1)] == [1.0, 1.0]
    decided = play.write("F1 turned True as the rows are written again", _filled(3, F1=[True, None], B4=[9.0, None]))
    assert play.kept[("sheet_cell_equals", 1)][0] == 0.0, "the 1.0 a many-cell write brought in flags the sheet"
    assert play.kept[("sheet_cell_equals", 0)][0] == 0.0, "row 5 was cleared"
    decided = play.write("a cell named otherwise among many", _filled(5, **{"$F$1": [1.0, None]}))
    assert not any(decided.values()), "a name the JSON lookup cannot stand for leaves the checks to the functions"
    play.write("refiled, then many cells and one malformed", _filled(4))
    decided = play.write("one written cell is no pair", _filled(5, D6=[3.0]))
    assert not any(decided.values())

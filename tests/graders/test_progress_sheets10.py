"""The spreadsheet checks' ``on_step`` paths of the tenth round, each held to the functions after every write.

``graders.checks_sheets`` now walks a write's changed cells in one plain loop (``_Doc.step_rows`` for the row
groups, ``_step_cells`` for the cell checks) instead of a chain of C iterators, and a row group keeps the names
of its row's cells while its key stays on that row (``_KeyRows.refs``, filled as the checks first read them,
emptied when the key moves) instead of a shared cache by (row, column). Each test plays writes as
``graders.progress`` does (``test_progress_sheets3._Play``, which checks every float against the function's
score and every verdict against the function on a fresh context after each write) on what these paths could
get wrong: a key moving to another row (a kept name would read the old row), a check of the key filed after
the names were kept, a column off the sheet, the changed cells that wake a group and those that wake none, and
the cells with cell checks among many without.
"""

from __future__ import annotations

from typing import Any

from tests.graders.test_progress_sheets3 import _book, _Play

_HEAD: dict[str, list[Any]] = {"B1": ["Receipt", None], "I1": [0.0, 'SUMIF(G2:G9,"approved",F2:F9)']}
_RC1: dict[str, list[Any]] = {"E2": ["Travel", None], "F2": [40.0, None], "G2": ["approved", None]}


def test_a_key_moving_to_another_row_reads_the_new_rows_cells_not_the_names_kept_for_the_old_one() -> None:
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_row_matches", {"key_column": "B", "key": "RC-1", "expected": {"E": "Travel", "F": 40}}),
        ("sheet_row_matches", {"key_column": "B", "key": "RC-1", "expected": {"G": "approved"}}),
    ]
    play = _Play(asks, _book(_HEAD))
    on_two = _HEAD | {"B2": ["RC-1", None]} | _RC1
    play.write("RC-1 on row 2, right", _book(on_two))
    assert play.answers == {("sheet_row_matches", 0): 1.0, ("sheet_row_matches", 1): 1.0}
    group = play.ctx.lasting[("sheet_watch", "sheet_row_matches")][1]["Shared/Finance/Expenses.xlsx"].groups
    (rc1,) = group.values()
    assert set(rc1.refs.values()) == {"E2", "F2", "G2"}, "the names of row 2's cells, kept"
    moved = _HEAD | _RC1 | {"B5": ["rc-1 ", None], "E5": ["Meals", None], "F5": [40.0, None]}
    play.write("the key moved to row 5, its cells partly wrong", _book(moved))
    assert play.answers == {("sheet_row_matches", 0): 0.5, ("sheet_row_matches", 1): 0.0}
    assert set(rc1.refs.values()) == {"E5", "F5", "G5"}, "the names kept for row 2 were dropped"
    play.write("row 5 filled", _book(moved | {"E5": ["travel", None], "G5": ["Approved", None]}))
    assert play.answers == {("sheet_row_matches", 0): 1.0, ("sheet_row_matches", 1): 1.0}
    twice = moved | {"B2": ["RC-1", None]}
    play.write("the key on two rows", _book(twice))
    assert rc1.line == -1 and rc1.refs == {}
    play.write("row 5 cleared: the key on row 2 alone again", _book(_HEAD | {"B2": ["RC-1", None]} | _RC1))
    assert play.answers == {("sheet_row_matches", 0): 1.0, ("sheet_row_matches", 1): 1.0}


def test_a_check_filed_after_its_groups_names_were_kept_and_a_column_off_the_sheet_read_as_empty() -> None:
    """The names fill as checks read them: a later check's column is named then; a column past the last is ""."""
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_row_matches", {"key_column": "B", "key": "RC-1", "expected": {"F": 40}}),
        ("sheet_row_matches", {"key_column": "B", "key": "RC-1", "expected": {"G": "approved", "E": "Travel"}}),
        ("sheet_row_matches", {"key_column": "B", "key": "RC-1", "expected": {"ZZZ": None, "F": 40}}),
        ("sheet_row_matches", {"key_column": "B", "key": "RC-1", "expected": {"ZZZ": "x"}}),
    ]
    filed = _HEAD | {"B2": ["RC-1", None]} | _RC1  # the key on row 2 when progress starts: filed one by one
    play = _Play(asks, _book(filed))
    assert play.kept[("sheet_row_matches", 2)][0] == 1.0 and play.kept[("sheet_row_matches", 3)][0] == 0.0
    play.write("row 2's amount and category move", _book(filed | {"F2": [41.0, None], "E2": ["Meals", None]}))
    assert play.answers == {
        ("sheet_row_matches", 0): 0.0,
        ("sheet_row_matches", 1): 0.5,
        ("sheet_row_matches", 2): 0.5,
        ("sheet_row_matches", 3): 0.0,
    }


def test_the_changed_cells_wake_the_groups_of_their_rows_and_keys_and_no_other() -> None:
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_row_matches", {"key_column": "B", "key": "RC-1", "expected": {"F": 40}}),
        ("sheet_row_matches", {"key_column": "B", "key": "RC-2", "expected": {"F": 12.5}}),
        ("sheet_row_matches", {"sheet": "Notes", "key_column": "A", "key": "RC-1", "expected": {"B": "ok"}}),
    ]
    notes: dict[str, list[Any]] = {"A1": ["RC-1", None], "B1": ["ok", None]}

    def book(cells: dict[str, Any], *, note: str = "ok") -> dict[str, Any]:
        return {
            "sheets": [
                {"name": "Expenses", "cells": dict(cells)},
                {"name": "Notes", "cells": notes | {"B1": [note, None]}},
            ]
        }

    play = _Play(asks, book(_HEAD))
    rows = _HEAD | {"B2": ["RC-1", None], "F2": [40.0, None], "B3": ["RC-2", None], "F3": [12.5, None]}
    play.write("both keyed", book(rows))
    assert set(play.answers) == {("sheet_row_matches", 0), ("sheet_row_matches", 1)}
    rows |= {"H3": ["n", None], "H9": ["m", None]}
    play.write("a cell of RC-2's row, then one on no keyed row", book(rows))
    assert set(play.answers) == {("sheet_row_matches", 1)}, "the same RC-1 key on the Notes sheet: not woken"
    play.write("the notes sheet's row", book(rows, note="no"))
    assert play.answers == {("sheet_row_matches", 2): 0.0}
    swapped = rows | {"B2": ["RC-2", None], "B3": ["RC-1", None]}
    play.write("the keys swapped rows", book(swapped, note="no"))
    assert play.answers == {("sheet_row_matches", 0): 0.0, ("sheet_row_matches", 1): 0.0}
    play.write("RC-1 cleared", book({k: v for k, v in swapped.items() if k != "B3"}, note="no"))
    assert play.answers == {("sheet_row_matches", 0): 0.0}


def test_the_cell_checks_of_the_changed_cells_are_decided_among_cells_no_check_reads() -> None:
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_cell_equals", {"cell": "I1", "value": 40, "formula": True}),
        ("sheet_cell_equals", {"cell": "I1", "value": 52.5}),
        ("sheet_cell_equals", {"cell": "F3", "value": 12.5}),
    ]
    play = _Play(asks, _book(_HEAD))
    total = _HEAD["I1"][1]
    cells = _HEAD | {"B2": ["RC-1", None], "F2": [40.0, None], "G2": ["approved", None], "I1": [40.0, total]}
    play.write("a row and the total", _book(cells))
    assert set(play.answers) == {("sheet_cell_equals", 0), ("sheet_cell_equals", 1)}
    assert play.kept[("sheet_cell_equals", 0)][0] == 1.0 and play.answers[("sheet_cell_equals", 1)] == 0.0
    cells |= {"B3": ["RC-2", None], "F3": [12.5, None], "G3": ["approved", None], "I1": [52.5, total]}
    play.write("another row, the total and F3", _book(cells))
    assert [play.kept[("sheet_cell_equals", n)][0] for n in range(3)] == [0.0, 1.0, 1.0]
    play.write("F3 cleared, nothing else", _book({k: v for k, v in cells.items() if k != "F3"}))
    assert set(play.answers) == {("sheet_cell_equals", 2)} and play.kept[("sheet_cell_equals", 2)][0] == 0.0

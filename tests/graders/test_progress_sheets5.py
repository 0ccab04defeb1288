"""The spreadsheet checks' ``on_step`` paths of the fifth round, each held to the functions after every write.

``graders.checks_sheets`` now keeps, with the content a diff ended on, whether each sheet holds a value equal
to a boolean (``1.0 == True``): while a sheet holds none, the next write's diff looks only at its written cells
for one instead of scanning every cell's type (``_safe``, by hash). The row checks of one key are decided
together in one frame (``_KeyRows``), each cell compared first with the value that passes it to the letter, and
a passing verdict is handed back by identity while its row passes. These tests play writes as
``graders.progress`` does (through ``test_progress_sheets3._Play``: the functions are run on a fresh context
after every step and must agree) on the cases those shortcuts could get wrong: a sheet that takes in its first
1.0 and flips it to ``True`` a write later, flags kept for content the checks were filed on since, a key on two
rows, on none and back, a key moving rows, and JSON values the comparison must read as ``value_from_json`` does.
"""

from __future__ import annotations

from typing import Any

from graders.sheets_diff import _safe
from tests.graders.test_progress_sheets3 import _book, _Play, _row

_BASE = {"A1": ["RC-1", None], "B1": ["Travel", None], "C1": [40.0, None], "A2": ["RC-2", None]}


def test_a_sheet_that_takes_in_a_one_then_flips_it_to_true_is_still_diffed_as_the_functions_read_it():
    """The first write brings a 1.0 in (no value equal to a boolean before); the next turns it into ``True``."""
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_cell_equals", {"cell": "D2", "value": 1}),
        ("sheet_row_matches", {"key_column": "A", "key": "RC-2", "expected": {"D": 1}}),
    ]
    play = _Play(asks, _book(_BASE))
    one = _book({**_BASE, "D2": [1.0, None]})
    decided = play.write("a 1.0 written", one)
    assert all(decided.values()) and len(decided) == 2
    flipped = _book({**_BASE, "D2": [True, None]})
    decided = play.write("the 1.0 turned to True", flipped)  # 1.0 == True: only the kept flag finds it moved
    assert decided == {("sheet_cell_equals", 0): True, ("sheet_row_matches", 0): True}
    assert play.kept[("sheet_cell_equals", 0)][0] == 0.0 and play.kept[("sheet_row_matches", 0)][0] == 0.0
    back = _book({**_BASE, "D2": [1.0, None], "E9": ["note", None]})
    play.write("back to 1.0 beside another cell", back)
    assert play.kept[("sheet_cell_equals", 0)][0] == 1.0


def test_a_sheet_without_booleans_skips_its_unchanged_cells_and_still_sees_a_zero_turn_false_in_a_written_one():
    asks: list[tuple[str, dict[str, Any]]] = [("sheet_cell_equals", {"cell": "C1", "value": 0})]
    play = _Play(asks, _book(_BASE))
    play.write("C1 zeroed", _book({**_BASE, "C1": [0.0, None]}))
    assert play.kept[("sheet_cell_equals", 0)][0] == 1.0
    play.write("C1 false", _book({**_BASE, "C1": [False, None]}))
    assert play.kept[("sheet_cell_equals", 0)][0] == 0.0


def test_a_passing_row_is_answered_by_its_score_and_a_moved_key_gets_its_new_row():
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_row_matches", {"key_column": "A", "key": "RC-1", "expected": {"B": "travel", "C": 40}}),
    ]
    play = _Play(asks, _book(_BASE))
    play.write("C1 retyped", _book({**_BASE, "C1": [40.001, None]}))
    first = play.kept[("sheet_row_matches", 0)]
    assert first[0] == 1.0 and first[2] == {"row": 1}
    play.write("C1 retyped again", _book({**_BASE, "C1": [40.0, None]}))
    assert play.answers[("sheet_row_matches", 0)] == 1.0, "a write's step answers the row's score alone (sheets8)"
    moved = {k: v for k, v in _BASE.items() if not k.endswith("1")}
    moved |= {"A5": ["RC-1", None], "B5": ["Travel", None], "C5": [40.0, None]}
    play.write("the row moved down", _book(moved))
    assert play.kept[("sheet_row_matches", 0)][2] == {"row": 5}


def test_json_values_of_every_kind_in_a_compared_cell_read_as_the_function_reads_them():
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_row_matches", {"key_column": "A", "key": "RC-1", "expected": {"B": "Travel", "C": 40}}),
        ("sheet_row_matches", {"key_column": "A", "key": "RC-1", "expected": {"C": 40}, "tolerance": 0}),
        ("sheet_row_matches", {"key_column": "A", "key": "RC-1", "expected": {"C": float("inf"), "B": "40"}}),
    ]
    play = _Play(asks, _book(_BASE))
    for what, value in [
        ("an int", 40),
        ("infinity", float("inf")),
        ("a float off by the tolerance", 40.004),
        ("an error", {"error": "#DIV/0!"}),
        ("text", "40"),
        ("nan", float("nan")),
        ("true", True),
        ("none", None),
        ("the number again", 40.0),
    ]:
        play.write(what, _book({**_BASE, "B1": [value, None], "C1": [value, None]}))
    assert play.kept[("sheet_row_matches", 0)][0] == 0.5  # B holds 40.0, not the text
    play.write("infinity, and the text", _book({**_BASE, "B1": ["40", None], "C1": [float("inf"), None]}))
    assert play.kept[("sheet_row_matches", 2)][0] == 0.5  # an infinite cell reads as empty


def test_the_boolean_flags_of_a_diff_are_not_read_for_content_the_checks_were_filed_on_since():
    """A file in the store in between: the checks are filed afresh on content holding a 1.0, not on the diff's."""
    asks: list[tuple[str, dict[str, Any]]] = [("sheet_cell_equals", {"cell": "D2", "value": 1})]
    play = _Play(asks, _book(_BASE))
    play.write("a diffed write, no booleans", _book({**_BASE, "B1": ["Meals", None]}))
    play.step("a file in the store", _row(_book(_BASE) | {"sha256": "old"}, 3, blob="new"), [])
    play.write("filed afresh with a 1.0", _book({**_BASE, "D2": [1.0, None]}))
    assert play.kept[("sheet_cell_equals", 0)][0] == 1.0
    play.write("the 1.0 turned to True", _book({**_BASE, "D2": [True, None]}))
    assert play.kept[("sheet_cell_equals", 0)][0] == 0.0


def test_the_checks_of_one_key_follow_it_to_two_rows_to_none_and_back_together():
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_row_matches", {"key_column": "A", "key": "RC-1", "expected": {"B": "Travel"}}),
        ("sheet_row_matches", {"key_column": "A", "key": " rc-1", "expected": {"C": 40, "D": None}}),
        ("sheet_row_matches", {"key_column": "A", "key": "RC-2", "expected": {"C": 12.5}}),
    ]
    play = _Play(asks, _book(_BASE))
    twice = {**_BASE, "A7": ["RC-1", None], "C2": [12.5, None]}
    decided = play.write("the key on a second row, RC-2's amount filled", _book(twice))
    assert set(decided) == {("sheet_row_matches", 0), ("sheet_row_matches", 1), ("sheet_row_matches", 2)}
    assert [play.kept[("sheet_row_matches", n)][0] for n in range(3)] == [0.0, 0.0, 1.0]
    cleared = {k: v for k, v in twice.items() if k not in ("A1", "A7")}
    play.write("the key cleared from both rows", _book(cleared))
    assert "no row" in play.kept[("sheet_row_matches", 1)][1]
    play.write("the key back on its first row", _book({**cleared, "A1": ["RC-1", None]}))
    assert [play.kept[("sheet_row_matches", n)][0] for n in range(3)] == [1.0, 1.0, 1.0]
    decided = play.write("a note beside RC-1's row", _book({**cleared, "A1": ["RC-1", None], "H1": ["ok", None]}))
    assert all(play.answers[w] == 1.0 for w in decided), "a passing row woken again: its score alone (sheets8)"


def test_the_boolean_scan_says_what_equality_with_a_boolean_says_for_every_kind_of_value():
    values: list[Any] = [0, 1, 0.0, -0.0, 1.0, 2.0, 0.5, float("nan"), 10**400, "1", "", None, "True"]
    values += [True, False, {"error": "#N/A"}]
    for value in values:
        for others in ([], ["text", 3.5, None], [{"error": "#REF!"}]):  # by hash, and by comparison (a dict)
            cells = [[v, None] for v in [*others, value]]
            assert _safe(cells) is not (value == True or value == False), (value, others)  # noqa: E712

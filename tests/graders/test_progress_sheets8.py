"""The spreadsheet checks' ``on_step`` paths of the eighth round, each held to the functions after every write.

``graders.checks_sheets`` now answers a write's moved row checks, and a cell check that does not pass to the
letter, with the score alone (``graders.progress`` counts it and asks the function for the evidence when
results are asked); the diff clears a sheet's boolean flag once no value of it equals a boolean; the workbook
a function reuses between writes (``sheets_diff._book_of``) sees a number turned boolean; and a document's
fold ranks the row found only when a row is inserted into its folder. Each test plays writes as
``graders.progress`` does (``test_progress_sheets3._Play``, which checks every float against the function's
score and every verdict against the function on a fresh context) on what these paths could get wrong.
"""

from __future__ import annotations

from typing import Any

from graders.base import ChangeRow, GradingContext
from graders.checks_docs import _fold_document
from graders.registry import check_fn_spec
from tests.graders.test_progress_sheets3 import PATH, _book, _Play, _row, _verdict

_ROWS = [
    ("sheet_row_matches", {"key_column": "B", "key": "RC-1", "expected": {"E": "Travel", "F": 40}}),
    ("sheet_row_matches", {"key_column": "B", "key": "RC-1", "expected": {"G": "approved"}}),
    ("sheet_row_matches", {"key_column": "B", "key": "RC-2", "expected": {"F": 12.5, "G": "rejected"}}),
    ("sheet_cell_equals", {"cell": "I1", "value": 52.5, "formula": True, "label": "Approved total"}),
]
_HEAD = {"B1": ["Receipt", None], "I1": [0.0, 'SUMIF(G2:G9,"approved",F2:F9)']}


def test_a_written_row_answers_each_check_of_its_key_with_its_score_alone_partial_and_duplicate_too():
    play = _Play(_ROWS, _book(_HEAD))
    half = _HEAD | {"B2": ["RC-1", None], "E2": ["Meals", None], "F2": [40.0, None], "G2": ["approved", None]}
    play.write("RC-1 half right", _book(half))
    answers = play.answers
    assert answers[("sheet_row_matches", 0)] == 0.5 and type(answers[("sheet_row_matches", 0)]) is float
    assert answers[("sheet_row_matches", 1)] == 1.0 and type(answers[("sheet_row_matches", 1)]) is float
    assert ("sheet_row_matches", 2) not in answers, "RC-2's checks: no cell of theirs moved"
    twice = half | {"B3": [" rc-1 ", None], "F3": [12.5, None]}
    play.write("RC-1 twice", _book(twice))
    assert play.answers[("sheet_row_matches", 0)] == 0.0 and play.answers[("sheet_row_matches", 1)] == 0.0
    assert "2 rows (rows 2, 3)" in play.kept[("sheet_row_matches", 0)][1], "the function wrote the evidence"
    fixed = twice | {"B3": ["RC-2", None], "G3": ["Rejected ", None], "E2": ["travel", None]}
    play.write("RC-1 once and right, RC-2 filled", _book(fixed))
    assert [play.answers[("sheet_row_matches", n)] for n in range(3)] == [1.0, 1.0, 1.0]


def test_a_cell_check_answers_its_score_alone_unless_its_cell_holds_the_expected_value_to_the_letter():
    play = _Play(_ROWS, _book(_HEAD))
    total = _HEAD["I1"][1]
    play.write("the total moves short", _book(_HEAD | {"I1": [40.0, total]}))
    assert play.answers[("sheet_cell_equals", 0)] == 0.0
    play.write("the total within tolerance", _book(_HEAD | {"I1": [52.501, total]}))
    assert play.answers[("sheet_cell_equals", 0)] == 1.0 and type(play.answers[("sheet_cell_equals", 0)]) is float
    play.write("typed over", _book(_HEAD | {"I1": [52.5, None]}))
    assert play.answers[("sheet_cell_equals", 0)] == 0.0, "a total typed over holds no formula"
    play.write("an error", _book(_HEAD | {"I1": [{"error": "#VALUE!"}, total]}))
    assert play.answers[("sheet_cell_equals", 0)] == 0.0
    play.write("exact", _book(_HEAD | {"I1": [52.5, total]}))
    exact = play.answers[("sheet_cell_equals", 0)]
    assert type(exact) is tuple and exact[0] == 1.0, "the passing verdict, built once, handed back"


def test_a_function_run_on_the_kept_workbook_reads_a_number_turned_boolean_as_a_fresh_parse_does():
    ctx = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
    p = {"document": PATH, "cell": "D2", "value": 1}
    for version, d2 in enumerate([[1.0, None], [True, None], [1.0, None]], start=1):
        ctx.forget()
        ctx.memo[("document", PATH)] = _row(_book(_HEAD | {"D2": d2}), version)
        fresh = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
        fresh.memo[("document", PATH)] = ctx.memo[("document", PATH)]
        assert _verdict(ctx, "sheet_cell_equals", p) == _verdict(fresh, "sheet_cell_equals", p), version
        assert _verdict(ctx, "sheet_cell_equals", p)[0] == (0.0 if d2[0] is True else 1.0)


def test_a_flagged_sheet_clears_its_flag_once_it_holds_no_value_equal_to_a_boolean_and_still_sees_a_flip():
    asks: list[tuple[str, dict[str, Any]]] = [("sheet_cell_equals", {"cell": "D2", "value": 1})]
    play = _Play(asks, _book(_HEAD))  # the 0.0 total: flagged
    play.write("the total leaves 0", _book(_HEAD | {"I1": [40.0, _HEAD["I1"][1]]}))
    assert play.ctx.lasting[("sheet_diff", 1)][3] == [True], "no value equals a boolean now: the flag clears"
    one = _HEAD | {"I1": [40.0, _HEAD["I1"][1]], "D2": [1.0, None]}
    play.write("a one typed", _book(one))
    assert play.ctx.lasting[("sheet_diff", 1)][3] == [False] and play.kept[("sheet_cell_equals", 0)][0] == 1.0
    play.write("the one turned True, nothing else", _book(one | {"D2": [True, None]}))
    assert play.kept[("sheet_cell_equals", 0)][0] == 0.0, "a flagged sheet still scans for a flip"


def _insert(seq: int, doc: int, name: str, folder: int) -> ChangeRow:
    image = {
        "id": doc,
        "name": name,
        "kind": "spreadsheet",
        "mime_type": "x",
        "content": {},
        "blob_sha256": None,
        "version": 1,
        "owner_id": 1,
        "folder_id": folder,
    }
    return ChangeRow.of({"seq": seq, "table": "documents", "key": [doc], "op": "insert", "changes": image})


def _update(seq: int, doc: int, version: int) -> ChangeRow:
    changes = {"version": [version - 1, version]}
    return ChangeRow.of({"seq": seq, "table": "documents", "key": [doc], "op": "update", "changes": changes})


def test_the_fold_ranks_the_row_found_only_when_an_insert_asks_and_then_as_before():
    found = (1, "Budget", "spreadsheet", "x", {}, None, 1, 1)  # named without the path's extension: rank 1
    state = (7, "Budget.xlsx", found, 0, 0)
    docs = [_update(1, 1, 2)]
    assert _fold_document(state, docs)[6] == 2, "a write to the row found is folded in, no rank needed"
    docs += [_insert(2, 2, "budget", 7), _insert(3, 3, "Budget.xlsx", 8)]
    assert _fold_document(state, docs)[0] == 1, "a later row of the same rank, or one in another folder, loses"
    docs.append(_insert(4, 4, "budget.XLSX", 7))
    assert _fold_document(state, docs)[0] == 4, "the exact name wins over the one without its extension"
    assert check_fn_spec("sheet_row_matches").on_step is not None


def test_a_write_wakes_the_groups_of_its_changed_rows_and_written_keys_and_passes_over_the_other_cells():
    """``_Doc.moved`` looks at a changed cell only if it is on a row holding a key or in a key column."""
    play = _Play(_ROWS[:3], _book(_HEAD))
    filled = _HEAD | {"B2": ["RC-1", None], "E2": ["Travel", None], "F2": [40.0, None], "G2": ["approved", None]}
    play.write("RC-1 filled", _book(filled))
    assert play.answers == {("sheet_row_matches", 0): 1.0, ("sheet_row_matches", 1): 1.0}
    play.write("RC-1's category retyped (no key cell)", _book(filled | {"E2": ["Meals", None]}))
    assert play.answers == {("sheet_row_matches", 0): 0.5, ("sheet_row_matches", 1): 1.0}, "its row's cell woke it"
    play.write("a note off every keyed row", _book(filled | {"E2": ["Meals", None], "H7": ["see mail", None]}))
    assert play.answers == {}, "a cell on no keyed row and in no key column wakes no group"
    play.write("RC-2 keyed on row 3", _book(filled | {"E2": ["Meals", None], "B3": ["RC-2", None]}))
    assert set(play.answers) == {("sheet_row_matches", 2)} and play.answers[("sheet_row_matches", 2)] == 0.0

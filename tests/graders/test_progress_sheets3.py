"""The spreadsheet checks' ``on_step`` paths of the third round, each held to the functions after every write.

``graders.checks_sheets`` now settles sheet checks on the content's JSON (no workbook built a write), diffs a
write against the step's own before-image of the content when the step wrote the document once from the
version the checks were settled at, and compares each value with what it worked out once per check. These
tests play writes through those paths as ``graders.progress`` does (``on_step`` once with no rows when it
starts, then once a step with the step's document rows; a check left out keeps its verdict) and compare every
kept verdict with the function run on a fresh context after each step: a before-image that must not be used
(two writes in one step, a version the checks never saw), content the JSON cannot stand for (a cell named
``$D$4``, a cell that is not a [value, formula] pair, JSON text, a file in the store), and values of every kind
the comparisons take apart. No world: a context with the document row in its memo, as in test_progress_sheets2.
"""

from __future__ import annotations

import copy
from typing import Any

from graders.base import ChangeRow, GradingContext
from graders.registry import check_fn_spec
from worlds.office.files import MIME

PATH = "Shared/Finance/Expenses.xlsx"


def _verdict(ctx: GradingContext, fn: str, p: dict[str, Any]) -> tuple[Any, ...]:
    try:
        out = check_fn_spec(fn).fn(ctx, **p)
    except Exception as exc:  # as run_outcome reports it
        return ("raised", type(exc).__name__)
    return out.score, out.evidence, dict(out.details)


def _row(content: Any, version: int, blob: str | None = None) -> tuple[Any, ...]:
    return (1, "Expenses.xlsx", "spreadsheet", MIME["xlsx"], content, blob, version)


def _write(seq: int, before: Any, after: Any, version: int) -> ChangeRow:
    """The change-log row of a write that took the document from ``version`` - 1 (``before``) to ``version``."""
    changes = {"content": [before, after], "version": [version - 1, version]}
    return ChangeRow.of({"seq": seq, "table": "documents", "key": [1], "op": "update", "changes": changes})


class _Play:
    """Progress's side of ``on_step`` for a few checks on one document: what it keeps, and what was decided."""

    def __init__(self, asks: list[tuple[str, dict[str, Any]]], content: dict[str, Any]) -> None:
        self.params: dict[str, list[dict[str, Any]]] = {}
        self.where: list[tuple[str, int]] = []
        for fn, p in asks:
            group = self.params.setdefault(fn, [])
            self.where.append((fn, len(group)))
            group.append({"document": PATH, **p})
        self.ctx = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
        self.row = _row(content, 1)
        self.ctx.memo[("document", PATH)] = self.row
        self.kept = {w: _verdict(self.ctx, w[0], self.params[w[0]][w[1]]) for w in self.where}
        for fn, group in self.params.items():  # progress starts: on_step asked once with no rows
            check_fn_spec(fn).on_step(self.ctx, [], group)
        self.seq = 0

    def step(self, what: str, row: tuple[Any, ...], rows: list[ChangeRow]) -> dict[tuple[str, int], bool]:
        """Play a step that left the document as ``row``; by check, whether on_step decided it (False: its function)."""
        self.row = row
        self.ctx.forget()
        self.ctx.memo[("document", PATH)] = row
        decided: dict[tuple[str, int], bool] = {}
        self.answers: dict[tuple[str, int], Any] = {}  # what on_step answered this step (a float: the score alone)
        for fn, group in self.params.items():
            for pos, out in check_fn_spec(fn).on_step(self.ctx, rows, group).items():
                self.answers[(fn, pos)] = out
                if type(out) is float:  # the score alone: it must be the function's, whose evidence progress asks later
                    full = _verdict(self.ctx, fn, group[pos])
                    assert out == full[0], (what, fn, pos, out, full)
                    out = full
                self.kept[(fn, pos)] = _verdict(self.ctx, fn, group[pos]) if out is None else out
                decided[(fn, pos)] = out is not None
        fresh = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
        fresh.memo[("document", PATH)] = row
        for w in self.where:
            assert self.kept[w] == _verdict(fresh, w[0], self.params[w[0]][w[1]]), (what, w)
        return decided

    def write(self, what: str, *contents: dict[str, Any]) -> dict[tuple[str, int], bool]:
        """Play a step that wrote ``contents`` in turn (one change row each, before-images read back as copies)."""
        rows = []
        version = self.row[6]
        before = self.row[4]
        for content in contents:
            version += 1
            self.seq += 1
            rows.append(_write(self.seq, copy.deepcopy(before), content, version))  # as loaded from the database
            before = content
        return self.step(what, _row(contents[-1], version), rows)


def _book(cells: dict[str, Any]) -> dict[str, Any]:
    return {"sheets": [{"name": "Expenses", "cells": dict(cells)}]}


_ROW_ASKS: list[tuple[str, dict[str, Any]]] = [
    ("sheet_row_matches", {"key_column": "A", "key": "RC-1", "expected": {"B": "Travel", "C": 40}}),
    ("sheet_row_matches", {"key_column": "A", "key": "RC-2", "expected": {"C": 12.5}}),
    ("sheet_cell_equals", {"cell": "E1", "value": 52.5, "formula": True, "label": "Total"}),
    ("sheet_cell_equals", {"cell": "C3", "value": 12.5}),
]


def test_a_write_is_diffed_against_its_before_image_only_when_that_is_what_the_checks_were_settled_on():
    cells: dict[str, Any] = {"A1": ["Receipt", None], "E1": [0.0, "SUM(C2:C9)"]}
    play = _Play(_ROW_ASKS, _book(cells))
    one = _book(cells | {"A2": ["RC-1", None], "B2": ["Travel", None], "C2": [40.0, None], "E1": [40.0, "SUM(C2:C9)"]})
    decided = play.write("one write", one)
    assert sorted(k for k, v in decided.items() if v) == [("sheet_cell_equals", 0), ("sheet_row_matches", 0)]
    kept = play.ctx.lasting[("sheet_diff", 1)]
    assert kept[0] is not play.row[4] and kept[0] == _book(cells), "diffed against the step's before-image"

    # Two writes in one step: RC-2's row, then a note. Diffing the last write's before-image alone would miss
    # RC-2's row (it is in both images): the checks are diffed against the content they were settled on.
    two = _book(one["sheets"][0]["cells"] | {"A3": ["RC-2", None], "C3": [12.5, None], "E1": [52.5, "SUM(C2:C9)"]})
    three = _book(two["sheets"][0]["cells"] | {"D9": ["note", None]})
    decided = play.write("two writes in a step", two, three)
    assert decided[("sheet_row_matches", 1)] and decided[("sheet_cell_equals", 1)]
    assert play.kept[("sheet_row_matches", 1)][0] == 1.0

    # A before-image from a version the checks never saw (it already holds the new amount): not used.
    four = _book(three["sheets"][0]["cells"] | {"C2": [41.0, None], "E1": [53.5, "SUM(C2:C9)"]})
    play.seq += 1
    stray = _write(play.seq, copy.deepcopy(four), four, 9)
    play.step("a before-image of another version", _row(four, 9), [stray])
    assert play.kept[("sheet_row_matches", 0)][0] == 0.5, "C2 was diffed: RC-1's amount no longer matches"

    # The same write to the document the checks were settled on, named by its key in a wider step (another
    # document's write in it too): the before-image is used again.
    five = _book(four["sheets"][0]["cells"] | {"C2": [40.0, None], "E1": [52.5, "SUM(C2:C9)"]})
    play.seq += 1
    other = ChangeRow.of(
        {"seq": play.seq, "table": "documents", "key": [2], "op": "update", "changes": {"content": [{}, {}]}}
    )
    play.seq += 1
    image = copy.deepcopy(four)
    play.step("a write beside another document's", _row(five, 10), [other, _write(play.seq, image, five, 10)])
    assert play.ctx.lasting[("sheet_diff", 1)][0] is image
    assert play.kept[("sheet_row_matches", 0)][0] == 1.0


def test_content_the_json_cannot_stand_for_is_left_to_the_functions():
    cells: dict[str, Any] = {"A1": ["Receipt", None], "A2": ["RC-1", None], "B2": ["Travel", None]}
    cells |= {"C2": [40.0, None], "E1": [40.0, "SUM(C2:C9)"], "A3": ["RC-2", None], "C3": [12.5, None]}
    play = _Play(_ROW_ASKS, _book(cells))
    every = set(play.where)

    def by_function(decided: dict[tuple[str, int], bool]) -> set[tuple[str, int]]:
        return {k for k, v in decided.items() if not v}

    # a cell named $C$3 beside C3: a parse keeps one of the two, the JSON both
    aside = _book(cells | {"$C$3": [99.0, None]})
    assert by_function(play.write("a cell named $C$3", aside)) == every
    back = _book(cells | {"C3": [13.0, None]})
    decided = play.write("plain names again", back)  # filed afresh on the JSON: decided there, not by functions
    assert decided and not by_function(decided)
    assert play.kept[("sheet_cell_equals", 1)][0] == 0.0

    # a cell that is not a [value, formula] pair: the parse raises, and every check reports it
    broken = _book(cells | {"C3": [12.5]})
    assert by_function(play.write("a cell of one item", broken)) == every
    assert play.kept[("sheet_cell_equals", 1)] == ("raised", "ValueError")

    # the content as JSON text (as a database row holds it), then the content of a file in the store
    play.step("JSON text", _row('{"sheets": [{"name": "Expenses", "cells": {"C3": [12.5, null]}}]}', 20), [])
    assert play.kept[("sheet_cell_equals", 1)][0] == 1.0
    stored = _book(cells) | {"sha256": "old"}
    assert by_function(play.step("a file in the store", _row(stored, 21, blob="new"), [])) == every
    decided = play.write("the JSON stands for the file again", _book(cells))
    assert decided and not by_function(decided)


def test_values_of_every_kind_compare_as_the_functions_compare_them():
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_cell_equals", {"cell": "A1", "value": True}),
        ("sheet_cell_equals", {"cell": "A2", "value": None}),
        ("sheet_cell_equals", {"cell": "A3", "value": " Travel "}),
        ("sheet_cell_equals", {"cell": "A4", "value": 3, "tolerance": 0.5}),
        ("sheet_cell_equals", {"cell": "A5", "value": 2.25, "formula": True}),
        ("sheet_cell_equals", {"cell": "A6", "value": 10**400}),  # float() raises: left to the function
        ("sheet_cell_equals", {"cell": "Expenses!A7", "value": "#DIV/0!"}),
        ("sheet_row_matches", {"key_column": "B", "key": "k", "expected": {"A": True, "C": 1e20, "D": "x", "E": None}}),
    ]
    values: list[Any] = [True, 1, None, "travel", " TRAVEL", 3.4, 3.6, 2.25, 1e20, "1e20", {"error": "#DIV/0!"}]
    values += [float("inf"), float("nan"), -0.0, 7]
    cells: dict[str, Any] = {"B1": ["k", None]}
    play = _Play(asks, _book(cells))
    decided: list[int] = []
    for n, value in enumerate(values):
        formula = "A4/2" if n % 2 else None
        cells = {f"{c}{r}": [value, formula] for c in "ACDE" for r in range(1, 8)} | {"B1": ["k", None]}
        decided.append(sum(play.write(f"every cell {value!r}", _book(cells)).values()))
    assert min(decided) == len(asks) - 1, "every check but the one left to its function decided on the JSON"

"""The cell checks' passing verdict of the fourth round, held to the function after every write.

``graders.checks_sheets._CellCheck`` builds once the verdict a cell check gets when its cell holds the expected
value to the letter (a float for a number, the very string for text) and hands that one object back whenever
a write leaves the cell so, instead of building evidence per check per write. These tests play writes as
``graders.progress`` does (``on_step`` once with no rows when it starts, then once a step with the document
rows) and compare each kept verdict with the function run on a fresh context: values that take the shortcut,
values that equal the expected one but must not (``True`` for 1, an int for a number, text that differs only in
case or spaces), and a required formula that is missing. No world: the document row sits in the context's memo.
"""

from __future__ import annotations

from typing import Any

from graders.base import ChangeRow, GradingContext
from graders.registry import check_fn_spec
from worlds.office.files import MIME

PATH = "Shared/Finance/Budget.xlsx"
ASKS: list[dict[str, Any]] = [
    {"document": PATH, "cell": "B2", "value": 40},
    {"document": PATH, "cell": "C2", "value": 52.5, "formula": True, "label": "Total"},
    {"document": PATH, "cell": "D2", "value": " Travel "},
    {"document": PATH, "cell": "E2", "value": 1, "tolerance": 0.5},
]


def _row(content: Any, version: int) -> tuple[Any, ...]:
    return (1, "Budget.xlsx", "spreadsheet", MIME["xlsx"], content, None, version)


def _book(b: Any, c: Any, d: Any, e: Any) -> dict[str, Any]:
    return {"sheets": [{"name": "Budget", "cells": {"A2": ["Travel", None], "B2": b, "C2": c, "D2": d, "E2": e}}]}


def _function(row: tuple[Any, ...], p: dict[str, Any]) -> tuple[Any, ...]:
    ctx = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
    ctx.memo[("document", PATH)] = row
    out = check_fn_spec("sheet_cell_equals").fn(ctx, **p)
    return out.score, out.evidence, dict(out.details)


def _score(answer: Any) -> float:
    """An ``on_step`` answer's score: a float is the score alone, a verdict holds it first."""
    return float(answer if type(answer) is float else answer[0])


def test_a_cell_holding_the_expected_value_gets_one_kept_verdict_and_near_misses_do_not():
    spec = check_fn_spec("sheet_cell_equals")
    assert spec.on_step is not None
    ctx = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
    row = _row(_book(["x", None], ["x", None], ["x", None], ["x", None]), 1)
    ctx.memo[("document", PATH)] = row
    spec.on_step(ctx, [], ASKS)  # progress starts: the checks are filed on the content in place
    exact = _book([40.0, None], [52.5, "=B2+12.5"], [" Travel ", None], [1.0, None])
    near = _book([40, "=40"], [52.5, None], ["travel", None], [True, "=1"])  # equal, but not to the letter
    hits: list[Any] = []
    for step, content in enumerate([exact, near, exact, exact], start=2):
        before, row = row[4], _row(content, step)
        changes = {"content": [before, content], "version": [step - 1, step]}
        rows = [ChangeRow.of({"seq": step, "table": "documents", "key": [1], "op": "update", "changes": changes})]
        ctx.forget()
        ctx.memo[("document", PATH)] = row
        verdicts = spec.on_step(ctx, rows, ASKS)
        if step == 5:  # the same cells written again: nothing moved, nothing decided
            assert verdicts == {}
            continue
        assert set(verdicts) == set(range(len(ASKS))), step
        for pos, out in verdicts.items():
            full = _function(row, ASKS[pos])
            assert out is not None and (out == full[0] if type(out) is float else out == full), (step, pos)
        hits.append(verdicts)
    first, missed, again = hits
    assert [_score(v) for v in missed.values()] == [1.0, 0.0, 1.0, 0.0]  # no formula; True is not the number 1
    assert all(_score(first[pos]) == 1.0 for pos in first)
    assert all(again[pos] is first[pos] for pos in first), "the passing verdict is handed back by identity"


def test_a_value_that_turns_from_number_to_boolean_is_a_change_though_python_calls_them_equal():
    """``1.0 == True`` (and ``0.0 == False``): the diff must still see the cell moved, as the function does."""
    spec = check_fn_spec("sheet_cell_equals")
    assert spec.on_step is not None
    asks = [*ASKS, {"document": PATH, "cell": "F2", "value": 0}]
    ctx = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
    row = _row(_book([40.0, None], [52.5, "=1"], [" Travel ", None], [1.0, None]), 1)
    row[4]["sheets"][0]["cells"]["F2"] = [0.0, None]  # no boolean before: the first write brings one in
    ctx.memo[("document", PATH)] = row
    spec.on_step(ctx, [], asks)
    kept = {pos: _function(row, p) for pos, p in enumerate(asks)}
    flips = [([True, None], [0.0, None]), ([1.0, None], [False, None]), ([1, None], [0, None])]
    for step, (e2, f2) in enumerate(flips, start=2):
        content = _book([40.0, None], [52.5, "=1"], [" Travel ", None], e2)
        content["sheets"][0]["cells"]["F2"] = f2
        changes = {"content": [row[4], content], "version": [step - 1, step]}
        row = _row(content, step)
        rows = [ChangeRow.of({"seq": step, "table": "documents", "key": [1], "op": "update", "changes": changes})]
        ctx.forget()
        ctx.memo[("document", PATH)] = row
        for pos, out in spec.on_step(ctx, rows, asks).items():
            if type(out) is float:  # the score alone (progress asks the function for the evidence later)
                assert out == _function(row, asks[pos])[0], (step, pos)
                out = None
            kept[pos] = _function(row, asks[pos]) if out is None else out
        for pos, p in enumerate(asks):
            assert kept[pos] == _function(row, p), (step, pos)

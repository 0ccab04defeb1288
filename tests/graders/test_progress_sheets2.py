"""The spreadsheet checks' ``on_step`` evaluators: one cell diff per write, only the checks it moves decided.

``graders.checks_sheets`` settles a rubric's sheet checks from the cells a write changed (one diff a write)
and an index of what each check reads, leaving out the checks it cannot move. A check left out keeps the
verdict it had, so these tests hold the kept table (as ``graders.progress`` keeps it) to each function run
on a fresh context after every write, through the paths a write can take: a key written, duplicated, renamed
and cleared, a total recalculated, a formula typed over, a sheet added (everything read again), a check whose
params cannot be read and one on a missing sheet.
"""

from __future__ import annotations

from typing import Any

from graders.base import GradingContext
from graders.registry import check_fn_spec
from worlds.office.files import MIME

PATH = "Shared/Finance/Expenses.xlsx"


def test_a_workbook_built_from_the_last_one_equals_a_fresh_parse():
    from graders.sheets_diff import _book_of
    from worlds.office.model import workbook_from_json

    def book(cells: dict[str, list[Any]], sheets: tuple[str, ...] = ("Expenses",)) -> dict[str, Any]:
        return {"sheets": [{"name": s, "cells": dict(cells) if i == 0 else {}} for i, s in enumerate(sheets)]}

    ctx = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
    cells: dict[str, list[Any]] = {"A1": ["Receipt", None], "B1": ["Amount", None], "A2": ["RC-1", None]}
    contents = [book(cells)]
    cells = {**cells, "B2": [12.5, None], "C1": [{"error": "#DIV/0!"}, "1/0"]}  # a value added, an error
    contents.append(book(cells))
    cells = {k: v for k, v in cells.items() if k != "A2"} | {"B2": [13, "B3+1"]}  # a cell cleared, one rewritten
    contents.append(book(cells))
    contents.append(book(cells, ("Expenses", "Notes")))  # a sheet added: parsed afresh
    contents.append(book({**cells, "$D$4": ["x", None]}, ("Expenses", "Notes")))  # a name parse_range reads
    contents.append(book({**cells, "$D$4": ["x", None], "D4": ["y", None]}, ("Expenses", "Notes")))  # one cell, 2 names
    contents.append(book({**cells, "D4": ["y", None]}, ("Expenses", "Notes")))
    built_from_base = 0
    for content in contents:
        base = ctx.lasting.get(("workbook", 7))
        built, fresh = _book_of(ctx, 7, content), workbook_from_json(content)
        assert [(s.name, s.cells) for s in built.sheets] == [(s.name, s.cells) for s in fresh.sheets]
        assert built.names == fresh.names
        if base is not None and any(c is base[1].sheets[0].cells.get(p) for p, c in built.sheets[0].cells.items()):
            built_from_base += 1  # a cell the write left alone is the base's parsed cell
    assert built_from_base >= 3


def _writes() -> list[tuple[str, dict[str, list[Any]], tuple[str, ...]]]:
    """An expense sheet as an agent fills it, a write a step: (what the write does, cells, sheet names)."""
    cells: dict[str, list[Any]] = {"A1": ["Receipt", None], "B1": ["Category", None], "C1": ["Amount", None]}
    cells["E1"] = [0.0, "SUM(C2:C9)"]
    sheets: tuple[str, ...] = ("Expenses",)
    out: list[tuple[str, dict[str, list[Any]], tuple[str, ...]]] = [("nothing yet", dict(cells), sheets)]

    def write(what: str, **new: list[Any] | None) -> None:
        for ref, value in new.items():
            if value is None:
                cells.pop(ref, None)
            else:
                cells[ref] = value
        total = sum(v[0] for r, v in cells.items() if r[0] == "C" and r != "C1" and isinstance(v[0], float))
        cells["E1"] = [total, cells["E1"][1]]
        out.append((what, dict(cells), sheets))

    write("a key", A2=["RC-1", None])
    write("its row", B2=["Travel", None], C2=[40.0, None])
    write("another row at once", A3=["RC-2", None], B3=["Meals", None], C3=[12.5, None])
    write("a cell no check reads", D7=["note", None])
    write("the key twice", A4=[" rc-2 ", None], B4=["Meals", None], C4=[12.5, None])
    write("the duplicate renamed", A4=["RC-3", None], C4=[99.0, None])
    write("a key cleared", A2=None)
    write("the key back", A2=["RC-1", None])
    write("the total typed over", E1=[151.5, None])
    sheets = ("Expenses", "Notes")
    write("a sheet added")
    write("an amount after it", C3=[13.0, None])
    return out


def test_sheet_on_step_keeps_what_a_fresh_grade_gives_and_decides_only_what_a_write_moved():
    asks: list[tuple[str, dict[str, Any]]] = [
        ("sheet_row_matches", {"key_column": "A", "key": k, "expected": {"B": c, "C": a}})
        for k, c, a in (("RC-1", "Travel", 40.0), ("RC-2", "Meals", 12.5), ("RC-3", "Meals", 99))
    ]
    asks += [
        ("sheet_row_matches", {"key_column": "a", "key": "RC-1", "expected": {"C": 40}, "sheet": "expenses"}),
        ("sheet_row_matches", {"key_column": "A", "key": "RC-1", "expected": {"B": "x"}, "sheet": "Notes"}),
        ("sheet_row_matches", {"key_column": "A", "key": "RC-2", "expected": {"??": 1}}),  # raises once found
        ("sheet_cell_equals", {"cell": "E1", "value": 151.5, "formula": True, "label": "Total"}),
        ("sheet_cell_equals", {"cell": "Expenses!C3", "value": 12.5}),
        ("sheet_cell_equals", {"cell": "Notes!A1", "value": None}),
        ("sheet_cell_equals", {"cell": "C9", "value": None}),
        ("sheet_cell_equals", {"cell": "not a cell", "value": 1}),
    ]
    params: dict[str, list[dict[str, Any]]] = {}
    where: list[tuple[str, int]] = []
    for fn, p in asks:
        group = params.setdefault(fn, [])
        where.append((fn, len(group)))
        group.append({"document": PATH, **p})

    def verdict(c: GradingContext, fn: str, p: dict[str, Any]) -> tuple[Any, ...]:
        try:
            out = check_fn_spec(fn).fn(c, **p)
        except Exception as exc:  # as run_outcome reports it
            return ("raised", type(exc).__name__)
        return out.score, out.evidence, dict(out.details)

    ctx = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
    kept: dict[tuple[str, int], tuple[Any, ...]] = {}
    decided: list[int] = []
    for version, (what, cells, sheets) in enumerate(_writes(), start=1):
        content = {"sheets": [{"name": s, "cells": dict(cells) if s == "Expenses" else {}} for s in sheets]}
        doc = (1, "Expenses.xlsx", "spreadsheet", MIME["xlsx"], content, None, version)
        ctx.forget()
        fresh = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
        for c in (ctx, fresh):
            c.memo[("document", PATH)] = doc
        if version == 1:  # progress starts: every check run by its function, then on_step asked with no rows
            kept = {w: verdict(ctx, w[0], params[w[0]][w[1]]) for w in where}
            for fn, group in params.items():
                check_fn_spec(fn).on_step(ctx, [], group)
            continue
        n = 0
        for fn, group in params.items():
            for pos, out in check_fn_spec(fn).on_step(ctx, [], group).items():
                if type(out) is float:  # the score alone: the function's, whose evidence progress asks later
                    full = verdict(ctx, fn, group[pos])
                    assert out == full[0], (what, fn, pos)
                    out = full
                kept[(fn, pos)] = verdict(ctx, fn, group[pos]) if out is None else out
                n += out is not None
        decided.append(n)
        if what == "the key twice":
            assert "2 rows (rows 3, 4)" in kept[("sheet_row_matches", 1)][1], "the duplicate was noticed"
        for w in where:
            assert kept[w] == verdict(fresh, w[0], params[w[0]][w[1]]), (what, asks[where.index(w)])
    assert decided[3] == 0, "a cell no check reads decides nothing"
    assert decided[0] == 2 and decided[1] == 3, "a write to one row decides its key's checks (and the total's)"
    assert decided[9] == len(asks) - 1, "a sheet added decides every check again (bar the unreadable one)"

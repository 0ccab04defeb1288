"""The documents apps' environment for ``check_app``: a folder, a spreadsheet and a text document to act on.

A generated world's documents belong to department heads and project leads, and the checking actor may hold no
spreadsheet at all, so both apps' examples act on these, created for the actor before the calls. A coworker
gets comment access to the text document, so the sharing examples change a real share.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcp_tools.base import ToolContext
from mcp_tools.docs import store
from worlds.office.a1 import parse_range
from worlds.office.model import Block, Cell, Sheet, TextDoc, Workbook
from worlds.rawsql import Sql

FOLDER = "Check workspace"
SHEET = f"{FOLDER}/Check plan.xlsx"
TEXT = f"{FOLDER}/Check notes.docx"


def sample_workbook() -> Workbook:
    """A small plan: items, amounts and a doubled column, with totals and a defined name."""
    sheet = Sheet(name="Plan")
    rows: list[list[str | float]] = [
        ["Item", "Amount", "Double"],
        ["Q1", 10.0, "=B2*2"],
        ["Q2", 20.0, "=B3*2"],
        ["Total", "=SUM(B2:B3)", "=SUM(C2:C3)"],
    ]
    for r, row in enumerate(rows):
        for c, v in enumerate(row):
            formula = v[1:] if isinstance(v, str) and v.startswith("=") else None
            sheet.cells[(r, c)] = Cell(formula=formula) if formula is not None else Cell(value=v)
    book = Workbook(sheets=[sheet])
    book.names["Amounts"] = parse_range("Plan!B2:B3")
    return book


def sample_text() -> TextDoc:
    """Notes with two sections."""
    return TextDoc(
        blocks=[
            Block(level=1, text="Goals"),
            Block(level=0, text="Ship the plan."),
            Block(level=1, text="Risks"),
            Block(level=0, text="None known."),
        ]
    )


@contextmanager
def documents(ctx: ToolContext, scratch: Path) -> Iterator[None]:
    """Create the folder and both documents for ``ctx.actor``; shares the text with a coworker."""
    from worlds.office import formula

    sql = Sql.of(ctx.session)
    sql.insert(
        "doc_folders",
        {"parent_id": None, "name": FOLDER, "owner_id": ctx.actor.employee_id, "created_at": ctx.clock.now()},
    )
    book = sample_workbook()
    for (si, r, c), v in formula.recalculate(book).items():
        book.sheets[si].cells[(r, c)].value = v
    store.create(ctx, sql, FOLDER, SHEET.rsplit("/", 1)[1], "spreadsheet", None, book)
    made = store.create(ctx, sql, FOLDER, TEXT.rsplit("/", 1)[1], "text", None, sample_text())
    coworker = sql.scalar(
        "SELECT id FROM employees WHERE id <> ? AND active = ? ORDER BY id LIMIT 1", (ctx.actor.employee_id, True)
    )
    sql.insert("document_shares", {"document_id": made["id"], "employee_id": coworker, "permission": "comment"})
    yield

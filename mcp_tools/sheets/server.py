"""The spreadsheet tools: thin, documented wrappers over ``mcp_tools.sheets.service``.

Documents are named by path (``Shared/Finance/Budget 2026``) or id; ranges in A1 notation, optionally with a
sheet (``Budget!B2:E9``, ``'Q1 plan'!A1``), or a defined name. Folders, listing and sharing are docs_* tools.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp_tools.base import READ, WRITE, ToolContext, ToolSet, current_context
from mcp_tools.docs import checkenv
from mcp_tools.sheets import service

sheets = ToolSet("sheets")


@sheets.tool(READ)
def list_sheets(document: str) -> dict[str, Any]:
    """List a spreadsheet's sheets with their used ranges, and its defined names.

    Args:
        document: Path such as Shared/Finance/Budget 2026, or the document id.
    """
    return service.list_sheets(current_context(), document)


@sheets.tool(READ)
def read_range(document: str, range: str | None = None) -> dict[str, Any]:
    """Read the values and formulas of a range; errors show as codes such as #DIV/0!.

    Args:
        document: Path such as Shared/Finance/Budget 2026, or the document id.
        range: A1 range such as B2:F9 or Budget!B2:F9, or a defined name; the first sheet's used range if omitted.
    """
    return service.read_range(current_context(), document, range)


@sheets.tool(WRITE)
def write_range(document: str, range: str, values: str) -> dict[str, Any]:
    """Write a block of values and formulas; formulas everywhere are recalculated and the result returned.

    Args:
        document: Path or id of a spreadsheet you can edit.
        range: Target such as B2:C3, or just its top-left cell (B2); a sheet prefix picks the sheet.
        values: JSON array of rows, e.g. [["Q1", 100, "=B2*2"], ["Q2", 120, null]]; "=" starts a formula,
            a leading ' keeps text literal, null clears a cell.
    """
    return service.write_range(current_context(), document, range, values)


@sheets.tool(WRITE)
def write_cell(document: str, cell: str, value: str) -> dict[str, Any]:
    """Set one cell as if typed: 42 is a number, TRUE a boolean, =SUM(B2:B9) a formula, empty clears.

    Args:
        document: Path or id of a spreadsheet you can edit.
        cell: Cell such as B7 or Budget!B7.
        value: What to type; a leading ' keeps it as text ('0042).
    """
    return service.write_cell(current_context(), document, cell, value)


@sheets.tool(WRITE)
def add_sheet(document: str, name: str) -> dict[str, Any]:
    r"""Add an empty sheet at the end of a spreadsheet.

    Args:
        document: Path or id of a spreadsheet you can edit.
        name: Sheet name (1-31 characters, none of []:*?/\\).
    """
    return service.add_sheet(current_context(), document, name)


@sheets.tool(WRITE)
def define_name(document: str, name: str, range: str) -> dict[str, Any]:
    """Define or redefine a named range usable in formulas (=SUM(Revenue)) and in sheets_read_range.

    Args:
        document: Path or id of a spreadsheet you can edit.
        name: Name such as Revenue (letters, digits, _ and .; not like a cell such as A1).
        range: The range it stands for, such as Budget!B2:B9.
    """
    return service.define_name(current_context(), document, name, range)


@sheets.tool(READ)
def list_names(document: str) -> dict[str, Any]:
    """List a spreadsheet's defined names and their ranges.

    Args:
        document: Path such as Shared/Finance/Budget 2026, or the document id.
    """
    return service.list_names(current_context(), document)


@sheets.tool(WRITE)
def create(name: str, folder: str, format: str | None = None, values: str | None = None) -> dict[str, Any]:
    """Create a spreadsheet you own (XLSX or ODS) with one sheet, optionally filled from A1.

    Args:
        name: File name; an .xlsx or .ods ending picks the format.
        folder: Folder path such as Shared/Finance (see docs_list).
        format: xlsx or ods when the name has no ending (default ods).
        values: Optional JSON array of rows written from A1, as in sheets_write_range.
    """
    return service.create(current_context(), name, folder, format, values)


EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "sheets_list_sheets": [{"document": checkenv.SHEET}],
    "sheets_read_range": [{"document": checkenv.SHEET}, {"document": checkenv.SHEET, "range": "Plan!A1:C3"}],
    "sheets_write_range": [{"document": checkenv.SHEET, "range": "A5", "values": '[["Q3", 30, "=B5*2"]]'}],
    "sheets_write_cell": [{"document": checkenv.SHEET, "cell": "B2", "value": "15"}],
    "sheets_add_sheet": [{"document": checkenv.SHEET, "name": "Forecast"}],
    "sheets_define_name": [{"document": checkenv.SHEET, "name": "Totals", "range": "Plan!C2:C3"}],
    "sheets_list_names": [{"document": checkenv.SHEET}],
    "sheets_create": [
        {
            "name": "Check forecast.xlsx",
            "folder": checkenv.FOLDER,
            "values": '[["Item", "Cost"], ["A", 2], ["Sum", "=SUM(B2)"]]',
        }
    ],
}
"""Example calls for ``mcp_tools.check.check_app`` (documents made by ``CHECK_ENV``)."""


@contextmanager
def CHECK_ENV(ctx: ToolContext, scratch: Path) -> Iterator[None]:  # noqa: N802 - the name check_app looks up
    """A folder and a spreadsheet owned by the checking actor, for the examples."""
    with checkenv.documents(ctx, scratch):
        yield

"""Formula recalculation engines and how one is chosen.

Two engines compute the cached value of every formula cell after a change:

* ``PythonEngine``: ``worlds.office.formula`` on the in-memory model. Microseconds per cell, no process, always
  available; graders and the generator use it, and it is the fallback.
* ``LibreOfficeEngine``: real LibreOffice Calc, a long-lived headless ``soffice`` driven over UNO
  (``mcp_tools.sheets.libreoffice``), started lazily once per process. The file is loaded from memory,
  ``calculateAll()`` runs, and the result of each formula cell is read back.

Choice: ``COMPANYSIM_RECALC`` = ``auto`` (default: LibreOffice when ``soffice`` and python3-uno are installed,
else Python), ``libreoffice`` (required: an error if it cannot start) or ``python``. Whatever the engine, the
Python evaluator first validates the workbook (unknown sheets or names, cycles), so the same edit is refused the
same way everywhere, and the stored file is always written by our deterministic writer with the engine's
values as cached results: LibreOffice computes, it never writes the stored bytes.
"""

from __future__ import annotations

import os
from typing import Protocol

from mcp_tools.errors import InvalidArgument, Unavailable
from worlds.office import formula
from worlds.office.model import Value, Workbook

ENV = "COMPANYSIM_RECALC"
CHOICES = ("auto", "libreoffice", "python")


class Recalculator(Protocol):
    """Computes every formula cell's value of a workbook (keyed by sheet index, row, col)."""

    name: str

    def recalculate(self, book: Workbook, fmt: str) -> dict[tuple[int, int, int], Value]:
        """Values of every formula cell; ``fmt`` is the file format the workbook is stored in."""
        ...


class PythonEngine:
    """The pure-Python evaluator."""

    name = "python"

    def recalculate(self, book: Workbook, fmt: str) -> dict[tuple[int, int, int], Value]:
        """Values of every formula cell by ``worlds.office.formula``."""
        return formula.recalculate(book)


PYTHON = PythonEngine()


def choice() -> str:
    """The configured engine choice.

    Raises:
        InvalidArgument: ``COMPANYSIM_RECALC`` holds something else.
    """
    value = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if value not in CHOICES:
        raise InvalidArgument(f"{ENV} must be one of {', '.join(CHOICES)}; got {value[:20]!r}")
    return value


def get_engine() -> Recalculator:
    """The engine to use now, per ``COMPANYSIM_RECALC``.

    Raises:
        Unavailable: ``libreoffice`` was required and cannot run here.
    """
    want = choice()
    if want == "python":
        return PYTHON
    from mcp_tools.sheets import libreoffice

    if libreoffice.available():
        return libreoffice.engine()
    if want == "libreoffice":
        raise Unavailable(f"{ENV}=libreoffice but LibreOffice cannot run here: {libreoffice.unavailable_reason()}")
    return PYTHON

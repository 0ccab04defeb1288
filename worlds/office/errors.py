"""Errors of the office file layer: what can be wrong with a file, a cell reference or a formula.

Tree::

    WorldError
    └── OfficeError
        ├── CorruptFile        the bytes are not a readable file of the claimed format
        ├── UnsupportedFormat  a format (or feature) this layer does not read or write
        ├── InvalidCell        a cell, range, sheet or name reference that does not parse or is out of bounds
        ├── InvalidFormula     a formula that does not parse, calls an unknown function or is circular
        └── FileTooLarge       over a documented size cap (bytes, cells, characters, zip members)

The apps (``mcp_tools``) map each one to a ToolError code of the same name; the messages say what was
expected and what was found.
"""

from __future__ import annotations

from worlds.errors import WorldError


class OfficeError(WorldError):
    """Root of the office file errors."""


class CorruptFile(OfficeError):
    """The bytes do not form a readable file of the claimed format."""


class UnsupportedFormat(OfficeError):
    """The format, or a feature inside the file, is not supported."""


class InvalidCell(OfficeError):
    """A cell, range, sheet or defined-name reference is malformed or out of bounds."""


class InvalidFormula(OfficeError):
    """A formula does not parse, names an unknown function, sheet or name, or refers to itself."""


class FileTooLarge(OfficeError):
    """Over a size cap; the message names the cap."""

"""Office files as real bytes: ODS/XLSX workbooks and ODT/DOCX text documents, read and written in pure Python.

``worlds`` owns this (not ``mcp_tools``) because the world generator writes real files and may not import the
apps. Modules: ``model`` (Workbook, TextDoc), ``a1`` (cell references), ``formula`` (parser, OpenFormula
translation, the Python recalculation engine), ``xlsx``/``ods``/``docx``/``odt`` (formats), ``files``
(dispatch and caps), ``ziputil`` (deterministic zips, capped reading), ``errors``.
"""

from worlds.office.errors import CorruptFile, FileTooLarge, InvalidCell, InvalidFormula, OfficeError, UnsupportedFormat

__all__ = ["CorruptFile", "FileTooLarge", "InvalidCell", "InvalidFormula", "OfficeError", "UnsupportedFormat"]

"""Office files by format: which formats exist, their MIME types, and read/write dispatch with size caps.

Caps (documented limits; over them is ``FileTooLarge``): a stored file is at most ``MAX_FILE_BYTES``; a
workbook at most ``MAX_CELLS`` non-empty cells; a text document at most ``MAX_CHARS`` characters. They keep one
tool call's parse and the database small; real office suites go further, agents' documents never need to.
"""

from __future__ import annotations

from worlds.office import docx, ods, odt, xlsx
from worlds.office.errors import CorruptFile, FileTooLarge, UnsupportedFormat
from worlds.office.model import TextDoc, Workbook

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_CELLS = 100_000
MAX_CHARS = 500_000

SHEET_FORMATS = ("xlsx", "ods")
TEXT_FORMATS = ("docx", "odt")
MIME = {"xlsx": xlsx.MIME, "ods": ods.MIME, "docx": docx.MIME, "odt": odt.MIME}
FORMAT_OF_MIME = {v: k for k, v in MIME.items()}


def kind_of(fmt: str) -> str:
    """``spreadsheet`` or ``text`` for a format."""
    return "spreadsheet" if fmt in SHEET_FORMATS else "text"


def format_of_mime(mime: str) -> str:
    """The format of a MIME type.

    Raises:
        UnsupportedFormat: a MIME type none of the four formats has.
    """
    fmt = FORMAT_OF_MIME.get(mime)
    if fmt is None:
        raise UnsupportedFormat(f"expected one of {', '.join(sorted(MIME))}; the document is {mime[:80]!r}")
    return fmt


def _check_size(data: bytes) -> None:
    if len(data) > MAX_FILE_BYTES:
        raise FileTooLarge(f"the file is {len(data)} bytes; the limit is {MAX_FILE_BYTES}")


def read_workbook(data: bytes, fmt: str) -> Workbook:
    """Parse spreadsheet bytes of ``fmt``.

    Raises:
        CorruptFile, UnsupportedFormat, FileTooLarge: see ``worlds.office.errors``.
    """
    _check_size(data)
    if fmt == "xlsx":
        return xlsx.read_xlsx(data, MAX_CELLS)
    if fmt == "ods":
        return ods.read_ods(data, MAX_CELLS)
    raise UnsupportedFormat(f"expected a spreadsheet format ({', '.join(SHEET_FORMATS)}); got {fmt!r}")


def write_workbook(book: Workbook, fmt: str) -> bytes:
    """Spreadsheet bytes of ``fmt`` (deterministic).

    Raises:
        FileTooLarge: over the cell or byte caps.
        UnsupportedFormat: not a spreadsheet format.
    """
    if book.cell_count() > MAX_CELLS:
        raise FileTooLarge(f"the workbook would have {book.cell_count()} cells; the limit is {MAX_CELLS}")
    if fmt == "xlsx":
        data = xlsx.write_xlsx(book)
    elif fmt == "ods":
        data = ods.write_ods(book)
    else:
        raise UnsupportedFormat(f"expected a spreadsheet format ({', '.join(SHEET_FORMATS)}); got {fmt!r}")
    _check_size(data)
    return data


def read_text(data: bytes, fmt: str) -> TextDoc:
    """Parse text-document bytes of ``fmt``.

    Raises:
        CorruptFile, UnsupportedFormat, FileTooLarge: see ``worlds.office.errors``.
    """
    _check_size(data)
    if fmt == "docx":
        return docx.read_docx(data, MAX_CHARS)
    if fmt == "odt":
        return odt.read_odt(data, MAX_CHARS)
    raise UnsupportedFormat(f"expected a text format ({', '.join(TEXT_FORMATS)}); got {fmt!r}")


def write_text(doc: TextDoc, fmt: str) -> bytes:
    """Text-document bytes of ``fmt`` (deterministic).

    Raises:
        FileTooLarge: over the character or byte caps.
        UnsupportedFormat: not a text format.
    """
    if doc.char_count() > MAX_CHARS:
        raise FileTooLarge(f"the document would have {doc.char_count()} characters; the limit is {MAX_CHARS}")
    if fmt == "docx":
        data = docx.write_docx(doc)
    elif fmt == "odt":
        data = odt.write_odt(doc)
    else:
        raise UnsupportedFormat(f"expected a text format ({', '.join(TEXT_FORMATS)}); got {fmt!r}")
    _check_size(data)
    return data


def sniff(data: bytes) -> str:
    """The format of office bytes from their content (not a name).

    Raises:
        CorruptFile: not a zip, or a zip of none of the four formats.
        UnsupportedFormat: a recognisable office file of another kind (legacy .doc/.xls, presentations).
    """
    if data[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":
        raise UnsupportedFormat("legacy binary Office files (.doc, .xls) are not supported; use DOCX/XLSX/ODT/ODS")
    if data[:4] != b"PK\x03\x04":
        raise CorruptFile("expected an office file (a zip container); the bytes are not one")
    head = data[:200]
    for fmt in ("ods", "odt"):
        if b"mimetype" in head[:60] and MIME[fmt].encode() in head:
            return fmt
    if b"opendocument" in head:
        raise UnsupportedFormat("only ODT and ODS OpenDocument files are supported")
    if b"xl/" in data:
        return "xlsx"
    if b"word/" in data:
        return "docx"
    raise CorruptFile("the zip is not an XLSX, ODS, DOCX or ODT file")

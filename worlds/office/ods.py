"""ODS (OpenDocument spreadsheet) writing and reading for the ``Workbook`` model.

The writer emits ``mimetype`` (stored, first, as ODF requires), a manifest and ``content.xml`` with one
``table:table`` per sheet, gaps compressed with ``number-rows-repeated`` / ``number-columns-repeated``,
formulas in OpenFormula (``of:=SUM([.B2:.E2])``) with their cached value, and named ranges. No ``meta.xml`` (it
would carry wall-clock dates), so the bytes depend on the content only.

The reader handles what LibreOffice writes: repeated rows and columns (huge repeats of empty cells are
skipped, not expanded), header-row and row-group wrappers, covered cells, paragraphs, spaces and line breaks,
and the float / percentage / currency / string / boolean / date value types.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET  # noqa: S405 - parsed through ziputil.parse_xml

from worlds.office.a1 import MAX_COLS, MAX_ROWS, Area, col_letters
from worlds.office.errors import CorruptFile, FileTooLarge, InvalidFormula
from worlds.office.formula import from_openformula, number_text, of_reference, quote_sheet_of, to_openformula
from worlds.office.model import ERROR_CODES, Cell, Err, Sheet, Value, Workbook
from worlds.office.xmltext import attr, odf_read_text, odf_text
from worlds.office.ziputil import SafeZip, parse_xml, write_zip

MIME = "application/vnd.oasis.opendocument.spreadsheet"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
CALCEXT = "urn:org:documentfoundation:names:experimental:calc:xmlns:calcext:1.0"
_NS = (
    f'xmlns:office="{OFFICE}" xmlns:table="{TABLE}" xmlns:text="{TEXT}" xmlns:calcext="{CALCEXT}" '
    'xmlns:of="urn:oasis:names:tc:opendocument:xmlns:of:1.2" '
    'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"'
)
_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def manifest(mime: str, parts: list[str]) -> bytes:
    """META-INF/manifest.xml listing ``parts`` (all XML)."""
    entries = "".join(f'<manifest:file-entry manifest:full-path="{p}" manifest:media-type="text/xml"/>' for p in parts)
    return (
        f'{_HEAD}<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
        f'manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:version="1.3" '
        f'manifest:media-type="{mime}"/>{entries}</manifest:manifest>'
    ).encode()


def _cell_xml(cell: Cell) -> str:
    v: Value = cell.value
    f = f' table:formula="{attr(to_openformula(cell.formula))}"' if cell.formula is not None else ""
    if isinstance(v, bool):
        return (
            f'<table:table-cell{f} office:value-type="boolean" office:boolean-value="{str(v).lower()}" '
            f'calcext:value-type="boolean"><text:p>{"TRUE" if v else "FALSE"}</text:p></table:table-cell>'
        )
    if isinstance(v, float | int):
        x = float(v)
        shown = number_text(x) if x == int(x) and abs(x) < 1e15 else repr(x)
        return (
            f'<table:table-cell{f} office:value-type="float" office:value="{shown}" calcext:value-type="float">'
            f"<text:p>{number_text(x)}</text:p></table:table-cell>"
        )
    if isinstance(v, Err):
        return (
            f'<table:table-cell{f} office:value-type="string" office:string-value="" calcext:value-type="error">'
            f"<text:p>{attr(v.code)}</text:p></table:table-cell>"
        )
    if isinstance(v, str):
        paras = "".join(f"<text:p>{odf_text(line)}</text:p>" for line in v.split("\n"))
        sv = f' office:string-value="{attr(v)}"' if f else ""
        return (
            f'<table:table-cell{f} office:value-type="string"{sv} calcext:value-type="string">{paras}'
            "</table:table-cell>"
        )
    return f"<table:table-cell{f}/>"


def _table_xml(sheet: Sheet) -> str:
    n_rows, n_cols = sheet.extent()
    width = max(1, n_cols)
    out = [
        f'<table:table table:name="{attr(sheet.name)}"><table:table-column table:number-columns-repeated="{width}"/>'
    ]
    rows: dict[int, list[tuple[int, Cell]]] = {}
    for (r, c), cell in sorted(sheet.cells.items()):
        rows.setdefault(r, []).append((c, cell))
    empty_row = f'<table:table-cell table:number-columns-repeated="{width}"/>'
    last = -1
    for r in sorted(rows):
        if r - last > 1:
            out.append(f'<table:table-row table:number-rows-repeated="{r - last - 1}">{empty_row}</table:table-row>')
        parts, col = [], 0
        for c, cell in rows[r]:
            if c > col:
                parts.append(f'<table:table-cell table:number-columns-repeated="{c - col}"/>')
            parts.append(_cell_xml(cell))
            col = c + 1
        if col < width:
            parts.append(f'<table:table-cell table:number-columns-repeated="{width - col}"/>')
        out.append(f"<table:table-row>{''.join(parts)}</table:table-row>")
        last = r
    if n_rows == 0:
        out.append(f"<table:table-row>{empty_row}</table:table-row>")
    out.append("</table:table>")
    return "".join(out)


CALC_SETTINGS = (
    '<table:calculation-settings table:case-sensitive="false" table:use-regular-expressions="false"'
    ' table:use-wildcards="true" table:search-criteria-must-apply-to-whole-cell="true"/>'
)
"""Excel's matching rules, stated in the file: ODF defaults to case-sensitive comparison and regular
expressions in criteria, so without this ``="a"="A"`` and ``SUMIF(..., "b*")`` would differ between a
LibreOffice recalculation of our ODS, of our XLSX and the Python engine."""


def _of_address(sheet: str, a: Area) -> str:
    q = quote_sheet_of(sheet)
    first = f"${q}.${col_letters(a.c1)}${a.r1 + 1}"
    return first if a.size == 1 else f"{first}:.${col_letters(a.c2)}${a.r2 + 1}"


def write_ods(book: Workbook) -> bytes:
    """The workbook as ODS bytes (deterministic)."""
    tables = "".join(_table_xml(s) for s in book.sheets)
    named = ""
    if book.names:
        items = []
        for name, a in sorted(book.names.items()):
            sheet = a.sheet if a.sheet is not None else book.sheets[0].name
            base = f"${quote_sheet_of(sheet)}.$A$1"
            items.append(
                f'<table:named-range table:name="{attr(name)}" table:base-cell-address="{attr(base)}" '
                f'table:cell-range-address="{attr(_of_address(sheet, a))}"/>'
            )
        named = f"<table:named-expressions>{''.join(items)}</table:named-expressions>"
    content = (
        f'{_HEAD}<office:document-content {_NS} office:version="1.3"><office:body><office:spreadsheet>'
        f"{CALC_SETTINGS}{tables}{named}</office:spreadsheet></office:body></office:document-content>"
    )
    return write_zip(
        [
            ("mimetype", MIME.encode(), False),
            ("content.xml", content.encode(), True),
            ("META-INF/manifest.xml", manifest(MIME, ["content.xml"]), True),
        ]
    )


# -- reading ----------------------------------------------------------------------------------------------------


def _t(tag: str) -> str:
    return f"{{{TABLE}}}{tag}"


def _o(tag: str) -> str:
    return f"{{{OFFICE}}}{tag}"


def _value(cell: ET.Element) -> Value:
    kind = cell.get(_o("value-type"))
    ext = cell.get(f"{{{CALCEXT}}}value-type")
    text = "\n".join(odf_read_text(p) for p in cell.findall(f"{{{TEXT}}}p"))
    if ext == "error" and text in ERROR_CODES:
        return Err(text)
    if kind in ("float", "percentage", "currency"):
        try:
            return float(cell.get(_o("value"), "0"))
        except ValueError:
            raise CorruptFile(f"a numeric cell holds {cell.get(_o('value'))!r}") from None
    if kind == "boolean":
        return cell.get(_o("boolean-value"), "false").lower() == "true"
    if kind == "date":
        return cell.get(_o("date-value")) or text
    if kind == "time":
        return cell.get(_o("time-value")) or text
    if kind == "string":
        sv = cell.get(_o("string-value"))
        return sv if sv else text
    return text or None


def _rows(table: ET.Element) -> list[ET.Element]:
    out = []
    for child in table:
        if child.tag == _t("table-row"):
            out.append(child)
        elif child.tag in (_t("table-header-rows"), _t("table-row-group"), _t("table-rows")):
            out += _rows(child)
    return out


def _read_table(table: ET.Element, max_cells: int) -> Sheet:
    sheet = Sheet(name=table.get(_t("name")) or "Sheet1")
    r = 0
    for row in _rows(table):
        row_rep = int(row.get(_t("number-rows-repeated"), "1"))
        c = 0
        found: list[tuple[int, Cell]] = []
        for cell in row:
            if cell.tag not in (_t("table-cell"), _t("covered-table-cell")):
                continue
            col_rep = int(cell.get(_t("number-columns-repeated"), "1"))
            formula = cell.get(_t("formula"))
            value = _value(cell)
            if value is not None or formula is not None:
                parsed = None
                if formula is not None:
                    try:
                        parsed = from_openformula(formula)
                    except InvalidFormula as exc:
                        raise CorruptFile(f"a formula cannot be read: {exc}") from None
                for k in range(min(col_rep, MAX_COLS - c)):
                    found.append((c + k, Cell(value=value, formula=parsed)))
            c += col_rep
        if found:
            if row_rep * len(found) + len(sheet.cells) > max_cells:
                raise FileTooLarge(f"the sheet {sheet.name!r} has more than {max_cells} cells")
            for k in range(row_rep):
                for col, one in found:
                    if r + k < MAX_ROWS and col < MAX_COLS:
                        sheet.cells[(r + k, col)] = Cell(value=one.value, formula=one.formula)
        r += row_rep
    return sheet


def read_ods(data: bytes, max_cells: int) -> Workbook:
    """Read ODS bytes into a Workbook.

    Raises:
        CorruptFile: not an ODS package, or broken parts.
        FileTooLarge: more than ``max_cells`` cells, or over the zip caps.
    """
    z = SafeZip(data)
    mime = (z.read("mimetype", required=False) or MIME.encode()).strip()
    if mime != MIME.encode():
        raise CorruptFile(f"expected an ODS spreadsheet; the file says it is {mime[:80]!r}")
    root = parse_xml(z.read("content.xml") or b"", "content.xml")
    body = root.find(f"{_o('body')}/{_o('spreadsheet')}")
    if body is None:
        raise CorruptFile("content.xml has no spreadsheet body")
    book = Workbook()
    for table in body.findall(_t("table")):
        try:
            book.sheets.append(_read_table(table, max_cells - book.cell_count()))
        except ValueError as exc:
            raise CorruptFile(f"a repeat count is not a number ({exc})") from None
    if not book.sheets:
        raise CorruptFile("the spreadsheet has no sheets")
    named = body.find(_t("named-expressions"))
    for nr in named.findall(_t("named-range")) if named is not None else []:
        name, address = nr.get(_t("name"), ""), nr.get(_t("cell-range-address"), "")
        try:
            target = of_reference(address)
        except InvalidFormula:
            continue
        if target.sheet is not None and book.has_sheet(target.sheet):
            book.names[name] = target
    return book

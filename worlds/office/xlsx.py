"""XLSX (Office Open XML spreadsheet) writing and reading for the ``Workbook`` model.

The writer emits the smallest package Excel and LibreOffice both open: content types, relationships, a
workbook with sheets and defined names, a minimal style sheet, and one worksheet per sheet with inline strings.
Formula cells carry their cached value (``<v>``) so a reader that never calculates (openpyxl with
``data_only=True``, a grader) sees results; ``fullCalcOnLoad`` asks Excel to recalculate anyway. No document
properties are written (they would carry wall-clock dates), so the bytes depend on the content only.

The reader accepts what Excel and LibreOffice write: shared strings, inline strings, shared formulas,
booleans, errors, rich-text runs and cells without an ``r`` attribute.
"""

from __future__ import annotations

import re
from xml.etree import ElementTree as ET  # noqa: S405 - parsed through ziputil.parse_xml

from worlds.office.a1 import Area, cell_name, parse_cell, parse_range, split_sheet
from worlds.office.errors import CorruptFile, FileTooLarge, InvalidCell, UnsupportedFormat
from worlds.office.formula import number_text, shift
from worlds.office.model import Cell, Err, Sheet, Value, Workbook
from worlds.office.xmltext import attr, esc
from worlds.office.ziputil import SafeZip, parse_xml, write_zip

MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
STRICT = "http://purl.oclc.org/ooxml/spreadsheetml/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_STYLES = (
    f'{_HEAD}<styleSheet xmlns="{MAIN}"><fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/>'
    '</fill></fills><borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>'
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>'
)


def _num(x: float) -> str:
    return number_text(x) if x == int(x) and abs(x) < 1e15 else repr(x)


def _cell_xml(ref: str, cell: Cell) -> str:
    v: Value = cell.value
    f = f"<f>{esc(cell.formula)}</f>" if cell.formula is not None else ""
    if isinstance(v, bool):
        return f'<c r="{ref}" t="b">{f}<v>{int(v)}</v></c>'
    if isinstance(v, float | int):
        return f'<c r="{ref}">{f}<v>{_num(float(v))}</v></c>'
    if isinstance(v, Err):
        return f'<c r="{ref}" t="e">{f}<v>{esc(v.code)}</v></c>'
    if isinstance(v, str):
        if f:
            return f'<c r="{ref}" t="str">{f}<v>{esc(v)}</v></c>'
        return f'<c r="{ref}" t="inlineStr"><is><t xml:space="preserve">{esc(v)}</t></is></c>'
    return f'<c r="{ref}">{f}</c>'


def _sheet_xml(sheet: Sheet) -> str:
    rows: dict[int, list[str]] = {}
    for (r, c), cell in sorted(sheet.cells.items()):
        rows.setdefault(r, []).append(_cell_xml(cell_name(r, c), cell))
    n_rows, n_cols = sheet.extent()
    dim = f"A1:{cell_name(n_rows - 1, n_cols - 1)}" if n_rows else "A1"
    body = "".join(f'<row r="{r + 1}">{"".join(cells)}</row>' for r, cells in rows.items())
    return f'{_HEAD}<worksheet xmlns="{MAIN}"><dimension ref="{dim}"/><sheetData>{body}</sheetData></worksheet>'


def write_xlsx(book: Workbook) -> bytes:
    """The workbook as XLSX bytes (deterministic)."""
    n = len(book.sheets)
    types = "".join(
        f'<Override PartName="/xl/worksheets/sheet{i}.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        for i in range(1, n + 1)
    )
    content_types = (
        f'{_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/styles.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
        f"{types}</Types>"
    )
    root_rels = (
        f'{_HEAD}<Relationships xmlns="{PKG_REL}"><Relationship Id="rId1" '
        f'Type="{REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
    )
    sheets = "".join(
        f'<sheet name="{attr(s.name)}" sheetId="{i}" r:id="rId{i}"/>' for i, s in enumerate(book.sheets, start=1)
    )
    names = "".join(
        f'<definedName name="{attr(k)}">{esc(_name_target(book, v))}</definedName>'
        for k, v in sorted(book.names.items())
    )
    workbook = (
        f'{_HEAD}<workbook xmlns="{MAIN}" xmlns:r="{REL}"><sheets>{sheets}</sheets>'
        + (f"<definedNames>{names}</definedNames>" if names else "")
        + '<calcPr calcId="191029" fullCalcOnLoad="1"/></workbook>'
    )
    wb_rels = "".join(
        f'<Relationship Id="rId{i}" Type="{REL}/worksheet" Target="worksheets/sheet{i}.xml"/>' for i in range(1, n + 1)
    )
    wb_rels = (
        f'{_HEAD}<Relationships xmlns="{PKG_REL}">{wb_rels}'
        f'<Relationship Id="rId{n + 1}" Type="{REL}/styles" Target="styles.xml"/></Relationships>'
    )
    members: list[tuple[str, bytes, bool]] = [
        ("[Content_Types].xml", content_types.encode(), True),
        ("_rels/.rels", root_rels.encode(), True),
        ("xl/workbook.xml", workbook.encode(), True),
        ("xl/_rels/workbook.xml.rels", wb_rels.encode(), True),
        ("xl/styles.xml", _STYLES.encode(), True),
    ]
    for i, sheet in enumerate(book.sheets, start=1):
        members.append((f"xl/worksheets/sheet{i}.xml", _sheet_xml(sheet).encode(), True))
    return write_zip(members)


def _name_target(book: Workbook, a: Area) -> str:
    sheet = a.sheet if a.sheet is not None else book.sheets[0].name
    return Area(sheet=sheet, r1=a.r1, c1=a.c1, r2=a.r2, c2=a.c2).a1(absolute=True)


# -- reading ----------------------------------------------------------------------------------------------------


def _q(ns: str, tag: str) -> str:
    return f"{{{ns}}}{tag}"


def _shared_strings(z: SafeZip, path: str, ns: str) -> list[str]:
    data = z.read(path, required=False)
    if data is None:
        return []
    root = parse_xml(data, "the shared strings")
    out = []
    for si in root.findall(_q(ns, "si")):
        parts = [t.text or "" for t in si.findall(_q(ns, "t"))]
        parts += [t.text or "" for r in si.findall(_q(ns, "r")) for t in r.findall(_q(ns, "t"))]
        out.append("".join(parts))
    return out


def _rels(z: SafeZip, path: str) -> dict[str, str]:
    data = z.read(path, required=False)
    if data is None:
        return {}
    root = parse_xml(data, path)
    return {r.get("Id", ""): r.get("Target", "") for r in root.findall(_q(PKG_REL, "Relationship"))}


def _resolve(base: str, target: str) -> str:
    if target.startswith("/"):
        return target.lstrip("/")
    parts = base.split("/")[:-1]
    for seg in target.split("/"):
        if seg == "..":
            if parts:
                parts.pop()
        elif seg and seg != ".":
            parts.append(seg)
    return "/".join(parts)


def _value(c: ET.Element, ns: str, strings: list[str]) -> Value:
    t = c.get("t", "n")
    v = c.find(_q(ns, "v"))
    text = v.text if v is not None else None
    if t == "inlineStr":
        node = c.find(_q(ns, "is"))
        if node is None:
            return None
        parts = [x.text or "" for x in node.findall(_q(ns, "t"))]
        parts += [x.text or "" for r in node.findall(_q(ns, "r")) for x in r.findall(_q(ns, "t"))]
        return "".join(parts)
    if text is None:
        return None
    if t == "s":
        try:
            return strings[int(text)]
        except (ValueError, IndexError):
            raise CorruptFile(f"a cell points at shared string {text!r}, which does not exist") from None
    if t == "b":
        return text.strip() in ("1", "true")
    if t == "e":
        return Err(text.strip())
    if t in ("str", "d"):
        return text
    try:
        return float(text)
    except ValueError:
        raise CorruptFile(f"a numeric cell holds {text[:30]!r}") from None


def _read_sheet(root: ET.Element, ns: str, name: str, strings: list[str], max_cells: int) -> Sheet:
    sheet = Sheet(name=name)
    masters: dict[str, tuple[int, int, str]] = {}
    data = root.find(_q(ns, "sheetData"))
    if data is None:
        return sheet
    row_no = -1
    for row in data.findall(_q(ns, "row")):
        row_no = int(row.get("r", row_no + 2)) - 1
        col_no = -1
        for c in row.findall(_q(ns, "c")):
            ref = c.get("r")
            try:
                r, col = parse_cell(ref) if ref else (row_no, col_no + 1)
            except InvalidCell:
                raise CorruptFile(f"a cell has the reference {ref!r}") from None
            col_no = col
            f = c.find(_q(ns, "f"))
            formula = None
            if f is not None:
                formula = f.text or None
                if f.get("t") == "shared":
                    si = f.get("si", "")
                    if formula:
                        masters[si] = (r, col, formula)
                    elif si in masters:
                        mr, mc, mf = masters[si]
                        formula = shift(mf, r - mr, col - mc)
            value = _value(c, ns, strings)
            if value is None and formula is None:
                continue
            sheet.cells[(r, col)] = Cell(value=value, formula=formula)
            if len(sheet.cells) > max_cells:
                raise FileTooLarge(f"the sheet {name!r} has more than {max_cells} cells")
    return sheet


def read_xlsx(data: bytes, max_cells: int) -> Workbook:
    """Read XLSX bytes into a Workbook.

    Raises:
        CorruptFile: not an XLSX package, or broken parts.
        UnsupportedFormat: Strict OOXML.
        FileTooLarge: more than ``max_cells`` cells, or over the zip caps.
    """
    z = SafeZip(data)
    root_rels = _rels(z, "_rels/.rels")
    wb_path = next((t.lstrip("/") for t in root_rels.values() if t.endswith(".xml")), "xl/workbook.xml")
    wb = parse_xml(z.read(wb_path) or b"", "the workbook part")
    ns = wb.tag[1:].split("}")[0] if wb.tag.startswith("{") else ""
    if ns == STRICT:
        raise UnsupportedFormat("Strict Office Open XML spreadsheets are not supported; save as Excel 2007-365")
    if ns != MAIN:
        raise CorruptFile(f"expected an XLSX workbook; the workbook part is {wb.tag[:80]!r}")
    rels_path = "/".join([*wb_path.split("/")[:-1], "_rels", wb_path.split("/")[-1] + ".rels"])
    rels = _rels(z, rels_path)
    strings_target = next((t for t in rels.values() if t.endswith("sharedStrings.xml")), None)
    strings = _shared_strings(z, _resolve(wb_path, strings_target), ns) if strings_target else []
    book = Workbook()
    sheets = wb.find(_q(ns, "sheets"))
    for s in sheets.findall(_q(ns, "sheet")) if sheets is not None else []:
        target = rels.get(s.get(_q(REL, "id"), ""))
        if target is None:
            raise CorruptFile(f"sheet {s.get('name')!r} points at no part")
        part = parse_xml(z.read(_resolve(wb_path, target)) or b"", f"sheet {s.get('name')!r}")
        left = max_cells - book.cell_count()
        book.sheets.append(_read_sheet(part, ns, s.get("name") or f"Sheet{len(book.sheets) + 1}", strings, left))
    if not book.sheets:
        raise CorruptFile("the workbook has no sheets")
    names = wb.find(_q(ns, "definedNames"))
    for d in names.findall(_q(ns, "definedName")) if names is not None else []:
        name, text = d.get("name", ""), (d.text or "").strip()
        if name.startswith("_xlnm.") or not re.fullmatch(r"[A-Za-z_\\][A-Za-z0-9_.]*", name):
            continue
        try:
            named = parse_range(text)
        except InvalidCell:
            continue  # constants and formulas as names: kept out of the model
        sheet, _ = split_sheet(text)
        if sheet is not None and book.has_sheet(sheet):
            book.names[name] = named
    return book

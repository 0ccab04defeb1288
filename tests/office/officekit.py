"""Shared helpers of the office tests: the tiny company with a shared drive, stored bytes, LibreOffice gating.

The tiny company is loaded from ``tests/mcp_tools/conftest.py`` by path (test directories have no packages), so
these tests pin the same people: ``lena.lead`` (the default actor), ``dev.one``, ``olaf.out`` (the outsider).
"""

import importlib.util
import io
import os
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from mcp_tools.base import call_tool
from mcp_tools.company import company_specs
from mcp_tools.sheets import libreoffice
from worlds.rawsql import Sql

_SPEC = importlib.util.spec_from_file_location("office_tiny_world", Path(__file__).parents[1] / "mcp_tools/conftest.py")
assert _SPEC is not None and _SPEC.loader is not None
tiny = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(tiny)

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


class OfficeApp:
    """The tiny world with a ``Shared/Engineering`` folder (owned by the CEO) to create documents in."""

    def __init__(self) -> None:
        self.app = tiny.App()
        self.session = self.app.session
        self.lead, self.dev, self.outsider, self.ceo = self.app.lead, self.app.dev, self.app.outsider, self.app.ceo
        sql = Sql.of(self.session)
        root = sql.insert("doc_folders", {"parent_id": None, "name": "Shared", "owner_id": 1, "created_at": tiny.T0})
        sql.insert("doc_folders", {"parent_id": root, "name": "Engineering", "owner_id": 1, "created_at": tiny.T0})
        self.session.flush()

    def call(self, tool: str, /, actor: Any = None, **arguments: Any) -> Any:
        """Call company tool ``tool`` in-process as ``actor`` (default: the lead)."""
        return call_tool(company_specs()[tool], arguments, self.app.ctx(actor))

    def hash(self) -> str:
        """The state hash of the whole world."""
        return self.app.hash()

    def log_count(self) -> int:
        """Change-log rows so far."""
        return self.app.log_count()

    def stored(self, document: str | int) -> bytes:
        """The current stored file bytes of a document (by path under Shared/... or id), straight from the DB."""
        sql = Sql.of(self.session)
        if isinstance(document, int):
            sha = sql.scalar("SELECT blob_sha256 FROM documents WHERE id = ?", (document,))
        else:
            sha = sql.scalar("SELECT blob_sha256 FROM documents WHERE name = ?", (document.rsplit("/", 1)[-1],))
        assert sha is not None, document
        return bytes(sql.scalar("SELECT data FROM blobs WHERE sha256 = ?", (sha,)))


def docx_paragraphs(data: bytes) -> list[tuple[str, str]]:
    """(style id, text) of each body paragraph of DOCX bytes, read with zipfile + ElementTree (not our reader)."""
    root = ET.fromstring(zipfile.ZipFile(io.BytesIO(data)).read("word/document.xml"))
    out = []
    for p in root.iter(f"{W}p"):
        style = p.find(f"{W}pPr/{W}pStyle")
        text = "".join(t.text or "" for t in p.iter(f"{W}t"))
        out.append((style.get(f"{W}val") if style is not None else "", text))
    return out


def docx_comments(data: bytes) -> list[str]:
    """Texts of the comments in DOCX bytes (word/comments.xml)."""
    z = zipfile.ZipFile(io.BytesIO(data))
    if "word/comments.xml" not in z.namelist():
        return []
    root = ET.fromstring(z.read("word/comments.xml"))
    return ["".join(t.text or "" for t in c.iter(f"{W}t")) for c in root.iter(f"{W}comment")]


def odt_blocks(data: bytes) -> tuple[list[tuple[str, str]], list[str]]:
    """Headings/paragraphs as (kind, text) and annotation texts of ODT bytes, read with odfpy."""
    from odf import teletype
    from odf.namespaces import OFFICENS, TEXTNS
    from odf.office import Annotation
    from odf.opendocument import load
    from odf.text import P

    def text_of(node: Any) -> str:
        if getattr(node, "qname", None) == (OFFICENS, "annotation"):
            return ""
        if node.nodeType == node.TEXT_NODE:
            return str(node.data)
        if getattr(node, "qname", None) == (TEXTNS, "line-break"):
            return "\n"
        if getattr(node, "qname", None) == (TEXTNS, "s"):
            return " " * int(node.getAttribute("c") or 1)
        return "".join(text_of(n) for n in node.childNodes)

    doc = load(io.BytesIO(data))
    blocks = []
    for el in doc.text.childNodes:
        if el.qname == (TEXTNS, "h"):
            blocks.append((f"h{el.getAttribute('outlinelevel')}", text_of(el)))
        elif el.qname == (TEXTNS, "p"):
            blocks.append(("p", text_of(el)))
    notes = []
    for a in doc.getElementsByType(Annotation):
        notes.append(" ".join(teletype.extractText(p) for p in a.getElementsByType(P)))
    return blocks, notes


def ods_table(data: bytes, sheet: int = 0) -> list[list[tuple[Any, str | None]]]:
    """Rows of (value, formula) of an ODS sheet, read with odfpy (repeated cells expanded, trailing ones cut)."""
    from odf import teletype
    from odf.opendocument import load
    from odf.table import Table, TableCell, TableRow

    doc = load(io.BytesIO(data))
    table = doc.spreadsheet.getElementsByType(Table)[sheet]
    rows = []
    for tr in table.getElementsByType(TableRow):
        row: list[tuple[Any, str | None]] = []
        for tc in tr.getElementsByType(TableCell):
            repeat = int(tc.getAttribute("numbercolumnsrepeated") or 1)
            kind = tc.getAttribute("valuetype")
            value: Any = None
            if kind in ("float", "percentage", "currency"):
                value = float(tc.getAttribute("value"))
            elif kind == "boolean":
                value = tc.getAttribute("booleanvalue") == "true"
            elif kind == "string":
                value = teletype.extractText(tc)
            row += [(value, tc.getAttribute("formula"))] * min(repeat, 50)
        while row and row[-1] == (None, None):
            row.pop()
        rows.append(row)
    while rows and not rows[-1]:
        rows.pop()
    return rows


def ods_sheet_names(data: bytes) -> list[str]:
    """Sheet names of ODS bytes (odfpy)."""
    from odf.opendocument import load
    from odf.table import Table

    return [t.getAttribute("name") for t in load(io.BytesIO(data)).spreadsheet.getElementsByType(Table)]


def ods_named_ranges(data: bytes) -> dict[str, str]:
    """Named ranges of ODS bytes: name -> cell range address (odfpy)."""
    from odf.opendocument import load
    from odf.table import NamedRange

    doc = load(io.BytesIO(data))
    return {n.getAttribute("name"): n.getAttribute("cellrangeaddress") for n in doc.getElementsByType(NamedRange)}


def need_libreoffice() -> None:
    """Skip (with the reason) when LibreOffice cannot run here; under CI (CI=true) fail instead of skipping."""
    reason = libreoffice.unavailable_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"LibreOffice is required under CI: {reason}")
        pytest.skip(f"LibreOffice is not available: {reason}")

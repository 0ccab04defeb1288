"""Bad input to the office tools: a stable error code for each kind of mistake, and the world exactly as before.

Invalid cell references (``invalid_cell``), malformed formulas (``invalid_formula``), oversized writes and
documents (``too_large``), unsupported formats (``unsupported_format``) and corrupt stored files
(``corrupt_file``), each checked against the full state hash.
"""

import hashlib
import io
import json
import zipfile

import pytest
from officekit import OfficeApp, tiny

from mcp_tools.errors import AppError
from worlds.office import files
from worlds.rawsql import Sql

BOOK = "Shared/Engineering/Book.xlsx"
ODS = "Shared/Engineering/Book.ods"
TEXT = "Shared/Engineering/Notes.docx"


@pytest.fixture
def office(monkeypatch):
    monkeypatch.setenv("COMPANYSIM_RECALC", "python")
    o = OfficeApp()
    rows = '[["Item", "Cost"], ["A", 1], ["B", 2], ["Sum", "=SUM(B2:B3)"]]'
    o.call("sheets_create", name="Book.xlsx", folder="Shared/Engineering", values=rows)
    o.call("sheets_create", name="Book.ods", folder="Shared/Engineering", values=rows)
    o.call("docs_create", name="Notes.docx", folder="Shared/Engineering", text="# Goals\n\nShip.")
    yield o
    o.session.close()


def refused(office, code, tool, **args):
    """Call ``tool``; it must fail with ``code`` and change nothing (full state hash and change log)."""
    before, count = office.hash(), office.log_count()
    with pytest.raises(AppError) as err:
        office.call(tool, **args)
    assert err.value.code == code, (tool, args, err.value.code, err.value.message)
    assert office.hash() == before and office.log_count() == count
    return err.value.message


BAD_CELLS = [
    "A0",
    "ZZZZ1",
    "A1048577",
    "XFE1",
    "Nope!A1",
    "A1:B",
    "1A",
    "A-1",
    "Sheet1!",
    "'Sheet1!A1",
    "A1:",
    "B2::C3",
]


@pytest.mark.parametrize("doc", [BOOK, ODS])
@pytest.mark.parametrize("ref", BAD_CELLS)
def test_bad_cell_references__are_invalid_cell(office, doc, ref):
    refused(office, "invalid_cell", "sheets_write_cell", document=doc, cell=ref, value="1")
    refused(office, "invalid_cell", "sheets_read_range", document=doc, range=ref)


def test_bad_ranges__for_names_and_sheets_are_invalid_cell(office):
    refused(office, "invalid_cell", "sheets_define_name", document=BOOK, name="A1", range="Sheet1!A1")
    refused(office, "invalid_cell", "sheets_define_name", document=BOOK, name="Costs", range="Nope!B2:B3")
    refused(office, "invalid_cell", "sheets_add_sheet", document=BOOK, name="bad[name]")
    refused(office, "invalid_cell", "sheets_add_sheet", document=BOOK, name="x" * 32)
    refused(office, "invalid_cell", "sheets_write_range", document=BOOK, range="XFD1", values="[[1, 2]]")


BAD_FORMULAS = [
    "=SUM(",
    "=1+",
    "=FOO(1)",
    "=SUM(B2:B3",
    '="unterminated',
    "=1/*2",
    "=Missing!A1",
    "=UNDEFINED_NAME",
    "=B5",  # B5 is the cell itself: a cycle
    "=(" * 80 + "1" + ")" * 80,
    "=" + "+".join(["1"] * 1500),
    "=)",
    "=,",
    "=SUM(A1:)",
]


@pytest.mark.parametrize("doc", [BOOK, ODS])
@pytest.mark.parametrize("text", BAD_FORMULAS)
def test_malformed_formulas__are_invalid_formula(office, doc, text):
    refused(office, "invalid_formula", "sheets_write_cell", document=doc, cell="B5", value=text)
    refused(office, "invalid_formula", "sheets_write_range", document=doc, range="B5", values=json.dumps([[text]]))


def test_a_cycle_through_two_cells__is_invalid_formula(office):
    office.call("sheets_write_cell", document=BOOK, cell="C1", value="=D1+1")
    refused(office, "invalid_formula", "sheets_write_cell", document=BOOK, cell="D1", value="=C1*2")


def test_oversized_writes_and_documents__are_too_large(office, monkeypatch):
    big = json.dumps([[0] * 100] + [[]] * 101)  # ragged rows pad to 102 x 100 = 10,200 cells in a short string
    refused(office, "too_large", "sheets_write_range", document=BOOK, range="A1", values=big)
    refused(office, "too_large", "sheets_read_range", document=BOOK, range="A1:Z1000")
    monkeypatch.setattr(files, "MAX_CHARS", 300)
    refused(office, "too_large", "docs_append", document=TEXT, text="word " * 100)
    monkeypatch.setattr(files, "MAX_CELLS", 20)
    refused(office, "too_large", "sheets_write_range", document=BOOK, range="D1", values=json.dumps([[1] * 5] * 3))
    refused(office, "invalid_argument", "docs_append", document=TEXT, text="x" * 20_001)  # over the per-call cap


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("docs_create", {"name": "notes.txt", "folder": "Shared/Engineering"}),
        ("docs_create", {"name": "notes.doc", "folder": "Shared/Engineering"}),
        ("docs_create", {"name": "notes.xlsx", "folder": "Shared/Engineering"}),
        ("docs_create", {"name": "notes", "folder": "Shared/Engineering", "format": "pdf"}),
        ("docs_create", {"name": "notes", "folder": "Shared/Engineering", "format": "ods"}),
        ("sheets_create", {"name": "plan.csv", "folder": "Shared/Engineering"}),
        ("sheets_create", {"name": "plan.xls", "folder": "Shared/Engineering"}),
        ("sheets_create", {"name": "plan.docx", "folder": "Shared/Engineering"}),
        ("sheets_create", {"name": "plan", "folder": "Shared/Engineering", "format": "numbers"}),
    ],
)
def test_unsupported_formats__are_unsupported_format(office, tool, args):
    refused(office, "unsupported_format", tool, **args)


def plant(office, name, data, mime, kind="spreadsheet", sha=None):
    """A document owned by the lead whose stored bytes are ``data`` (a corrupt or foreign file)."""
    sql = Sql.of(office.session)
    sha = sha or hashlib.sha256(data).hexdigest()
    sql.execute("INSERT INTO blobs (sha256, size, data) VALUES (?, ?, ?)", (sha, len(data), data))
    folder = sql.scalar("SELECT id FROM doc_folders WHERE name = 'Engineering'")
    return sql.insert(
        "documents",
        {
            "folder_id": folder,
            "name": name,
            "kind": kind,
            "mime_type": mime,
            "owner_id": 2,
            "content": {},
            "blob_sha256": sha,
            "version": 1,
            "created_at": tiny.T0,
            "updated_at": tiny.T0,
        },
    )


def _zip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


XLSX = files.MIME["xlsx"]
DOCX = files.MIME["docx"]
CORRUPT = {
    "not a zip": (b"hello, this is not an office file", XLSX),
    "legacy xls bytes": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, XLSX),
    "truncated zip": (None, XLSX),
    "zip without workbook": (_zip({"[Content_Types].xml": "<Types/>"}), XLSX),
    "malformed xml": (_zip({"[Content_Types].xml": "<Types/>", "xl/workbook.xml": "<workbook><sheets>"}), XLSX),
    "entity expansion": (
        _zip({"word/document.xml": '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaa">]><d>&a;</d>'}),
        DOCX,
    ),
    "utf-16 xml": (_zip({"word/document.xml": "<?xml version='1.0' encoding='utf-16'?><d/>".encode("utf-16")}), DOCX),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_stored_files__are_corrupt_file_for_reads_and_writes(office, case):
    data, mime = CORRUPT[case]
    if data is None:
        good = office.stored(BOOK)
        data = good[: len(good) // 2]
    kind = "text" if mime == DOCX else "spreadsheet"
    doc = str(plant(office, f"Broken {case}", data, mime, kind))
    if kind == "spreadsheet":
        refused(office, "corrupt_file", "sheets_read_range", document=doc)
        refused(office, "corrupt_file", "sheets_write_cell", document=doc, cell="A1", value="1")
    else:
        refused(office, "corrupt_file", "docs_read", document=doc)
        refused(office, "corrupt_file", "docs_append", document=doc, text="more")


def test_a_tampered_blob__is_corrupt_file(office):
    doc = str(plant(office, "Tampered", office.stored(BOOK) + b"x", XLSX, sha="0" * 64))
    refused(office, "corrupt_file", "sheets_list_sheets", document=doc)


def test_a_zip_bomb__is_too_large(office):
    bomb = _zip({"[Content_Types].xml": "<Types/>", "xl/workbook.xml": b"<" + b" " * (70 * 1024 * 1024) + b"/>"})
    doc = str(plant(office, "Bomb", bomb, XLSX))
    refused(office, "too_large", "sheets_read_range", document=doc)


def test_a_foreign_mime_type__is_unsupported_format(office):
    doc = str(plant(office, "Slides", b"%PDF-1.4", "application/pdf"))
    refused(office, "unsupported_format", "sheets_read_range", document=doc)
    refused(office, "unsupported_format", "docs_versions", document=doc)


def test_bad_json_values__are_invalid_argument(office):
    for values in ["not json", "[]", "[1, 2]", '{"a": 1}', "[[{}]]", "[[NaN]]", "[[1e400]]", "[" * 5000 + "]" * 5000]:
        refused(office, "invalid_argument", "sheets_write_range", document=BOOK, range="A1", values=values)

"""The sheets app: real XLSX and ODS files read back by openpyxl and odfpy; ranges, formulas, sheets, names."""

import io
import json

import openpyxl
import pytest
from officekit import OfficeApp, ods_named_ranges, ods_sheet_names, ods_table

from mcp_tools.errors import AppError

ROWS = [["Item", "Cost", "Double"], ["A", 10, "=B2*2"], ["B", 2.5, "=B3*2"], ["Sum", "=SUM(B2:B3)", "=SUM(C2:C3)"]]


@pytest.fixture
def office(monkeypatch):
    monkeypatch.setenv("COMPANYSIM_RECALC", "python")  # LibreOffice has its own tests (test_office_libreoffice)
    o = OfficeApp()
    yield o
    o.session.close()


def _make(office, fmt, name="Plan"):
    return office.call("sheets_create", name=f"{name}.{fmt}", folder="Shared/Engineering", values=json.dumps(ROWS))


def test_sheets_create_xlsx__openpyxl_reads_formulas_and_cached_values(office):
    made = _make(office, "xlsx")
    data = office.stored(made["id"])
    formulas = openpyxl.load_workbook(io.BytesIO(data))
    values = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    assert formulas.sheetnames == ["Sheet1"]
    assert formulas["Sheet1"]["C2"].value == "=B2*2" and formulas["Sheet1"]["B4"].value == "=SUM(B2:B3)"
    assert [[c.value for c in row] for row in values["Sheet1"].iter_rows()] == [
        ["Item", "Cost", "Double"],
        ["A", 10, 20],
        ["B", 2.5, 5],
        ["Sum", 12.5, 25],
    ]


def test_sheets_create_ods__odfpy_reads_openformula_and_values(office):
    made = _make(office, "ods")
    rows = ods_table(office.stored(made["id"]))
    assert rows[0] == [("Item", None), ("Cost", None), ("Double", None)]
    assert rows[1] == [("A", None), (10.0, None), (20.0, "of:=[.B2]*2")]
    assert rows[3] == [("Sum", None), (12.5, "of:=SUM([.B2:.B3])"), (25.0, "of:=SUM([.C2:.C3])")]


@pytest.mark.parametrize("fmt", ["xlsx", "ods"])
def test_sheets_write_range__recalculates_dependents_and_returns_them(office, fmt):
    path = _make(office, fmt)["path"]
    out = office.call("sheets_write_range", document=path, range="B2:B3", values="[[100], [50]]")
    assert out["values"] == [[100], [50]] and out["version"] == 2
    got = office.call("sheets_read_range", document=path, range="A4:C4")
    assert got["values"] == [["Sum", 150, 300]] and got["formulas"] == {"B4": "=SUM(B2:B3)", "C4": "=SUM(C2:C3)"}
    office.call("sheets_write_cell", document=path, cell="D1", value="=C4/B4")
    assert office.call("sheets_read_range", document=path, range="D1")["values"] == [[2]]
    data = office.stored(out["id"])
    if fmt == "xlsx":
        ws = openpyxl.load_workbook(io.BytesIO(data), data_only=True)["Sheet1"]
        assert (ws["B4"].value, ws["C4"].value, ws["D1"].value) == (150, 300, 2)
    else:
        rows = ods_table(data)
        assert rows[3][1][0] == 150.0 and rows[0][3] == (2.0, "of:=[.C4]/[.B4]")


@pytest.mark.parametrize("fmt", ["xlsx", "ods"])
def test_sheets_add_sheet_and_define_name__are_in_the_file_and_usable_in_formulas(office, fmt):
    path = _make(office, fmt)["path"]
    office.call("sheets_add_sheet", document=path, name="Q1 plan")
    office.call("sheets_define_name", document=path, name="Costs", range="Sheet1!B2:B3")
    office.call("sheets_write_range", document=path, range="'Q1 plan'!A1", values='[["=SUM(Costs)", "=Sheet1!C4+1"]]')
    assert office.call("sheets_read_range", document=path, range="Costs")["values"] == [[10], [2.5]]
    assert office.call("sheets_read_range", document=path, range="'Q1 plan'!A1:B1")["values"] == [[12.5, 26]]
    listed = office.call("sheets_list_sheets", document=path)
    assert [s["name"] for s in listed["sheets"]] == ["Sheet1", "Q1 plan"]
    assert office.call("sheets_list_names", document=path)["names"] == [{"name": "Costs", "range": "Sheet1!$B$2:$B$3"}]
    data = office.stored(listed["id"])
    if fmt == "xlsx":
        wb = openpyxl.load_workbook(io.BytesIO(data))
        assert wb.sheetnames == ["Sheet1", "Q1 plan"]
        assert wb.defined_names["Costs"].attr_text == "Sheet1!$B$2:$B$3"
        assert wb["Q1 plan"]["A1"].value == "=SUM(Costs)"
        assert openpyxl.load_workbook(io.BytesIO(data), data_only=True)["Q1 plan"]["B1"].value == 26
    else:
        assert ods_sheet_names(data) == ["Sheet1", "Q1 plan"]
        assert ods_named_ranges(data) == {"Costs": "$Sheet1.$B$2:.$B$3"}
        assert ods_table(data, 1)[0] == [(12.5, "of:=SUM(Costs)"), (26.0, "of:=[$Sheet1.C4]+1")]


def test_sheets_reads__change_nothing_and_refusals__change_nothing(office):
    path = _make(office, "xlsx")["path"]
    before, count = office.hash(), office.log_count()
    office.call("sheets_read_range", document=path)
    office.call("sheets_list_sheets", document=path)
    office.call("sheets_list_names", document=path)
    assert office.hash() == before and office.log_count() == count
    for args in [{"range": "ZZZZ1", "values": "[[1]]"}, {"range": "A1", "values": '[["=SUM(B2:B3"]]'}]:
        with pytest.raises(AppError):
            office.call("sheets_write_range", document=path, **args)
    assert office.hash() == before and office.log_count() == count


def test_sheets_access__outsider_cannot_read_and_viewer_cannot_write(office):
    path = _make(office, "ods")["path"]
    with pytest.raises(AppError) as err:
        office.call("sheets_read_range", office.outsider, document=path)
    assert err.value.code == "forbidden"
    office.call("docs_share", document=path, username="olaf.out", permission="view")
    assert office.call("sheets_read_range", office.outsider, document=path, range="B4")["values"] == [[12.5]]
    with pytest.raises(AppError) as err:
        office.call("sheets_write_cell", office.outsider, document=path, cell="B2", value="1")
    assert err.value.code == "forbidden"


def test_sheets_errors__show_as_codes_and_text_typing_follows_spreadsheets(office):
    path = _make(office, "xlsx")["path"]
    office.call("sheets_write_range", document=path, range="E1", values='[["=1/0", "\'=literal", "0042"]]')
    assert office.call("sheets_read_range", document=path, range="E1:G1")["values"] == [["#DIV/0!", "=literal", "0042"]]
    office.call("sheets_write_cell", document=path, cell="H1", value="0042")
    office.call("sheets_write_cell", document=path, cell="I1", value="true")
    assert office.call("sheets_read_range", document=path, range="H1:I1")["values"] == [[42, True]]
    ws = openpyxl.load_workbook(io.BytesIO(office.stored(path)), data_only=True)["Sheet1"]
    assert ws["E1"].value == "#DIV/0!" and ws["F1"].value == "=literal"

"""Real LibreOffice: one long-lived headless process recalculates and converts; it agrees with the Python engine.

Skipped with the reason when LibreOffice (soffice + python3-uno) is missing locally; under CI (CI=true) a missing
LibreOffice fails these tests instead.
"""

import io
import json
import os
import shutil
import subprocess
import sys
import time

import openpyxl
import pytest
from officekit import OfficeApp, need_libreoffice

from mcp_tools.docs import store
from mcp_tools.sheets import libreoffice
from mcp_tools.sheets.service import show
from worlds.office import files, formula
from worlds.office.a1 import parse_range
from worlds.office.model import Cell, Sheet, Workbook
from worlds.rawsql import Sql
from worlds.spec import WorldSpec
from worlds.store import WorldStore


@pytest.fixture(scope="module", autouse=True)
def _libreoffice():
    need_libreoffice()


def _book(rows: list[list[object]], name: str = "Data") -> Workbook:
    sheet = Sheet(name=name)
    for r, row in enumerate(rows):
        for c, v in enumerate(row):
            if isinstance(v, str) and v.startswith("="):
                sheet.cells[(r, c)] = Cell(formula=v[1:])
            elif v is not None:
                sheet.cells[(r, c)] = Cell(value=float(v) if isinstance(v, int) and not isinstance(v, bool) else v)
    return Workbook(sheets=[sheet])


def every_function_book() -> Workbook:
    """Every supported function, blanks, text, errors, cross-sheet references and a defined name."""
    book = _book(
        [
            [10, 2.5, -3, "apple", True, None, " a  b ", 7],
            [4, 0, 1.005, "Banana", False, "12", "x", 2.675],
            ["=SUM(A1:B2)", "=AVERAGE(A1:C2)", "=MIN(A1:C2)", "=MAX(A1:C2)", "=PRODUCT(A1:A2)", "=COUNT(A1:H2)"],
            ["=COUNTA(A1:H2)", '=IF(A1>5,"big","small")', "=IFERROR(1/B2,-1)", "=AND(E1,A1>1)", "=OR(E2,F1)"],
            [
                "=NOT(E1)",
                "=TRUE()",
                "=FALSE()",
                "=ROUND(C2,2)",
                "=ROUND(H2,2)",
                "=ROUNDUP(-2.1,0)",
                "=ROUNDDOWN(2.99,1)",
            ],
            [
                "=ROUND(-2.5,0)",
                "=MOD(7,-3)",
                "=SUM(E1:E2)",
                "=COUNT(E1:E2)",
                "=D1<D2",
            ],
            ["=ABS(C1)", "=INT(-2.5)", "=SQRT(A2)", "=MOD(-7,3)", "=POWER(2,10)", '=CONCATENATE(D1,"-",A1)'],
            ["=LEN(D2)", "=UPPER(D1)", "=LOWER(D2)", "=TRIM(G1)", "=LEFT(D2,3)", "=RIGHT(D1)", '=COUNTIF(A1:A2,">5")'],
            ['=SUMIF(D1:D2,"b*",A1:A2)', '=SUMIF(A1:C1,">0")', "=1/0", "=SQRT(-1)", "=A1&B1", "=F2+1", "=F1*2"],
            ["=SUM(Amounts)", "=Second!A1*2", "=-A1^2", "=2^3^2", "=10%", '="a"="A"', "=A1<>B1", "=H1/3"],
        ]
    )
    second = Sheet(name="Second")
    second.cells[(0, 0)] = Cell(formula="Data!A1+Data!A2")
    second.cells[(1, 0)] = Cell(formula="SUM(Data!A1:C2)/COUNT(Data!A1:C2)")
    book.sheets.append(second)
    book.names["Amounts"] = parse_range("Data!A1:B2")
    return book


def _shown(values):
    return {k: (round(v, 9) if isinstance(v, float) else v) for k, v in ((k, show(v)) for k, v in values.items())}


@pytest.mark.parametrize("fmt", ["xlsx", "ods"])
def test_libreoffice__agrees_with_the_python_engine_on_every_function(fmt):
    book = every_function_book()
    python = formula.recalculate(book)
    office = libreoffice.engine().recalculate(book, fmt)
    assert set(office) == set(python)
    assert _shown(office) == _shown(python)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    world = WorldStore(tmp_path_factory.mktemp("office_lo")).base(
        WorldSpec.parse(seed=5, employees=30, history_days=14)
    )
    yield world
    world.close()


def test_libreoffice__agrees_with_the_python_engine_on_the_generated_workbooks(generated):
    session = generated.session()
    try:
        sql = Sql.of(session)
        rows = sql.all("SELECT id, mime_type FROM documents WHERE kind = 'spreadsheet' ORDER BY id")
        assert len(rows) >= 2
        checked = 0
        for doc_id, mime in rows:
            fmt = files.format_of_mime(str(mime))
            doc = store.Doc(
                id=int(doc_id), folder_id=0, name="", kind="spreadsheet", fmt=fmt, owner_id=0, version=1, path="",
                sha256=sql.scalar("SELECT blob_sha256 FROM documents WHERE id = ?", (doc_id,)), permission="owner",
            )  # fmt: skip
            book = store.load_workbook(sql, doc)
            python = formula.recalculate(book)
            stored = {k: book.sheets[k[0]].cells[(k[1], k[2])].value for k in python}
            office = libreoffice.engine().recalculate(book, fmt)
            assert _shown(office) == _shown(python) == _shown(stored), doc_id
            checked += len(python)
        assert checked > 10
    finally:
        session.close()


def test_libreoffice__recomputes_stale_cached_values_in_xlsx_and_ods():
    book = _book([[1, 2, "=A1+B1", "=C1*10"]])
    book.sheets[0].cells[(0, 2)].value = 999.0  # stale caches in the file must not be trusted
    book.sheets[0].cells[(0, 3)].value = 999.0
    for fmt in ("xlsx", "ods"):
        assert _shown(libreoffice.engine().recalculate(book, fmt)) == {(0, 0, 2): 3, (0, 0, 3): 30}


def test_libreoffice__is_one_long_lived_process():
    office = libreoffice.office()
    book = _book([[1, "=A1+1"]])
    libreoffice.engine().recalculate(book, "xlsx")
    pid, starts = office.pid, office.starts
    timings = []
    for _ in range(5):
        t = time.perf_counter()
        libreoffice.engine().recalculate(book, "ods")
        timings.append(time.perf_counter() - t)
    assert office.pid == pid and office.starts == starts and pid is not None
    assert sorted(timings)[2] < 1.0  # a warm recalculation, far below a cold soffice start


def test_libreoffice__is_stopped_when_the_process_exits(tmp_path):
    code = (
        "from mcp_tools.sheets import libreoffice\n"
        "from worlds.office.model import Cell, Sheet, Workbook\n"
        "b = Workbook(sheets=[Sheet(name='S', cells={(0, 0): Cell(formula='1+1')})])\n"
        "print(libreoffice.engine().recalculate(b, 'ods'), libreoffice.office().pid, flush=True)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    pid = int(out.stdout.split()[-1])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}")


def _group(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` (from /proc: field 5 of stat, after the parenthesised name)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry))
    return found


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_libreoffice__and_its_directory_are_gone_when_the_process_dies_without_atexit(signal_name):
    # SIGKILL, or SIGTERM's default action (``timeout``, a scheduler), skip atexit: the guard cleans up instead,
    # soffice.bin (forked by oosplash, in the office's process group) included
    code = (
        "import os, signal\n"
        "from mcp_tools.sheets import libreoffice\n"
        "from worlds.office.model import Cell, Sheet, Workbook\n"
        "b = Workbook(sheets=[Sheet(name='S', cells={(0, 0): Cell(formula='1+1')})])\n"
        "libreoffice.engine().recalculate(b, 'ods')\n"
        "o = libreoffice.office()\n"
        "print(o.pid, o.root, libreoffice.ipc_pipes(o.root / 'profile')[0], flush=True)\n"
        f"os.kill(os.getpid(), signal.{signal_name})\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode < 0, out.stderr  # killed by the signal, not a clean exit
    group, root, pipe = int(out.stdout.split()[0]), out.stdout.split()[1], out.stdout.split()[2]
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (_group(group) or os.path.exists(root) or os.path.exists(pipe)):
        time.sleep(0.1)
    left, kept, socket_left = _group(group), os.path.exists(root), os.path.exists(pipe)
    if left:  # a failing run must not leave its office behind either
        os.killpg(group, 9)
    shutil.rmtree(root, ignore_errors=True)
    assert left == [], "soffice is still running"
    assert not kept, "the office's directory was left behind"
    assert not socket_left, "the office's pipe socket was left in /tmp"


def test_libreoffice__pipe_socket_is_named_as_the_office_names_it():
    # the guard can only remove the socket a killed office leaves if we predict its name; a running office has it
    office = libreoffice.office()
    book = Workbook(sheets=[Sheet(name="S", cells={(0, 0): Cell(formula="1+1")})])
    libreoffice.engine().recalculate(book, "ods")
    assert office.root is not None
    assert libreoffice.ipc_pipes(office.root / "profile")[0].is_socket()


@pytest.mark.parametrize(
    ("tool", "name", "args"),
    [
        ("docs_create", "Report.docx", {"text": "# Report\n\nShipped ENG-1.\n\n## Next\n\nENG-2."}),
        ("docs_create", "Report.odt", {"text": "# Report\n\nShipped ENG-1."}),
        ("sheets_create", "Numbers.xlsx", {"values": '[["a", 1], ["b", "=B1*3"]]'}),
        ("sheets_create", "Numbers.ods", {"values": '[["a", 1], ["b", "=B1*3"]]'}),
    ],
)
def test_libreoffice__converts_a_file_written_by_the_tools_to_pdf(tool, name, args, tmp_path):
    office = OfficeApp()
    try:
        made = office.call(tool, name=name, folder="Shared/Engineering", **args)
        data = office.stored(made["id"])
    finally:
        office.session.close()
    pdf = libreoffice.office().convert(data, name.rsplit(".", 1)[1], "pdf")
    assert pdf.startswith(b"%PDF-") and b"%%EOF" in pdf[-64:] and b"/Type /Page" in pdf or b"/Type/Page" in pdf
    (tmp_path / "out.pdf").write_bytes(pdf)


def test_libreoffice__roundtrips_our_xlsx_into_a_file_openpyxl_reads():
    book = _book([[3, "=A1*2"]])
    for (si, r, c), v in formula.recalculate(book).items():
        book.sheets[si].cells[(r, c)].value = v
    back = libreoffice.office().convert(files.write_workbook(book, "ods"), "ods", "xlsx")
    ws = openpyxl.load_workbook(io.BytesIO(back), data_only=True).active
    assert (ws["A1"].value, ws["B1"].value) == (3, 6)


def test_sheets_tools__use_libreoffice_when_required(monkeypatch):
    monkeypatch.setenv("COMPANYSIM_RECALC", "libreoffice")
    office = OfficeApp()
    try:
        made = office.call(
            "sheets_create", name="LO.ods", folder="Shared/Engineering", values=json.dumps([[2, "=A1*21"]])
        )
        assert made["engine"] == "libreoffice"
        out = office.call("sheets_write_cell", document=made["path"], cell="A1", value="3")
        assert out["engine"] == "libreoffice"
        assert office.call("sheets_read_range", document=made["path"], range="B1")["values"] == [[63]]
    finally:
        office.session.close()

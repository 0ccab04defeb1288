"""Generated companies come with real office files that refer to their own people, projects and tickets."""

import hashlib
import io
import re
import zipfile
from datetime import UTC, datetime

import openpyxl
import pytest
from officekit import docx_paragraphs, ods_named_ranges, ods_table, odt_blocks
from sqlalchemy import text

from mcp_tools.base import Actor, ToolContext, call_tool
from mcp_tools.company import company_specs
from worlds.clock import FixedClock
from worlds.generate import generate
from worlds.office import files
from worlds.spec import WorldSpec
from worlds.store import WorldStore

SPEC = WorldSpec.parse(seed=21, employees=40, history_days=21)


@pytest.fixture(scope="module")
def rows():
    return generate(SPEC)


def test_generated_documents__every_one_is_a_real_file_in_blobs(rows):
    blobs = {b["sha256"]: b for b in rows["blobs"]}
    formats = set()
    for doc in rows["documents"]:
        blob = blobs[doc["blob_sha256"]]
        assert hashlib.sha256(blob["data"]).hexdigest() == blob["sha256"] and blob["size"] == len(blob["data"])
        fmt = files.format_of_mime(doc["mime_type"])
        assert doc["name"].endswith("." + fmt) and doc["content"]["sha256"] == blob["sha256"]
        formats.add(fmt)
        assert zipfile.ZipFile(io.BytesIO(blob["data"])).testzip() is None
    assert formats == {"docx", "odt", "xlsx", "ods"}
    versions = {v["document_id"]: v["blob_sha256"] for v in rows["document_versions"]}
    assert all(versions[d["id"]] == d["blob_sha256"] for d in rows["documents"])


def _blob(rows, name_prefix):
    doc = next(d for d in rows["documents"] if d["name"].startswith(name_prefix))
    return doc, next(b["data"] for b in rows["blobs"] if b["sha256"] == doc["blob_sha256"])


def test_generated_documents__refer_to_real_people_projects_and_tickets(rows):
    usernames = {e["username"] for e in rows["employees"]}
    keys = {t["key"] for t in rows["tickets"]}
    project = rows["projects"][0]
    spec_doc, data = _blob(rows, f"{project['name']} spec")
    texts = [t for _, t in docx_paragraphs(data)]
    assert texts[0] == f"{project['name']} ({project['key']})"
    lead = rows["employees"][project["lead_id"] - 1]["username"]
    assert any(f"@{lead} leads" in t for t in texts)
    mentioned_keys = {k for t in texts for k in re.findall(r"\b[A-Z]+-\d+\b", t)}
    assert mentioned_keys and mentioned_keys <= keys
    notes = [d for d in rows["documents"] if "weekly notes" in d["name"]]
    assert notes
    for doc in notes:
        data = next(b["data"] for b in rows["blobs"] if b["sha256"] == doc["blob_sha256"])
        blocks, _ = odt_blocks(data)
        mentioned = {m for _, t in blocks for m in re.findall(r"@([a-z0-9._-]+[a-z0-9])", t)}
        assert mentioned and mentioned <= usernames, doc["name"]
    _, budget = _blob(rows, "Budget ")
    ws = openpyxl.load_workbook(io.BytesIO(budget), data_only=True)["Budget"]
    depts = [d["name"] for d in rows["departments"]]
    assert [ws.cell(row=i + 2, column=1).value for i in range(len(depts))] == depts
    heads = [ws.cell(row=i + 2, column=2).value for i in range(len(depts))]
    assert {h.lstrip("@") for h in heads} <= usernames
    total = ws.cell(row=len(depts) + 2, column=7).value
    assert total == sum(ws.cell(row=r, column=c).value for r in range(2, len(depts) + 2) for c in range(3, 7))
    formulas = openpyxl.load_workbook(io.BytesIO(budget))
    assert formulas.defined_names["Totals"].attr_text.startswith("Budget!$G$2")
    _, roadmap = _blob(rows, "Roadmap ")
    rm = openpyxl.load_workbook(io.BytesIO(roadmap), data_only=True)["Projects"]
    by_key = {rm.cell(row=r, column=1).value: r for r in range(2, len(rows["projects"]) + 2)}
    for p in rows["projects"]:
        count = sum(1 for t in rows["tickets"] if t["project_id"] == p["id"])
        r = by_key[p["key"]]
        assert rm.cell(row=r, column=4).value + rm.cell(row=r, column=5).value == count


def test_generated_headcount__is_an_ods_with_cached_values_and_a_named_range(rows):
    _, data = _blob(rows, "Headcount plan")
    table = ods_table(data)
    n = len(rows["departments"])
    current = [table[i + 1][1][0] for i in range(n)]
    assert current == [sum(1 for e in rows["employees"] if e["department_id"] == d["id"]) for d in rows["departments"]]
    assert table[n + 1][1] == (float(sum(current)), f"of:=SUM([.B2:.B{n + 1}])")
    assert ods_named_ranges(data) == {"Hires": f"$Headcount.$C$2:.$C${n + 1}"}


def test_generated_documents__same_seed_same_bytes_other_seed_other_bytes(rows):
    again = generate(SPEC)
    assert [b["sha256"] for b in again["blobs"]] == [b["sha256"] for b in rows["blobs"]]
    other = generate(WorldSpec.parse(seed=22, employees=40, history_days=21))
    assert {b["sha256"] for b in other["blobs"]} != {b["sha256"] for b in rows["blobs"]}


def test_generated_documents__open_through_the_tools_for_their_owner(tmp_path):
    world = WorldStore(tmp_path).base(WorldSpec.parse(seed=3, employees=24, history_days=10))
    fork = world.fork()
    session = fork.session()
    try:
        doc_rows = session.execute(text("SELECT id, kind, owner_id FROM documents ORDER BY id")).all()
        clock = FixedClock(datetime(2026, 3, 2, 9, tzinfo=UTC))
        for doc_id, kind, owner in doc_rows:
            ctx = ToolContext(session=session, actor=Actor.load(session, int(owner)), clock=clock)
            tool = "docs_read" if kind == "text" else "sheets_read_range"
            got = call_tool(company_specs()[tool], {"document": str(doc_id)}, ctx)
            assert got["version"] == 1 and got["permission"] == "owner"
            if kind == "text":
                assert got["sections"][0]["heading"]
            else:
                assert got["values"][0][0] in ("Department", "Key", "Date")  # budgets, plans; roadmap; actuals
    finally:
        session.close()
        fork.close()
        world.close()

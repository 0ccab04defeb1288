"""The docs app: text documents as real ODT and DOCX files, folders, sharing, versions, read/write contract."""

import pytest
from officekit import OfficeApp, docx_comments, docx_paragraphs, odt_blocks

from mcp_tools.errors import AppError
from worlds.rawsql import Sql

SPEC = (
    "# Platform spec\n\nIntro line.\n\n## Goals\n\nShip ENG-1.\n\n"
    "## Risks\n\nVendor delay.\n\n### Mitigation\n\nBuffer."
)


@pytest.fixture
def office():
    o = OfficeApp()
    yield o
    o.session.close()


@pytest.mark.parametrize("fmt", ["odt", "docx"])
def test_docs_create__writes_a_real_file_with_headings_and_paragraphs(office, fmt):
    made = office.call("docs_create", name=f"Spec.{fmt}", folder="Shared/Engineering", text=SPEC)
    assert made["format"] == fmt and made["version"] == 1
    data = office.stored(made["id"])
    if fmt == "odt":
        blocks, _ = odt_blocks(data)
        assert blocks[:4] == [("h1", "Platform spec"), ("p", "Intro line."), ("h2", "Goals"), ("p", "Ship ENG-1.")]
        assert ("h3", "Mitigation") in blocks
    else:
        paras = docx_paragraphs(data)
        assert paras[:4] == [
            ("Heading1", "Platform spec"),
            ("", "Intro line."),
            ("Heading2", "Goals"),
            ("", "Ship ENG-1."),
        ]
        assert ("Heading3", "Mitigation") in paras
    got = office.call("docs_read", document=made["path"])
    assert [(s["heading"], s["level"], s["paragraphs"]) for s in got["sections"]][:3] == [
        ("Platform spec", 1, ["Intro line."]),
        ("Goals", 2, ["Ship ENG-1."]),
        ("Risks", 2, ["Vendor delay."]),
    ]


@pytest.mark.parametrize("fmt", ["odt", "docx"])
def test_docs_append_replace_and_comment__show_in_the_stored_file(office, fmt):
    path = office.call("docs_create", name=f"Notes.{fmt}", folder="Shared/Engineering", text=SPEC)["path"]
    office.call("docs_comment", document=path, text="Which vendor?", heading="Risks")
    office.call("docs_append", document=path, text="## Next steps\n\nReview on Friday.")
    out = office.call("docs_replace_section", document=path, heading="risks", text="None left.\n\nAll clear.")
    assert out["removed_blocks"] == 3 and out["added_blocks"] == 2 and out["version"] == 4
    data = office.stored(out["id"])
    if fmt == "odt":
        blocks, notes = odt_blocks(data)
        texts = [t for _, t in blocks]
    else:
        texts, notes = [t for _, t in docx_paragraphs(data)], docx_comments(data)
    assert texts[-5:] == ["Risks", "None left.", "All clear.", "Next steps", "Review on Friday."]
    assert "Vendor delay." not in texts and "Mitigation" not in texts  # the subsection went with its section
    assert notes == ["Which vendor?"]
    read = office.call("docs_read", document=path, heading="Risks")
    assert read["sections"] == [{"heading": "Risks", "level": 2, "paragraphs": ["None left.", "All clear."]}]
    assert [(c["author"], c["heading"], c["text"]) for c in read["comments"]] == [
        ("Lena Lind", "Risks", "Which vendor?")
    ]
    history = office.call("docs_versions", document=path)["versions"]
    assert [v["version"] for v in history] == [4, 3, 2, 1] and history[-1]["change"] == "create"


def test_docs_reads__change_nothing_and_writes__are_logged_under_their_tool(office):
    path = office.call("docs_create", name="Plan", folder="Shared/Engineering", text="# A\n\nx")["path"]
    before, count = office.hash(), office.log_count()
    office.call("docs_read", document=path)
    office.call("docs_list_folder", folder="Shared/Engineering")
    office.call("docs_versions", document=path)
    assert office.hash() == before and office.log_count() == count
    office.call("docs_append", document=path, text="more")
    tables = {r.table_name for r in office.app.log()[count:]}
    assert {"documents", "document_versions", "blobs"} <= tables


def test_docs_access__needs_a_share_and_the_right_permission(office):
    path = office.call("docs_create", name="Secret.docx", folder="Shared/Engineering", text="# Pay\n\nnumbers")["path"]
    with pytest.raises(AppError) as err:
        office.call("docs_read", office.outsider, document=path)
    assert err.value.code == "forbidden"
    listing = office.call("docs_list_folder", office.outsider, folder="Shared/Engineering")
    assert listing["documents"] == []
    office.call("docs_share", document=path, username="olaf.out", permission="view")
    assert office.call("docs_read", office.outsider, document=path)["permission"] == "view"
    before = office.hash()
    for tool, args in [("docs_comment", {"text": "hi"}), ("docs_append", {"text": "x"})]:
        with pytest.raises(AppError) as err:
            office.call(tool, office.outsider, document=path, **args)
        assert err.value.code == "forbidden"
    with pytest.raises(AppError):
        office.call("docs_share", office.outsider, document=path, username="dev.one", permission="edit")
    assert office.hash() == before
    office.call("docs_share", document=path, username="olaf.out", permission="none")
    with pytest.raises(AppError):
        office.call("docs_read", office.outsider, document=path)


def test_docs_folders__create_list_and_refuse_duplicates(office):
    office.call("docs_create_folder", name="Drafts", parent="Shared")
    office.call("docs_create", name="Memo.odt", folder="Shared/Drafts", text="Hello")
    listing = office.call("docs_list_folder", folder="Shared")
    assert [f["name"] for f in listing["folders"]] == ["Drafts", "Engineering"]
    assert office.call("docs_list_folder", query="memo")["documents"][0]["path"] == "Shared/Drafts/Memo.odt"
    with pytest.raises(AppError) as err:
        office.call("docs_create_folder", name="drafts", parent="Shared")
    assert err.value.code == "conflict"


def test_docs_blobs__identical_bytes_are_stored_once(office):
    a = office.call("docs_create", name="One.odt", folder="Shared/Engineering", text="# Same\n\ntext")
    b = office.call("docs_create", name="Two.odt", folder="Shared/Engineering", text="# Same\n\ntext")
    assert a["sha256"] == b["sha256"]
    sql = Sql.of(office.session)
    assert sql.scalar("SELECT count(*) FROM blobs WHERE sha256 = ?", (a["sha256"],)) == 1


def test_docs_files__are_byte_for_byte_reproducible(office):
    first = office.call("docs_create", name="R1.docx", folder="Shared/Engineering", text=SPEC)
    again = OfficeApp()
    try:
        second = again.call("docs_create", name="R1.docx", folder="Shared/Engineering", text=SPEC)
        assert office.stored(first["id"]) == again.stored(second["id"])
    finally:
        again.session.close()

"""Real office files for the generated documents: every document gets its bytes, stored once in ``blobs``.

Why a stage of its own: ``documents`` decides what the company wrote (sections, rows of cells); this stage
turns it into the files people open (DOCX/ODT, XLSX/ODS, by each document's MIME type), computes every
formula's cached value with the Python engine (a generated file shows numbers without a recalculation, and a
test proves LibreOffice computes the same), and stores each distinct file once by SHA-256, with the document
and its first version pointing at it. The writers are deterministic (fixed zip dates and member order), so
the same seed gives the same bytes. ``documents.content`` becomes the parse cache the apps read, tagged with
the hash of the bytes it was parsed from.
"""

from __future__ import annotations

import hashlib
from typing import Any

from worlds.generate.common import Gen
from worlds.office import files, formula
from worlds.office.model import text_from_json, text_json, workbook_from_json, workbook_json


def encode(content: dict[str, Any], fmt: str) -> tuple[bytes, dict[str, Any]]:
    """The file bytes of structured ``content`` in ``fmt`` and the cache the apps keep for them."""
    if files.kind_of(fmt) == "spreadsheet":
        book = workbook_from_json(content)
        for (si, r, c), value in formula.recalculate(book).items():
            book.sheets[si].cells[(r, c)].value = value
        data, cache = files.write_workbook(book, fmt), workbook_json(book)
    else:
        text = text_from_json(content)
        data, cache = files.write_text(text, fmt), text_json(text)
    cache.update(format=fmt, sha256=hashlib.sha256(data).hexdigest())
    return data, cache


def build_office_files(g: Gen) -> None:
    """Write every generated document as a real file and point it (and its first version) at the blob."""
    blobs: dict[str, dict[str, Any]] = {}
    first = {v["document_id"]: v for v in g.rows.get("document_versions", []) if v["version"] == 1}
    for doc in g.rows.get("documents", []):
        fmt = files.format_of_mime(doc["mime_type"])
        data, cache = encode(doc["content"], fmt)
        sha = cache["sha256"]
        blobs.setdefault(sha, {"sha256": sha, "size": len(data), "data": data})
        doc["content"], doc["blob_sha256"] = cache, sha
        if doc["id"] in first:
            first[doc["id"]]["blob_sha256"] = sha
    g.table("blobs").extend(blobs[sha] for sha in sorted(blobs))

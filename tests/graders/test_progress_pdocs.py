"""Document and share checks decided from the logged rows (branch pdocs) equal what a fresh query gives.

``checks_docs._document`` folds each step's ``documents`` rows into the row a path named, ``_grants`` each
step's ``document_shares`` rows into a document's shares, and the section parse is kept per content; none of
them queries at a step that creates, writes or shares a document. These tests walk a document through what an
agent (and a careless one) does to it, one step at a time, and compare every answer of the kept context with a
fresh context's, which looks everything up; they also count the lookups, so a fold that silently stopped
answering fails too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from graders.checks_common import listing, snippet
from graders.registry import check_fn_spec
from tests.graders.conftest import T0
from tests.graders.test_progress_rows import _step_ctx
from worlds.office.files import MIME
from worlds.schema import DocFolder, Document, DocumentShare

PATHS = ("Shared/Reports/Weekly", "Shared/Reports/Weekly.odt", "Shared/Reports/Notes.odt", "Shared/Missing/X.odt")
TEXT = [[1, "Done"], [0, "ENG-1 shipped"], [1, "Blocked"], [0, "ENG-2 waits on legal"]]


def _doc(folder: int, name: str, blocks: list[list[Any]]) -> Document:
    return Document(
        folder_id=folder,
        name=name,
        kind="text",
        mime_type=MIME["odt"],
        owner_id=1,
        content={"blocks": blocks},
        blob_sha256=None,
        version=1,
        created_at=T0,
        updated_at=T0,
    )


def _plain(row: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    """A document row with its content as JSON (the database gives text, the log a dict)."""
    if row is None:
        return None
    return (*row[:4], json.loads(row[4]) if isinstance(row[4], str) else row[4], *row[5:])


ASKS: list[tuple[str, dict[str, Any]]] = [
    *[
        ("doc_shared_with", {"username": u, "permission": p})
        for u in ("alice", "bob", "carol", "dave", "zed")
        for p in ("view", "edit")
    ],
    ("doc_not_shared", {}),
    ("doc_shared_only_with", {"usernames": ["bob"]}),
    ("doc_section_contains", {"heading": "done", "pattern": "ENG-1"}),
    ("doc_section_contains", {"heading": "blocked", "pattern": "ENG-[0-9]", "only_there": False}),
    ("doc_mentions_none", {"pattern": "ENG-9"}),
    ("doc_mentions_once", {"pattern": "ENG-2"}),
    ("doc_lacks", {"pattern": "legal"}),
]


def test_documents_and_shares_folded_from_the_log_are_what_the_database_holds(world, monkeypatch):
    import graders.checks_docs as docs

    lookups: list[str] = []  # the paths the kept context looked up (the fresh ones look up everything)
    counting = [True]
    real = docs._folder_id

    def folder_id(sql: Any, parts: list[str]) -> Any:
        if counting[0]:
            lookups.append("/".join(parts))
        return real(sql, parts)

    monkeypatch.setattr(docs, "_folder_id", folder_id)
    shared = DocFolder(parent_id=None, name="Shared", owner_id=1, created_at=T0)
    world.add(shared)
    reports = DocFolder(parent_id=shared.id, name="Reports", owner_id=1, created_at=T0)
    world.add(reports)
    notes = _doc(reports.id, "Notes.odt", [[1, "Notes"], [0, "nothing yet"]])
    world.add(notes)
    dave = DocumentShare(document_id=notes.id, employee_id=4, permission="view")  # a share from before
    world.add(dave)
    seq = world.log_count()  # the folders and the old note are the world the episode starts from
    world.start_seq = seq
    ctx = world.ctx()
    found: dict[str, Any] = {}

    def step(edit: Any) -> None:
        nonlocal ctx, seq
        edit()
        ctx, seq = _step_ctx(world, ctx, seq)
        fresh = world.ctx()
        for path in PATHS:
            for fn, params in ASKS:
                spec = check_fn_spec(fn)
                counting[0] = True
                got = spec.fn(ctx, document=path, **params)
                fast = None
                if spec.on_changes is not None:  # the evaluator a table-bound check is decided by
                    fast = spec.on_changes(ctx, list(ctx.changed_rows("documents")[-1:]), document=path, **params)
                counting[0] = False
                want = spec.fn(fresh, document=path, **params)
                assert (got.score, got.evidence, got.details) == (want.score, want.evidence, want.details), (fn, path)
                assert fast in (None, (want.score, want.evidence, dict(want.details))), (fn, path)
                found[fn] = found.get(fn, 0) + (fast is not None)
            assert _plain(docs._document(ctx, path)) == _plain(docs._document(fresh, path)), path

    for path in PATHS:  # what the episode's first grade reads
        docs._document(ctx, path)
    weekly = _doc(reports.id, "Weekly.odt", TEXT)  # named as the path is without its extension
    step(lambda: world.add(weekly))
    step(lambda: setattr(weekly, "content", {"blocks": [*TEXT, [0, "ENG-2 again"]]}) or setattr(weekly, "version", 2))
    step(lambda: world.add(_doc(reports.id, "Weekly.docx", TEXT)))  # as loose a match, later: the first stays
    exact = _doc(reports.id, "Weekly", TEXT[:2])  # an exact name now wins over the one with an extension
    step(lambda: world.add(exact))
    bob = DocumentShare(document_id=weekly.id, employee_id=2, permission="view")
    step(lambda: world.add(bob, DocumentShare(document_id=exact.id, employee_id=3, permission="view")))
    carol = DocumentShare(document_id=weekly.id, employee_id=3, permission="comment")
    step(lambda: world.add(carol))
    step(lambda: setattr(carol, "permission", "edit"))
    step(lambda: world.session.delete(carol))
    step(lambda: setattr(dave, "permission", "edit"))  # raised during the episode: it counts as shared now
    step(lambda: world.session.delete(dave))
    step(lambda: setattr(weekly, "owner_id", 2))
    quiet = len(lookups)
    step(lambda: setattr(notes, "name", "WEEKLY.ODT"))  # a rename: the path may name another row, looked up again
    step(lambda: world.session.delete(notes))
    assert quiet <= len(PATHS), f"only the first grade looked paths up before the rename: {lookups}"
    assert len(lookups) - quiet >= 2, "the rename and the deletion were looked up again, not folded"
    assert found.get("doc_section_contains", 0) >= 10 and found.get("doc_mentions_once", 0) >= 10, found


def _reference(
    sections: list[tuple[str, str]], heading: str, pattern: str, only_there: bool, name: str
) -> tuple[bool, str]:
    """``doc_section_contains`` as it read before it matched each section once (a list of sections per check)."""
    inside = [(h, t) for h, t in sections if h and re.search(heading, h, re.I)]
    if not inside:
        shown = listing([repr(h) for h, _ in sections if h], 6) or "none"
        return False, f"{name}: no section heading matches /{heading}/ (headings: {shown})"
    hits = [h for h, t in inside if re.search(pattern, t, re.I)]
    elsewhere = [
        h or "(before the first heading)" for h, t in sections if (h, t) not in inside and re.search(pattern, t, re.I)
    ]
    if not hits:
        where = f"found under {listing([repr(h) for h in elsewhere])}" if elsewhere else "found in no section"
        body = snippet(" ".join(t for _, t in inside), 80)
        return False, f"{name}: not in section {inside[0][0]!r} ({where}; it holds {body})"
    if only_there and elsewhere:
        return False, f"{name}: in {hits[0]!r} but also in {listing([repr(h) for h in elsewhere])}"
    return True, f"{name}: in section {hits[0]!r}"


def test_a_section_verdict_from_one_pass_is_the_one_the_section_lists_gave():
    from graders.base import GradingContext
    from graders.checks_docs import _sections, doc_section_contains

    blocks = [
        [0, "Preamble names ENG-1"],
        [1, "Done"],
        [0, "ENG-1 shipped; ENG-3 shipped"],
        [1, "Blocked"],
        [0, "ENG-2 waits"],
        [1, "Done"],
        [0, "ENG-1 shipped; ENG-3 shipped"],  # the same section twice
        [1, "Done later"],
        [0, "ENG-4"],
        [1, "Empty"],
    ]
    ctx = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
    ctx.memo[("document", "R.odt")] = (1, "R.odt", "text", MIME["odt"], {"blocks": blocks}, None, 1, 1)
    sections = _sections(ctx, ctx.memo[("document", "R.odt")])
    compared = 0
    for heading in ("^done$", "done", "blocked", "nowhere", "empty", "^"):  # "^" names the preamble too
        for pattern in ("ENG-1", "ENG-2", "ENG-3", "ENG-4", "ENG-9", "shipped"):
            for only_there in (True, False):
                got = doc_section_contains(
                    ctx, document="R.odt", heading=heading, pattern=pattern, only_there=only_there
                )
                want = _reference(sections, heading, pattern, only_there, pattern)
                assert (got.score == 1.0, got.evidence) == want, (heading, pattern, only_there)
                compared += 1
    assert compared == 72


def test_the_literal_prefilter_never_hides_a_match_the_regex_finds():
    from graders.checks_common import rx
    from graders.checks_docs import Sections, _matching, _may_match, _needles, _prefix

    texts = [
        "SEA-3 shipped; see sea-31",
        "Blocked: we need a decision from Product",
        "nothing here",
        "KELVIN \u212a and dotless \u0131 and long \u017f",  # not ASCII: the regex always runs
        "sea 3, Review demo environment",
        "",
        "Review Demo after SEA-3",
        "14:20 deploy\n14:24 Alert fired on errors\nDown 38 Minutes",
        "ababC then xabc",
        "see sea-31, sea-3x and then SEA-3.",  # the first "sea-3" is no match, a later one is
        "abc\nsea-3 leads the second line",
    ]
    patterns = [
        r"\bSEA\-3\b",
        r"\bSEA\-3\b[^\n]*Review\ demo|Review\ demo[^\n]*\bSEA\-3\b",
        r"we\ need\ a\ decision",
        r"(?x) sea - 3",
        r"k",
        r"i",
        r"s",
        r"SEA-(?!(?:1|2)\b)\d+\b",
        r"a|b",
        r"(?-i:SEA)-3",
        r"x?y*",
        "\u212a",
        r"(?im)^(?=.*(?<![\d:])14:24(?![\d:]))(?=.*(?:alert|error|fired|page)).*$",
        r"\b38\s*(?:min|minutes)\b",
        r"(ab)+c",
        r"(ab)*c",
        r"(?:x|)abc",
        r"(?<=14:)24",
        r"(?<=x)abc",
        r"(?<![\w-])sea-3(?![\w-])",
        r"^sea",
        r"(?m)^sea",
        r"\Bea-3",
        r"(?:x|sea)-3\b",
        r"(?:ab|(?-i:SEA))",
    ]
    sections = Sections.of([("", t) for t in texts])
    for pattern in patterns:
        want = [rx(pattern).search(t) is not None for t in texts]
        assert _matching(pattern, texts, sections.texts_low) == want, pattern
        may = _may_match(pattern, sections.joined_low)
        found = [rx(pattern).search(j) is not None for j in sections.joined]
        assert all(m for m, w in zip(may, found, strict=True) if w), pattern
    assert _needles(r"\bSEA\-3\b") == ("sea-3",), "a rubric's key pattern is prefiltered"
    assert _needles(patterns[12]) == ("14:24",), "and a timeline line's time, inside its lookahead"
    assert _prefix(r"\bSEA\-3\b") == ("sea-3",) and _prefix(patterns[12]) is None, "a match starts at its prefix"
    assert _prefix(patterns[1]) == ("sea-3", "review demo"), "or at one of its branches"
    assert _may_match(r"\bSEA\-3\b", sections.texts_low).count(False) >= 3, "and the prefilter skips sections"

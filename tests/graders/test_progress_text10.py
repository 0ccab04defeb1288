"""The document steps of the tenth round, each path held to a full grade or to the code it stands in for.

``text_step.read`` reads a step's document once for every text function (kept in ``ctx.memo`` for the rows the
framework hands them); ``_unmoved_contains`` answers ``LATER`` for a contains check whose score a section write
cannot move but whose evidence quotes the written section; a rewritten parse's headings, texts and changed
sections are mapped by C calls (``Sections.of``), and its attributes are slots. Each is compared with what it
replaces: after every step of a document's life the progress value and every check's score, evidence and
details with a full grade; a diffed parse with the comprehensions it replaced and with a fresh parse; the block
reader (moved to ``graders.text_blocks``) with the office reader.
"""

from __future__ import annotations

from typing import Any

import pytest

from graders import checks_docs
from graders.base import GradingContext, grade, read_changes
from graders.progress import Progress
from graders.registry import LATER
from graders.text_match import Sections, _plain_sections
from tests.graders.test_progress_comms3 import _rubric
from tests.graders.test_progress_pdocs import _doc
from worlds.office.model import text_from_json
from worlds.schema import DocFolder

WEEKLY, NOTES = "Shared/Reports/Weekly.odt", "Shared/Reports/Notes.odt"
CHECKS: list[tuple[str, str, dict[str, Any]]] = [
    ("done-1", "doc_section_contains", {"document": WEEKLY, "heading": "^done$", "pattern": r"\bENG\-1\b"}),
    ("done-9", "doc_section_contains", {"document": WEEKLY, "heading": "^done$", "pattern": r"\bENG\-9\b"}),
    (
        "done-why",
        "doc_section_contains",
        {"document": WEEKLY, "heading": "^done$", "pattern": "login", "only_there": False},
    ),
    ("blocked-2", "doc_section_contains", {"document": WEEKLY, "heading": "^blocked$", "pattern": r"\bENG\-2\b"}),
    ("no-secret", "doc_mentions_none", {"document": WEEKLY, "pattern": "secret"}),
    ("lacks-4", "doc_lacks", {"document": WEEKLY, "pattern": r"\bENG\-4\b"}),
    ("once-1", "doc_mentions_once", {"document": WEEKLY, "pattern": r"\bENG\-1\b"}),
    ("notes-x", "doc_section_contains", {"document": NOTES, "heading": "^x$", "pattern": "y"}),
    ("notes-none", "doc_mentions_none", {"document": NOTES, "pattern": "secret"}),
]


def _outcomes(result: Any) -> list[tuple[str, float, str, Any]]:
    return [(c.id, c.score, c.evidence, c.details) for c in result]


def test_one_read_a_step_for_every_text_function_and_later_for_a_quoted_section_equal_a_full_grade(
    world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = DocFolder(parent_id=None, name="Shared", owner_id=1, created_at=world.clock.now())
    world.add(shared)
    reports = DocFolder(parent_id=shared.id, name="Reports", owner_id=1, created_at=world.clock.now())
    world.add(reports)
    world.start_seq = world.log_count()
    rubric = _rubric(CHECKS)
    ids = [c.id for c in rubric.checks]
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    assert len({key[0] for key in progress._grouped}) == 4, "four text functions: four on_step groups"
    later: set[str] = set()
    for key, (fn, checks, params) in list(progress._grouped.items()):

        def spy(ctx: Any, rows: Any, params: Any, _fn: Any = fn, _checks: Any = checks) -> Any:
            out = _fn(ctx, rows, params)
            later.update(ids[_checks[pos]] for pos, v in out.items() if v is LATER)
            return out

        progress._grouped[key] = (spy, checks, params)
    parsed: list[int] = []
    real_sections = checks_docs._sections

    def sections(ctx: Any, row: Any) -> Any:
        parsed.append(row[0])
        return real_sections(ctx, row)

    monkeypatch.setattr(checks_docs, "_sections", sections)
    docs: dict[str, Any] = {}

    def create(name: str, blocks: list[list[Any]]) -> None:
        docs[name] = _doc(reports.id, name, blocks)
        world.add(docs[name])

    def write(name: str, blocks: list[list[Any]]) -> None:
        docs[name].content = {"blocks": blocks}
        docs[name].version += 1

    head = [[1, "Done"], [0, "ENG-1 shipped the login fix"], [1, "Blocked"], [0, "ENG-2 waits"]]
    today = [*head[:1], [0, "ENG-1 shipped the login fix today"], *head[2:]]
    steps: list[tuple[str, Any, set[str]]] = [
        ("create", lambda: create("Weekly.odt", head), set()),
        ("notes", lambda: create("Notes.odt", [[1, "x"], [0, "nothing"]]), set()),
        # done-9 fails quoting Done's text: an edit of Done that no needle of it names moves its evidence alone
        ("reword done", lambda: write("Weekly.odt", today), {"done-9"}),
        ("edit blocked", lambda: write("Weekly.odt", [*today[:3], [0, "ENG-2 waits; secret"]]), set()),
        ("done-9 lands", lambda: write("Weekly.odt", [*head[:1], [0, "ENG-1 login ENG-9"], *head[2:]]), set()),
        ("done-9 moves", lambda: write("Weekly.odt", [*head[:3], [0, "ENG-2, ENG-9"]]), set()),
        ("regrow", lambda: write("Weekly.odt", [[0, "ENG-4"], *head, [1, "Next"]]), set()),
        ("rename", lambda: setattr(docs["Weekly.odt"], "name", "Old.odt"), set()),
        ("back", lambda: setattr(docs["Weekly.odt"], "name", "Weekly.odt"), set()),
    ]
    seq = world.start_seq
    for name, edit, want_later in steps:
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        later.clear()
        parsed.clear()
        value = progress.update(rows)  # type: ignore[arg-type]
        reads = len(parsed)  # the update's (the grade below parses too)
        full = grade(rubric, world.ctx())
        assert value == full.value, f"after {name}"  # before ``results`` brings the lagging evidence up
        assert _outcomes(progress.results()) == _outcomes(full.checks), f"after {name}"
        assert later == want_later, f"{name}: LATER for {later}"
        if name in ("create", "reword done", "edit blocked", "regrow"):
            assert reads == 1, f"{name}: one read of the written document for every text function"


@pytest.mark.parametrize("stands", [True, False])
def test_a_quoted_section_answers_later_only_while_the_score_stands(stands: bool) -> None:
    kw = {"document": "d", "heading": "^Done$", "pattern": r"\bENG\-9\b"}
    from graders.text_match import contains_verdict
    from graders.text_step import _unmoved_contains

    old = Sections.of([("", "intro"), ("Done", "ENG-1"), ("Next", "x")])
    assert contains_verdict(old, "d", kw)[0] == 0.0  # fails, quoting Done's text
    new = Sections.of([("", "intro"), ("Done", "ENG-1 again" if stands else "ENG-9"), ("Next", "x")], old)
    answer = _unmoved_contains(new, kw)
    fresh = contains_verdict(Sections.of(list(new)), "d", kw)
    if stands:
        assert answer is LATER and fresh[0] == 0.0 and fresh[1] != contains_verdict(old, "d", kw)[1]
    else:
        assert answer is False and fresh[0] == 1.0


BLOCKS: list[Any] = [
    [],
    [[1, "Only a heading"]],
    [[0, "a"], [0, "b"], [1, "  H  "], [0, "c"], [2, "\tSub"], [1, "Empty"], [1, "Last"], [0, ""]],
    [[1, "A"], (0, "a tuple block")],  # not a list: the office reader
    [[1, "A"], [0, "x", "extra"]],  # three items
    [[1, "A"], [0]],  # one item
    [[1, "A"], 5],  # not a block at all
    [[1, "A"], "0x"],  # a string of two characters
    [[True, "a bool level"], [0, "x"]],
    [[1.0, "a float level"], [0, "x"]],
    [[0, 7], [1, "H"]],  # a number for text
    [[-2, "negative"], [1, "H"], [0, "x"], [0, "y\nz"]],
    [[1, "A"], [0, "NUL \0 inside"], [1, "B\u212a"], [0, "Kelvin and \u0130"]],
]


@pytest.mark.parametrize("blocks", BLOCKS, ids=range(len(BLOCKS)))
def test_blocks_read_as_the_office_reader_reads_them_or_left_to_it(blocks: Any) -> None:
    content = {"blocks": blocks}
    got = _plain_sections(content)
    try:
        want = text_from_json(content).sections()
    except Exception:
        want = None
    if got is not None:  # None leaves the content to the office reader (which says what is wrong)
        assert got == want
    if all(type(b) is list and len(b) == 2 and type(b[0]) is int and type(b[1]) is str for b in blocks):
        assert got is not None, "the plain stored form is read here"


REWRITES: list[tuple[list[tuple[str, str]], list[tuple[str, str]]]] = [
    ([("", "a"), ("Done", "x")], [("", "a"), ("Done", "x")]),  # nothing changed
    ([("", "a"), ("Done", "x")], [("", "b"), ("Done", "x")]),  # the first section's text
    ([("", "a"), ("Done", "x")], [("", "a"), ("Shipped", "x")]),  # a heading alone
    ([("", "a"), ("Done", "x"), ("Next", "y")], [("", "A"), ("Done", "x2"), ("Next", "y\u2014")]),  # every one
    ([("", "")], [("", "\u0130")]),  # a form lowering would hide
]


@pytest.mark.parametrize("before, after", REWRITES, ids=range(len(REWRITES)))
def test_a_rewritten_parse_maps_its_headings_texts_and_changes_as_the_comprehensions_did(
    before: list[tuple[str, str]], after: list[tuple[str, str]]
) -> None:
    prev = Sections.of(before)
    new = Sections.of(after, prev)
    assert new.heads == tuple(h for h, _ in after) and new.texts == [t for _, t in after]
    assert new.changed == [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert new.same_heads == (tuple(h for h, _ in before) == new.heads)
    fresh = Sections.of(after)
    assert (new.texts_low, new.joined, new.joined_low) == (fresh.texts_low, fresh.joined, fresh.joined_low)
    assert not hasattr(new, "__dict__"), "slots: no instance dictionary a parse"

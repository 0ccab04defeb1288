"""The text checks' paths of branch text7, each held to the code it stands in for.

A document's parse read in C (``text_match._plain_sections``' block-list path) must give the sections the
office reader gives; the other paths are held to the check functions' own verdicts on the same parse.
"""

from __future__ import annotations

from typing import Any

import pytest

from graders.registry import LATER
from graders.text_match import BATCHES, VERDICTS, Sections, _lowered, _plain, _plain_sections
from graders.text_step import QUIET, UNMOVED, decide, quiet_plan
from worlds.office.model import text_from_json

BLOCKS: list[list[list[Any]]] = [
    [],
    [[0, "only a body"], [0, "two lines"]],
    [[1, "  Title  "], [0, "a"], [2, "Sub"], [0, "b"], [0, "c"]],
    [[0, "before"], [1, "A"], [1, "B"], [0, "under B"], [1, "Last"]],
    [[3, "Deep"], [0, ""], [0, "x"]],
    [[True, "a bool level"], [0, "x"]],  # not an int: the block loop's reading
    [[1.0, "a float level"], [0, "x"]],
    [["1", "a string level"], [0, "x"]],
    [[-1, "negative"], [1, "H"], [0, "x"]],
    [[1, "A"], [0, "x"], [1.0, "B"], [0, 5]],  # a float level and a number for text after plain blocks
]


@pytest.mark.parametrize("blocks", BLOCKS, ids=range(len(BLOCKS)))
def test_plain_sections__reads_blocks_as_the_office_reader_does(blocks):
    plain = _plain_sections({"blocks": blocks})
    assert plain == text_from_json({"blocks": blocks}).sections()


@pytest.mark.parametrize("blocks", [[[1, "A", "extra"]], [[1]], [[1, "A"], [0]], [[0, "x"], [1.0, "B"], ["x", "y"]]])
def test_plain_sections__leaves_a_block_it_cannot_read_to_the_office_reader(blocks):
    assert _plain_sections({"blocks": blocks}) is None


DOC = "Shared/Reports/Weekly.odt"
WRITES: list[list[tuple[str, str]]] = [
    [
        ("", "intro"),
        ("Done", "ENG-1: Fix the login page"),
        ("In progress", "ENG-2: Draft the rollout plan"),
        ("Blocked", "ENG-3: waiting on legal"),
    ],
    [  # ENG-1 leaves Done (a needle only in the old text), Done quotes new text
        ("", "intro"),
        ("Done", "nothing yet"),
        ("In progress", "ENG-2: Draft the rollout plan"),
        ("Blocked", "ENG-3: waiting on legal"),
    ],
    [  # ENG-1 arrives under Blocked (a needle only in the new text)
        ("", "intro"),
        ("Done", "nothing yet"),
        ("In progress", "ENG-2: Draft the rollout plan"),
        ("Blocked", "ENG-3: waiting on legal, ENG-1 too"),
    ],
    [  # an edit no needle names, under a heading a check quotes
        ("", "intro"),
        ("Done", "nothing yet, still"),
        ("In progress", "ENG-2: Draft the rollout plan"),
        ("Blocked", "ENG-3: waiting on legal, ENG-1 too"),
    ],
    [  # a heading renamed, its text kept: the checks that read headings are all asked (ENG-2 is named twice)
        ("", "intro"),
        ("Done ENG-2", "nothing yet, still"),
        ("In progress", "ENG-2: Draft the rollout plan"),
        ("Blocked", "ENG-3: waiting on legal, ENG-1 too"),
    ],
    [  # a dotless i hides a match from the lowered form: nothing is quiet
        ("", "intro"),
        ("Done", "ENG-1: F\u0131x the login page"),
        ("In progress", "ENG-2: Draft the rollout plan"),
        ("Blocked", "ENG-3: waiting on legal, ENG-1 too"),
    ],
    [  # another heading
        ("", "intro"),
        ("Finished", "ENG-1: Fix the login page"),
        ("In progress", "ENG-2: Draft the rollout plan"),
        ("Blocked", "ENG-3: waiting on legal"),
    ],
    [  # back, and a pattern with no needle (a digit run) moves
        ("", "intro 7"),
        ("Done", "ENG-1: Fix the login page"),
        ("In progress", "ENG-2: Draft the rollout plan"),
        ("Blocked", "ENG-3: waiting on legal"),
    ],
]
CHECKS: dict[str, list[dict[str, Any]]] = {
    "doc_section_contains": [
        {"document": DOC, "heading": "^Done$", "pattern": r"\bENG\-1\b", "label": "ENG-1"},
        {"document": DOC, "heading": "^Done$", "pattern": "fix the login", "only_there": False},
        {"document": DOC, "heading": "^Blocked$", "pattern": r"\bENG\-3\b"},
        {"document": DOC, "heading": "^In progress$", "pattern": r"\bENG\-2\b"},
        {"document": DOC, "heading": "^Done$", "pattern": r"\bENG\-9\b"},  # fails: quotes Done's text
        {"document": DOC, "heading": "^(Done|In progress)$", "pattern": r"\bENG\-2\b"},  # kept: no text quoted
        {"document": DOC, "heading": "^$|^Done$", "pattern": r"\d|intro"},  # no needle: always asked
    ],
    "doc_lacks": [
        {"document": DOC, "pattern": r"\bENG\-1\b"},
        {"document": DOC, "pattern": "legal"},
        {"document": DOC, "pattern": r"\d|zzz"},
    ],
    "doc_mentions_none": [{"document": DOC, "pattern": r"\bENG\-1\b"}, {"document": DOC, "pattern": "still"}],
    "doc_mentions_once": [{"document": DOC, "pattern": r"\bENG\-1\b"}, {"document": DOC, "pattern": "ENG-2"}],
}


@pytest.mark.parametrize("fn", list(CHECKS))
def test_decide__keeps_or_decides_each_check_as_a_fresh_parse_decides_it(fn):
    params = CHECKS[fn]
    joined, heads, quotes = QUIET[fn]
    plan = quiet_plan(list(range(len(params))), params, joined, quotes)
    state = Sections.of(WRITES[0])
    verdicts = [VERDICTS[fn](state, DOC, kw) for kw in params]
    asked_any = kept_any = later_any = False
    for sections in WRITES[1:]:
        state = Sections.of(sections, state)
        out: dict[int, Any] = {}
        decide(state, DOC, plan, out, UNMOVED[fn], VERDICTS[fn], joined, heads)
        fresh = Sections.of(sections)
        want = [VERDICTS[fn](fresh, DOC, kw) for kw in params]
        # ``LATER`` (round ten): the score stands and only the evidence moved, so the kept score must be the
        # fresh one; the evidence is the function's, as when the framework asks it for the results
        for pos, answer in out.items():
            if answer is LATER:
                assert verdicts[pos][0] == want[pos][0] and verdicts[pos][1] != want[pos][1], (sections, pos)
                later_any = True
        verdicts = [want[pos] if out.get(pos) is LATER else out.get(pos, verdicts[pos]) for pos in range(len(params))]
        assert verdicts == want, sections
        for key, answers in state.found.items():  # the answers carried over are the new parse's
            assert answers == fresh.matching(*key), key
        asked_any, kept_any = asked_any or bool(out), kept_any or len(out) < len(params)
    assert asked_any and kept_any
    assert later_any or fn != "doc_section_contains", "a failing check quoting an edited section: LATER"


NEW_PARSES: list[list[tuple[str, str]]] = [
    [
        ("", "intro"),
        ("Done", "ENG-1: Fix the login page\nENG-4: Fix the login page again"),
        ("Done too", "ENG-1 closed as well"),
        ("Blocked", "ENG-3: waiting on legal"),
    ],
    [  # a dotless i: the lowered form of that section is not known, its text is searched
        ("Done", "ENG-1: F\u0131x the login page"),
        ("Blocked", "ENG-3: waiting on legal"),
    ],
    [("Notes", "nothing to report, fix the login page")],  # no heading a check names
    [("Done", "Kelvin: \u212a, ENG-1"), ("Done later", "ENG-1 and ENG-2")],  # the Kelvin sign lowers to k
]
NEW_CONTAINS: list[dict[str, Any]] = [
    {"document": DOC, "heading": "^Done", "pattern": r"\bENG\-1\b", "label": "ENG-1"},  # two named sections
    {"document": DOC, "heading": "^Done$", "pattern": r"\bENG\-1\b"},  # also in an unnamed one: fails
    {"document": DOC, "heading": "^Done$", "pattern": "fix the login page", "only_there": False},  # plain
    {"document": DOC, "heading": "^Done$", "pattern": "(?i)FIX THE LOGIN", "only_there": False},  # plain, (?i)
    {"document": DOC, "heading": "^Done", "pattern": "(?a)kelvin: k", "only_there": False},  # (?a): searched
    {"document": DOC, "heading": "^Done", "pattern": "kelvin: k", "only_there": False},  # plain: the Kelvin sign
    {"document": DOC, "heading": "^Blocked$", "pattern": r"legal|\bENG\-3\b"},  # two start texts
    {"document": DOC, "heading": "^Blocked$", "pattern": r"\bENG\-1\b"},  # one section matches, not named
    {"document": DOC, "heading": "^Nowhere$", "pattern": "login", "only_there": False},
    {"document": DOC, "heading": "^Done$", "pattern": r"login\ page$", "only_there": False},  # not plain: $
    {"document": DOC, "heading": "^Done", "pattern": r"(?im)^(?=.*\bENG-4\b)(?=.*again).*$", "only_there": False},
    {"document": DOC, "heading": "^Done", "pattern": r"(?im)^(?=.*\bENG-1\b)(?=.*again).*$", "only_there": False},
    {"document": DOC, "heading": "^Done$", "pattern": r"again[^\n]*ENG|\bENG\-4\b", "only_there": False},  # two starts
    {"document": DOC, "heading": "^Done$", "pattern": r"\bENG\-4\b[^\n]*zebra|zebra[^\n]*ENG", "only_there": False},
]


def test_contains_batch__equals_each_checks_own_verdict_and_keeps_the_answers_matching_finds():
    plan, batch = BATCHES["doc_section_contains"]
    passed: set[int] = set()
    for parse in NEW_PARSES:
        sections, own = Sections.of(parse), Sections.of(parse)
        out: dict[int, Any] = {}
        batch(sections, plan(list(range(len(NEW_CONTAINS))), NEW_CONTAINS), out)
        assert out == {i: VERDICTS["doc_section_contains"](own, DOC, kw) for i, kw in enumerate(NEW_CONTAINS)}
        for (pattern, joined), answers in sections.found.items():
            assert answers == Sections.of(parse).matching(pattern, joined), pattern
        passed.update(pos for pos, verdict in out.items() if verdict[0] == 1.0)
    assert {10, 11} & passed == {10}  # a line-bound pattern: one holding both texts on a line, one not
    assert [i for i, kw in enumerate(NEW_CONTAINS) if _plain(kw["pattern"])] == [2, 3, 5, 8]


NEW_ONCE: list[dict[str, Any]] = [
    {"document": DOC, "pattern": r"\bENG\-1\b", "label": "ENG-1"},  # twice, in two sections
    {"document": DOC, "pattern": r"\bENG\-4\b"},  # once
    {"document": DOC, "pattern": r"ENG-\d"},  # every ticket, counted per section
    {"document": DOC, "pattern": r"\bENG\-9\b"},  # nowhere
    {"document": DOC, "pattern": "done"},  # in headings only
    {"document": DOC, "pattern": r"legal|\bENG\-3\b"},  # two start texts
    {"document": DOC, "pattern": r"\d+"},  # no start text
]


def test_once_batch__counts_as_each_checks_own_verdict_and_keeps_the_answers_matching_finds():
    plan, batch = BATCHES["doc_mentions_once"]
    for parse in NEW_PARSES:
        sections, own = Sections.of(parse), Sections.of(parse)
        out: dict[int, Any] = {}
        batch(sections, plan(list(range(len(NEW_ONCE))), NEW_ONCE), out)
        assert out == {i: VERDICTS["doc_mentions_once"](own, DOC, kw) for i, kw in enumerate(NEW_ONCE)}
        for (pattern, joined), answers in sections.found.items():
            assert answers == Sections.of(parse).matching(pattern, joined), pattern


@pytest.mark.parametrize("parse", [*NEW_PARSES, WRITES[0], [("Only", "\u0130stanbul")], []], ids=range(7))
def test_fresh_parse__has_each_sections_forms_and_the_whole_texts_the_lazy_builder_gives(parse):
    sections = Sections.of(parse)
    assert sections.heads == tuple(h for h, _ in parse) and sections.texts == [t for _, t in parse]
    assert sections.texts_low == [_lowered(t) for _, t in parse]
    assert sections.joined == [f"{h}\n{t}" for h, t in parse]
    assert sections.joined_low == [_lowered(f"{h}\n{t}") for h, t in parse]
    built = dict(sections.whole)
    sections.whole.clear()
    assert built == {joined: w for joined in (False, True) if (w := sections._whole(joined)) is not None}

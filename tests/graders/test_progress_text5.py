"""The text verdicts a new parse takes together (branch text5), held to each function's own verdict.

``text_match.BATCHES`` decides every check of one function on a new parse in one frame: the checks' params and
patterns' plans read once per episode, each heading named and quoted once, a pass decided inline (a contains
check's first named section, a pattern's answers found by its start texts; a pattern that matches nowhere
taking its function's passing evidence from the plan). Any shortcut that read a wrong section, kept a wrong
answer or built the evidence differently would change these verdicts, so each batch is compared with its
function's verdict (``text_match.VERDICTS``) on the same parses, check by check, and the answers the batch
keeps in ``Sections.found`` with the ones ``matching`` finds. Pure text: no world, so they cost nothing.
"""

from __future__ import annotations

from typing import Any

from graders.text_match import BATCHES, VERDICTS, Sections

DOC = "Shared/Reports/Weekly.odt"
PARSES = [
    [
        ("", "intro naming ENG-10"),
        ("Done", "ENG-1: Fix the login page\nENG-11: Ship the search box"),
        ("In progress", "ENG-2: Draft the rollout plan"),
        ("Blocked", "ENG-3: Review the export format. Blocked: waiting on legal"),
    ],
    [  # ENG-1 in two sections, a title in the wrong one, no Blocked heading
        ("Done", "ENG-11 shipped"),
        ("In progress", "ENG-1: Fix the login page, ENG-2: Draft the rollout plan"),
        ("Done later", "ENG-1 again"),
    ],
    [  # a dotless i (\u0131) hides a case-insensitive match from the lowered form: every section is searched
        ("Done", "ENG-1: F\u0131x the login page"),
        ("Blocked", "ENG-3: waiting"),
    ],
    [("Notes", "nothing to report")],  # no heading a check names
    [  # a pattern twice in one section and in a heading: each one counted, under its heading
        ("", "ENG-1 intro"),
        ("Done", "nothing"),
        ("Fixed", "ENG-1 and again ENG-1, ENG-2"),
        ("ENG-1 follow-up", "ENG-1 once more"),
    ],
]
CONTAINS: list[dict[str, Any]] = [
    {"document": DOC, "heading": "^Done$", "pattern": r"\bENG\-1\b", "label": "ENG-1"},
    {
        "document": DOC,
        "heading": "^Done$",
        "pattern": r"\bENG\-1\b[^\n]*Fix\ the\ login|Fix\ the\ login[^\n]*\bENG\-1\b",
        "only_there": False,
        "label": "ENG-1 title",
    },
    {"document": DOC, "heading": "^Blocked$", "pattern": "waiting on legal", "only_there": False},
    {"document": DOC, "heading": "^Blocked$", "pattern": r"\bENG\-3\b"},
    {"document": DOC, "heading": "^(In progress|Done)", "pattern": r"\bENG\-2\b"},
    {"document": DOC, "heading": "^Done", "pattern": r"ENG-\d+", "only_there": False},  # no start text: a digit
    {"document": DOC, "heading": "^Done", "pattern": r"(?i)fix", "label": "a fix"},
    {"document": DOC, "heading": "^Nowhere$", "pattern": "login"},
]
ANSWERED: list[tuple[str, dict[str, Any]]] = [
    ("doc_mentions_none", {"document": DOC, "pattern": r"\bENG\-9\b", "label": "ENG-9"}),
    ("doc_mentions_none", {"document": DOC, "pattern": r"\bENG\-10\b"}),
    ("doc_mentions_none", {"document": DOC, "pattern": "done"}),  # a heading is searched too (joined)
    ("doc_lacks", {"document": DOC, "pattern": "legal"}),
    ("doc_lacks", {"document": DOC, "pattern": r"\bENG\-4\b", "label": "ENG-4"}),
    ("doc_mentions_once", {"document": DOC, "pattern": r"\bENG\-1\b", "label": "ENG-1"}),
    ("doc_mentions_once", {"document": DOC, "pattern": r"\bENG\-2\b"}),
    ("doc_mentions_once", {"document": DOC, "pattern": r"\bENG\-7\b"}),
]


def _batch(fn: str, sections: Sections, params: list[dict[str, Any]]) -> dict[int, Any]:
    plan, decide = BATCHES[fn]
    out: dict[int, Any] = {}
    decide(sections, plan(list(range(len(params))), params), out)
    return out


def test_contains_checks_taken_together_equal_each_checks_own_verdict() -> None:
    for parse in PARSES:
        together = _batch("doc_section_contains", Sections.of(parse), CONTAINS)
        one_by_one = Sections.of(parse)
        assert together == {i: VERDICTS["doc_section_contains"](one_by_one, DOC, kw) for i, kw in enumerate(CONTAINS)}
    passed = _batch("doc_section_contains", Sections.of(PARSES[0]), CONTAINS)
    assert passed[0] == (1.0, "ENG-1: in section 'Done'", {})
    assert passed[4] == (1.0, r"\bENG\-2\b: in section 'In progress'", {})


def test_contains_keeps_the_answers_matching_would_find() -> None:
    sections = Sections.of(PARSES[1])
    _batch("doc_section_contains", sections, CONTAINS)
    fresh = Sections.of(PARSES[1])
    assert sections.found, "a check that reads every section's answer keeps it for the next write's diff"
    for (pattern, joined), answers in sections.found.items():
        assert answers == fresh.matching(pattern, joined), pattern


def test_answered_checks_taken_together_equal_each_checks_own_verdict() -> None:
    for fn in ("doc_mentions_none", "doc_lacks", "doc_mentions_once"):
        params = [kw for f, kw in ANSWERED if f == fn]
        for parse in PARSES:
            sections = Sections.of(parse)
            together = _batch(fn, sections, params)
            one_by_one = Sections.of(parse)
            assert together == {i: VERDICTS[fn](one_by_one, DOC, kw) for i, kw in enumerate(params)}, (fn, parse)
            for (pattern, joined), answers in sections.found.items():
                assert answers == Sections.of(parse).matching(pattern, joined), (fn, pattern)


def test_a_share_of_another_document_leaves_a_not_shared_check_lagging_and_exact(world):
    from graders.base import Check, GradingContext, Rubric, grade, read_changes
    from graders.progress import Progress
    from tests.graders.conftest import employee
    from tests.graders.test_progress_pdocs import _doc
    from worlds.schema import DocFolder, DocumentShare

    shared = DocFolder(parent_id=None, name="Shared", owner_id=1, created_at=world.clock.now())
    world.add(shared)
    budget, payroll = _doc(shared.id, "Budget.odt", [[0, "42"]]), _doc(shared.id, "Payroll.odt", [[0, "x"]])
    world.add(budget, payroll)
    world.start_seq = world.log_count()
    checks = [
        ("budget-kept", "doc_not_shared", {"document": "Shared/Budget.odt"}),
        ("payroll-kept", "doc_not_shared", {"document": "Shared/Payroll.odt"}),
        ("budget-dave", "doc_shared_with", {"document": "Shared/Budget.odt", "username": "dave"}),
    ]
    rubric = Rubric(
        id="t",
        version=1,
        description="t",
        checks=tuple(Check(id=i, description="d", fn=f, params=p) for i, f, p in checks),
    )
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    seq, lagging = world.start_seq, {}
    for name, doc, who in (("budget", budget, "dave"), ("payroll", payroll, "bob")):
        world.add(DocumentShare(document_id=doc.id, employee_id=employee(world.session, who).id, permission="view"))
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        value = progress.update(rows)  # type: ignore[arg-type]
        lagging[name] = {progress._checks[i].id for i in progress._lagging}
        full = grade(rubric, world.ctx())
        assert [(c.id, c.score, c.evidence) for c in progress.results()] == [
            (c.id, c.score, c.evidence) for c in full.checks
        ], name
        assert value == full.value
    assert lagging["budget"] == {"payroll-kept"}, "a share of the budget moves only the payroll check's count"
    assert lagging["payroll"] == {"budget-kept"}, "a share of the payroll re-runs its own check (it fails now)"
    assert not grade(rubric, world.ctx()).checks[1].passed


def test_a_line_bound_pattern_is_tried_only_at_the_lines_holding_its_needle_and_finds_what_a_search_finds():
    import re

    from graders.text_match import _hit, _line_match, _lowered

    timeline = r"(?im)^(?=.*(?<![\d:])14:24(?![\d:]))(?=.*(?:alert|error|fired|page)).*$"
    line_bound = [timeline, r"(?m)^[^\n]*\bENG\-1\b", r"(?m)^- (?:done|shipped):? ENG-\d+$", r"(?m)^\w+ 14:24"]
    searched = [r"(?m)^\s*14:24", r"(?ms)^x.*14:24", r"^14:24", r"(?m)^(?<=\n)14:24", r"(?m)^[^x]*14:24"]
    assert all(_line_match(p) for p in line_bound), "one anchored try per line holding a needle"
    assert not any(_line_match(p) for p in searched), "a newline it may cross, DOTALL, no MULTILINE, a lookbehind"
    texts = [
        "- 14:24 ack only\n- 14:25 alert\n- 14:24 [ALERT] fired",  # the needle's first line fails, its third matches
        "- 14:24 alert",
        "- 14:240 alert\n- 114:24 page",  # needles with digits around them: no match
        "intro\n  14:24 page\n- done: ENG-1\nx\n14:24",
        "- Shipped ENG-12\n- done ENG-1\nENG-1 first 14:24",
        "\u212aelvin 14:24 error\n- done: eng-1",  # the Kelvin sign lowers to k in place
        "ENG-1 and 14:24 alert on one line, no newline at all",
    ]
    for pattern in line_bound + searched:
        for text in texts:
            want = re.search(pattern, text, re.IGNORECASE) is not None
            assert _hit(pattern, text, _lowered(text)) == want, (pattern, text)

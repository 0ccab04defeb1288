"""Document checks settled in one pass a step (branch text3), held to a full grade and to the per-check hooks.

A document created or rewritten is settled by each text function's verdict on the new parse
(``text_match.VERDICTS``, the code the check functions return), with no function frames per check; the share
functions settle all of a rubric's share checks with one ``on_step`` call (``text_step.share_step``): a share
moves its document's checks (``doc_shared_with``: only its grantee's), any share every ``doc_not_shared``. A
check left out keeps its verdict, so a routing that forgets one leaves a stale verdict: after every step every
check's score, evidence and details are compared with a full grade and with a second progress whose share
functions have no ``on_step`` (their ``touches`` and ``on_changes`` hooks decide), and which checks each step
handed a verdict for is asserted.
"""

from __future__ import annotations

from typing import Any

from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.progress import Progress
from graders.text_match import Sections, _heads_naming, _named
from tests.graders.conftest import employee
from tests.graders.test_progress_pdocs import _doc
from worlds.schema import DocFolder, DocumentShare

WEEKLY, BUDGET, PAYROLL = "Shared/Reports/Weekly.odt", "Shared/Reports/Budget.odt", "Shared/Reports/Payroll.odt"
SHARE_FNS = ("doc_shared_with", "doc_shared_only_with", "doc_not_shared")
CHECKS: list[tuple[str, str, dict[str, Any]]] = [
    ("done-1", "doc_section_contains", {"document": WEEKLY, "heading": "^done$", "pattern": r"\bENG\-1\b"}),
    (
        "done-why",
        "doc_section_contains",
        {"document": WEEKLY, "heading": "^done$", "pattern": "login", "only_there": False},
    ),
    ("blocked-2", "doc_section_contains", {"document": WEEKLY, "heading": "^blocked$", "pattern": r"\bENG\-2\b"}),
    ("waiting", "doc_section_contains", {"document": WEEKLY, "heading": "^waiting$", "pattern": r"ENG-\d+"}),
    ("no-9", "doc_mentions_none", {"document": WEEKLY, "pattern": r"\bENG\-9\b", "label": "ENG-9"}),
    ("no-secret", "doc_mentions_none", {"document": WEEKLY, "pattern": "secret"}),
    ("lacks-4", "doc_lacks", {"document": WEEKLY, "pattern": r"\bENG\-4\b"}),
    ("lacks-legal", "doc_lacks", {"document": WEEKLY, "pattern": "legal"}),
    ("once-1", "doc_mentions_once", {"document": WEEKLY, "pattern": r"\bENG\-1\b"}),
    ("once-done", "doc_mentions_once", {"document": WEEKLY, "pattern": "done"}),  # a heading counts
    ("weekly-bob", "doc_shared_with", {"document": WEEKLY, "username": "bob", "permission": "edit"}),
    ("weekly-carol", "doc_shared_with", {"document": WEEKLY, "username": "carol", "permission": "view"}),
    ("budget-dave", "doc_shared_with", {"document": BUDGET, "username": "dave", "permission": "comment"}),
    ("budget-bob", "doc_shared_with", {"document": BUDGET, "username": "bob", "permission": "view"}),
    ("weekly-only", "doc_shared_only_with", {"document": WEEKLY, "usernames": ["bob", "carol"]}),
    ("budget-only", "doc_shared_only_with", {"document": BUDGET, "usernames": ["dave"]}),
    ("payroll-kept", "doc_not_shared", {"document": PAYROLL}),
    ("budget-kept", "doc_not_shared", {"document": BUDGET}),
]
TEXT = {i for i, fn, _ in CHECKS if fn not in SHARE_FNS}
NOT_SHARED = {"payroll-kept", "budget-kept"}
ALL_SHARES = {i for i, fn, _ in CHECKS if fn in SHARE_FNS}


def _outcomes(result: Any) -> list[tuple[str, float, str, Any]]:
    return [(c.id, c.score, c.evidence, c.details) for c in result]


def test_new_parses_and_shares_settled_in_one_pass_equal_a_full_grade_and_route_each_row(world, without_on_step):
    shared = DocFolder(parent_id=None, name="Shared", owner_id=1, created_at=world.clock.now())
    world.add(shared)
    reports = DocFolder(parent_id=shared.id, name="Reports", owner_id=1, created_at=world.clock.now())
    world.add(reports)
    budget = _doc(reports.id, "Budget.odt", [[1, "Totals"], [0, "42"]])
    world.add(budget, _doc(reports.id, "Payroll.odt", [[1, "Salaries"], [0, "secret"]]))
    world.start_seq = world.log_count()
    rubric = Rubric(
        id="t",
        version=1,
        description="t",
        checks=tuple(Check(id=i, description="d", fn=f, params=p) for i, f, p in CHECKS),
    )
    ids = [c.id for c in rubric.checks]
    with_step = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    with_step.update([])
    assert {fn for fn, _ in with_step._grouped} >= set(SHARE_FNS), "the share functions are settled by on_step"
    handed: set[str] = set()
    for key, (fn, checks, params) in list(with_step._grouped.items()):

        def spy(ctx, rows, params, _fn=fn, _checks=checks):
            out = _fn(ctx, rows, params)
            handed.update(ids[_checks[pos]] for pos in out)
            return out

        with_step._grouped[key] = (spy, checks, params)
    without_on_step(SHARE_FNS)
    hooks = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    hooks.update([])
    weekly: list[Any] = []
    shares: dict[str, DocumentShare] = {}

    def create() -> None:
        blocks = [[1, "Done"], [0, "ENG-1 shipped the login fix"], [1, "Blocked"], [0, "ENG-2 waits"]]
        weekly.append(_doc(reports.id, "Weekly.odt", blocks))
        world.add(weekly[0])

    def share(name: str, doc: Any, who: str, permission: str) -> None:
        shares[name] = DocumentShare(
            document_id=doc.id, employee_id=employee(world.session, who).id, permission=permission
        )
        world.add(shares[name])

    def write(blocks: list[list[Any]]) -> None:
        weekly[0].content = {"blocks": blocks}
        weekly[0].version += 1

    steps = [
        ("create", create),  # a new parse: every text check settled from it, the share checks of every document
        ("share-weekly-bob", lambda: share("wb", weekly[0], "bob", "view")),
        ("share-weekly-carol", lambda: share("wc", weekly[0], "carol", "view")),
        ("share-budget-dave", lambda: share("bd", budget, "dave", "comment")),
        ("raise", lambda: setattr(shares["wb"], "permission", "edit")),  # an update: every share check asked
        ("rewrite", lambda: write([[1, "Done"], [0, "ENG-1 done; ENG-4 too"], [1, "Waiting"], [0, "ENG-9 secret"]])),
        ("edit", lambda: write([[1, "Done"], [0, "ENG-1 done, the login fix"], [1, "Waiting"], [0, "ENG-2 legal"]])),
        ("regrow", lambda: write([[0, "done"], [1, "Done"], [0, "ENG-1"], [1, "Blocked"], [0, "ENG-2"], [1, "Notes"]])),
        ("unshare", lambda: world.session.delete(shares["wc"])),
        ("rename", lambda: setattr(employee(world.session, "dave"), "username", "david")),
        ("share-budget-bob", lambda: share("bb", budget, "bob", "view")),
    ]
    seq, routed = world.start_seq, {}
    for name, edit in steps:
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        handed.clear()
        value = with_step.update(rows)  # type: ignore[arg-type]
        routed[name] = set(handed)
        hooks.update(rows)  # type: ignore[arg-type]
        full = grade(rubric, world.ctx())
        assert _outcomes(with_step.results()) == _outcomes(full.checks), f"after {name}"
        assert _outcomes(hooks.results()) == _outcomes(full.checks), f"hooks after {name}"
        assert value == full.value
    assert routed["create"] == TEXT | ALL_SHARES, "a new document: its text checks, and a row that may move any path"
    assert routed["share-weekly-bob"] == {"weekly-bob", "weekly-only"} | NOT_SHARED, "its document, its grantee"
    assert routed["share-weekly-carol"] == {"weekly-carol", "weekly-only"} | NOT_SHARED
    assert routed["share-budget-dave"] == {"budget-dave", "budget-only"} | NOT_SHARED
    assert routed["raise"] == ALL_SHARES, "a share updated: its image may not name the document"
    for name in ("rewrite", "edit"):  # as many sections: diffed with the parse before, a quiet check kept
        assert routed[name] < TEXT, f"{name}: a write of the text moves no share check, and not every text check"
    assert routed["regrow"] == TEXT, "a section added: no diff, every text check settled from the parse"
    assert routed["unshare"] == ALL_SHARES
    assert routed["rename"] == ALL_SHARES, "an employee changed: every share check asked again"
    assert routed["share-budget-bob"] == {"budget-bob", "budget-only"} | NOT_SHARED
    passed = {c.id for c in grade(rubric, world.ctx()).checks if c.passed}
    assert {"done-1", "blocked-2", "once-1", "weekly-bob", "budget-bob", "payroll-kept"} <= passed
    assert not passed & {"budget-dave", "weekly-carol", "budget-only", "budget-kept", "once-done", "waiting"}


def test_a_parse_carries_the_forms_of_unchanged_sections_and_names_headings_by_outline():
    old = Sections.of([("", "intro"), ("Done", "ENG-1 shipped"), ("Next", "Jürgen")])
    new = Sections.of([("", "intro"), ("Done", "ENG-1 and İstanbul"), ("Next", "Jürgen")], old)
    fresh = Sections.of(list(new))
    assert new.changed == [1]
    assert (new.texts_low, new.joined, new.joined_low) == (fresh.texts_low, fresh.joined, fresh.joined_low)
    assert new.texts_low[1] is None and new.joined_low[2] == "next\njürgen"  # carried as it was lowered
    assert _named("^(done|next)$", new.heads) == (False, True, True)
    assert _named("", new.heads) == (False, True, True), "an empty heading is never named"
    assert _heads_naming("e", new.heads) == ("Done", "Next")


def test_matches_counted_from_the_first_start_text_are_all_the_matches():
    import re

    from graders.text_match import _first_at, _lowered

    texts = ["eng-1 at the top, ENG-12 and ENG-1", "see ENG-1", "nothing", "Jürgen ENG-1", "\u212aelvin eng-1"]
    texts.append("x-ENG-1 and ENG-1")
    for pattern in (r"\bENG\-1\b", r"(?<!x-)ENG-1", r"eng|nothing", r"^-?ENG", r"\bENG\-1\b|see"):
        for text in texts:
            low = _lowered(text)
            want = [m.span() for m in re.finditer(pattern, text, re.IGNORECASE)]
            got = [m.span() for m in re.compile(pattern, re.IGNORECASE).finditer(text, _first_at(pattern, low))]
            assert got == want, (pattern, text)

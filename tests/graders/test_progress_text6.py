"""The share step's ``LATER`` for ``doc_shared_only_with`` (branch text6), held to a full grade after each step.

A new share of a document given to one of the check's ``usernames`` moves the names its evidence lists and
not its score (nobody else holds the document now than before), so ``text_step.share_step`` answers ``LATER``
instead of deciding it; a share to anyone else, or one updated, is decided. After every step the value (read
before ``results`` brings lagging evidence up to date) and every check's score, evidence and details are
compared with a full grade, and which checks the step answered ``LATER`` for is asserted.
"""

from __future__ import annotations

from typing import Any

from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.progress import Progress
from graders.registry import LATER
from graders.text_match import BATCHES, VERDICTS, Sections
from tests.graders.conftest import employee
from tests.graders.test_progress_pdocs import _doc
from worlds.schema import DocFolder, DocumentShare

PLAN, NOTES, DOC = "Shared/Plan.odt", "Shared/Notes.odt", "Doc.odt"
CHECKS: list[tuple[str, str, dict[str, Any]]] = [
    ("plan-only", "doc_shared_only_with", {"document": PLAN, "usernames": ["bob", "carol"]}),
    ("notes-only", "doc_shared_only_with", {"document": NOTES, "usernames": ["dave"]}),
    ("plan-bob", "doc_shared_with", {"document": PLAN, "username": "bob"}),
    ("notes-kept", "doc_not_shared", {"document": NOTES}),
]


def _outcomes(result: Any) -> list[tuple[str, float, str, Any]]:
    return [(c.id, c.score, c.evidence, c.details) for c in result]


def test_a_share_to_a_named_person_leaves_the_only_with_score_and_any_other_share_decides_it(world):
    shared = DocFolder(parent_id=None, name="Shared", owner_id=1, created_at=world.clock.now())
    world.add(shared)
    plan, notes = _doc(shared.id, "Plan.odt", [[1, "Plan"], [0, "Q3"]]), _doc(shared.id, "Notes.odt", [[0, "x"]])
    world.add(plan, notes)
    world.start_seq = world.log_count()
    rubric = Rubric(
        id="t",
        version=1,
        description="t",
        checks=tuple(Check(id=i, description="d", fn=f, params=p) for i, f, p in CHECKS),
    )
    ids = [c.id for c in rubric.checks]
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    later: set[str] = set()
    for key, (fn, checks, params) in list(progress._grouped.items()):

        def spy(ctx, rows, params, _fn=fn, _checks=checks):
            out = _fn(ctx, rows, params)
            later.update(ids[_checks[pos]] for pos, v in out.items() if v is LATER)
            return out

        progress._grouped[key] = (spy, checks, params)
    shares: dict[str, DocumentShare] = {}

    def share(name: str, doc: Any, who: str) -> None:
        shares[name] = DocumentShare(document_id=doc.id, employee_id=employee(world.session, who).id, permission="view")
        world.add(shares[name])

    steps = [
        ("plan-bob", lambda: share("pb", plan, "bob"), {"plan-only", "notes-kept"}),  # named: score stands at 1
        ("plan-dave", lambda: share("pd", plan, "dave"), {"notes-kept"}),  # not named: decided, 1 -> 0
        ("plan-carol", lambda: share("pc", plan, "carol"), {"plan-only", "notes-kept"}),  # stands at 0
        ("raise", lambda: setattr(shares["pc"], "permission", "edit"), set()),  # an update: decided
        ("notes-bob", lambda: share("nb", notes, "bob"), set()),
        ("notes-dave", lambda: share("nd", notes, "dave"), {"notes-only"}),
    ]
    seq = world.start_seq
    scores: dict[str, list[float]] = {}
    for name, edit, want in steps:
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        later.clear()
        value = progress.update(rows)  # type: ignore[arg-type]
        assert later == want, f"LATER after {name}"
        full = grade(rubric, world.ctx())
        assert value == full.value, f"value after {name}"
        assert _outcomes(progress.results()) == _outcomes(full.checks), f"after {name}"
        for c in full.checks:
            scores.setdefault(c.id, []).append(c.score)
    assert scores["plan-only"] == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert scores["notes-only"] == [1.0] * 4 + [0.0, 0.0]


def test_checks_on_a_new_parse_taken_together_find_matches_at_a_sections_edges() -> None:
    """A start text at the very start or end of a section's text (``ends``, the one-start ``find``) counts."""
    parse = [("", "ENG-1"), ("Done", "ENG-1 and ENG-2"), ("Next", "see ENG-2"), ("ENG-2", "ENG-3, or ENG-1")]
    contains = [
        {"document": DOC, "heading": "^Next$", "pattern": r"\bENG\-2\b"},
        {"document": DOC, "heading": "^Done$", "pattern": r"\bENG\-1\b"},
        {"document": DOC, "heading": "^ENG", "pattern": r"\bENG\-1\b|\bENG\-3\b", "only_there": False},
    ]
    once = [
        {"document": DOC, "pattern": r"\bENG\-1\b"},
        {"document": DOC, "pattern": r"\bENG\-2\b"},
        {"document": DOC, "pattern": r"\bENG\-3\b|see"},
    ]
    for fn, params in (("doc_section_contains", contains), ("doc_mentions_once", once)):
        plan, decide = BATCHES[fn]
        out: dict[int, Any] = {}
        decide(Sections.of(parse), plan(list(range(len(params))), params), out)
        assert out == {i: VERDICTS[fn](Sections.of(parse), DOC, kw) for i, kw in enumerate(params)}, fn
    verdicts = [VERDICTS["doc_mentions_once"](Sections.of(parse), DOC, kw)[1] for kw in once]
    assert verdicts[0] == r"\bENG\-1\b: named 3 times in Doc.odt (under (before the first heading); Done; ENG-2)"

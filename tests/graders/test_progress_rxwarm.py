"""Checks compile their regexes when progress starts, not in a task's first step that tests them.

A rubric's patterns are the task's: a note step of a task's first rollout compiled each (~200 us a pattern),
work that every later rollout of the task found in the regex caches. ``_groups`` (with ``_names_plan``) and
``_review_plan``, made at the call with no rows ``graders.progress`` makes first, now compile them; these tests
count the compiles a note step makes after that call, with the regex caches emptied before it, and hold the
step's verdicts to the checks' own evaluators.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest

from graders import checks_review as cr
from graders import checks_trace, text_match
from graders.base import GradingContext, grade
from graders.changes import ChangeRow, read_changes
from graders.checks_common import rx
from graders.progress import Progress

MR, ACTOR = 7, 1
FILE, OTHER = "billing/rxwarm_invoices.py", "billing/rxwarm_refunds.py"


def _ctx() -> Any:
    return SimpleNamespace(memo={}, lasting={}, actor_id=ACTOR)


def _note(seq: int, body: str, kind: str = "comment") -> ChangeRow:
    changes = {"merge_request_id": MR, "author_id": ACTOR, "kind": kind, "body": body}
    return ChangeRow.of({"seq": seq, "table": "merge_request_notes", "key": [100 + seq], "op": "insert",
                         "changes": changes, "actor": ACTOR})  # fmt: skip


def _params() -> list[dict[str, Any]]:
    """A finding's flag, line, alone and function checks: a pattern each, a line, another finding's pattern."""
    base = {"mr_id": MR, "file": FILE, "pattern": r"\bzq_docstring\b", "line": None, "apart": None, "also": None}
    return [
        base,
        {**base, "line": 41},
        {**base, "apart": [[OTHER, r"\bzq_todo\b"]]},
        {**base, "also": r"\bzq_invoice_total\b"},
    ]


def _ran(ctx: Any, params: list[dict[str, Any]]) -> None:
    for kw in params:  # the states a run of each check leaves when no note fits yet
        key = cr._names_key(kw["mr_id"], kw["file"], kw["pattern"], kw["line"], kw["apart"], kw["also"])
        ctx.lasting[key] = [kw["apart"], None]
        cr._ran(ctx)


@pytest.fixture()
def compiles(monkeypatch: Any) -> list[str]:
    """The patterns ``re`` compiles or parses from now on (its cache, ``rx``'s and ``_line_rx``'s emptied first)."""
    re.purge()
    rx.cache_clear()
    cr._line_rx.cache_clear()
    cr._says.cache_clear()
    cr._at_line.cache_clear()
    text_match._plan.cache_clear()
    text_match._search.cache_clear()
    seen: list[str] = []
    real = re._compiler.compile  # type: ignore[attr-defined]

    def counting(pattern: Any, flags: int = 0) -> Any:
        seen.append(str(pattern))
        return real(pattern, flags)

    parse = re._parser.parse  # type: ignore[attr-defined]

    def parsing(pattern: Any, *args: Any) -> Any:  # what ``text_match`` plans a search with (no compile)
        seen.append(f"parse {pattern}")
        return parse(pattern, *args)

    monkeypatch.setattr(re._compiler, "compile", counting)  # type: ignore[attr-defined]
    monkeypatch.setattr(re._parser, "parse", parsing)  # type: ignore[attr-defined]
    return seen


def _step(ctx: Any, fn: Any, rows: list[ChangeRow], params: list[dict[str, Any]]) -> Any:
    ctx.memo.clear()  # as ``graders.progress`` clears it before each step
    return fn(ctx, rows, params)


def test_a_first_note_step_compiles_nothing_once_progress_started(compiles: list[str]) -> None:
    ctx, params = _ctx(), _params()
    _ran(ctx, params)
    _step(ctx, cr._names_step, [], params)  # progress's first call: the groups are made
    assert {r"\bzq_docstring\b", r"\bzq_todo\b", r"\bzq_invoice_total\b"} <= set(compiles)
    assert any("41" in p for p in compiles)  # the line's regex
    made = len(compiles)
    body = f"{FILE} line 41: zq_invoice_total() has no zq_docstring"
    out = _step(ctx, cr._names_step, [_note(1, body)], params)
    assert len(compiles) == made, compiles[made:]  # the step compiled none
    assert sorted(out) == [0, 1, 2, 3]
    for pos, kw in enumerate(params):  # as the evaluator reads the kept cell
        args = (kw["mr_id"], kw["file"], kw["pattern"], kw["line"], kw["apart"], kw["also"])
        assert cr._names_on_changes(ctx, [], *args) == out[pos], pos


def test_without_the_start_a_note_step_compiles_its_patterns(compiles: list[str]) -> None:
    # the same step with the patterns out of the caches after the groups were made: what a task's first note
    # paid before (this is what the test above would see if the groups did not compile them)
    ctx, params = _ctx(), _params()
    _ran(ctx, params)
    _step(ctx, cr._names_step, [], params)
    re.purge()
    rx.cache_clear()
    cr._line_rx.cache_clear()
    made = len(compiles)
    _step(ctx, cr._names_step, [_note(1, f"{FILE} line 41: zq_invoice_total() has no zq_docstring")], params)
    assert r"\bzq_docstring\b" in compiles[made:]


def test_the_review_plan_compiles_its_patterns(compiles: list[str]) -> None:
    ctx = _ctx()
    patterns = [r"\bzq_rule_one\b", r"\bzq_rule_two\b"]
    reviews: list[dict[str, Any]] = [{"mr_id": MR, "verdict": "request_changes", "patterns": patterns}]
    ctx.lasting[("review_says", MR, "request_changes", id(patterns))] = (patterns, None)
    assert _step(ctx, cr._review_step, [], reviews) is cr._NOTHING  # the plan is made
    assert {r"\bzq_rule_one\b", r"\bzq_rule_two\b"} <= set(compiles)
    made = len(compiles)
    body = "Changes requested: zq_rule_one and zq_rule_two."
    out = _step(ctx, cr._review_step, [_note(1, body, kind="request_changes")], reviews)
    assert len(compiles) == made, compiles[made:]
    assert out[0] == cr._review_on_changes(ctx, [], MR, "request_changes", patterns)
    assert out[0][0] == 1.0


def test_a_no_post_check_plans_its_search_at_the_start_and_its_first_post_compiles_nothing(
    world: Any, compiles: list[str]
) -> None:
    # a task's first post in the check's channel planned (parsed and compiled) the pattern inside its step before
    from tests.graders.test_checks import post
    from tests.graders.test_progress_comms3 import _rubric

    checks = [("quiet", "no_post_in_channel", {"channel": "eng", "pattern": r"\bzq_secret\s+key\b", "author": "carol"})]
    rubric = _rubric(checks)
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    seq, made = world.start_seq, len(compiles)
    for text, want in (("nothing to see", 1.0), ("the ZQ_SECRET   key is out", 0.0)):
        post(world, 2, text, author="carol")
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        value = progress.update(rows)  # type: ignore[arg-type]
        assert len(compiles) == made, compiles[made:]  # the step compiled and parsed nothing
        assert value == grade(rubric, world.ctx()).value == want


def test_a_submit_check_compiles_its_patterns_before_the_submit(compiles: list[str]) -> None:
    ctx: Any = SimpleNamespace(steps=[])
    patterns = [r"\bzq_left\b", r"\bzq_cannot\b"]
    assert checks_trace.submit_explains(ctx, patterns=patterns).score == 0.0  # no submit yet: compiled now
    assert checks_trace.submit_answer(ctx, pattern=r"@(zq_\w+)", value="zq_bob").score == 0.0
    made = len(compiles)
    assert set(patterns) | {r"@(zq_\w+)"} <= set(compiles)
    summary = "zq_bob has zq_left, so I zq_cannot assign it; ask @zq_bob's manager"
    ctx.steps = [{"action": {"name": "submit", "arguments": {"summary": summary}}, "error": None}]
    assert checks_trace.submit_explains(ctx, patterns=patterns).score == 1.0
    assert checks_trace.submit_answer(ctx, pattern=r"@(zq_\w+)", value="zq_bob").score == 1.0
    assert len(compiles) == made, compiles[made:]

"""code-review's note checks settled a step at a time, round six (issue 14): the paths a comment step takes.

``graders.checks_review`` groups a function's checks by request, file and rule, so a note is tested for a
finding's file and rule once; a decided check's note is set in the state cell its group entry holds (the cell
a run of the check or its ``on_changes`` evaluator reads); a run that sets a state is counted, and the groups
are made again after one; a step's notes are read once, with whether one is a verdict. These tests call the
``on_step`` evaluators on a bare context (no world: each costs microseconds), with the states a run of every
check leaves, and hold each path to what the checks' own functions would say. The full-grade comparisons of
whole episodes are in ``test_progress_pcode.py`` and ``test_progress_code3.py``.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from graders import checks_review as cr
from graders.changes import ChangeRow

MR, ACTOR = 7, 1
FILE, OTHER, TRAP = "billing/invoices.py", "billing/refunds.py", "billing/cli.py"


def _ctx() -> Any:
    return SimpleNamespace(memo={}, lasting={}, actor_id=ACTOR)


def _note(seq: int, body: str, kind: str = "comment", author: int = ACTOR) -> ChangeRow:
    changes = {"merge_request_id": MR, "author_id": author, "kind": kind, "body": body}
    return ChangeRow.of({"seq": seq, "table": "merge_request_notes", "key": [100 + seq], "op": "insert",
                         "changes": changes, "actor": author})  # fmt: skip


def _names_params() -> list[dict[str, Any]]:
    """One finding's checks (flag, line, alone, function) and another file's flag, as the rubric lays them out."""
    base = {"mr_id": MR, "file": FILE, "pattern": "docstring", "line": None, "apart": None, "also": None}
    return [
        base,
        {**base, "line": 12},
        {**base, "apart": [[OTHER, r"\btodo\b"]]},
        {**base, "also": r"\binvoice_total\b"},
        {**base, "file": OTHER, "pattern": r"\btodo\b"},
    ]


def _ran_all(ctx: Any, params: list[dict[str, Any]], skip: int | None = None) -> None:
    """The states a run of each names check leaves when no note fits yet (``skip``: a check that never ran)."""
    for pos, kw in enumerate(params):
        if pos != skip:
            key = cr._names_key(kw["mr_id"], kw["file"], kw["pattern"], kw["line"], kw["apart"], kw["also"])
            ctx.lasting[key] = [kw["apart"], None]
            cr._ran(ctx)


def _step(ctx: Any, fn: Any, rows: list[ChangeRow], params: list[dict[str, Any]]) -> dict[int, Any]:
    ctx.memo.clear()  # as ``graders.progress`` clears it before each step
    return dict(fn(ctx, rows, params))


def test_each_check_is_decided_by_its_first_fitting_note_of_a_step_and_keeps_it_in_its_cell():
    ctx, params = _ctx(), _names_params()
    _ran_all(ctx, params)
    assert _step(ctx, cr._names_step, [], params) == {}  # the groups are built at the first call
    first = f"{FILE}: this function has no docstring"  # the flag (and alone), no line, no function
    second = f"{FILE} line 12: invoice_total() has no docstring; also a todo in {OTHER}"  # line and function
    out = _step(ctx, cr._names_step, [_note(1, first), _note(2, second)], params)
    assert sorted(out) == [0, 1, 2, 3, 4]
    assert out[0][1].startswith("note 101 names billing/invoices.py and /docstring/: ")  # the first note stays
    assert out[1][1].startswith("note 102 names billing/invoices.py line 12 and /docstring/: ")
    assert out[2][1].startswith("note 101 names billing/invoices.py alone")  # the second names the todo too
    assert out[3][1].startswith("note 102 ") and out[4][1].startswith("note 102 names billing/refunds.py")
    for pos, kw in enumerate(params):  # the cell the entry held is the state the check's evaluator reads
        again = cr._names_on_changes(
            ctx, [], kw["mr_id"], kw["file"], kw["pattern"], kw["line"], kw["apart"], kw["also"]
        )
        assert again == out[pos], pos
    assert _step(ctx, cr._names_step, [_note(3, second)], params) == {}  # decided checks left their groups


def test_a_note_naming_the_file_without_the_rule_decides_nothing_and_a_check_that_never_ran_is_rerun():
    ctx, params = _ctx(), _names_params()
    _ran_all(ctx, params, skip=1)
    _step(ctx, cr._names_step, [], params)
    assert _step(ctx, cr._names_step, [_note(1, f"{FILE} line 12: looks fine")], params) == {}
    out = _step(ctx, cr._names_step, [_note(2, f"{FILE} line 12: docstring missing")], params)
    assert out[1] is None and out[0][0] == 1.0  # never ran: left to the check itself
    assert 4 not in out
    # the other file's name inside a longer name is not the file (the substring test lets the regex decide)
    assert _step(ctx, cr._names_step, [_note(3, "see billing/refunds.py_old: todo")], params) == {}
    assert _step(ctx, cr._names_step, [_note(4, "see billing/refunds.py: todo")], params)[4][0] == 1.0


def test_a_run_that_sets_a_state_makes_the_groups_again_so_a_decided_check_is_not_decided_twice():
    ctx, params = _ctx(), _names_params()
    _ran_all(ctx, params)
    _step(ctx, cr._names_step, [], params)
    kw = params[0]  # a run of the flag check found a note (as after a re-run): the first note stays the first
    ctx.lasting[cr._names_key(MR, FILE, "docstring", None, None, None)] = [None, (99, f"{FILE}: docstring", "comment")]
    cr._ran(ctx)
    out = _step(ctx, cr._names_step, [_note(1, f"{FILE}: docstring missing")], params)
    assert 0 not in out and out[2][1].startswith("note 101 ")
    assert cr._names_on_changes(ctx, [], MR, FILE, kw["pattern"])[1].startswith("note 99 ")


def test_spares_are_grouped_by_rule_a_note_flags_every_kept_rule_it_says_and_a_trap_only_with_its_file():
    ctx = _ctx()
    params = [
        {"mr_id": MR, "file": "", "pattern": r"\bprint\b"},
        {"mr_id": MR, "file": "", "pattern": r"\bexcept\b"},
        {"mr_id": MR, "file": "", "pattern": "docstring"},
        {"mr_id": MR, "file": TRAP, "pattern": r"\bprint\b"},
    ]
    for kw in params:
        ctx.lasting[cr._spares_key(MR, kw["file"], kw["pattern"])] = [None, None]
        cr._ran(ctx)
    _step(ctx, cr._spares_step, [], params)
    out = _step(ctx, cr._spares_step, [_note(1, "a print and a bare except in invoices.py")], params)
    assert sorted(out) == [0, 1] and out[0] == (0.0, "note 101 flags the change (/\\bprint\\b/): " + repr(
        "a print and a bare except in invoices.py"), {})  # fmt: skip
    body = f"{TRAP}: docstring is fine"  # a kept rule said beside the trap's file, not the trap's rule
    want = (0.0, f"note 102 flags the change (/docstring/): {cr.snippet(body)}", {})
    assert _step(ctx, cr._spares_step, [_note(2, body)], params) == {2: want}
    out = _step(ctx, cr._spares_step, [_note(3, f"{TRAP} uses print()")], params)
    assert list(out) == [3] and cr._spares_on_changes(ctx, [], MR, TRAP, r"\bprint\b") == out[3]


def test_a_comment_step_leaves_verdicts_and_reviews_and_a_review_step_moves_them():
    ctx = _ctx()
    verdicts = [{"mr_id": MR, "verdict": "request_changes"}]
    reviews = [{"mr_id": MR, "verdict": "request_changes", "patterns": ["docstring", r"\btodo\b"]}]
    ctx.lasting[("note_verdicts", MR)] = (None, (0, ()))
    ctx.lasting[("review_says", MR, "request_changes", id(reviews[0]["patterns"]))] = (reviews[0]["patterns"], None)
    comment = [_note(1, "docstring and todo")]
    assert _step(ctx, cr._verdict_step, comment, verdicts) == {} and cr._review_step(ctx, comment, reviews) == {}
    review = [_note(2, "Changes: docstring (rule 1), todo (rule 3).", kind="request_changes")]
    got = _step(ctx, cr._verdict_step, review, verdicts)
    assert got == {0: (1.0, "the agent's verdicts on request 7: request_changes (wanted request_changes)", {})}
    said = cr._review_step(ctx, review, reviews)[0]
    assert said[1].startswith("the agent's request_changes review (note 102) says /docstring/, /\\btodo\\b/: ")
    assert cr._review_on_changes(ctx, [], MR, "request_changes", reviews[0]["patterns"]) == said
    assert cr._verdicts_verdict(MR, "approve", ("approve", "request_changes"))[0] == 0.0


def test_the_line_test_is_the_line_regex():
    for body in ("a.py line 12: x", "a.py L12", "a.py:12", "a.py line 123", "a.py xL12", "line12", "LINE 12!"):
        assert cr._at_line(body, 12) is (re.search(r"(?:\bline\s*|\bL|\.py:)12(?!\d)", body, re.I) is not None)


def test_a_check_still_waiting_beside_decided_ones_stays_in_its_group_for_a_later_note():
    ctx, params = _ctx(), _names_params()
    _ran_all(ctx, params)
    _step(ctx, cr._names_step, [], params)
    out = _step(ctx, cr._names_step, [_note(1, f"{FILE}: docstring, and a todo in {OTHER}")], params)
    assert sorted(out) == [0, 4]  # the flags; not alone (it names the other finding too)
    out = _step(ctx, cr._names_step, [_note(2, f"{FILE}: invoice_total() has no docstring")], params)
    assert sorted(out) == [2, 3]  # the line's check, before them, waits still
    out = _step(ctx, cr._names_step, [_note(3, f"{FILE} line 12: docstring")], params)
    assert list(out) == [1] and out[1][1].startswith("note 103 names billing/invoices.py line 12")

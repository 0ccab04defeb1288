"""code-review's note checks settled a step at a time, round eight (issue 14): the paths a comment step takes now.

``graders.checks_review``'s note functions read a step's notes from ``ctx.memo`` themselves, take the notes as
the outer loop (a note's text read once against every group of its request, ``settle`` given one note with the
checks the notes before it left waiting), take an emptied group out of its list in place, keep their groups
under one key per function (dropped by any run that set a state), and answer a step that moves nothing with
one shared empty dict, reading no state. These tests call the ``on_step`` evaluators on a bare context (no
world: each costs microseconds) and hold each path to what the checks' own evaluators say; the full-grade
comparisons of whole episodes are in ``test_progress_pcode.py`` and ``test_progress_code3.py``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from graders import checks_review as cr
from graders.changes import ChangeRow

MR, ACTOR = 7, 1
FILE, OTHER = "billing/invoices.py", "billing/refunds.py"


def _ctx() -> Any:
    return SimpleNamespace(memo={}, lasting={}, actor_id=ACTOR)


def _note(seq: int, body: str, kind: str = "comment", op: str = "insert") -> ChangeRow:
    changes = {"merge_request_id": MR, "author_id": ACTOR, "kind": kind, "body": body}
    return ChangeRow.of({"seq": seq, "table": "merge_request_notes", "key": [100 + seq], "op": op,
                         "changes": changes, "actor": ACTOR})  # fmt: skip


def _names_params() -> list[dict[str, Any]]:
    """One finding's flag, line, alone and function checks, and another finding's flag."""
    base = {"mr_id": MR, "file": FILE, "pattern": "docstring", "line": None, "apart": None, "also": None}
    return [
        base,
        {**base, "line": 12},
        {**base, "apart": [[OTHER, r"\btodo\b"]]},
        {**base, "also": r"\binvoice_total\b"},
        {**base, "file": OTHER, "pattern": r"\btodo\b"},
    ]


def _ran_all(ctx: Any, params: list[dict[str, Any]]) -> None:
    """The states a run of each names check leaves when no note fits yet."""
    for kw in params:
        key = cr._names_key(kw["mr_id"], kw["file"], kw["pattern"], kw["line"], kw["apart"], kw["also"])
        ctx.lasting[key] = [kw["apart"], None]
        cr._ran(ctx)


def _step(ctx: Any, fn: Any, rows: list[ChangeRow], params: list[dict[str, Any]]) -> Any:
    ctx.memo.clear()  # as ``graders.progress`` clears it before each step
    return fn(ctx, rows, params)


def _evaluated(ctx: Any, kw: dict[str, Any]) -> Any:
    return cr._names_on_changes(ctx, [], kw["mr_id"], kw["file"], kw["pattern"], kw["line"], kw["apart"], kw["also"])


def test_a_steps_notes_settle_in_order_each_deciding_only_what_the_notes_before_it_left():
    ctx, params = _ctx(), _names_params()
    _ran_all(ctx, params)
    _step(ctx, cr._names_step, [], params)
    first = f"{FILE}: invoice_total() has no docstring; a todo in {OTHER} too"  # flag, function; not alone
    second = f"{FILE} line 12: docstring missing"  # flag, line, alone: only line and alone are left for it
    out = _step(ctx, cr._names_step, [_note(1, first), _note(2, second)], params)
    assert sorted(out) == [0, 1, 2, 3, 4]
    assert [out[p][1].split(" ")[1] for p in range(5)] == ["101", "102", "102", "101", "101"]
    assert out[1][1] == f"note 102 names {FILE} line 12 and /docstring/: {cr.snippet(second)}"
    assert out[3][1] == f"note 101 names {FILE} and /docstring/ with /\\binvoice_total\\b/: {cr.snippet(first)}"
    for pos, kw in enumerate(params):  # each kept cell holds the note that decided it, as the evaluator reads
        assert _evaluated(ctx, kw) == out[pos], pos


def test_an_emptied_group_is_taken_out_of_its_list_and_a_later_note_naming_it_decides_nothing():
    ctx, params = _ctx(), _names_params()
    _ran_all(ctx, params)
    _step(ctx, cr._names_step, [], params)
    groups = ctx.lasting[cr._NAMES_GROUPS][1][MR]
    assert [g[0] for g in groups] == [FILE, OTHER]
    out = _step(ctx, cr._names_step, [_note(1, f"{OTHER}: a todo without a ticket")], params)
    assert list(out) == [4]
    assert [g[0] for g in ctx.lasting[cr._NAMES_GROUPS][1][MR]] == [FILE]  # the same list, the group out
    assert ctx.lasting[cr._NAMES_GROUPS][1][MR] is groups
    assert _step(ctx, cr._names_step, [_note(2, f"{OTHER}: another todo")], params) == {}


def test_a_run_that_sets_a_state_drops_the_groups_and_the_next_step_makes_them_from_the_states():
    ctx, params = _ctx(), _names_params()
    _ran_all(ctx, params)
    _step(ctx, cr._names_step, [], params)
    ctx.lasting[cr._names_key(MR, OTHER, r"\btodo\b", None, None, None)] = [None, (99, f"{OTHER}: todo", "comment")]
    cr._ran(ctx)  # as a run of the check does after it finds a note
    assert cr._NAMES_GROUPS not in ctx.lasting and cr._SPARES_GROUPS not in ctx.lasting
    out = _step(ctx, cr._names_step, [_note(1, f"{OTHER}: a todo")], params)
    assert out == {}  # decided by the run: left out of the groups made again, not decided twice
    assert [g[0] for g in ctx.lasting[cr._NAMES_GROUPS][1][MR]] == [FILE]


def test_a_comment_step_answers_verdicts_and_reviews_with_the_shared_empty_dict_reading_no_state():
    ctx = _ctx()  # no kept verdict or review state: a step that read one would answer None (re-run)
    verdicts = [{"mr_id": MR, "verdict": "request_changes"}]
    reviews = [{"mr_id": MR, "verdict": "request_changes", "patterns": ["docstring"]}]
    comment = [_note(1, "docstring")]
    assert _step(ctx, cr._verdict_step, comment, verdicts) is cr._NOTHING
    assert cr._review_step(ctx, comment, reviews) is cr._NOTHING and cr._NOTHING == {}
    review = [_note(2, "docstring (rule 1)", kind="request_changes")]
    assert _step(ctx, cr._verdict_step, review, verdicts) == {0: None}
    assert cr._review_step(ctx, review, reviews) == {0: None}


def test_the_notes_are_read_once_a_step_for_every_function_and_an_edited_note_reruns_every_check():
    ctx, params = _ctx(), _names_params()
    _ran_all(ctx, params)
    _step(ctx, cr._names_step, [], params)
    rows = [_note(1, f"{FILE}: docstring")]
    assert _step(ctx, cr._verdict_step, rows, [{"mr_id": MR, "verdict": "approve"}]) is cr._NOTHING
    kept = ctx.memo[cr._AGENT_NOTES]
    assert kept[0] is rows and kept[1] == {MR: [(101, f"{FILE}: docstring", "comment")]} and kept[2] is False
    assert sorted(cr._names_step(ctx, rows, params)) == [0, 2]  # the same memo entry, not read again
    assert ctx.memo[cr._AGENT_NOTES] is kept
    edited = [_note(2, f"{FILE}: docstring", op="update")]
    assert _step(ctx, cr._names_step, edited, params) == dict.fromkeys(range(5))
    assert cr._NAMES_GROUPS not in ctx.lasting


def test_spares_take_each_note_in_order_the_first_flagging_a_check_decides_it():
    ctx = _ctx()
    params = [{"mr_id": MR, "file": "", "pattern": r"\bprint\b"}, {"mr_id": MR, "file": OTHER, "pattern": "todo"}]
    for kw in params:
        ctx.lasting[cr._spares_key(MR, kw["file"], kw["pattern"])] = [None, None]
        cr._ran(ctx)
    _step(ctx, cr._spares_step, [], params)
    notes = [_note(1, "a print here"), _note(2, f"{OTHER}: todo and print")]
    out = _step(ctx, cr._spares_step, notes, params)
    assert out[0] == (0.0, f"note 101 flags the change (/\\bprint\\b/): {cr.snippet('a print here')}", {})
    assert out[1][1].startswith(f"note 102 flags {OTHER} (/todo/): ")
    assert cr._spares_on_changes(ctx, [], MR, "", r"\bprint\b") == out[0]
    assert ctx.lasting[cr._SPARES_GROUPS][1][MR] == []  # both groups emptied and taken out


def test_the_review_plan_is_made_at_the_first_call_and_a_fitting_review_is_worded_as_its_evaluator_words_it():
    ctx = _ctx()
    patterns = ["docstring", r"\btodo\b"]
    reviews = [
        {"mr_id": MR, "verdict": "request_changes", "patterns": patterns},
        {"mr_id": MR, "verdict": "request_changes", "patterns": patterns},  # the same params: one state
        {"mr_id": MR, "verdict": "approve", "patterns": ["docstring"]},
    ]
    for kw in reviews:
        ctx.lasting[("review_says", MR, kw["verdict"], id(kw["patterns"]))] = (kw["patterns"], None)
    assert _step(ctx, cr._review_step, [], reviews) is cr._NOTHING
    plan = ctx.lasting[cr._REVIEW_PLAN]
    assert plan[0] is reviews and [entry[5] for entry in plan[1]] == ["/docstring/, /\\btodo\\b/"] * 2 + ["/docstring/"]
    body = "Changes: docstring (rule 1), todo (rule 3)."
    out = _step(
        ctx,
        cr._review_step,
        [_note(1, "docstring only", kind="request_changes"), _note(2, body, kind="request_changes")],
        reviews,
    )
    assert sorted(out) == [0, 1] and out[0] == out[1]
    assert out[0] == cr._review_on_changes(ctx, [], MR, "request_changes", patterns)  # the evaluator's words
    assert (
        out[0][1] == f"the agent's request_changes review (note 102) says /docstring/, /\\btodo\\b/: {cr.snippet(body)}"
    )
    assert ctx.lasting[cr._REVIEW_PLAN] is plan  # read, not made again
    assert _step(ctx, cr._review_step, [_note(3, body, kind="request_changes")], reviews) == {}  # the first stays
    again = [dict(kw) for kw in reviews]  # other params (another rubric's): the plan is made for them
    ctx.lasting[("review_says", MR, "approve", id(again[2]["patterns"]))] = (again[2]["patterns"], None)
    out = _step(ctx, cr._review_step, [_note(4, "docstring is fine", kind="approve")], again)
    assert ctx.lasting[cr._REVIEW_PLAN][0] is again and out[2][1].startswith("the agent's approve review (note 104)")


def test_a_review_steps_verdicts_are_worded_as_the_verdict_function_words_them():
    ctx = _ctx()
    params = [{"mr_id": MR, "verdict": "request_changes"}, {"mr_id": MR, "verdict": "approve"}]
    ctx.lasting[("note_verdicts", MR)] = (None, (100, ("approve",)))  # an approval counted by an earlier run
    out = _step(ctx, cr._verdict_step, [_note(2, "see comments", kind="request_changes")], params)
    given = ("approve", "request_changes")
    assert out == {0: cr._verdicts_verdict(MR, "request_changes", given), 1: cr._verdicts_verdict(MR, "approve", given)}
    assert out[0][0] == 0.0 and type(out[0][0]) is float and ctx.lasting[("note_verdicts", MR)] == (None, (102, given))

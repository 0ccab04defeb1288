"""The framework's per-step shortcuts of the second pass, each held to what a fresh read gives (issue 14).

``Progress`` follows ``needs`` as scores move (a set of held-back checks instead of a scan per moved score);
``no_collateral_changes`` hands back the very verdict when a step adds none of the agent's rows and keeps the
violations' listing until a new one; ``no_tool_errors`` keeps a failing verdict until a new error; the change log
and the steps grow as lists; the note checks' groups are built when progress starts; a quote is flattened from a
long body's head. Every test compares the kept answer with one computed from scratch, so none passes when a
shortcut drifts.
"""

from __future__ import annotations

import pytest

import graders.progress as progress
from graders import checks_review
from graders.base import Check, GradingContext, Rubric, apply_needs, grade
from graders.changes import ChangeRow, read_changes
from graders.checks_code import _snippet
from graders.checks_common import snippet
from graders.checks_trace import _tool_errors
from graders.collateral import AllowedChange, _collateral, _shapes
from sim.agents import run_agent
from tests.graders.test_progress import Checked
from worlds.schema import TicketLabel

ACTOR = 7
RULES = [  # tables without a natural key: a violation is named by its primary key, so no query is made
    AllowedChange(table="merge_requests", fields=("updated_at",)),
    AllowedChange(table="merge_request_notes", ops=("insert",)),
    AllowedChange(table="posts", ops=("insert",)),
]


def _row(seq: int, table: str, op: str, changes: dict, actor: int = ACTOR) -> ChangeRow:
    return ChangeRow.of({"seq": seq, "table": table, "key": [seq], "op": op, "changes": changes, "actor": actor})


STEPS = [  # each a step's rows: allowed, a coworker's, violations (an update of another column, a delete), more
    [_row(1, "merge_requests", "update", {"updated_at": "t1"})],
    [_row(2, "posts", "insert", {"body": "hi"}, actor=3)],
    [_row(3, "merge_requests", "update", {"state": "merged"}), _row(4, "merge_request_notes", "insert", {})],
    [],
    [_row(5, "posts", "insert", {"body": "ok"})],
    [_row(6, "merge_requests", "delete", {}), _row(7, "merge_requests", "update", {"updated_at": "t", "title": "t"})],
    [_row(8 + n, "posts", "delete", {}) for n in range(4)],
    [_row(12, "posts", "insert", {"body": "a"}, actor=3)],
    [_row(13, "merge_request_notes", "insert", {"body": "y"})],
]


@pytest.mark.parametrize("scope", ["actor", "all"])
def test_collateral_folded_step_by_step_equals_a_fresh_read(scope):
    ctx = GradingContext(session=None, actor_id=ACTOR)  # type: ignore[arg-type]  # rules without keys: no query
    rules = list(RULES)
    before = None
    for n, rows in enumerate(STEPS):
        ctx.extend(rows)
        got = _collateral(ctx, rules, scope)
        fresh = GradingContext(session=None, changes=list(ctx.log), actor_id=ACTOR)  # type: ignore[arg-type]
        assert got == _collateral(fresh, list(RULES), scope), f"step {n}"
        if before is not None and not any(scope == "all" or r.actor_id == ACTOR for r in rows):
            assert got is before  # nothing judged: the very verdict, which progress does not compare
        before = got
    assert got[0] == 0.0 and "(+" in got[1]  # more than five violations: the kept listing says how many more


def test_collateral_shapes_are_shared_by_equal_rules_only():
    same = [AllowedChange(table=a.table, fields=a.fields, keys=a.keys, ops=a.ops) for a in RULES]
    assert _shapes(same) is _shapes(list(RULES))
    assert _shapes(RULES[:2]) is not _shapes(list(RULES))


TRACE = [
    {"type": "header"},
    {"index": 0, "action": {"name": "search"}, "error": None},
    {"index": 1, "action": {"name": "open"}, "error": {"code": "not_found"}},
    {"index": 2, "action": {"name": "open"}, "error": None},
    {"index": 3, "action": {"name": "post"}, "error": {"code": "forbidden"}, "fault": "injected"},
    {"index": 4, "action": {"name": "post"}, "error": None},
    *[{"index": 5 + n, "action": {"name": "edit"}, "error": {"code": "conflict"}} for n in range(6)],
    {"index": 11, "action": {"name": "submit"}, "error": None},
]


@pytest.mark.parametrize("codes", [None, ["conflict"], ["forbidden"]])
def test_tool_errors_folded_step_by_step_equals_a_fresh_read(codes):
    trace: list[dict] = []
    ctx = GradingContext(session=None, trace=trace, actor_id=ACTOR)  # type: ignore[arg-type]
    before = None
    for record in TRACE:
        trace.append(record)
        got = _tool_errors(ctx, codes)
        fresh = GradingContext(session=None, trace=list(trace), actor_id=ACTOR)  # type: ignore[arg-type]
        assert got == _tool_errors(fresh, codes)
        step_error = record.get("error") and not record.get("fault")
        if before is not None and before[0] == 0.0 and not (step_error and codes in (None, ["conflict"])):
            assert got is before  # a failing verdict names the errors only: no new error, the same verdict
        before = got
    assert ctx.steps == [r for r in TRACE if r.get("type", "step") == "step"]
    del trace[3:]  # a shorter trace (a new episode on the same list) starts the fold over
    assert _tool_errors(ctx, codes) == _tool_errors(
        GradingContext(session=None, trace=list(trace), actor_id=ACTOR),  # type: ignore[arg-type]
        codes,
    )


def test_a_long_body_is_quoted_from_its_head_as_from_the_whole():
    bodies = [
        "short",
        "word " * 200,
        "x" * 500,
        " \n\t" * 100 + "late words " * 30,
        ("a" * 59 + " ") * 5,
        "y" * 239 + " tail" * 40,
    ]
    for body in bodies:
        assert _snippet(body) == snippet(body)


@pytest.fixture(scope="module")
def review(store):
    """One code-review episode whose every step is held to a full grade, with what progress kept after each."""
    held: list[tuple[set[int], set[int]]] = []
    groups: list[bool] = []

    class Watched(progress.Progress):
        def update(self, rows):  # type: ignore[override]
            first = not self._started
            value = super().update(rows)
            if first:  # the note groups were built in the step that grades everything
                kept = [self.ctx.lasting.get(k) for k in (checks_review._NAMES_GROUPS, checks_review._SPARES_GROUPS)]
                groups.append(all(any(g is not None and g[0] is p for g in kept) for p in self._group_params()))
            results = [self._result(i) for i in range(len(self._checks))]
            zeroed = {i for i, r in enumerate(apply_needs(self._checks, results)) if r.score < results[i].score}
            held.append((set(self._held_back), zeroed))
            return value

        def _group_params(self):
            return [params for (fn, _), (_, _, params) in self._grouped.items() if "note_" in fn]

        def _result(self, i):
            score, evidence, details = self._outcomes[i]
            return progress.outcome_result(
                self._checks[i], progress.CheckOutcome(score=score, evidence=evidence, details=details)
            )

    import sim.live

    real = sim.live.Progress
    sim.live.Progress = Watched  # type: ignore[misc]
    try:
        with Checked("code-review-v0", store=store) as ep:
            for agent, seed in (("oracle", 1), ("random", 2)):
                run_agent(ep, agent, seed, {"difficulty": 2, "progress": True})
    finally:
        sim.live.Progress = real  # type: ignore[misc]
    return held, groups


def test_held_back_checks_follow_needs_as_apply_needs_says(review):
    held, _ = review
    assert len(held) >= 6
    for kept, zeroed in held:
        assert kept == zeroed
    assert any(kept for kept, _ in held)  # some check was held back: the set was exercised


def test_note_groups_are_built_when_progress_starts(review):
    _, groups = review
    assert groups and all(groups)


def _check(cid: str, fn: str, needs: tuple[str, ...] = (), must: bool = False, **params) -> Check:
    return Check(id=cid, description=f"{cid} holds", fn=fn, must=must, needs=list(needs), params=params)


def test_needs_held_back_and_released_as_a_needed_check_flips(world):
    """A check needed by others passes, fails, passes again: the value and verdicts equal a full grade each step."""
    checks = (
        _check("once", "tool_called", name="open", max_count=1),  # passes after one open, fails after two
        _check("posted", "tool_called", needs=("once",), name="post"),
        _check("both", "tool_called", needs=("once", "posted"), must=True, name="search", min_count=0),
        _check("steps", "max_steps", n=5),
    )
    rubric = Rubric(id="unit", version=1, description="unit rubric", checks=checks)
    trace: list[dict] = []
    ctx = GradingContext(session=world.session, trace=trace, actor_id=1)
    live = progress.Progress(rubric, ctx)
    live.update(())
    kinds = []
    for name in ("post", "open", "open", "search", "post", "open", "x"):
        trace.append({"index": len(trace), "action": {"name": name}, "error": None})
        value = live.update(())
        fresh = grade(rubric, GradingContext(session=world.session, trace=list(trace), actor_id=1))
        got = [(r.id, r.score, r.evidence) for r in live.results()]
        assert got == [(r.id, r.score, r.evidence) for r in fresh.checks]
        assert value == fresh.value
        kinds.append(frozenset(live._held_back))
    assert kinds[:3] == [{1, 2}, set(), {1, 2}]  # held back, released, held again when 'once' fails


def test_keyed_rows_read_ahead_equal_a_fresh_read_and_spare_the_lookup(world):
    """Rows the keyed rules name are read once at the start; a renamed row is looked up as before."""
    rules = [
        AllowedChange(table="tickets", fields=("priority", "updated_at"), keys=("ENG-3", "ENG-9")),
        AllowedChange(table="ticket_labels", ops=("insert",), keys=("ENG-3",)),
    ]
    live = world.ctx()
    _collateral(live, rules, "actor")  # the check's first run, as when progress starts
    edits = [
        lambda: setattr(world.ticket("ENG-3"), "priority", "high"),  # named by a rule: decided without a lookup
        lambda: setattr(world.ticket("ENG-4"), "priority", "high"),  # another ticket: outside the rules
        lambda: world.add(TicketLabel(ticket_id=3, label="triaged")),  # a label on a named ticket
        lambda: setattr(world.ticket("ENG-5"), "key", "ENG-9"),  # renamed by a coworker to a key the rules name
        lambda: setattr(world.ticket("ENG-9"), "priority", "high"),  # so it is looked up: allowed now
    ]
    for n, edit in enumerate(edits):
        world.as_("bob" if n == 3 else "alice")
        edit()
        world.session.flush()
        live.extend([r for r in read_changes(world.session, after_seq=world.start_seq) if r.seq > live.log[-1].seq]
                     if live.log else list(read_changes(world.session, after_seq=world.start_seq)))  # fmt: skip
        got = _collateral(live, rules, "actor")
        assert got == _collateral(world.ctx(), list(rules), "actor"), f"edit {n}"
        if n == 0:
            assert ("tickets", 3) not in live.lasting.get("natural_by_id", {})  # read ahead: no lookup
    assert got[0] == 0.0 and got[1].startswith("1 of 4 changes") and "ENG-4" in got[1]


def test_tool_errors_not_asked_until_a_step_fails_or_results_are_read(world, monkeypatch):
    """Steps that cannot move no_tool_errors' score leave it unasked; its value and evidence stay the grade's."""
    checks = (
        _check("clean", "no_tool_errors"),
        _check("no_conflict", "no_tool_errors", codes=["conflict"]),
        _check("opened", "tool_called", name="open"),
    )
    rubric = Rubric(id="unit", version=1, description="unit rubric", checks=checks)
    trace: list[dict] = []
    live = progress.Progress(rubric, GradingContext(session=world.session, trace=trace, actor_id=1))
    asked: list[int] = []
    live.update(())
    for i, evaluate in list(live._on_changes.items()):  # spy on the evaluators (a read step calls them directly)
        live._on_changes[i] = lambda *a, _i=i, _f=evaluate, **k: asked.append(_i) or _f(*a, **k)
    for n, record in enumerate(TRACE):
        trace.append(record)
        asked.clear()
        value = live.update(())
        fresh = grade(rubric, GradingContext(session=world.session, trace=list(trace), actor_id=1))
        assert value == fresh.value
        failed = record.get("error") and not record.get("fault")
        assert (0 in asked) == bool(failed), n  # asked only after a step that failed (not a fault's)
        if n % 3 == 2:  # read now and then: the lagging checks are brought up to date first
            got = [(r.id, r.score, r.evidence, r.details) for r in live.results()]
            assert got == [(r.id, r.score, r.evidence, r.details) for r in fresh.checks]
    assert [r.evidence for r in live.results()] == [r.evidence for r in fresh.checks]

"""The ninth pass at the framework around the evaluators, held to what the general paths give.

Each shortcut taken on the per-step path (a step's rows read in the one shape the episode writes them, the
``on_step`` groups a step asks, a verdict stored or a held check's hold kept) is compared here with what the
path it shortcuts gives, so a shortcut that reads a row, a group or a verdict otherwise fails.
"""

from __future__ import annotations

import datetime as dt
import random
from types import SimpleNamespace
from typing import Any

import pytest

from graders.base import Check, CheckOutcome, GradingContext, Rubric, apply_needs, combine, grade, outcome_result
from graders.changes import ChangeRow
from graders.progress import Progress
from graders.registry import check_fn


def _logged(**over: Any) -> dict[str, Any]:
    """A step's row in ``sim.tasks.log_since``'s shape: exactly its eight keys."""
    row: dict[str, Any] = {
        "seq": 7,
        "table": "tickets",
        "key": "[17]",
        "op": "update",
        "changes": {"status": ["open", "done"]},
        "actor": 3,
        "at": "2026-01-05T09:00:00",
        "tag": "tool",
    }
    return row | over


@pytest.mark.parametrize(
    "over",
    [
        {},
        {"key": '["ENG-3"]'},
        {"key": [4, "a"]},
        {"key": (5,)},
        {"key": 9},
        {"seq": "12"},
        {"changes": None},
        {"actor": None, "tag": None, "at": None},
        {"at": dt.datetime(2026, 1, 5, 9, 30, tzinfo=dt.UTC)},
    ],
)
def test_a_logged_rows_subscript_path_reads_what_the_general_path_reads(over):
    """``log_since``'s eight keys read by subscript give the row the general path gives (a ninth key takes it)."""
    row = _logged(**over)
    fast, general = ChangeRow.of(row), ChangeRow.of(row | {"why": "a ninth key: the general path"})
    assert fast == general and [type(v) for v in fast] == [type(v) for v in general]
    assert [type(v) for v in fast.key] == [type(v) for v in general.key]


def test_eight_keys_of_another_shape_are_read_as_any_dict_is():
    """``actor_id`` and ``table_name`` in place of two of the eight: not the subscript path, and read right."""
    row = _logged()
    del row["actor"], row["table"]
    row |= {"actor_id": 5, "table_name": "posts"}
    got = ChangeRow.of(row)
    assert (got.table, got.actor_id, got.key) == ("posts", 5, (17,))


def _unit(cid: str, needs: tuple[str, ...] = (), must: bool = False, weight: float = 1.0, kind: str = "") -> Check:
    fn = "judge" if kind == "judge" else "max_steps"
    params: dict[str, Any] = {"question": "q", "evidence": ["posts"]} if kind == "judge" else {"n": 5}
    return Check(id=cid, description=f"{cid} holds", fn=fn, must=must, needs=list(needs), weight=weight, params=params)


_NEEDY = (
    _unit("gate"),
    _unit("flag", needs=("gate",), weight=0.5),
    _unit("fix", needs=("flag",), weight=0.25),  # a chain: released only once both pass
    _unit("name", needs=("flag", "gate"), must=True),  # a must check held back fails
    _unit("said", needs=("asked",), weight=2.0),  # needs a judge check: held back whenever it scores above 0
    _unit("alone", weight=0.75),
    _unit("asked", kind="judge"),
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_running_parts_follow_needs_as_a_full_combine_does(seed):
    """Scores moved one by one at random: the value and the passing count equal ``combine(apply_needs(...))``.

    The running parts keep a held-back check's share at 0 as scores move (no pass over the held-back checks when
    the value is combined): a share counted for a check still held back, or not given back when it is released,
    makes the value differ from the full combine's.
    """
    rubric = Rubric(id="unit", version=1, description="unit rubric", checks=_NEEDY)
    bind = SimpleNamespace(dialect=SimpleNamespace(name="sqlite"))
    live = Progress(rubric, SimpleNamespace(session=SimpleNamespace(get_bind=lambda: bind)))  # type: ignore[arg-type]
    counted = live._checks  # the judge check is not counted mid-episode
    rng = random.Random(seed)
    scores = (0.0, 0.5, 1.0, 0.25)
    live._outcomes = [(rng.choice(scores), "first", {}) for _ in counted]
    live._results = [None] * len(counted)
    live._count_first()
    held_seen = set()
    for step in range(200):
        i = rng.randrange(len(counted))
        live._store(i, (rng.choice(scores), f"step {step}", {}))
        results = [
            outcome_result(c, CheckOutcome(score=s, evidence=e, details=d))
            for c, (s, e, d) in zip(counted, live._outcomes, strict=True)
        ]
        applied = apply_needs(counted, results)
        value, _ = combine(applied)
        assert (live._combine(), live.passed) == (value, sum(r.passed for r in applied)), step
        held_seen |= live._held_back
    assert held_seen >= {1, 2, 3, 4}  # every needy check was held back at some point: each path ran


def _entries(live: Progress) -> set[tuple[str, Any, int]]:
    """Every (index, name, check) entry of the indexes of held checks."""
    indexes = {"rows": live._wake_rows, "inserts": live._wake_inserts, "columns": live._wake_columns}
    indexes["lags"] = live._lag_tables
    found = {(kind, name, i) for kind, index in indexes.items() for name, checks in index.items() for i in checks}
    # inserts named with the values they must carry (``(table, columns, values)``) have an index of their own
    return found | {("inserts", name, i) for name, checks in live._wake_values.items() for i in checks}


def _named(live: Progress) -> set[tuple[str, Any, int]]:
    """The entries the holds of the held checks name: what the indexes must hold, no more."""
    out = set()
    for i, found in live._held.items():
        rows, inserts, columns = found[:3]
        lags = found[3] if len(found) > 3 else ()
        for kind, names in (("rows", rows), ("inserts", inserts), ("columns", columns), ("lags", lags)):
            out |= {(kind, name, i) for name in names}
    return out


@pytest.fixture(scope="module")
def holds(store):
    """Two families' oracle episodes, each step held to a full grade and the held checks' indexes checked.

    Returns how often a woken check was held again under the same hold or another, and how often a one-row step
    was settled by ``_lone`` (a mail marked read) or left to the general path (a decision on a request).
    """
    import sim.live
    from sim.agents import run_agent
    from tests.graders.test_progress import Checked

    seen: dict[str, int] = {"same": 0, "moved": 0, "steps": 0, "lone": 0, "one_row": 0}

    class Watched(Progress):
        def update(self, rows):  # type: ignore[no-untyped-def]
            lone = seen["lone"]
            value = super().update(rows)
            seen["one_row"] += len(rows) == 1 and seen["lone"] == lone  # a one-row step the general path took
            assert self._indexed.keys() == self._held.keys()  # woken and not held again: no longer indexed
            assert _entries(self) == _named(self)
            seen["steps"] += 1
            return value

        def _lone(self, row):  # type: ignore[no-untyped-def]
            settled = super()._lone(row)
            seen["lone"] += settled
            return settled

        def _hold(self, i):  # type: ignore[no-untyped-def]
            before = self._indexed.get(i)
            super()._hold(i)
            if i in self._held:  # the hold it is under is the one its hook names now
                found = self._holds[i](self.ctx, **self._kwargs[i])
                assert self._held[i] == tuple(map(tuple, found)) + ((),) * (4 - len(found))
                if before is not None:
                    seen["same" if before[0] == self._held[i] else "moved"] += 1

    real = sim.live.Progress
    sim.live.Progress = Watched  # type: ignore[misc]
    try:
        for family in ("suspicious-request-v0", "access-requests-v0"):
            with Checked(family, store=store) as ep:  # every step's progress held to a full grade
                run_agent(ep, "oracle", 1, {"difficulty": 2, "progress": True})
    finally:
        sim.live.Progress = real  # type: ignore[misc]
    return seen


def test_a_woken_check_held_again_keeps_its_index_entries_only_under_the_same_hold(holds):
    """Held again under the hold it was under, its entries stand; under another they are made anew, none left over."""
    assert holds["steps"] >= 20
    # a decision on a request moves its check's hold; a share no longer wakes the other documents' share checks
    # (an insert wakes only the checks whose unique values it carries), so the same-hold path is held to its
    # rule by tests/graders/test_progress_core10.py (a check's own row changed in a column it does not name)
    assert holds["moved"] >= 1


def _quiet_touches(ctx: GradingContext, row: ChangeRow, **_: Any) -> bool:
    return row.op != "insert" or row.key[0] < 900  # a ticket numbered from 900 on cannot move it


def _fixed_on_changes(ctx: GradingContext, rows: list[ChangeRow], **_: Any) -> tuple[float, str, dict[str, Any]]:
    return (1.0, "fixed", {})


def _on_inserts(ctx: GradingContext, **_: Any) -> tuple[list[Any], tuple[str, ...], list[Any]]:
    return [], ("tickets",), []


@check_fn(
    "test.core9_held", reads=("tickets",), touches=_quiet_touches, on_changes=_fixed_on_changes, holds=_on_inserts
)
def _held_check(ctx: GradingContext) -> CheckOutcome:
    return CheckOutcome(score=1.0, evidence="fixed")


def test_a_woken_check_its_step_does_not_ask_leaves_the_indexes(world):
    """Woken by an insert its ``touches`` hook says cannot move it, it is not held again: its entries go too."""
    rubric = Rubric(
        id="unit",
        version=1,
        description="unit rubric",
        checks=(Check(id="held", description="held holds", fn="test.core9_held", params={}),),
    )
    live = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    live.update(())
    assert live._held.keys() == live._indexed.keys() == {0} and _entries(live) == {("inserts", "tickets", 0)}
    row = {"seq": 10**6, "table": "tickets", "key": "[901]", "op": "insert", "changes": {}, "actor": 1}
    live.update([row | {"at": None, "tag": None}])  # woken, not asked: asked every step from now on
    assert not live._held and not live._indexed and not _entries(live)
    live.update([row | {"seq": 10**6 + 1, "key": "[5]", "at": None, "tag": None}])  # asked: held again
    assert live._held.keys() == live._indexed.keys() == {0} and _entries(live) == {("inserts", "tickets", 0)}


def test_a_lone_quiet_row_is_settled_without_the_general_path(holds):
    """Mail marked read settles at once; a decision on a request (its table read by checks) takes the general path.

    Each step's progress equals a full grade (the fixture's episodes), so a ``_lone`` that settles a row some
    check reads fails there.
    """
    assert holds["lone"] >= 3 and holds["one_row"] >= 3


@check_fn("test.core9_tickets", reads=("tickets",))
def _tickets_changed(ctx: GradingContext) -> CheckOutcome:
    return CheckOutcome(score=float(bool(ctx.changed_rows("tickets"))), evidence="tickets changed")


def test_a_lone_row_of_a_table_a_check_reads_is_not_settled_by_lone(world):
    """A rubric with no quiet check settles a one-row step of a table nothing reads at once, not one a check reads."""
    rubric = Rubric(
        id="unit",
        version=1,
        description="unit rubric",
        checks=(Check(id="tickets", description="tickets changed", fn="test.core9_tickets", params={}),),
    )
    live = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    assert live.update(()) == 0.0 and live._lean
    row = {"seq": 10**6, "table": "posts", "key": "[5]", "op": "insert", "changes": {}, "actor": 1, "at": None}
    assert live.update([row | {"tag": None}]) == 0.0  # no check reads posts: settled by ``_lone``
    row |= {"seq": 10**6 + 1, "table": "tickets", "op": "update", "tag": None}
    assert live.update([row]) == 1.0  # its check re-run, as the general path does


@pytest.mark.parametrize("hook_fails", [False, True])
def test_a_step_hooked_trace_check_is_asked_when_one_of_the_steps_since_can_move_it(world, monkeypatch, hook_fails):
    """``_still`` over one new step or several (a failed one among them), and a hook that raises: as a full grade."""
    rubric = Rubric(
        id="unit",
        version=1,
        description="unit rubric",
        checks=(Check(id="clean", description="no errors", fn="no_tool_errors", params={}),),
    )
    trace: list[dict[str, Any]] = []
    live = Progress(rubric, GradingContext(session=world.session, trace=trace, actor_id=1))
    live.update(())
    if hook_fails:  # a hook that cannot tell: the check is asked after every step
        hook, seen = live._step_hooks[0]
        monkeypatch.setitem(live._step_hooks, 0, (lambda *a, **k: 1 / 0, seen))
    lagged = []
    for batch in ([None], [None, None], [None, "boom"], [None], ["bad", None, None]):
        for error in batch:
            trace.append({"type": "step", "index": len(trace), "action": {"name": "x"}, "error": error})
        value = live.update(())
        lagged.append(0 in live._lagging)
        fresh = grade(rubric, GradingContext(session=world.session, trace=list(trace), actor_id=1))
        assert value == fresh.value
        assert [(r.score, r.evidence) for r in live.results()] == [(r.score, r.evidence) for r in fresh.checks]
    assert lagged == ([False] * 5 if hook_fails else [True, True, False, True, False])


def _lags_posts(ctx: GradingContext, **_: Any) -> tuple[list[Any], tuple[str, ...], list[Any], tuple[str, ...]]:
    return [], (), [], ("posts",)


@check_fn("test.core9_lagged", reads=("tickets",), on_changes=_fixed_on_changes, holds=_lags_posts)
def _lagged_check(ctx: GradingContext) -> CheckOutcome:
    return CheckOutcome(score=1.0, evidence="fixed")


def test_a_lone_row_of_a_table_a_hold_names_is_left_to_the_general_path(world):
    """A held check whose hold names another table as lagging: a row of it marks the check lagging, as always."""
    rubric = Rubric(
        id="unit",
        version=1,
        description="unit rubric",
        checks=(Check(id="lagged", description="lagged", fn="test.core9_lagged", params={}),),
    )
    live = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    live.update(())
    assert live._held.keys() == {0} and not live._lagging
    row = {"seq": 10**6, "table": "posts", "key": "[5]", "op": "insert", "changes": {}, "actor": 1}
    live.update([row | {"at": None, "tag": None}])
    assert live._lagging == {0}


_KEPT_ROWS: list[tuple[str, tuple[Any, ...]]] = []


def _kept_rows(ctx: GradingContext, **_: Any) -> tuple[list[Any], tuple[str, ...], list[Any]]:
    return _KEPT_ROWS, (), []  # the same list each time, grown by the test between steps


@check_fn("test.core9_kept_hold", reads=("tickets",), on_changes=_fixed_on_changes, holds=_kept_rows)
def _kept_hold_check(ctx: GradingContext) -> CheckOutcome:
    return CheckOutcome(score=1.0, evidence="fixed")


def test_a_hold_handed_back_in_a_list_the_hook_keeps_growing_is_indexed_as_it_is_now(world):
    """The hold is kept as it was when indexed, so a hook's list grown since is not taken for the same hold."""
    _KEPT_ROWS[:] = [("tickets", (1,))]
    rubric = Rubric(
        id="unit",
        version=1,
        description="unit rubric",
        checks=(Check(id="kept", description="kept", fn="test.core9_kept_hold", params={}),),
    )
    live = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    live.update(())
    assert _entries(live) == {("rows", ("tickets", (1,)), 0)}
    _KEPT_ROWS.append(("tickets", (2,)))
    row = {"seq": 10**6, "table": "tickets", "key": "[1]", "op": "update", "changes": {}, "actor": 1}
    live.update([row | {"at": None, "tag": None}])  # its row: woken, asked, held again under the grown hold
    assert _entries(live) == {("rows", ("tickets", (1,)), 0), ("rows", ("tickets", (2,)), 0)}

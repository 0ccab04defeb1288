"""The cost every write step pays, cut in the fourth pass, each held to a full grade after every step (issue 14).

``no_collateral_changes`` asked with a step's rows answers ``LATER`` when none of them is a violation (the
score stands, only the count in its evidence moved), and ``Progress`` builds its text only when the results
are asked for. Each test compares the verdicts with a fresh grade, so none passes when the shortcut drifts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.changes import ChangeRow
from graders.collateral import AllowedChange, _collateral, _collateral_on_changes
from graders.progress import Progress
from graders.registry import LATER

ACTOR = 7
RULES = [
    AllowedChange(table="merge_requests", fields=("updated_at",)),
    AllowedChange(table="posts", ops=("insert",)),
]


def _row(seq: int, table: str, op: str, changes: dict[str, Any], actor: int = ACTOR) -> ChangeRow:
    return ChangeRow.of({"seq": seq, "table": table, "key": [seq], "op": op, "changes": changes, "actor": actor})


STEPS = [  # each a step's rows: allowed, a coworker's, allowed, a violation, allowed, allowed with another's
    [_row(1, "merge_requests", "update", {"updated_at": "t1"})],
    [_row(2, "posts", "delete", {}, actor=3)],
    [_row(3, "posts", "insert", {"body": "hi"}), _row(4, "posts", "insert", {"body": "yo"})],
    [_row(5, "merge_requests", "update", {"state": "merged"})],
    [_row(6, "posts", "insert", {"body": "ok"})],
    [_row(7, "posts", "insert", {"body": "a"}, actor=3), _row(8, "posts", "insert", {"body": "b"})],
]


@pytest.mark.parametrize("scope", ["actor", "all"])
def test_collateral_says_later_only_when_its_score_stands(scope):
    ctx = GradingContext(session=None, actor_id=ACTOR)  # type: ignore[arg-type]  # rules without keys: no query
    rules = list(RULES)
    before = _collateral(ctx, rules, scope)  # progress's first grade: the full check, no rows
    later = 0
    for n, rows in enumerate(STEPS):
        ctx.extend(rows)
        got = _collateral_on_changes(ctx, rows, rules, scope)
        fresh = _collateral(GradingContext(session=None, changes=list(ctx.log), actor_id=ACTOR), list(RULES), scope)  # type: ignore[arg-type]
        if got is LATER:
            later += 1
            assert before[0] == fresh[0], f"step {n}: LATER though the score moved"
            got = _collateral_on_changes(ctx, [], rules, scope)  # what ``results`` asks: the verdict
        assert got == fresh, f"step {n}"
        before = got
    assert later >= 3 and before[0] == 0.0  # the path was taken, and a violation was not deferred


@pytest.fixture
def world_rubric() -> Rubric:
    allowed = [{"table": "tickets", "fields": ["priority"]}, {"table": "posts", "ops": ["insert"]}]
    check = Check(id="collateral", description="d", fn="no_collateral_changes", params={"allowed": allowed})
    return Rubric(id="core4", version=1, description="core4 unit rubric", checks=(check,))


def test_progress_defers_the_collateral_text_and_matches_a_grade_after_every_step(world, world_rubric):
    live = Progress(world_rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    live.update([])
    seq = world.start_seq

    def priority(key: str, value: str) -> Callable[[], Any]:
        return lambda: setattr(world.ticket(key), "priority", value)

    edits: list[Callable[[], Any]] = [
        priority("ENG-3", "high"),  # within the rules: LATER
        priority("ENG-4", "low"),  # again
        lambda: setattr(world.ticket("ENG-3"), "title", "renamed"),  # a violation: the verdict at once
        priority("ENG-4", "high"),  # within the rules again, the score stays 0
    ]
    lagging = []
    for n, edit in enumerate(edits):
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        value = live.update(rows)  # type: ignore[arg-type]
        lagging.append(0 in live._lagging)
        full = grade(world_rubric, world.ctx())
        assert value == full.value, n
        assert live.results() == full.checks, n
    assert lagging == [True, True, False, True]  # deferred within the rules, the violation given at once
    assert live.results()[0].score == 0.0 and "1 of 4 changes" in live.results()[0].evidence


def test_a_change_row_from_a_step_dict_reads_as_from_the_orm_and_stays_immutable(world):
    world.ticket("ENG-3").priority = "high"
    world.session.flush()
    (orm,) = read_changes(world.session, after_seq=world.start_seq)
    logged = {  # what a step hands progress: the key as JSON text, the actor as ``actor``
        "seq": str(orm.seq),
        "table": orm.table,
        "key": f"[{orm.key[0]}]",
        "op": orm.op,
        "changes": orm.changes,
        "actor": orm.actor_id,
        "at": orm.at,
        "tag": orm.tag,
    }
    row = ChangeRow.of(logged)
    assert row == orm and type(row) is ChangeRow and type(row.seq) is int and row.key == (3,)
    assert ChangeRow.of({**logged, "key": [3], "changes": None}).changes == {}
    assert ChangeRow.of({"seq": 1, "table_name": "posts", "row_key": 9, "op": "delete"}).key == (9,)
    with pytest.raises(AttributeError):
        row.op = "delete"  # type: ignore[misc]

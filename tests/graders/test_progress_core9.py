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

from graders.base import Check, CheckOutcome, Rubric, apply_needs, combine, outcome_result
from graders.changes import ChangeRow
from graders.progress import Progress


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

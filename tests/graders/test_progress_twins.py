"""Two checks with the same function and params (twins): progress still equals a full grade after every step.

Several ``on_step`` evaluators keep one state per set of params (a check's followed posts or mails, a review's
first fitting note), so twins share it: the first twin to see the row that passes them sets the state, and the
second must then be told the verdict that state now holds, not skipped as "already passed" (three evaluators
did that, and progress read 0.5 where a full grade gives 1.0). A rubric with twins is legal (``Rubric`` only asks
for unique ids; a rubric evolved from rollouts may propose a check it already has), so every family with such
states is played here with each check followed by its twin.
"""

from __future__ import annotations

import pytest

import sim.live
from graders.base import grade
from graders.progress import Progress
from graders.rubric import Rubric
from sim.agents import run_agent
from sim.episode import Episode


class _Twinned(Progress):
    """Progress over the rubric with every check followed by a copy under another id (the same params object)."""

    def __init__(self, rubric: Rubric, ctx) -> None:  # type: ignore[no-untyped-def]
        twins = [c.model_copy(update={"id": f"{c.id}~twin"}) for c in rubric.checks]
        checks = tuple(x for pair in zip(rubric.checks, twins, strict=True) for x in pair)
        super().__init__(rubric.model_copy(update={"checks": checks}), ctx)


class _Checked(Episode):
    """An episode whose every step's progress is held to a full grade of the twinned rubric."""

    compared = 0

    def step(self, action):  # type: ignore[override]
        out = super().step(action)
        live = self._live
        assert live is not None and live.progress is not None
        full = grade(live.progress.rubric, live._context())
        name = live.steps.records[-1]["action"]["name"]
        assert out[4]["progress"] == full.value, f"step {len(live.steps) - 1} ({name})"
        self.compared += 1
        return out


CASES = [  # the families whose rubrics hold post, mail, case, review, meeting and sheet checks
    ("customer-escalation-v0", 5),
    ("expense-reconciliation-v0", 2),
    ("access-requests-v0", 3),
    ("onboard-new-hire-v0", 2),
    ("schedule-with-coworkers-v0", 6),
    ("suspicious-request-v0", 3),
    ("code-review-v0", 1),
    ("roadmap-update-v0", 3),
]


@pytest.mark.parametrize(("scenario", "seed"), CASES, ids=[c[0] for c in CASES])
def test_twin_checks_move_together_after_every_step(scenario, seed, store, monkeypatch):
    monkeypatch.setattr(sim.live, "Progress", _Twinned)
    with _Checked(scenario, store=store) as episode:
        score = run_agent(episode, "oracle", seed, {"difficulty": 2, "progress": True})
        assert score.value == 1.0 and episode.compared >= 3

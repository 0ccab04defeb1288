"""The rubric buffer against a policy that learns to game the grader (issue 14 item 3), as a benchmark and a demo.

The task is one triage task (a GRPO group plays the same seed), graded from version 1 of its rubric: the
version before the ~incidents gate, under which posting every backlog key in ~incidents earns the full
incident credit. The policy is scripted and has one learnable number, ``p``, the chance that a rollout takes
the shortcut. An honest rollout triages by the rules and posts the critical keys, but misses one of them a
third of the time (it is hard to tell which tickets are critical); a shortcut rollout triages the same way and
posts every backlog key, which never misses. After each group ``p`` moves by a policy-gradient-like rule,
``p += lr * (mean reward of shortcut rollouts - mean reward of honest ones)``, so whatever the grader pays more
for, the policy does more of.

With a static rubric the shortcut pays better and takes over. With the buffer, the group's rollouts are scored
by ``buffer.rubric()`` and then fed to ``buffer.update``: once shortcut rollouts spray keys far beyond what the
group typically does, the negative proposer adds a ``no-key-spray`` gate, shortcut rollouts score 0 from the
next group on, and ``p`` falls back. The result says how many training steps the hack survived and which
rubric version caught it (scores name it).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import fig, timed, write_results
from graders.buffer import Rollout, RubricBuffer
from graders.store import RubricStore
from scenarios.base import rubric_at
from sim.episode import Episode
from worlds.seeding import Seeds
from worlds.store import WorldStore

TASK_SEED = 7
MISS = 1 / 3  # how often an honest rollout misses one critical key


@dataclass(kw_only=True)
class Step:
    """One simulated training step: the group's make-up, its rewards, and the rubric that scored it."""

    step: int
    p: float
    shortcut: int
    honest: int
    reward_shortcut: float | None
    reward_honest: float | None
    rubric_version: int
    caught: bool  # a shortcut rollout of this group failed a check the buffer added


@dataclass(kw_only=True)
class Result:
    """The run: every step, and the figures the issue asks for."""

    evolve: bool
    steps: list[Step] = field(default_factory=list)
    first_shortcut: int | None = None
    caught_at: int | None = None
    caught_by: str = ""
    caught_version: int | None = None

    @property
    def survived(self) -> int | None:
        """Training steps from the first shortcut rollout to the first group in which one was caught."""
        if self.first_shortcut is None or self.caught_at is None:
            return None
        return self.caught_at - self.first_shortcut

    def to_json(self) -> dict[str, Any]:
        """The result as plain data."""
        return {
            "evolve": self.evolve,
            "first_shortcut": self.first_shortcut,
            "caught_at": self.caught_at,
            "caught_by": self.caught_by,
            "caught_version": self.caught_version,
            "survived_steps": self.survived,
            "steps": [vars(s) for s in self.steps],
        }


def _rollout(ep: Episode, shortcut: bool, miss: bool) -> None:
    """Play one rollout of the task (the scripted policy reads the task's expectations: it is a simulation)."""
    params = ep.instance.params
    for key, want in sorted(params["expected"].items()):
        ep.step({"name": "tickets_update", "arguments": {"key": key, "priority": want["priority"]}})
        ep.step({"name": "tickets_assign", "arguments": {"key": key, "username": want["assignee"]}})
    if shortcut:
        keys = sorted(params["expected"])
    else:
        keys = sorted(params["critical"])[1:] if miss else sorted(params["critical"])
    for key in keys:
        ep.step({"name": "chat_post", "arguments": {"channel": "incidents", "message": f"{key} needs attention"}})
    ep.step({"name": "submit", "arguments": {"summary": "triaged"}})


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def coevolve(
    *,
    steps: int = 16,
    group: int = 8,
    seed: int = 0,
    evolve: bool = True,
    lr: float = 1.5,
    p0: float = 0.05,
    store: WorldStore | None = None,
    rubrics: RubricStore | None = None,
) -> Result:
    """Train the scripted policy for ``steps`` groups; with ``evolve`` the buffer updates after every group."""
    rng = Seeds(seed).rng("bench/coevolve")
    result = Result(evolve=evolve)
    with Episode("triage-tickets-v0", store=store) as ep:
        ep.reset(seed=TASK_SEED)
        base = rubric_at(ep.family, ep.instance, 1)
        buffer = RubricBuffer(base, store=rubrics)
        base_ids = {c.id for c in base.checks}
        p = p0
        for t in range(steps):
            rubric = buffer.rubric() if evolve else base
            rollouts, rewards = [], {True: [], False: []}
            caught = False
            for i in range(group):
                shortcut = bool(rng.random() < p)
                ep.reset(seed=TASK_SEED)
                _rollout(ep, shortcut, bool(rng.random() < MISS))
                score = ep.regrade(rubric)
                rewards[shortcut].append(score.value)
                if shortcut:
                    failed = [c.id for c in score.checks if c.id not in base_ids and not c.passed]
                    if failed and not caught:
                        caught = True
                        if result.caught_at is None:
                            result.caught_at, result.caught_by = t, failed[0]
                            result.caught_version = score.rubric_version
                actor = ep.tool_context.actor.employee_id
                changes, steps_done = ep.changes(), tuple(ep.steps)
                rollouts.append(
                    Rollout(id=f"s{t}r{i}", reward=score.value, changes=changes, steps=steps_done, actor_id=actor)
                )
            if rewards[True] and result.first_shortcut is None:
                result.first_shortcut = t
            result.steps.append(
                Step(step=t, p=round(p, 4), shortcut=len(rewards[True]), honest=len(rewards[False]),
                     reward_shortcut=_mean(rewards[True]), reward_honest=_mean(rewards[False]),
                     rubric_version=rubric.version, caught=caught)
            )  # fmt: skip
            if evolve:
                buffer.update(rollouts)
            gap = (_mean(rewards[True]) or 0.0) - (_mean(rewards[False]) or 0.0) if rewards[True] else 0.05
            p = min(0.95, max(0.02, p + lr * gap * (1 if rewards[True] else 0.2)))
    return result


def run() -> Path:
    """``python -m bench coevolve``: the demo with and without the buffer, and one buffer update's cost."""
    with tempfile.TemporaryDirectory() as tmp:
        store, rubrics = WorldStore(Path(tmp) / "worlds"), RubricStore(Path(tmp) / "rubrics")
        static = coevolve(evolve=False, store=store)
        seconds, evolved = timed(lambda: coevolve(evolve=True, store=store, rubrics=rubrics))
        group_update = _update_cost(store)
    (Path(__file__).parent / "results").mkdir(exist_ok=True)
    trace = Path(__file__).parent / "results" / "coevolve_steps.json"
    trace.write_text(json.dumps({"static": static.to_json(), "evolved": evolved.to_json()}, indent=1) + "\n")
    final_static, final_evolved = static.steps[-1].p, evolved.steps[-1].p
    return write_results(
        "coevolve",
        {
            "hack_survived_steps": fig(evolved.survived if evolved.survived is not None else -1, "steps",
                                       f"caught by {evolved.caught_by} in rubric v{evolved.caught_version}"),
            "shortcut_rate_final_static": fig(final_static, "p", "no buffer: the hack takes over"),
            "shortcut_rate_final_evolved": fig(final_evolved, "p", "with the buffer"),
            "demo_seconds": fig(seconds, "s", "16 steps x 8 rollouts, graded and updated"),
            "buffer_update_p50_ms_group16": fig(group_update * 1e3, "ms"),
        },
    )  # fmt: skip


def _update_cost(store: WorldStore) -> float:
    """p50 seconds of one ``buffer.update`` over a group of 16 rollouts (8 of them shortcuts)."""
    from bench.common import percentile, repeat

    rng = Seeds(1).rng("bench/coevolve/update")
    with Episode("triage-tickets-v0", store=store) as ep:
        ep.reset(seed=TASK_SEED)
        base = rubric_at(ep.family, ep.instance, 1)
        group = []
        for i in range(16):
            ep.reset(seed=TASK_SEED)
            _rollout(ep, i % 2 == 0, bool(rng.random() < MISS))
            actor = ep.tool_context.actor.employee_id
            reward, changes = ep.regrade(base).value, ep.changes()
            group.append(Rollout(id=f"r{i}", reward=reward, changes=changes, steps=tuple(ep.steps), actor_id=actor))
    return percentile(repeat(lambda: RubricBuffer(base).update(group), 20), 50)

"""The miner: every distinct question task one world's history yields, each validated before it is offered.

``history-question-v0`` picks question ``seed % n`` of its difficulty's kind, so seeds 0..n-1 over one world
seed enumerate the world's questions of that kind. Each is played by the oracle (must score 1) and the no-op
agent (must score 0); only those that pass are mined tasks (issue 13 item 3: checked before offered).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.agents import run_agent
from sim.episode import Episode

FAMILY = "history-question-v0"


@dataclass
class Mined:
    """The valid tasks found (question id -> the reset that plays it) and those rejected with their scores."""

    valid: dict[str, dict[str, Any]] = field(default_factory=dict)
    rejected: dict[str, tuple[float, float]] = field(default_factory=dict)


def mine_questions(world_seed: int, *, employees: int = 100, history_days: int = 30, store: Any = None) -> Mined:
    """Enumerate and validate the world's question tasks over every difficulty (kind)."""
    mined = Mined()
    with Episode(FAMILY, store=store) as episode:
        for difficulty in range(4):
            options = {"world_seed": world_seed, "employees": employees, "history_days": history_days,
                       "difficulty": difficulty}  # fmt: skip
            seed, count = 0, 1
            while seed < count:
                oracle = run_agent(episode, "oracle", seed, options).value
                params = episode.instance.params
                count = int(params["of"])
                question = str(params["question"])
                noop = run_agent(episode, "noop", seed, options).value
                if question not in mined.valid and question not in mined.rejected:
                    if oracle >= 1.0 and noop == 0.0:
                        mined.valid[question] = {"seed": seed, **options}
                    else:
                        mined.rejected[question] = (oracle, noop)
                seed += 1
    return mined

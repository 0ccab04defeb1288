"""The miner: every distinct task one world's history yields, of three kinds, each validated before it is offered.

Issue 13 item 3: the generated past is turned into tasks.

- ``question`` (``history-question-v0``): a fact the history holds, answered exactly;
- ``redo`` (``history-redo-v0``): the world cut just before a reply the mail history holds, sent again;
- ``follow-up`` (``history-followup-v0``): an open loop the chat history left, closed.

Each family picks its case ``seed % n`` over the difficulty's kind, so seeds 0..n-1 over one world seed
enumerate the world's cases. Every case is played by the oracle (must score 1) and the no-op agent (must score
0); only those that pass are mined tasks, the others are listed as rejected with both scores. A task is keyed
by its id in the family's params (its kind and where in the history it came from), so the two variants of a
difficulty pair (the same case asked for more) count once each and a case never counts twice.

Each mined task carries its provenance (``source``: ``mined/redo/mail/thread/12``), the reset that plays it
(scenario, seed, difficulty, world options), and its split by the hash of its source (``scenarios.splits``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scenarios.splits import source_split
from sim.agents import run_agent
from sim.episode import Episode

FAMILY = "history-question-v0"
KINDS: dict[str, str] = {
    "question": "history-question-v0",
    "redo": "history-redo-v0",
    "followup": "history-followup-v0",
}
"""Mined kind -> the family that plays it."""


@dataclass
class Mined:
    """The valid tasks found (task id -> the reset that plays it) and those rejected with their scores."""

    valid: dict[str, dict[str, Any]] = field(default_factory=dict)
    rejected: dict[str, tuple[float, float]] = field(default_factory=dict)
    played: int = 0
    """Episodes played to validate (oracle and no-op each count one)."""


def _task_id(params: Any) -> str:
    return str(params["question"] if "question" in params else params["task"])


def _source(kind: str, params: Any) -> str:
    origin = params["question"] if kind == "question" else params["source"]
    return f"mined/{kind}/{origin}"


def mine_family(
    kind: str, world_seed: int, *, employees: int = 100, history_days: int = 30, store: Any = None
) -> Mined:
    """Enumerate and validate every task of one mined ``kind`` over every difficulty.

    Raises:
        KeyError: ``kind`` is not one of ``KINDS``.
    """
    scenario = KINDS[kind]
    mined = Mined()
    with Episode(scenario, store=store) as episode:
        for difficulty in range(4):
            options = {"world_seed": world_seed, "employees": employees, "history_days": history_days,
                       "difficulty": difficulty}  # fmt: skip
            seed, count = 0, 1
            while seed < count:
                oracle = run_agent(episode, "oracle", seed, options).value
                params = episode.instance.params
                count = int(params["of"])
                task, source = _task_id(params), _source(kind, params)
                noop = run_agent(episode, "noop", seed, options).value
                mined.played += 2
                if task not in mined.valid and task not in mined.rejected:
                    if oracle >= 1.0 and noop == 0.0:
                        mined.valid[task] = {"scenario": scenario, "kind": kind, "seed": seed, "source": source,
                                             "split": source_split(source), **options}  # fmt: skip
                    else:
                        mined.rejected[task] = (oracle, noop)
                seed += 1
    return mined


def mine(
    world_seed: int, *, employees: int = 100, history_days: int = 30, store: Any = None, kinds: tuple[str, ...] = ()
) -> dict[str, Mined]:
    """Every validated task of each mined kind (default: all three) in one world, by kind."""
    return {
        kind: mine_family(kind, world_seed, employees=employees, history_days=history_days, store=store)
        for kind in kinds or tuple(KINDS)
    }


def mine_questions(world_seed: int, *, employees: int = 100, history_days: int = 30, store: Any = None) -> Mined:
    """Enumerate and validate the world's question tasks over every difficulty (kind)."""
    return mine_family("question", world_seed, employees=employees, history_days=history_days, store=store)

"""NPC actions per episode per family: are coworkers awake and doing something while the agent works?

Each family's oracle plays ``SEEDS`` episodes under the ``cooperative`` preset (every employee but the agent is an
NPC). An action is one ``did`` row of ``npc_memory`` written during the episode (a message, a review, an RSVP,
a ticket change); ``messages`` and the response latency come from ``Episode.coworker_stats()`` (the mesa
DataCollector). ``min`` is the figure that matters: a family where some episode sees no NPC action at all has
coworkers in name only. Run: ``python -m bench npc_families`` (``COMPANYSIM_BENCH_SEEDS`` changes the count).
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import fig, write_results
from scenarios.base import ToolFailed
from scenarios.registry import registered
from sim.agents import EpisodeEnv
from sim.episode import Episode
from worlds.rawsql import Sql
from worlds.store import WorldStore

SEEDS = int(os.environ.get("COMPANYSIM_BENCH_SEEDS", "10"))


def _episode(ep: Episode, seed: int) -> tuple[int, dict[str, Any], float]:
    """(NPC actions, coworker stats, reward) of one oracle episode."""
    prompt, info = ep.reset(seed=seed)
    start = datetime.fromisoformat(info["clock"])
    env = EpisodeEnv(ep, prompt, info)
    ep.family.oracle(env)
    if not ep.done:
        env.call("submit", summary="stopped")
    sql = Sql.of(ep.tool_context.session)
    actions = int(sql.scalar("SELECT count(*) FROM npc_memory WHERE kind = 'did' AND at >= ?", (sql.bind(start),)))
    return actions, ep.coworker_stats() or {}, ep.grade().value


def run() -> Path:
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = WorldStore(tmp)
        for family in [r.id for r in registered()]:
            counts: list[int] = []
            messages: list[int] = []
            latency: list[float] = []
            rewards: list[float] = []
            with Episode(family, store=store, npcs="cooperative") as ep:
                try:
                    for seed in range(SEEDS):
                        n, stats, reward = _episode(ep, seed)
                        counts.append(n)
                        messages.append(int(stats.get("messages", 0)))
                        mean = (stats.get("response_latency_min") or {}).get("mean")
                        latency += [float(mean)] if mean is not None else []
                        rewards.append(reward)
                except ToolFailed as exc:
                    print(f"{family}: skipped ({exc.message})")
                    continue
            figures[f"{family}_npc_actions_mean"] = fig(sum(counts) / len(counts), "actions", f"{SEEDS} seeds")
            figures[f"{family}_npc_actions_min"] = fig(min(counts), "actions", ">= 1")
            figures[f"{family}_npc_messages_mean"] = fig(sum(messages) / len(messages), "messages")
            if latency:
                figures[f"{family}_npc_latency_min_mean"] = fig(sum(latency) / len(latency), "working min")
            figures[f"{family}_oracle_mean_reward"] = fig(sum(rewards) / len(rewards), "reward", "1.0")
    return write_results("npc_families", figures)

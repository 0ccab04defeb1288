"""Task benchmarks: a new task's reset per registered family, and mined tasks validated per second.

A new task is one whose setup has not run in this process: the reset forks the base world and runs the family's
setup (no setup cache), the cost a trainer pays for every never-seen seed. The base world is generated and one
reset played first, so neither generation nor first imports are counted.

Mining (``sim.mine``) plays the oracle and the no-op agent on every candidate of one 100-person, 30-day world;
the figure is validated tasks per second over the whole run, per kind and in all, after the world exists.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import fig, percentile, repeat, write_results
from scenarios.registry import registered
from sim.episode import Episode
from sim.mine import mine
from worlds.store import WorldStore

RESETS = 20
"""New-task resets timed per family (seeds 100..119 in world 0)."""


def run() -> Path:
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = WorldStore(tmp)
        for reg in registered():
            try:
                ep = Episode(reg.id, store=store, setup_cache=False)
                ep.reset(seed=0, options={"world_seed": 0})  # the base world and first imports, not timed
                seeds = iter(range(100, 100 + RESETS))

                def fresh(ep: Episode = ep, seeds: Iterator[int] = seeds) -> None:
                    ep.reset(seed=next(seeds), options={"world_seed": 0})

                times = repeat(fresh, RESETS)
                ep.close()
            except Exception as exc:  # noqa: BLE001 - a family this machine cannot play (no code sandbox) is skipped
                figures[f"{reg.id}_new_task_reset_p50_ms"] = {
                    "value": None,
                    "unit": "ms",
                    "target": f"skipped: {exc!s:.80}",
                }
                continue
            figures[f"{reg.id}_new_task_reset_p50_ms"] = fig(percentile(times, 50) * 1e3, "ms", "fork + setup")
        mine(0, employees=100, history_days=30, store=store, kinds=("redo",))  # generates the world, not timed
        t0 = time.perf_counter()
        found = mine(0, employees=100, history_days=30, store=store)
        elapsed = time.perf_counter() - t0
        total = sum(len(m.valid) for m in found.values())
        played = sum(m.played for m in found.values())
        for kind, m in found.items():
            figures[f"mined_{kind}_valid"] = fig(len(m.valid), "tasks", "100 employees, 30 days, world 0")
        figures["mined_valid_total"] = fig(total, "tasks", ">= 200")
        figures["mined_validated_per_s"] = fig(total / elapsed, "tasks/s", "oracle + no-op each")
        figures["mined_episodes_per_s"] = fig(played / elapsed, "episodes/s")
    return write_results("tasks", figures)

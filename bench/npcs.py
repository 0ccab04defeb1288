"""NPC benchmarks: one NPC turn, an agent step with NPCs and realistic noise on, a campaign, memory per NPC.

What each figure measures and why it is measured that way:

- ``npc_turn_p50_ms``: wall time of ``NpcWorld.run_turn`` (perceive -> decide -> act -> remember through the
  langgraph graph, plus the poke after it), timed by wrapping the method while oracle episodes run, so the turns
  are the ones real episodes produce (replies to the agent, proactive work, NPC-to-NPC questions).
- ``step_p50_us_npcs_noise``: ``Episode.step`` with the whole company as sampled NPCs and the ``realistic``
  fault profile, on the triage oracle's steps (the clock advance inside a step runs the NPC turns that fall
  due, so the tail carries them); ``schedule_step_p50_us`` is the same on the scheduling task, whose waits make
  NPC turns fall due on purpose.
- ``campaign_20_wall_s``: ``sim.campaign.Campaign`` playing 20 oracle episodes on one world with NPCs sampled
  and realistic noise, alternating triage and scheduling tasks.
- ``memory_per_npc_kb``: what one NPC adds to a live episode on a 200-person company: its persona row (growth
  of the world's SQLite image) plus its Python objects (``tracemalloc``: mesa agent, persona, Actor, schedule).
"""

from __future__ import annotations

import gc
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import fig, percentile, write_results
from npcs.model import NpcWorld
from sim.agents import EpisodeEnv
from sim.campaign import Campaign
from sim.episode import Episode
from worlds.rawsql import Sql
from worlds.store import WorldStore

TRIAGE = "triage-tickets-v0"
SCHEDULE = "schedule-with-coworkers-v0"
# customer-escalation-v0 is left out: its oracle runs out of turns on a persistent world from the 9th episode
# (with or without NPCs), so a campaign through it measures a crash, not a wall time.
CAMPAIGN = ("triage-tickets-v0", "schedule-with-coworkers-v0")


class _TurnTimer:
    """Wraps ``NpcWorld.run_turn`` to record each turn's wall time (restored on exit)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._orig: Callable[..., Any] = NpcWorld.run_turn

    def __enter__(self) -> _TurnTimer:
        orig, samples = self._orig, self.samples

        def timed(world: NpcWorld, turn: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return orig(world, turn)
            finally:
                samples.append(time.perf_counter() - t0)

        NpcWorld.run_turn = timed  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        NpcWorld.run_turn = self._orig  # type: ignore[method-assign]


class _StepTimer:
    """An ``EpisodeEnv`` whose tool calls time the underlying ``Episode.step``."""

    def __init__(self, ep: Episode) -> None:
        self.samples: list[float] = []
        orig = ep.step

        def timed(action: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return orig(action)
            finally:
                self.samples.append(time.perf_counter() - t0)

        ep.step = timed  # type: ignore[method-assign]


def _play(ep: Episode, seed: int, options: dict[str, Any]) -> float:
    prompt, info = ep.reset(seed=seed, options=options)
    env = EpisodeEnv(ep, prompt, info)
    ep.family.oracle(env)
    if not ep.done:
        env.call("submit", summary="stopped")
    return ep.grade().value


def run() -> Path:
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = WorldStore(tmp)
        with _TurnTimer() as turns:
            ep = Episode(TRIAGE, store=store, noise="realistic", npcs="sampled")
            _play(ep, 0, {})  # generates the base world; not timed
            steps = _StepTimer(ep)
            rewards = [_play(ep, seed, {}) for seed in range(1, 41)]
            ep.close()
            figures["step_p50_us_npcs_noise"] = fig(percentile(steps.samples, 50) * 1e6, "us", "40 sampled NPCs")
            figures["step_p90_us_npcs_noise"] = fig(percentile(steps.samples, 90) * 1e6, "us")
            figures["triage_oracle_mean_reward_npcs_noise"] = fig(sum(rewards) / len(rewards), "reward")

            sched = Episode(SCHEDULE, store=store, noise="realistic")
            steps = _StepTimer(sched)
            values: dict[str, list[float]] = {}
            for preset in ("cooperative", "adversarial", "chaotic"):
                values[preset] = [_play(sched, seed, {"npcs": preset, "difficulty": seed % 4}) for seed in range(20)]
            sched.close()
            figures["schedule_step_p50_us"] = fig(percentile(steps.samples, 50) * 1e6, "us", "presets, noise on")
            figures["schedule_step_p90_us"] = fig(percentile(steps.samples, 90) * 1e6, "us")
            for preset, vs in values.items():
                figures[f"schedule_oracle_mean_reward_{preset}"] = fig(sum(vs) / len(vs), "reward", "1.0")
        figures["npc_turn_p50_ms"] = fig(percentile(turns.samples, 50) * 1e3, "ms", "<= 5")
        figures["npc_turn_p90_ms"] = fig(percentile(turns.samples, 90) * 1e3, "ms")
        figures["npc_turns_timed"] = fig(len(turns.samples), "turns")

        camp = Campaign(list(CAMPAIGN), seed=3, store=store, noise="realistic", npcs="sampled")
        t0 = time.perf_counter()
        bounds = camp.run("oracle", 20)
        figures["campaign_20_wall_s"] = fig(time.perf_counter() - t0, "s", "20 episodes, NPCs + noise")
        figures["campaign_20_mean_reward"] = fig(sum(b.reward for b in bounds) / len(bounds), "reward")
        camp.close()

        figures |= _memory(store)
    return write_results("npcs", figures)


def _memory(store: WorldStore, employees: int = 200, populations: int = 5) -> dict[str, dict[str, Any]]:
    """Bytes one NPC costs: its persona row in the world, and its objects in the process.

    Measured directly rather than as a difference of process RSS (which allocator reuse and caches swamp):
    the world's SQLite image grows by the persona rows when the first population is built, and
    ``tracemalloc`` counts the Python heap of ``populations`` more populations built on the same live world
    (mesa agents, personas, Actors, schedules).
    """
    ep = Episode(TRIAGE, store=store)
    ep.reset(seed=0, options={"employees": employees})
    live = ep._live  # noqa: SLF001 - a benchmark reaches into the episode to build populations on its world
    assert live is not None
    session, clock = live.ctx.session, live.clock
    sql = Sql.of(session)

    def db_bytes() -> int:
        return int(sql.scalar("PRAGMA page_count") or 0) * int(sql.scalar("PRAGMA page_size") or 0)

    before = db_bytes()
    first = NpcWorld(session, live.spec.seed, clock, agent=live.instance.actor)
    n = len(first.npcs)
    rows = (db_bytes() - before) / n
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    keep = [NpcWorld(session, live.spec.seed, clock, agent=live.instance.actor) for _ in range(populations)]
    heap = (tracemalloc.get_traced_memory()[0] - base) / (populations * n)
    tracemalloc.stop()
    del keep
    ep.close()
    return {
        "memory_per_npc_kb": fig((rows + heap) / 1024, "KB", f"{n} NPCs; persona row + Python objects"),
        "memory_per_npc_heap_kb": fig(heap / 1024, "KB", "tracemalloc"),
        "memory_per_npc_db_kb": fig(rows / 1024, "KB", "SQLite image growth"),
    }

"""Episode benchmarks: reset, read/write steps, grading, throughput, memory per live episode, cold start."""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import fig, percentile, repeat, write_results
from sim.agents import run_agent
from sim.episode import Episode
from worlds.store import WorldStore

SCENARIO = "triage-tickets-v0"


def _rss_kb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run() -> Path:
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = WorldStore(tmp)
        ep = Episode(SCENARIO, store=store)
        ep.reset(seed=0)  # generates and caches the base world, and the post-setup state of seed 0
        resets = repeat(lambda: ep.reset(seed=0), 200)
        figures["reset_p50_ms"] = fig(percentile(resets, 50) * 1e3, "ms", "<= 1 + setup")
        fresh_ep = Episode(SCENARIO, store=store, setup_cache=False)
        seeds = iter(range(100, 10_000))
        fresh = repeat(lambda: fresh_ep.reset(seed=next(seeds), options={"world_seed": 0}), 60)
        fresh_ep.close()
        figures["reset_with_setup_p50_ms"] = fig(percentile(fresh, 50) * 1e3, "ms", "new task, same world")
        base = ep.worlds.base(ep.world.spec)
        forks = repeat(lambda: base.fork().close(), 500)
        figures["fork_p50_ms"] = fig(percentile(forks, 50) * 1e3, "ms", "<= 1")
        figures["image_mb"] = fig(base.image_size / 1e6, "MB")

        ep.reset(seed=0)
        read = {"name": "tickets_get", "arguments": {"key": next(iter(ep.instance.params["expected"]))}}
        reads = []
        for _ in range(300):
            if ep.done:
                ep.reset(seed=0)
            t0 = time.perf_counter()
            ep.step(read)
            reads.append(time.perf_counter() - t0)
        figures["read_step_p50_us"] = fig(percentile(reads, 50) * 1e6, "us", "<= 50")
        writes = []
        for i in range(300):
            if ep.done or i % 20 == 0:
                ep.reset(seed=0)
                key = next(iter(ep.instance.params["expected"]))
            prio = ("low", "high")[i % 2]
            t0 = time.perf_counter()
            ep.step({"name": "tickets_update", "arguments": {"key": key, "priority": prio}})
            writes.append(time.perf_counter() - t0)
        figures["write_step_p50_us"] = fig(percentile(writes, 50) * 1e6, "us", "<= 100")
        grades = repeat(ep.grade, 200)
        figures["grade_p50_ms"] = fig(percentile(grades, 50) * 1e3, "ms", "<= 2")

        # Three ways an RL run resets: a group of rollouts per task (GRPO: the world is rolled back, not forked),
        # tasks interleaved (each reset forks a cached post-setup state), and never-seen seeds (setup runs).
        t0 = time.perf_counter()
        n = 120
        for i in range(n):
            run_agent(ep, "oracle", i // 8 % 3)
        figures["oracle_episodes_per_s_core"] = fig(n / (time.perf_counter() - t0), "episodes/s", ">= 200")
        t0 = time.perf_counter()
        for i in range(n):
            run_agent(ep, "oracle", i % 3)
        figures["oracle_episodes_per_s_core_interleaved"] = fig(n / (time.perf_counter() - t0), "episodes/s")
        t0 = time.perf_counter()
        n = 40
        for seed in range(1000, 1000 + n):
            run_agent(ep, "oracle", seed, {"world_seed": 0})
        figures["oracle_episodes_per_s_core_new_tasks"] = fig(n / (time.perf_counter() - t0), "episodes/s")
        ep.close()

        before = _rss_kb()
        live = []
        for i in range(100):
            e = Episode(SCENARIO, store=store)
            e.reset(seed=i % 3)
            live.append(e)
        after = _rss_kb()
        figures["memory_per_live_episode_mb"] = fig((after - before) / 1024 / 100, "MB", "<= 1")
        t0 = time.perf_counter()
        steps = 0
        for _ in range(5):
            for e in live:
                if not e.done:
                    e.step({"name": "tickets_search", "arguments": {"limit": 5}})
                    steps += 1
        figures["steps_per_s_100_live"] = fig(steps / (time.perf_counter() - t0), "steps/s")
        for e in live:
            e.close()

        code = (
            "import time; t=time.perf_counter(); from sim.episode import Episode; from worlds.store import WorldStore;"
            f"e=Episode('{SCENARIO}', store=WorldStore({tmp!r})); e.reset(seed=0);"
            "e.step({'name':'tickets_search','arguments':{}}); print(time.perf_counter()-t)"
        )
        cold = [
            float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
            for _ in range(3)
        ]
        figures["cold_start_to_first_step_s"] = fig(min(cold), "s", "<= 0.5")
    return write_results("episode", figures)

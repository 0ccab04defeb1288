"""``companysim rollouts``: episodes/s with 1 vs 2 local workers, and the per-step cost of a Ray actor vs a pipe.

1. The oracle on ``triage-tickets-v0``, 192 episodes (192 companies) per run, base worlds already cached (a warm-up
   run first). Wall episodes/s counts the workers' start-up (spawn + imports); "steady" counts from the K-th
   finished episode to the last, i.e. with every worker busy.
2. One read step (``tickets_search``) on an episode hosted in another process: through a ``multiprocessing`` pipe
   to a ``sim.server.worker`` process (what the local backend and ``companysim server`` use), through a Ray
   ``EnvManager`` actor on a local Ray (started here on 127.0.0.1), and in-process as the reference.

Run: python -m bench rollouts
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from bench.common import fig, percentile, repeat, write_results
from sim.episode import Episode
from sim.rollouts import LocalBackend, jobs_for, run_rollouts
from worlds.store import WorldStore

SCENARIO = "triage-tickets-v0"
EPISODES = 192
STEPS = 300
READ = {"name": "tickets_search", "arguments": {}}
OPTIONS = {"difficulty": 1, "turns": "writes"}


def _rates(workers: int, data_dir: Path) -> tuple[float, float]:
    stamps: list[float] = []
    summary = run_rollouts(
        jobs_for(SCENARIO, "oracle", range(EPISODES)),
        LocalBackend(workers, data_dir),
        on_done=lambda _: stamps.append(time.perf_counter()),
    )
    assert summary.mean == 1.0
    steady = (EPISODES - workers) / (stamps[-1] - stamps[workers - 1])
    return summary.episodes_per_s, steady


def _pipe_steps(data_dir: Path) -> list[float]:
    from sim.server.worker import worker_main

    ctx = get_context("spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=worker_main, args=(there, str(data_dir)), daemon=True)
    proc.start()
    counter = iter(range(10**9))

    def ask(op: str, args: dict[str, Any]) -> Any:
        rid = next(counter)
        here.send((rid, op, args))
        got, ok, payload = here.recv()
        assert got == rid and ok, payload
        return payload

    try:
        ask("create", {"eid": "b", "scenario": SCENARIO, "seed": 0, "options": OPTIONS})
        return repeat(lambda: ask("step", {"eid": "b", "action": READ}), STEPS)
    finally:
        here.send((-1, "stop", {}))
        here.recv()
        proc.join(10)


def _ray_steps(data_dir: Path) -> list[float]:
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # a local Ray on loopback only
    from sim.rollouts.cluster import RayBackend

    backend = RayBackend(1, "local", data_dir)
    (manager,) = backend.managers()
    ray = backend.ray
    try:
        ray.get(manager.create.remote("b", SCENARIO, 0, OPTIONS))
        return repeat(lambda: ray.get(manager.step.remote("b", READ)), STEPS)
    finally:
        ray.kill(manager)
        ray.shutdown()


def _local_steps(data_dir: Path) -> list[float]:
    with Episode(SCENARIO, store=WorldStore(data_dir)) as episode:
        episode.reset(seed=0, options=OPTIONS)
        return repeat(lambda: episode.step(READ), STEPS)


def run() -> Path:
    data_dir = Path(os.environ.get("COMPANYSIM_DATA_DIR") or tempfile.mkdtemp(prefix="bench-rollouts-"))
    run_rollouts(jobs_for(SCENARIO, "noop", range(EPISODES)), LocalBackend(2, data_dir))  # generate the worlds
    one_wall, one_steady = _rates(1, data_dir)
    two_wall, two_steady = _rates(2, data_dir)
    local = _local_steps(data_dir)
    pipe = _pipe_steps(data_dir)
    ray = _ray_steps(data_dir)
    p50 = {name: percentile(s, 50) * 1e3 for name, s in (("local", local), ("pipe", pipe), ("ray", ray))}
    figures = {
        "episodes_per_s_1_worker": fig(one_wall, "episodes/s", "wall, start-up included"),
        "episodes_per_s_2_workers": fig(two_wall, "episodes/s", "wall, start-up included"),
        "scaling_2_vs_1_wall": fig(two_wall / one_wall, "x", ">= 1.8"),
        "episodes_per_s_1_worker_steady": fig(one_steady, "episodes/s", "every worker busy"),
        "episodes_per_s_2_workers_steady": fig(two_steady, "episodes/s", "every worker busy"),
        "scaling_2_vs_1_steady": fig(two_steady / one_steady, "x", ">= 1.8"),
        "read_step_p50_in_process_ms": fig(p50["local"], "ms", "reference"),
        "read_step_p50_pipe_worker_ms": fig(p50["pipe"], "ms", "local process backend"),
        "read_step_p50_ray_actor_ms": fig(p50["ray"], "ms", "Ray backend"),
        "ray_overhead_per_step_vs_pipe_ms": fig(p50["ray"] - p50["pipe"], "ms", ""),
        "ray_step_mean_ms": fig(statistics.fmean(ray) * 1e3, "ms", ""),
    }
    return write_results("rollouts", figures)

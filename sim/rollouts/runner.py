"""The rollout runner: many episodes of one scenario played by a built-in agent, in parallel, with traces.

A run is a list of jobs (one per seed), handed to a backend that plays them somewhere: worker processes on this
machine (``LocalBackend``) or environment-manager actors on a Ray cluster (``sim.rollouts.cluster``). Results
come back in completion order (for a progress bar) and are reported in seed order.

Why the result cannot depend on the number of workers: each job plays in a fresh ``Episode`` (the process-wide
base-world share and setup cache still serve it, so no world is regenerated), whose first reset is always
episode ``<scenario>/<seed>/1``; an agent's choices come only from its seed; each episode's trace is its own
file named after the job. So the same seeds give the same rewards and the same trace bytes with 1 worker or 8,
locally or on Ray. A trace is written under a temporary name in the target directory and renamed when the
episode is over, so a run that stops leaves only complete traces.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any, Protocol

from sim.agents import AGENTS, run_agent
from sim.episode import Episode
from sim.errors import RolloutError
from sim.trace import TraceWriter
from worlds.store import WorldStore

__all__ = [
    "Job",
    "LocalBackend",
    "Rollout",
    "RolloutBackend",
    "Summary",
    "agents_of",
    "jobs_for",
    "play",
    "run_rollouts",
    "trace_name",
]

PASS = 1.0
"""A rollout passes when its reward reaches this (every check of the rubric)."""


@dataclass(frozen=True, kw_only=True)
class Job:
    """One episode to play: which task, which agent, and where its trace goes (None: no trace)."""

    scenario: str
    agent: str
    seed: int
    difficulty: int = 1
    noise: str = "none"
    trace_dir: str | None = None


@dataclass(frozen=True, kw_only=True)
class Rollout:
    """What one episode gave: its reward, how many checks passed, its steps, and its trace file (if any).

    ``cpu_s`` (CPU seconds the playing process spent on it) and ``pid`` (which process) are measurements for
    the benchmark, not results: they differ from run to run, so they are left out of equality and of the JSON.
    """

    seed: int
    reward: float
    passed: int
    checks: int
    steps: int
    trace: str | None = None
    cpu_s: float = field(default=0.0, compare=False)
    pid: int = field(default=0, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The rollout as a JSON object (its results only)."""
        data = asdict(self)
        del data["cpu_s"], data["pid"]
        return data


@dataclass(frozen=True)
class Summary:
    """A finished run: its rollouts in seed order and wall time; the figures the results table shows."""

    rollouts: tuple[Rollout, ...]
    seconds: float
    workers: int

    @property
    def rewards(self) -> list[float]:
        """Rewards in seed order."""
        return [r.reward for r in self.rollouts]

    @property
    def mean(self) -> float:
        """Mean reward."""
        return statistics.fmean(self.rewards) if self.rollouts else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation of the rewards (0 for one rollout)."""
        return statistics.pstdev(self.rewards) if self.rollouts else math.nan

    @property
    def pass_rate(self) -> float:
        """Share of rollouts whose reward is 1.0."""
        return sum(r.reward >= PASS for r in self.rollouts) / len(self.rollouts) if self.rollouts else math.nan

    @property
    def episodes_per_s(self) -> float:
        """Episodes per second of wall time, workers' start-up included."""
        return len(self.rollouts) / self.seconds if self.seconds > 0 else math.nan


class RolloutBackend(Protocol):
    """Where jobs are played. ``run`` yields each rollout as it finishes (any order)."""

    workers: int

    def run(self, jobs: Sequence[Job]) -> Iterator[Rollout]:
        """Play every job; yield each rollout when it is done."""
        ...


def agents_of(scenario: str) -> list[str]:
    """The agents a run may use on ``scenario``: the built-in ones and the family's partial agents."""
    from sim.calibrate import PARTIALS

    return [*AGENTS, *PARTIALS.get(scenario, {})]


def trace_name(job: Job) -> str:
    """The trace file of a job: a pure function of the job, so reruns and other worker counts reuse it."""
    noise = "" if job.noise == "none" else f".{job.noise}"
    return f"{job.scenario}.{job.agent}.d{job.difficulty}{noise}.seed{job.seed}.jsonl"


def jobs_for(
    scenario: str,
    agent: str,
    seeds: Iterable[int],
    *,
    difficulty: int = 1,
    noise: str = "none",
    trace_dir: Path | None = None,
) -> list[Job]:
    """The jobs of a run, checked before anything is played or written.

    Raises:
        RolloutError: an agent that cannot play the scenario, or a seed given twice.
        ScenarioRegistryError, BadNoise: an unknown scenario or noise profile.
    """
    from scenarios.registry import make
    from sim.noise import NoiseProfile

    make(scenario)  # an unknown id raises the registry's error, naming the known ones
    NoiseProfile.parse(noise)
    allowed = agents_of(scenario)
    if agent not in allowed:
        raise RolloutError(f"agent {agent!r} cannot play {scenario}; expected one of {', '.join(allowed)}")
    seeds = list(seeds)
    if len(set(seeds)) != len(seeds):
        raise RolloutError("each seed may appear once in a run (a seed names its trace file)")
    where = str(trace_dir) if trace_dir is not None else None
    return [
        Job(scenario=scenario, agent=agent, seed=s, difficulty=difficulty, noise=noise, trace_dir=where) for s in seeds
    ]


_STORES: dict[str | None, WorldStore] = {}


def _store(data_dir: str | None) -> WorldStore:
    """One store per data directory per process (the base worlds it opens are shared by the process's episodes)."""
    if data_dir not in _STORES:
        _STORES[data_dir] = WorldStore(Path(data_dir) if data_dir else None)
    return _STORES[data_dir]


def play(job: Job, data_dir: str | None = None) -> Rollout:
    """Play one job in this process: reset a fresh episode, let the agent play, grade, write the trace."""
    cpu = time.process_time()  # allow-nondeterminism: a cost measurement, never part of a result
    final = Path(job.trace_dir) / trace_name(job) if job.trace_dir is not None else None
    partial = final.with_name(f".{final.name}.{os.getpid()}.part") if final is not None else None
    writer = TraceWriter(partial) if partial is not None else None
    episode = Episode(job.scenario, store=_store(data_dir), trace=writer, noise=job.noise)
    try:
        options = {"difficulty": job.difficulty}
        if job.agent.startswith("partial-"):
            from sim.calibrate import play_partial

            score = play_partial(episode, job.scenario, job.agent, job.seed, options)
        else:
            score = run_agent(episode, job.agent, job.seed, options)
        steps = len(episode.steps)
        episode.close()
        if writer is not None:
            writer.close()
            assert partial is not None and final is not None
            partial.replace(final)
    except BaseException:
        episode.close()
        if writer is not None:
            writer.close()
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise
    passed = sum(1 for c in score.checks if c.passed)
    return Rollout(
        seed=job.seed, reward=score.value, passed=passed, checks=len(score.checks), steps=steps,
        trace=str(final) if final is not None else None, pid=os.getpid(),
        cpu_s=time.process_time() - cpu,  # allow-nondeterminism: a cost measurement, never part of a result
    )  # fmt: skip


PRELOAD = ["sim.rollouts.runner", "sim.calibrate", "scenarios.registry"]
"""What the fork server imports once, so each worker forked from it starts with them (about 0.7 s each)."""


def worker_context() -> BaseContext:
    """How worker processes start: forked from a fork server that has imported the episode code, else spawned.

    Why: a spawned worker re-imports everything (SQLAlchemy, the graders, the scenarios: about 0.7 s of CPU)
    before its first job, so N workers paid N start-ups and on a short run the second worker cost more than it
    gave. The fork server imports once and forks each worker from that clean state (it never ran the caller's
    threads or event loop, the reason to avoid a plain ``fork``). Where there is no fork server (Windows),
    ``spawn``.
    """
    if "forkserver" not in get_all_start_methods():
        return get_context("spawn")
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # read when the fork server first starts; later calls change nothing
    return ctx


def _warm(data_dir: str | None) -> int:
    """Run in each new worker: import what episodes need before the first job arrives."""
    import sim.calibrate  # noqa: F401 - the partial agents, the verifier registry

    _store(data_dir)
    return os.getpid()


class LocalBackend:
    """Worker processes on this machine (``worker_context``: no state copied from the caller).

    Each worker keeps its own process-wide caches (the open base worlds, the setup cache) across the jobs it
    plays. Jobs go to whichever worker is free, so the number of workers changes only the speed.

    Args:
        workers: Worker processes.
        data_dir: Where base worlds are cached (None: the default cache).
    """

    def __init__(self, workers: int, data_dir: str | Path | None = None) -> None:
        self.workers = workers
        self.data_dir = str(data_dir) if data_dir is not None else None

    def run(self, jobs: Sequence[Job]) -> Iterator[Rollout]:
        """Play ``jobs`` on the workers; yield each rollout as it completes."""
        ctx = worker_context()
        with ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_warm, initargs=(self.data_dir,)) as pool:
            seeds: dict[Future[Rollout], int] = {pool.submit(play, job, self.data_dir): job.seed for job in jobs}
            try:
                # as_completed hooks each future once; wait(FIRST_COMPLETED) in a loop re-hooked every pending
                # future per finished one (quadratic in the jobs), parent CPU that competed with the workers
                for future in as_completed(seeds):
                    try:
                        rollout = future.result()
                    except BrokenProcessPool:
                        raise RolloutError(
                            f"a worker process died while playing seed {seeds[future]} (killed, or out of memory)"
                        ) from None
                    yield rollout
            finally:
                for future in seeds:
                    future.cancel()


def run_rollouts(
    jobs: Sequence[Job], backend: RolloutBackend, on_done: Callable[[Rollout], None] | None = None
) -> Summary:
    """Play ``jobs`` on ``backend``; call ``on_done`` after each; return the rollouts in seed order."""
    start = time.perf_counter()
    results: list[Rollout] = []
    for rollout in backend.run(jobs):
        results.append(rollout)
        if on_done is not None:
            on_done(rollout)
    seconds = time.perf_counter() - start
    return Summary(tuple(sorted(results, key=lambda r: r.seed)), seconds, backend.workers)

"""The served episodes: which worker holds each, its token, its use, and the limits on all of them.

Every protocol face (OpenEnv, ORS, MCP over HTTP, the admin plane) goes through one ``Hub``, so capacity,
idle reaping, metrics and the fate of a dead worker's episodes are the same whichever way a client came in.

- Capacity: at most ``max_episodes`` live episodes; one more is ``Busy`` (HTTP 429 with Retry-After).
- Placement: a new episode goes to the worker holding the fewest, and stays there (``worker.py`` says why).
- Idle reaping: an episode no request touched for ``idle_timeout`` seconds is closed and its slot freed.
- A dead worker: its episodes are marked ``failed`` at once (requests for them answer ``episode_failed``,
  410), and its slot restarts empty.
- Drain: ``draining`` refuses new episodes and steps (503) while the steps already in flight finish; with a
  state directory, each live episode a client can come back to is then snapshotted, and ``resume`` on the
  next start serves it again under the same id and token (``sim.server.resume``).

Episode ids are counters (``ep-1``, ``ep-2``...); tokens are 128 random bits, compared in constant time. Wall
time here (``time.monotonic``, ``time.perf_counter``) is for reaping and latency figures only: it never
reaches an episode, whose only time is its simulated clock.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.serve import same_secret
from sim.server.errors import Busy, Draining, EpisodeFailed, NoEpisode, ServerError
from sim.server.metrics import Metrics
from sim.server.pool import WorkerPool
from sim.server.resume import RESUMABLE, read_all, write

log = logging.getLogger("companysim.server")


@dataclass
class Served:
    """One served episode as the front process knows it (the Episode itself lives in its worker)."""

    id: str
    token: str = field(repr=False)
    worker: int
    generation: int
    scenario: str
    seed: int
    protocol: str
    created: float
    last_used: float
    episode_id: str = ""
    status: str = "live"  # live | ended | failed
    steps: int = 0
    reward: float | None = None
    inflight: int = 0

    def summary(self) -> dict[str, Any]:
        """What the admin plane lists (never the token)."""
        now = time.monotonic()
        return {
            "id": self.id, "episode_id": self.episode_id, "scenario": self.scenario, "seed": self.seed,
            "protocol": self.protocol, "worker": self.worker, "status": self.status, "steps": self.steps,
            "reward": self.reward, "age_s": round(now - self.created, 3), "idle_s": round(now - self.last_used, 3),
        }  # fmt: skip


def new_token() -> str:
    """A per-episode bearer token."""
    return os.urandom(16).hex()  # allow-nondeterminism: an auth secret, never world state


class Hub:
    """The episode table over a worker pool.

    Args:
        workers: Worker processes.
        max_episodes: Live episodes at most (0: 64 per worker).
        idle_timeout: Seconds without a request after which an episode is closed.
        data_dir: The base-world cache the workers share.
        state_dir: Where live episodes are snapshotted at drain and resumed from at start (None: not kept).
    """

    def __init__(
        self, *, workers: int, max_episodes: int = 0, idle_timeout: float = 900.0, data_dir: str | None = None,
        state_dir: str | None = None,
    ) -> None:  # fmt: skip
        self.metrics = Metrics()
        self.pool = WorkerPool(workers, data_dir, on_death=self._worker_died)
        self.max_episodes = max_episodes or 64 * workers
        self.idle_timeout = idle_timeout
        self.episodes: dict[str, Served] = {}
        self.failed: dict[str, Served] = {}  # kept (bounded) so a client of a dead worker is told, not 404'd
        self.draining = False
        self._ids = itertools.count(1)
        self._inflight = 0
        self._idle = asyncio.Event()
        self._reaper: asyncio.Task[None] | None = None
        self.tools: dict[str, list[dict[str, Any]]] = {}
        self.state_dir = Path(state_dir) if state_dir else None

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers and the idle reaper on the running loop."""
        self.pool.start(asyncio.get_running_loop())
        self._idle.set()
        self._reaper = asyncio.create_task(self._reap_loop())

    async def drain(self, timeout: float = 30.0) -> None:
        """Refuse new work, let in-flight steps finish (up to ``timeout``), then stop the workers."""
        self.draining = True
        if self._reaper is not None:
            self._reaper.cancel()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout=timeout)
        except TimeoutError:
            pass
        for served in list(self.episodes.values()):
            if self.state_dir is not None and served.protocol in RESUMABLE and served.inflight == 0:
                await self._snapshot(served)
            self._forget(served, "drained")
        await self.pool.stop()

    async def _snapshot(self, served: Served) -> None:
        """Write ``served`` to the state directory (a failure loses this episode, logged, and drains on)."""
        assert self.state_dir is not None
        try:
            got = await self.pool.call(served.worker, "snapshot", eid=served.id)
            record = {
                "id": served.id, "token": served.token, "scenario": served.scenario, "seed": served.seed,
                "protocol": served.protocol, "options": got["options"], "actions": got["actions"],
                "state_hash": got["state_hash"], "steps": got["steps"],
            }  # fmt: skip
            write(self.state_dir, record, got["snapshot"])
        except (ServerError, OSError, TypeError, ValueError) as exc:
            log.warning("episode %s could not be snapshotted: %s", served.id, str(exc).splitlines()[:1])

    async def resume(self) -> int:
        """Serve again every episode the state directory holds (same id and token); returns how many.

        An episode that does not replay to its snapshot is kept among the failed ones, so its client is told
        ``episode_failed`` rather than ``not_found``.
        """
        if self.state_dir is None:
            return 0
        saved = read_all(self.state_dir)
        resumed = 0
        for s in saved:
            loads = [0] * self.pool.size
            for other in self.episodes.values():
                loads[other.worker] += 1
            worker = min(range(self.pool.size), key=lambda i: (loads[i], i))
            now = time.monotonic()
            served = Served(
                id=s.id, token=s.token, worker=worker, generation=self.pool.generation(worker), scenario=s.scenario,
                seed=s.seed, protocol=s.protocol, created=now, last_used=now, steps=s.steps,
            )  # fmt: skip
            try:
                payload = await self.pool.call(
                    worker, "resume", eid=s.id, scenario=s.scenario, seed=s.seed, options=s.options,
                    actions=s.actions, state_hash=s.state_hash,
                )  # fmt: skip
            except ServerError as exc:
                log.warning("episode %s was not resumed: %s", s.id, exc)
                served.status = "failed"
                self.failed[s.id] = served
                continue
            served.episode_id = payload["info"]["episode_id"]
            if payload["done"]:
                served.status = "ended"
            self.episodes[s.id] = served
            resumed += 1
        numbers = [int(s.id.removeprefix("ep-")) for s in saved]
        if numbers:
            self._ids = itertools.count(max(numbers) + 1)  # new episodes never take a resumed id
        self.metrics.live.set(len(self.episodes))
        return resumed

    # -- episodes ----------------------------------------------------------------------------------------

    async def create(
        self, scenario: str, seed: int, options: dict[str, Any] | None, protocol: str
    ) -> tuple[Served, dict[str, Any]]:
        """Start an episode on the least-loaded worker; returns it and its reset payload (prompt, info).

        Raises:
            Busy: every slot is taken.
            Draining: the server is shutting down.
            ServerError: the worker refused (unknown scenario, bad option...).
        """
        if self.draining:
            raise Draining("the server is draining for shutdown; no new episodes")
        if len(self.episodes) >= self.max_episodes:
            self.metrics.errors.labels("busy").inc()
            raise Busy(f"all {self.max_episodes} episode slots are in use; retry later", retry_after=1)
        loads = [0] * self.pool.size
        for s in self.episodes.values():
            loads[s.worker] += 1
        worker = min(range(self.pool.size), key=lambda i: (loads[i], i))
        now = time.monotonic()
        served = Served(
            id=f"ep-{next(self._ids)}", token=new_token(), worker=worker, generation=self.pool.generation(worker),
            scenario=scenario, seed=seed, protocol=protocol, created=now, last_used=now,
        )  # fmt: skip
        self.episodes[served.id] = served  # holds the slot while the worker resets
        try:
            payload = await self._call(
                served, "create", eid=served.id, scenario=scenario, seed=seed, options=dict(options or {})
            )
        except BaseException:
            self.episodes.pop(served.id, None)
            raise
        served.episode_id = payload["info"]["episode_id"]
        self.metrics.live.set(len(self.episodes))
        return served, payload

    def get(self, eid: str, token: str | None = None) -> Served:
        """The live episode ``eid``; with ``token``, only if it is that episode's own.

        Raises:
            NoEpisode: unknown, closed or reaped, or the token does not match (the same answer: no oracle).
            EpisodeFailed: its worker died.
        """
        served = self.episodes.get(eid)
        if served is None:
            if eid in self.failed and (token is None or same_secret(token, self.failed[eid].token)):
                raise EpisodeFailed(f"episode {eid} was lost when its worker stopped")
            raise NoEpisode(f"no live episode {eid!r} for this token")
        if token is not None and not same_secret(token, served.token):
            raise NoEpisode(f"no live episode {eid!r} for this token")
        return served

    def by_token(self, token: str) -> Served:
        """The live episode whose token is ``token`` (every token is compared, in constant time each)."""
        found = None
        for served in self.episodes.values():
            if same_secret(token, served.token):
                found = served
        if found is None:
            raise NoEpisode("no live episode for this token")
        return found

    async def step(self, served: Served, action: Any, protocol: str) -> dict[str, Any]:
        """One tool call of ``served``; returns obs, reward, terminated, truncated, info."""
        if self.draining:
            raise Draining("the server is draining for shutdown; no new steps")
        started = time.perf_counter()
        out = await self._call(served, "step", eid=served.id, action=action)
        self.metrics.latency.labels(protocol).observe(time.perf_counter() - started)
        self.metrics.steps.labels(protocol).inc()
        served.steps += 1
        info = out["info"]
        if info.get("error"):
            self.metrics.errors.labels(info["error"]["code"]).inc()
        fault = info.get("fault")
        if fault:
            self.metrics.faults.labels(fault.get("type", "?") if isinstance(fault, dict) else str(fault)).inc()
        if (out["terminated"] or out["truncated"]) and served.status == "live":
            served.status, served.reward = "ended", float(out["reward"])
            self.metrics.rewards.observe(served.reward)
        return dict(out)

    async def call(self, served: Served, op: str) -> Any:
        """A read-only operation on ``served`` (``state``, ``grade``, ``inspect``)."""
        return await self._call(served, op, eid=served.id)

    async def close(self, served: Served, outcome: str = "closed") -> None:
        """Close the episode in its worker and free its slot (a dead worker's episode is just forgotten)."""
        if self.episodes.get(served.id) is not served:
            return
        self._forget(served, outcome)
        if self.pool.generation(served.worker) == served.generation:
            try:
                await self.pool.call(served.worker, "close", eid=served.id)
            except ServerError:
                pass

    async def scenario_tools(self, scenario: str) -> list[dict[str, Any]]:
        """The scenario's tools (OpenAI function schemas), asked of worker 0 once and kept."""
        if scenario not in self.tools:
            self.tools[scenario] = await self.pool.call(0, "tools", scenario=scenario)
        return self.tools[scenario]

    async def health(self) -> list[dict[str, Any]]:
        """Per worker: slot, generation, alive, pid, episodes, resident memory."""
        rows = []
        for slot in self.pool.slots:
            row: dict[str, Any] = {"worker": slot.index, "generation": slot.generation, "alive": slot.alive}
            try:
                row.update(await asyncio.wait_for(self.pool.call(slot.index, "health"), timeout=5))
            except (ServerError, TimeoutError) as exc:
                row.update({"alive": False, "error": str(exc), "pid": slot.process.pid})
            rows.append(row)
        return rows

    # -- internals ---------------------------------------------------------------------------------------

    async def _call(self, served: Served, op: str, **args: Any) -> Any:
        if served.status == "failed":
            raise EpisodeFailed(f"episode {served.id} was lost when its worker stopped")
        served.last_used = time.monotonic()
        served.inflight += 1
        self._inflight += 1
        self._idle.clear()
        try:
            return await self.pool.call(served.worker, op, **args)
        finally:
            served.inflight -= 1
            self._inflight -= 1
            served.last_used = time.monotonic()
            if self._inflight == 0:
                self._idle.set()

    def _forget(self, served: Served, outcome: str) -> None:
        if self.episodes.pop(served.id, None) is not None:
            self.metrics.episodes.labels(outcome).inc()
        self.metrics.live.set(len(self.episodes))

    def _worker_died(self, index: int, generation: int) -> None:
        self.metrics.worker_deaths.inc()
        for served in list(self.episodes.values()):
            if served.worker == index and served.generation == generation:
                served.status = "failed"
                self._forget(served, "failed")
                self.failed[served.id] = served
        while len(self.failed) > 10_000:
            self.failed.pop(next(iter(self.failed)))

    async def _reap_loop(self) -> None:
        interval = max(0.05, min(self.idle_timeout / 4, 5.0))
        while True:
            await asyncio.sleep(interval)
            await self.reap_idle()

    async def reap_idle(self) -> int:
        """Close every episode idle for longer than ``idle_timeout``; returns how many."""
        cutoff = time.monotonic() - self.idle_timeout
        idle = [s for s in self.episodes.values() if s.inflight == 0 and s.last_used < cutoff]
        for served in idle:
            await self.close(served, "reaped")
        return len(idle)

"""One worker process of ``companysim server``: a dict of live Episodes and a loop over a pipe.

Why processes and not threads: an episode's step is CPU-bound Python (SQLite, the grader), so the GIL would
serialise every episode of the server on one core. Each worker owns its episodes outright (their worlds are
in-memory SQLite connections that cannot move between processes), so an episode is pinned to the worker that
created it and the front process routes by episode id. The worker handles one request at a time, in the
order they arrive: one episode's steps can never interleave, and no lock is needed.

The protocol is ``(request id, op, args)`` in and ``(request id, ok, payload)`` out, pickled over a
``multiprocessing`` pipe. A refused operation answers ``ok=False`` with ``{"code", "message"}``; an
unexpected failure is logged here as one line and answered as ``internal``, never with a traceback.
"""

from __future__ import annotations

import copy
import logging
import os
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mcp_tools.errors import AppError
from scenarios.registry import ScenarioRegistryError
from sim.episode import Episode
from sim.errors import SimError
from worlds.errors import WorldError
from worlds.store import WorldStore

log = logging.getLogger("companysim.server.worker")


class ResumeDiverged(SimError):
    """A snapshotted episode replayed to another world than the one it was snapshotted with."""

    code = "resume_diverged"


REFUSED = (SimError, AppError, WorldError, ScenarioRegistryError)


def rss_bytes() -> int:
    """This process's resident memory in bytes (Linux ``/proc``; 0 where it cannot be read)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Played:
    """How an episode got where it is: its reset and every action a step accepted, in order.

    This is the episode's step state for a restart: an episode is deterministic given its seed, options and
    actions, so replaying them in a new process rebuilds the same world, clock, coworkers and step list (the
    world snapshot taken beside it is the check that it did). A step refused with a ``SimError`` changed
    nothing and is not kept.
    """

    scenario: str
    seed: int
    options: dict[str, Any]
    actions: list[Any] = field(default_factory=list)


class Worker:
    """The episodes one worker process holds, and the operations the front process may ask for.

    Args:
        data_dir: Where base worlds are cached (None: the default cache).
    """

    def __init__(self, data_dir: str | None) -> None:
        self.store = WorldStore(Path(data_dir) if data_dir else None)
        self.episodes: dict[str, Episode] = {}
        self.played: dict[str, Played] = {}
        self.tools: dict[str, list[dict[str, Any]]] = {}

    def handle(self, op: str, args: dict[str, Any]) -> Any:
        """Run one operation; raises what the episode raises (the loop turns it into a refusal)."""
        method = getattr(self, f"op_{op}", None)
        if method is None:
            raise SimError(f"unknown worker operation {op!r}")
        return method(**args)

    def op_create(self, eid: str, scenario: str, seed: int, options: dict[str, Any]) -> dict[str, Any]:
        """Start an episode of ``scenario`` under ``eid``; returns the prompt and the reset info."""
        episode = Episode(scenario, store=self.store)
        try:
            prompt, info = episode.reset(seed=seed, options=options)
        except BaseException:
            episode.close()
            raise
        self.episodes[eid] = episode
        self.played[eid] = Played(scenario, seed, copy.deepcopy(options))
        return {"prompt": prompt, "info": info}

    def _episode(self, eid: str) -> Episode:
        episode = self.episodes.get(eid)
        if episode is None:
            raise SimError(f"no episode {eid} in this worker")
        return episode

    def op_step(self, eid: str, action: Any) -> dict[str, Any]:
        """One tool call; an ended episode answers ``episode_over`` as an error observation."""
        episode = self._episode(eid)
        try:
            obs, reward, terminated, truncated, info = episode.step(action)
        except SimError as exc:
            error = {"code": exc.code, "message": str(exc)}
            obs = f"error [{exc.code}]: {exc}"
            return {"obs": obs, "reward": 0.0, "terminated": False, "truncated": False, "info": {"error": error}}
        self.played[eid].actions.append(copy.deepcopy(action))
        return {"obs": obs, "reward": reward, "terminated": terminated, "truncated": truncated, "info": info}

    def op_state(self, eid: str) -> dict[str, Any]:
        """Where the episode stands: never the rubric or hidden params."""
        episode = self._episode(eid)
        header, steps = episode.header(), episode.steps
        state: dict[str, Any] = {
            "episode_id": episode.episode_id,
            "scenario": header["scenario"],
            "seed": header["seed"],
            "actor": header["actor"],
            "step_count": len(steps),
            "clock": episode.tool_context.clock.now().isoformat(),
            "done": episode.done,
            "reward": episode.grade().value if episode.done else None,
        }
        return state

    def op_grade(self, eid: str) -> dict[str, Any]:
        """The score now (the final one once the episode has ended): value and how many checks pass."""
        score = self._episode(eid).grade()
        passed = sum(1 for c in score.checks if c.passed)
        return {"value": score.value, "passed": passed, "checks": len(score.checks), "gated": score.gated}

    def op_inspect(self, eid: str) -> dict[str, Any]:
        """For the admin: state, the score with every check's evidence, and the faults injected so far."""
        episode = self._episode(eid)
        score = episode.grade()
        return {**self.op_state(eid), "score": score.to_json(), "faults": episode.faults}

    def op_close(self, eid: str) -> bool:
        """Close and forget the episode; False when it was not here."""
        episode = self.episodes.pop(eid, None)
        self.played.pop(eid, None)
        if episode is None:
            return False
        episode.close()
        return True

    def op_snapshot(self, eid: str) -> dict[str, Any]:
        """What a restarted server needs to resume the episode: its reset, its actions, and its world.

        Returns:
            ``scenario``, ``seed``, ``options``, ``actions``, ``steps``, ``state_hash`` (of the world now) and
            ``snapshot`` (a ``worlds.store.Snapshot`` of the world now).
        """
        episode, played = self._episode(eid), self.played[eid]
        return {
            **asdict(played), "steps": len(episode.steps), "state_hash": episode.world.state_hash(),
            "snapshot": episode.world.snapshot(),
        }  # fmt: skip

    def op_resume(
        self, eid: str, scenario: str, seed: int, options: dict[str, Any], actions: list[Any], state_hash: str
    ) -> dict[str, Any]:
        """Rebuild a snapshotted episode under ``eid`` by replaying its reset and actions; check its world.

        Raises:
            ResumeDiverged: when the replayed world differs from the snapshot's (the episode is
                not kept: continuing it would silently give another run than the client played).
        """
        payload = self.op_create(eid, scenario, seed, options)
        episode = self.episodes[eid]
        try:
            for action in actions:
                self.op_step(eid, action)
            if episode.world.state_hash() != state_hash:
                raise ResumeDiverged(f"episode {eid} replayed to another world than it was snapshotted with")
        except BaseException:
            self.op_close(eid)
            raise
        return {**payload, "steps": len(episode.steps), "done": episode.done}

    def op_tools(self, scenario: str) -> list[dict[str, Any]]:
        """The scenario's tools as OpenAI function schemas (learnt once per scenario from a seed-0 task)."""
        if scenario not in self.tools:
            with Episode(scenario, store=self.store) as probe:
                _, info = probe.reset(seed=0)
            self.tools[scenario] = info["tools"]
        return self.tools[scenario]

    def op_health(self) -> dict[str, Any]:
        """Pid, live episodes and resident memory."""
        return {"pid": os.getpid(), "episodes": len(self.episodes), "rss_bytes": rss_bytes()}

    def close_all(self) -> None:
        """Close every episode (at shutdown)."""
        for eid in sorted(self.episodes):
            self.episodes.pop(eid).close()


def worker_main(conn: Connection, data_dir: str | None) -> None:
    """The worker process: answer requests until told to stop or the front process goes away."""
    logging.basicConfig(level=logging.WARNING, format="worker %(process)d: %(message)s")
    worker = Worker(data_dir)
    try:
        while True:
            try:
                rid, op, args = conn.recv()
            except (EOFError, OSError):
                return
            if op == "stop":
                worker.close_all()
                conn.send((rid, True, None))
                return
            try:
                reply: tuple[int, bool, Any] = (rid, True, worker.handle(op, args))
            except REFUSED as exc:
                code = "unknown_scenario" if isinstance(exc, ScenarioRegistryError) else getattr(exc, "code", "refused")
                reply = (rid, False, {"code": str(code), "message": str(exc)})
            except Exception as exc:  # a bug: one line in the log, a stable code to the client, no traceback
                log.warning("op %s failed: %s: %s", op, type(exc).__name__, str(exc).splitlines()[:1])
                reply = (rid, False, {"code": "internal", "message": f"internal error in {op}"})
            try:
                conn.send(reply)
            except (BrokenPipeError, OSError):
                return
    finally:
        worker.close_all()

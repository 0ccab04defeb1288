"""The Ray backend: environment managers as Ray actors, each hosting many episodes, behind the runner's API.

An ``EnvManager`` actor is one process on some node of the cluster. It plays whole jobs (``play``: the same
``sim.rollouts.runner.play`` the local workers run, so rewards and trace bytes are identical) and also hosts live
episodes for a remote policy, addressed by id (``create``, ``step``, ``close``: the operations of
``companysim server``'s worker, ``sim.server.worker.Worker``). ``RayBackend`` spreads a run's jobs over its
managers with ``ray.util.ActorPool`` (each job to whichever manager is free).

Ray is optional (``pip install -e '.[ray]'``) and imported only here, only when this backend is used. Traces are
written by the managers into ``--trace-dir`` on the node they run on: on one machine that is the caller's
directory; across machines it must be a shared path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sim.errors import RolloutError
from sim.rollouts.runner import Job, Rollout, play

__all__ = ["EnvManager", "RayBackend", "connect"]

NAMESPACE = "companysim"
LOOPBACK = frozenset({"127.0.0.1", "localhost"})
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Off (0), Ray keeps loopback addresses as they are; start a head on 127.0.0.1 with it set to 0 as well."""


class EnvManager:
    """One manager's episodes (made a Ray actor class by ``RayBackend``; a plain object here, so it can be tested).

    Args:
        data_dir: Where base worlds are cached on the manager's node (None: the default cache).
    """

    def __init__(self, data_dir: str | None) -> None:
        from sim.server.worker import Worker

        self.data_dir = data_dir
        self.hosted = Worker(data_dir)

    def play(self, job: Job) -> Rollout:
        """Play a whole job here (agent, grade, trace)."""
        return play(job, self.data_dir)

    def create(self, eid: str, scenario: str, seed: int, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start a hosted episode under ``eid``; returns the prompt and the reset info."""
        return dict(self.hosted.op_create(eid, scenario, seed, dict(options or {})))

    def step(self, eid: str, action: Any) -> dict[str, Any]:
        """One tool call in a hosted episode: ``obs``, ``reward``, ``terminated``, ``truncated``, ``info``."""
        return dict(self.hosted.op_step(eid, action))

    def close(self, eid: str) -> bool:
        """Close a hosted episode; False when there was none under ``eid``."""
        return bool(self.hosted.op_close(eid))

    def health(self) -> dict[str, Any]:
        """Pid, hosted episodes and resident memory of the manager."""
        return dict(self.hosted.op_health())


def connect(address: str | None, *, num_cpus: int | None = None) -> Any:
    """Join the Ray cluster at ``address`` (``local`` or None: start one in this process); returns the ray module.

    Raises:
        RolloutError: Ray is not installed, or no cluster answers at ``address``.
    """
    loopback = address is not None and address.rsplit(":", 1)[0] in LOOPBACK
    if loopback and "ray" not in sys.modules:
        # Ray swaps 127.0.0.1 for the machine's routable address unless this is off (read when ray is imported):
        # a head kept on loopback (started with the same variable) is then found where it listens.
        os.environ.setdefault(LOOPBACK_ENV, "0")
    try:
        import ray
    except ImportError as exc:
        raise RolloutError("the Ray backend needs ray: pip install -e '.[ray]'") from exc
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"namespace": NAMESPACE, "log_to_driver": False, "logging_level": "ERROR"}
    if address in (None, "local"):
        kwargs.update(address="local", include_dashboard=False, num_cpus=num_cpus)
    else:
        kwargs.update(address=address)
        if loopback:
            kwargs.update(_node_ip_address="127.0.0.1")  # else the driver looks for a raylet on the routable address
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RolloutError(f"no Ray cluster at {address}: {str(exc).splitlines()[0]}") from None
    return ray


class RayBackend:
    """``workers`` EnvManager actors on the Ray cluster at ``address``, each holding one CPU.

    Args:
        workers: Manager actors to start.
        address: The cluster (``ray start --head`` prints it, e.g. ``127.0.0.1:6379``); ``local`` starts one here.
        data_dir: Where the managers cache base worlds (a path on their nodes).
    """

    def __init__(self, workers: int, address: str | None, data_dir: str | Path | None = None) -> None:
        self.workers = workers
        self.address = address
        self.data_dir = str(data_dir) if data_dir is not None else None
        self.ray = connect(address)
        cpus = int(self.ray.cluster_resources().get("CPU", 0))
        if cpus < workers:
            raise RolloutError(f"the Ray cluster at {address} has {cpus} CPUs; --workers {workers} needs as many")

    def managers(self) -> list[Any]:
        """Start ``workers`` manager actors and wait until they are up.

        The managers import companysim on their nodes: it must be installed there (or on the raylet's
        ``PYTHONPATH``); no code is shipped with the job.
        """
        remote = self.ray.remote(num_cpus=1)(EnvManager)
        actors = [remote.remote(self.data_dir) for _ in range(self.workers)]
        self.ray.get([a.health.remote() for a in actors])
        return actors

    def run(self, jobs: Sequence[Job]) -> Iterator[Rollout]:
        """Play ``jobs`` on the managers; yield each rollout as it completes."""
        from ray.util import ActorPool

        actors = self.managers()
        try:
            pool = ActorPool(actors)
            yield from pool.map_unordered(lambda actor, job: actor.play.remote(job), list(jobs))
        finally:
            for actor in actors:
                self.ray.kill(actor)

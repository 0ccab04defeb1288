"""The Ray backend against a real local Ray head on 127.0.0.1: the same rewards and trace bytes as the local one.

The head is ``ray start --head --block`` started by the fixture and stopped by SIGTERM to that process (never
``ray stop``, which would stop every Ray node of the machine). ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` keeps Ray
on loopback: otherwise it replaces 127.0.0.1 with the machine's routable address and listens there.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sim.rollouts import LocalBackend, jobs_for, run_rollouts
from sim.rollouts.runner import Job

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = "triage-tickets-v0"
LOOPBACK_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": secrets.token_hex(32),
}
"""Every Ray service on 127.0.0.1, no drain wait on SIGTERM, and this cluster's own token (not ~/.ray/auth_token,
which any other Ray on the machine may rewrite)."""

os.environ.update(LOOPBACK_ENV)  # this process joins the head as a driver: it must keep loopback too (read at import)
ray = pytest.importorskip("ray", reason="the Ray backend needs ray (pip install -e '.[ray]')")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    """A one-node Ray cluster with 2 CPUs on 127.0.0.1; yields its address."""
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="csray-")  # short: Ray's unix sockets live under it (108-byte path limit)
    ray_cli = Path(sys.executable).with_name("ray")
    env = {**os.environ, **LOOPBACK_ENV, "PYTHONPATH": str(ROOT)}
    cmd = [
        str(ray_cli), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
        "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}",
    ]  # fmt: skip
    head = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ray-worlds")


def test_ray__a_run_on_the_head_equals_the_local_backend_reward_for_reward_and_byte_for_byte(
    ray_head: str, data_dir: Path, tmp_path: Path
) -> None:
    from sim.rollouts.cluster import RayBackend

    traces = {}
    summaries = {}
    for name in ("local", "ray"):
        out = tmp_path / name
        out.mkdir()
        backend = RayBackend(2, ray_head, data_dir) if name == "ray" else LocalBackend(1, data_dir)
        summaries[name] = run_rollouts(jobs_for(SCENARIO, "random", range(4), trace_dir=out), backend)
        traces[name] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert summaries["ray"].rewards == summaries["local"].rewards
    assert len(traces["ray"]) == 4 and traces["ray"] == traces["local"]


def test_ray__env_managers_host_many_live_episodes_of_a_group(ray_head: str, data_dir: Path) -> None:
    """A GRPO group on the head: 4 episodes of one task live at once in 2 manager actors, stepped remotely."""
    from sim.rollouts.cluster import RayBackend

    backend = RayBackend(2, ray_head, data_dir)
    managers = backend.managers()
    try:
        where = {f"g{i}": managers[i % 2] for i in range(4)}
        ray.get([m.create.remote(eid, SCENARIO, 5, {"difficulty": 1}) for eid, m in where.items()])
        assert sum(h["episodes"] for h in ray.get([m.health.remote() for m in managers])) == 4
        post = {"name": "chat_post", "arguments": {"channel": "town-square", "message": "triage starts"}}
        stepped = ray.get([m.step.remote(eid, post) for eid, m in where.items() if eid != "g0"])
        assert all(s["info"]["error"] is None for s in stepped)
        submit = {"name": "submit", "arguments": {"summary": "done"}}
        ends = ray.get([m.step.remote(eid, submit) for eid, m in where.items()])
        assert all(e["terminated"] for e in ends) and len({e["reward"] for e in ends}) == 1  # same task, same score
        assert ray.get(managers[0].close.remote("g0")) is True and ray.get(managers[0].close.remote("g0")) is False
    finally:
        for m in managers:
            ray.kill(m)


def test_ray__a_manager_plays_a_job_like_a_local_worker(ray_head: str, data_dir: Path) -> None:
    from sim.rollouts.cluster import RayBackend
    from sim.rollouts.runner import play

    backend = RayBackend(1, ray_head, data_dir)
    (manager,) = backend.managers()
    try:
        job = Job(scenario=SCENARIO, agent="oracle", seed=1)
        assert ray.get(manager.play.remote(job)) == play(job, str(data_dir))
    finally:
        ray.kill(manager)

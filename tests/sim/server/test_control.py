"""The control plane, backpressure, idle reaping, a worker killed mid-run, SIGTERM, and a bounded load test."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.sim.server.conftest import ADMIN, ROOT, Server, running_server


def test_control__admin_lists_inspects_creates_kills_and_counts(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.get("/admin/status").status_code == 401
        assert c.get("/admin/status", headers={"Authorization": "Bearer wrong"}).status_code == 401
    created = server.admin("/episodes", "POST", {"scenario": "triage-tickets-v0", "seed": 9})
    eid = created["id"]
    assert created["token"] and created["status"] == "live"
    with httpx.Client(base_url=server.url, timeout=30) as c:
        action = {"name": "chat_post", "arguments": {"channel": "town-square", "message": "admin"}}
        c.post("/step", json={"episode_id": eid, "token": created["token"], "action": action}).raise_for_status()
    listed = {e["id"]: e for e in server.admin("/episodes")}
    assert listed[eid]["steps"] == 1 and "token" not in listed[eid]
    inspected = server.admin(f"/episodes/{eid}")
    assert inspected["step_count"] == 1 and inspected["score"]["type"] == "score"
    workers = server.admin("/workers")
    assert [w["worker"] for w in workers] == [0, 1] and all(w["alive"] and w["rss_bytes"] > 0 for w in workers)
    metrics = server.admin("/metrics")
    assert 'companysim_steps_total{protocol="openenv-http"}' in metrics
    assert "companysim_step_latency_seconds_bucket" in metrics and "companysim_live_episodes" in metrics
    assert server.admin(f"/episodes/{eid}", "DELETE") == {"id": eid, "killed": True}
    assert eid not in {e["id"] for e in server.admin("/episodes")}
    status = subprocess.run(
        [sys.executable, "-m", "sim.cli", "server", "status", "--url", server.url, "--admin-token", ADMIN],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60,
    )  # fmt: skip
    assert status.returncode == 0 and "serving:" in status.stdout and "RSS MB" in status.stdout
    wrong = subprocess.run(
        [sys.executable, "-m", "sim.cli", "server", "status", "--url", server.url, "--admin-token", "nope"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60,
    )  # fmt: skip
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: ") and "401" in wrong.stderr
    assert "Traceback" not in wrong.stderr


def test_control__full_server_answers_429_and_idle_episodes_are_reaped(server_data: Path) -> None:
    with running_server(server_data, "--workers", "1", "--max-episodes", "2", "--idle-timeout", "1") as s:
        with httpx.Client(base_url=s.url, timeout=30) as c:
            a = c.post("/reset", json={"seed": 1}).json()["observation"]
            c.post("/reset", json={"seed": 2}).raise_for_status()
            full = c.post("/reset", json={"seed": 3})
            assert full.status_code == 429 and full.headers["Retry-After"] == "1" and full.json()["code"] == "busy"
            deadline = time.monotonic() + 15
            while s.admin("/episodes") and time.monotonic() < deadline:
                time.sleep(0.2)
            assert s.admin("/episodes") == []  # both reaped: the slots are free again
            step = c.post(
                "/step", json={"episode_id": a["episode_id"], "token": a["token"], "action": {"name": "wait"}}
            )
            assert step.status_code == 404
            assert c.post("/reset", json={"seed": 3}).status_code == 200
            assert 'companysim_episodes_total{outcome="reaped"} 2.0' in s.admin("/metrics")


def test_control__a_killed_worker_fails_its_episodes_and_the_rest_go_on(server_data: Path) -> None:
    with running_server(server_data, "--workers", "2") as s, httpx.Client(base_url=s.url, timeout=30) as c:
        eps = [c.post("/reset", json={"seed": i}).json()["observation"] for i in range(4)]
        placed = {e["id"]: e["worker"] for e in s.admin("/episodes")}
        victim = s.admin("/workers")[0]
        os.kill(victim["pid"], signal.SIGKILL)
        action = {"name": "chat_read_channel", "arguments": {"channel": "town-square", "limit": 1}}
        for ep in eps:
            started = time.monotonic()
            r = c.post("/step", json={"episode_id": ep["episode_id"], "token": ep["token"], "action": action})
            assert time.monotonic() - started < 10  # reported, never hung
            if placed[ep["episode_id"]] == 0:
                assert r.status_code == 410 and r.json()["code"] == "episode_failed"
            else:
                assert r.status_code == 200 and r.json()["observation"]["error"] is None
        workers = s.admin("/workers")
        assert workers[0]["generation"] == 1 and workers[0]["alive"] and workers[0]["pid"] != victim["pid"]
        assert c.post("/reset", json={"seed": 9}).status_code == 200  # the restarted slot takes work again
        assert "companysim_worker_deaths_total 1.0" in s.admin("/metrics")


def test_control__sigterm_drains_and_exits(server_data: Path) -> None:
    with running_server(server_data, "--workers", "1") as s:
        with httpx.Client(base_url=s.url, timeout=30) as c:
            c.post("/reset", json={"seed": 1}).raise_for_status()
        pids = [w["pid"] for w in s.admin("/workers")]
        s.proc.send_signal(signal.SIGTERM)
        # uvicorn re-raises the signal once drained, and the CLI ends a SIGTERM as exit 143 (sim/cli/__init__.py)
        assert s.proc.wait(timeout=30) in (0, 143)
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)


SESSIONS, STEPS = 64, 20


async def _session(url: str, i: int) -> tuple[list[int], set[int]]:
    """Reset, then 19 steps alternating posts and reads, then one read of everything: (acknowledged, present)."""
    acked: list[int] = []
    async with connect(url + "/ws", max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": i % 8}}))
        assert json.loads(await ws.recv())["type"] == "observation"
        for k in range(STEPS - 1):
            if k % 2 == 0:
                action = {"name": "chat_post", "arguments": {"channel": "town-square", "message": f"s{i}-{k}"}}
            else:
                action = {"name": "chat_read_channel", "arguments": {"channel": "town-square", "limit": 5}}
            await ws.send(json.dumps({"type": "step", "data": action}))
            answer = json.loads(await ws.recv())
            assert answer["type"] == "observation" and answer["data"]["observation"]["error"] is None, answer
            if k % 2 == 0:
                acked.append(json.loads(answer["data"]["observation"]["text"])["id"])
        read = {"name": "chat_read_channel", "arguments": {"channel": "town-square", "limit": 200}}
        await ws.send(json.dumps({"type": "step", "data": read}))
        posts = json.loads(json.loads(await ws.recv())["data"]["observation"]["text"])["posts"]
        await ws.send(json.dumps({"type": "close"}))
    return acked, {p["id"] for p in posts if p["message"].startswith(f"s{i}-")}


def test_control__64_concurrent_sessions_lose_no_acknowledged_write(server: Server) -> None:
    async def run() -> list[tuple[list[int], set[int]]]:
        url = server.url.replace("http", "ws")
        return await asyncio.gather(*(_session(url, i) for i in range(SESSIONS)))

    results = asyncio.run(run())
    assert len(results) == SESSIONS
    for acked, present in results:
        assert len(acked) == (STEPS // 2) and set(acked) == present

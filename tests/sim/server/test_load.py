"""The bounded load test of issue 15: 256 concurrent episodes of 50 steps on 127.0.0.1, and a worker killed mid-run.

Each session posts on every other step and reads in between; at the end it reads the channel back. Every write
the server acknowledged must be in the final state, and no step may fail. With a worker killed by SIGKILL while
the sessions run, the sessions pinned to it must get ``episode_failed`` promptly (never hang), the others must
finish exactly as without the kill.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from websockets.asyncio.client import connect

from tests.sim.server.conftest import Server, running_server

SESSIONS, STEPS = 256, 50


@dataclass
class Outcome:
    """What one session saw: acknowledged post ids, those present at the end, or the error that ended it."""

    index: int
    episode: str = ""
    acked: list[int] = field(default_factory=list)
    present: set[int] = field(default_factory=set)
    failed: str | None = None
    seconds_after_failure: float = 0.0


async def _session(url: str, i: int, started: asyncio.Event, count: list[int]) -> Outcome:
    out = Outcome(index=i)
    async with connect(url + "/ws", max_size=None, open_timeout=120) as ws:
        # schedule-with-coworkers-v0 allows 240 turns, so 50 steps never run into the turn limit
        reset = {"seed": i % 16, "scenario": "schedule-with-coworkers-v0"}
        await ws.send(json.dumps({"type": "reset", "data": reset}))
        first = json.loads(await ws.recv())
        assert first["type"] == "observation", first
        out.episode = str(first["data"]["observation"]["episode_id"])
        count[0] += 1
        if count[0] == SESSIONS:
            started.set()
        for k in range(STEPS - 1):
            if k % 2 == 0:
                action = {"name": "chat_post", "arguments": {"channel": "town-square", "message": f"s{i}-{k}"}}
            else:
                action = {"name": "chat_read_channel", "arguments": {"channel": "town-square", "limit": 5}}
            sent = time.monotonic()
            await ws.send(json.dumps({"type": "step", "data": action}))
            answer = json.loads(await asyncio.wait_for(ws.recv(), timeout=60))
            if answer["type"] == "error":
                out.failed = str(answer["data"]["error_code"])
                out.seconds_after_failure = time.monotonic() - sent
                return out
            assert answer["data"]["observation"]["error"] is None, answer
            if k % 2 == 0:
                out.acked.append(json.loads(answer["data"]["observation"]["text"])["id"])
        read = {"name": "chat_read_channel", "arguments": {"channel": "town-square", "limit": 200}}
        await ws.send(json.dumps({"type": "step", "data": read}))
        posts = json.loads(json.loads(await ws.recv())["data"]["observation"]["text"])["posts"]
        await ws.send(json.dumps({"type": "close"}))
    out.present = {p["id"] for p in posts if p["message"].startswith(f"s{i}-")}
    return out


async def _run(server: Server, kill: bool = False) -> tuple[list[Outcome], dict[str, int]]:
    """Play every session; with ``kill``, SIGKILL worker 0 once all are live. Returns outcomes and placement."""
    started, count = asyncio.Event(), [0]
    url = server.url.replace("http", "ws")
    tasks = [asyncio.create_task(_session(url, i, started, count)) for i in range(SESSIONS)]
    placed: dict[str, int] = {}
    if kill:
        await started.wait()  # every episode is live and stepping: now one worker dies
        episodes = await asyncio.to_thread(server.admin, "/episodes")
        placed = {str(e["id"]): int(e["worker"]) for e in episodes}
        victim = (await asyncio.to_thread(server.admin, "/workers"))[0]
        os.kill(int(victim["pid"]), signal.SIGKILL)
    return list(await asyncio.gather(*tasks)), placed


def test_load__256_concurrent_episodes_of_50_steps_lose_no_acknowledged_write(server_data: Path) -> None:
    with running_server(server_data, "--workers", "2", "--max-episodes", str(SESSIONS)) as s:
        results, _ = asyncio.run(_run(s))
    assert len(results) == SESSIONS
    assert [r.failed for r in results if r.failed] == []
    for r in results:
        assert len(r.acked) == STEPS // 2 and set(r.acked) == r.present, r.index


def test_load__a_worker_killed_mid_run_fails_only_its_episodes_and_never_hangs(server_data: Path) -> None:
    with running_server(server_data, "--workers", "2", "--max-episodes", str(SESSIONS)) as s:
        results, placed = asyncio.run(_run(s, kill=True))
    failed = [r for r in results if r.failed]
    finished = [r for r in results if not r.failed]
    assert failed and finished  # the kill landed mid-run, and the other worker's sessions went on
    assert {r.failed for r in failed} == {"episode_failed"}
    assert max(r.seconds_after_failure for r in failed) < 10  # reported, not hung
    assert {placed[r.episode] for r in failed} == {0} and {placed[r.episode] for r in finished} == {1}
    for r in finished:
        assert len(r.acked) == STEPS // 2 and set(r.acked) == r.present, r.index

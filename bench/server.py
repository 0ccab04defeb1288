"""``companysim server``: served step p50 over WebSocket and over HTTP MCP beside ``Episode.step`` in the same run,
steps/s with 64 concurrent WebSocket sessions, resident memory per live episode in the workers, and the
WebSocket step p50 of OpenEnv's echo environment served alongside, as a ratio.

The server runs as a real process on 127.0.0.1 with 2 workers; every step is a read (``tickets_search``) under
``turns: writes``, so no session runs out of turns. The HTTP MCP step is a ``tools/call`` through the official
``mcp`` client on one connection.

The echo environment is OpenEnv's own: ``openenv init`` (openenv-core 0.3.0, in the virtualenv the OpenEnv client
tests build under ``~/.cache/companysim-venvs``) writes it from its template, and its ``server.app`` runs under
uvicorn from that virtualenv. The same client sends both servers the same protocol (``reset``, then
``step`` messages on one socket); the ratio is our p50 over echo's, i.e. what serving a company costs over
serving a string. Without that virtualenv (it needs PyPI once) the echo figures are left out, and said why.

Run: python -m bench server
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import fig, percentile, repeat, write_results
from sim.episode import Episode
from worlds.store import WorldStore

ROOT = Path(__file__).resolve().parent.parent
ADMIN = "bench-admin"
CALL: dict[str, Any] = {"name": "tickets_search", "arguments": {"status": "backlog", "limit": 5}}
RESET = {"type": "reset", "data": {"seed": 1, "options": {"turns": "writes"}}}
SESSIONS, STEPS = 64, 50


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _admin(url: str, path: str, method: str = "GET", body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
    req = urllib.request.Request(url + "/admin" + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=60) as r:  # noqa: S310 - our own loopback server
        return json.loads(r.read())


ECHO_PINS = ("openenv-core==0.3.0",)
ECHO_RESET: dict[str, Any] = {"type": "reset", "data": {}}
ECHO_CALL = {"message": "tickets_search status=backlog limit=5"}


async def _ws_p50(url: str, n: int, reset: dict[str, Any] = RESET, call: dict[str, Any] = CALL) -> float:
    from websockets.asyncio.client import connect

    async with connect(url + "/ws") as ws:
        await ws.send(json.dumps(reset))
        await ws.recv()
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            await ws.send(json.dumps({"type": "step", "data": call}))
            answer = json.loads(await ws.recv())
            assert answer.get("type") == "observation", answer
            samples.append(time.perf_counter() - t0)
    return percentile(samples[n // 10 :], 50)


async def _ws_throughput(url: str) -> float:
    from websockets.asyncio.client import connect

    async def one() -> None:
        async with connect(url + "/ws") as ws:
            await ws.send(json.dumps(RESET))
            await ws.recv()
            for _ in range(STEPS):
                await ws.send(json.dumps({"type": "step", "data": CALL}))
                await ws.recv()

    t0 = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(SESSIONS)))
    return SESSIONS * STEPS / (time.perf_counter() - t0)


async def _mcp_p50(url: str, n: int) -> float:
    import httpx
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx.AsyncClient(timeout=60) as c:
        ep = (await c.post(url + "/episodes", json={"seed": 1, "options": {"turns": "writes"}})).json()
    headers = {"Authorization": f"Bearer {ep['token']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url + ep["mcp_path"], http_client=http)) as client:
            samples = []
            for _ in range(n):
                t0 = time.perf_counter()
                await client.call_tool(CALL["name"], CALL["arguments"])
                samples.append(time.perf_counter() - t0)
    return percentile(samples[n // 10 :], 50)


def _openenv_python() -> Path | None:
    """The OpenEnv virtualenv's interpreter, where ``tests/sim/server/venvs.py`` builds it (None: not built)."""
    root = Path(os.environ.get("COMPANYSIM_VENV_CACHE") or Path.home() / ".cache" / "companysim-venvs")
    digest = hashlib.sha256("\n".join(sorted(ECHO_PINS)).encode()).hexdigest()[:12]
    python = root / f"openenv-{digest}" / "bin" / "python"
    return python if python.exists() else None


def _echo_p50(tmp: str, n: int) -> tuple[float | None, str]:
    """OpenEnv's echo environment under uvicorn, its WebSocket step p50 (None and why, when it cannot run)."""
    python = _openenv_python()
    if python is None:
        return None, "no OpenEnv virtualenv (run tests/sim/server/test_openenv_client.py once, online, to build it)"
    where = Path(tmp) / "openenv"
    made = subprocess.run(  # noqa: S603 - the virtualenv's own CLI writing its template
        [str(python), "-m", "openenv.cli", "init", "echo_env", "-o", str(where)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        return None, f"openenv init failed: {made.stderr.strip()[-200:]}"
    port = _port()
    cmd = [str(python), "-m", "uvicorn", "server.app:app", "--host", "127.0.0.1", "--port", str(port),
           "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=where / "echo_env", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603
    try:
        _wait(f"http://127.0.0.1:{port}")
        return asyncio.run(_ws_p50(f"ws://127.0.0.1:{port}", n, ECHO_RESET, ECHO_CALL)), "measured"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def _rss(url: str) -> int:
    return sum(int(w.get("rss_bytes", 0)) for w in _admin(url, "/workers"))


def run() -> Path:
    """Measure and write bench/results/server.json."""
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        with Episode("triage-tickets-v0", store=WorldStore(tmp)) as ep:
            ep.reset(seed=1, options={"turns": "writes"})
            repeat(lambda: ep.step(CALL), 200)
            inproc = percentile(repeat(lambda: ep.step(CALL), 2000), 50)
        port = _port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COMPANYSIM_DATA_DIR": tmp}
        cmd = [sys.executable, "-m", "sim.cli", "server", "--port", str(port), "--workers", "2",
               "--admin-token", ADMIN, "--max-episodes", "256"]  # fmt: skip
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603
        try:
            _wait(url)
            ws_url = url.replace("http", "ws")
            ws_p50 = asyncio.run(_ws_p50(ws_url, 2000))
            mcp_p50 = asyncio.run(_mcp_p50(url, 500))
            steps_s = asyncio.run(_ws_throughput(ws_url))
            for e in _admin(url, "/episodes"):
                _admin(url, f"/episodes/{e['id']}", "DELETE")
            before = _rss(url)
            for i in range(SESSIONS):
                _admin(url, "/episodes", "POST", {"seed": i % 8})
            per_episode = (_rss(url) - before) / SESSIONS
            echo, why = _echo_p50(tmp, 2000)  # while our server still runs: the same machine state for both
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    figures = {
        "episode_step_p50_us (in-process reference)": fig(inproc * 1e6, "us"),
        "ws_step_p50_us": fig(ws_p50 * 1e6, "us", "<= 500"),
        "mcp_http_step_p50_us": fig(mcp_p50 * 1e6, "us"),
        "ws_steps_per_s_64_sessions_2_workers": fig(steps_s, "steps/s"),
        "rss_per_live_episode_kb": fig(per_episode / 1024, "KiB"),
    }
    if echo is not None:
        figures["openenv_echo_ws_step_p50_us"] = fig(echo * 1e6, "us", "OpenEnv echo env, same client")
        figures["ws_step_p50_vs_openenv_echo"] = fig(ws_p50 / echo, "x", "ours / echo")
    else:
        print(f"echo ratio not measured: {why}")
    return write_results("server", figures)


def _wait(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):  # noqa: S310 - our own loopback server
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not start")

"""A real ``companysim server`` process on 127.0.0.1 for the server tests, and clients that play oracles through it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
ADMIN = "admin-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    port: int
    proc: subprocess.Popen[str]

    def admin(self, path: str, method: str = "GET", body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.url + "/admin" + path, data=data, method=method,
            headers={"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return json.loads(raw) if r.headers.get_content_type() == "application/json" else raw.decode()


@contextmanager
def running_server(data_dir: Path, *args: str) -> Iterator[Server]:
    """Start ``companysim server`` with ``args`` and stop it with SIGTERM (waiting for it to exit)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COMPANYSIM_DATA_DIR": str(data_dir)}
    cmd = [sys.executable, "-m", "sim.cli", "server", "--port", str(port), "--admin-token", ADMIN, *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    server = Server(url=f"http://127.0.0.1:{port}", port=port, proc=proc)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(server.url + "/health", timeout=2) as r:
                    if json.loads(r.read())["status"] == "healthy":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.stdout.read() if proc.stdout else ""
                raise AssertionError(f"server did not start: {out}")
            time.sleep(0.1)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def server_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-worlds")


@pytest.fixture(scope="module")
def server(server_data: Path) -> Iterator[Server]:
    """One shared server with two workers."""
    with running_server(server_data, "--workers", "2") as s:
        yield s

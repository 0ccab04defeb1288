"""Helpers for the Mattermost facade tests: serve an episode on a free port, drive it with mattermostdriver."""

import socket
import threading
import time

import uvicorn
from mattermostdriver import Driver

from sim.serve import EpisodeBackend, build_app

TOKEN = "test-token-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serving(episode, seed, **backend_options):
    """Start the facade over ``episode`` (reset to ``seed``) on a free port; returns (backend, port, stop)."""
    backend = EpisodeBackend(episode, TOKEN, **backend_options)
    backend.start(seed)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(backend), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)

    def stop():
        server.should_exit = True
        thread.join(timeout=10)

    return backend, port, stop


def driver(port, login_id, password=TOKEN, **options):
    return Driver(
        {"url": "127.0.0.1", "port": port, "scheme": "http", "login_id": login_id, "password": password, **options}
    )

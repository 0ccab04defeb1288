"""``companysim serve``: episodes behind the Mattermost v4 REST facade, for real chat clients."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated

import typer

from sim.cli.common import NPCS_HELP, DataDir, UsageError, check_port, console, output_file
from sim.episode import Episode
from sim.serve import RESET_HOW, EpisodeBackend, build_app, check_bind
from sim.trace import TraceWriter
from worlds.store import WorldStore


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the application."""
    app.command("serve")(serve)


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, so a busy port is an error before anything says it is served.

    The protocol is named (``IPPROTO_TCP``, not the default 0) because asyncio turns Nagle off on an accepted
    socket only when its ``proto`` says TCP; with 0, a response written as headers then body waits ~40 ms for
    the client's delayed ACK, which made every HTTP request to the server take 44 ms.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def serve(
    scenario: Annotated[str, typer.Option(help="Scenario id.")] = "triage-tickets-v0",
    seed: Annotated[int, typer.Option(help="Episode seed.")] = 0,
    host: Annotated[str, typer.Option(help="Bind address (anything but loopback needs --token).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8065,
    token: Annotated[str | None, typer.Option(help="Login password and session token (random if omitted).")] = None,
    trace: Annotated[Path | None, typer.Option(help="Write a JSONL trace of every call here.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --trace file.")] = False,
    noise: Annotated[str, typer.Option(help="Fault injection: none | realistic | harsh.")] = "none",
    npcs: Annotated[str | None, typer.Option(help=NPCS_HELP)] = None,
    auto_next: Annotated[
        bool, typer.Option("--auto-next", help="When an episode ends, start the next seed's on the next call.")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Serve episodes' chat as a Mattermost server at http://HOST:PORT/api/v4 until interrupted.

    Reads cost neither turns nor simulated time; writes, POST /api/v4/companysim/wait and /submit do. When an
    episode ends, POST /api/v4/companysim/reset starts the next (or pass --auto-next).
    """
    import uvicorn  # the web stack loads only for this command

    check_port(port)
    check_bind(host, token)
    output_file(trace, "--trace", overwrite=overwrite)
    episode = Episode(scenario, store=WorldStore(data_dir), noise=noise, npcs=npcs)
    sock = _listen(host, port)
    writer = TraceWriter(trace) if trace is not None else None
    episode.trace = writer
    try:
        backend = EpisodeBackend(episode, token, auto_next=auto_next)
        info = backend.start(seed)
        console.print(f"episode {info['episode_id']}: log in as {info['actor']}", markup=False)
        console.print(f"password/token: {backend.token}", markup=False)
        console.print(f"serving http://{host}:{port}/api/v4 (Ctrl-C to stop)", markup=False)
        if not auto_next:
            console.print(f"when the episode ends, {RESET_HOW}", markup=False)
        config = uvicorn.Config(build_app(backend), log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        episode.close()
        if writer is not None:
            writer.close()

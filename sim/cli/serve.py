"""``companysim serve``: one episode behind the Mattermost v4 REST facade, for real chat clients."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sim.cli.app import app, console
from sim.cli.episodes import DataDir
from sim.episode import Episode
from sim.serve import EpisodeBackend, check_bind
from sim.trace import TraceWriter
from worlds.store import WorldStore


@app.command("serve")
def serve(
    scenario: Annotated[str, typer.Option(help="Scenario id.")] = "triage-tickets-v0",
    seed: Annotated[int, typer.Option(help="Episode seed.")] = 0,
    host: Annotated[str, typer.Option(help="Bind address (anything but loopback needs --token).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8065,
    token: Annotated[str | None, typer.Option(help="Login password and session token (random if omitted).")] = None,
    trace: Annotated[Path | None, typer.Option(help="Write a JSONL trace of every call here.")] = None,
    noise: Annotated[str, typer.Option(help="Fault injection: none | realistic | harsh.")] = "none",
    data_dir: DataDir = None,
) -> None:
    """Serve one episode's chat as a Mattermost server at http://HOST:PORT/api/v4 until interrupted."""
    import uvicorn

    from mcp_tools.chat.mattermost import build_mattermost_app  # FastAPI loads only for this command

    check_bind(host, token)
    episode = Episode(scenario, store=WorldStore(data_dir), noise=noise)
    writer = TraceWriter(trace) if trace is not None else None
    episode.trace = writer
    try:
        _, info = episode.reset(seed=seed)
        backend = EpisodeBackend(episode, token)
        console.print(f"episode {info['episode_id']}: log in as {info['actor']['username']}", markup=False)
        console.print(f"password/token: {backend.token}", markup=False)
        console.print(f"serving http://{host}:{port}/api/v4 (Ctrl-C to stop)", markup=False)
        uvicorn.run(build_mattermost_app(backend), host=host, port=port, log_level="warning")
    finally:
        episode.close()
        if writer is not None:
            writer.close()

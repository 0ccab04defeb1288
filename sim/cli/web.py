"""``companysim web``: the intranet (chat, tickets, mail, calendar, people, documents, repositories) in a browser."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sim.cli.common import NPCS_HELP, DataDir, UsageError, check_port, console, output_file
from sim.cli.serve import _listen
from sim.episode import Episode
from sim.serve import check_bind
from sim.trace import TraceWriter
from worlds.store import WorldStore

APPS = ("calendar", "chat", "directory", "docs", "git", "mail", "sheets", "tickets")


def register(app: typer.Typer) -> None:
    """Add ``web`` to the application."""
    app.command("web")(web)


def web(
    scenario: Annotated[str, typer.Option(help="Scenario id.")] = "triage-tickets-v0",
    seed: Annotated[int, typer.Option(help="Episode seed.")] = 0,
    host: Annotated[str, typer.Option(help="Bind address (anything but loopback needs --token).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8080,
    token: Annotated[str | None, typer.Option(help="The login token (random if omitted).")] = None,
    all_apps: Annotated[
        bool, typer.Option("--all-apps", help="Every app's pages, not only the scenario's apps.")
    ] = False,
    trace: Annotated[Path | None, typer.Option(help="Write a JSONL trace of every page view and form here.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --trace file.")] = False,
    noise: Annotated[str, typer.Option(help="Fault injection: none | realistic | harsh.")] = "none",
    npcs: Annotated[str | None, typer.Option(help=NPCS_HELP)] = None,
    data_dir: DataDir = None,
) -> None:
    """Serve one episode as an intranet at http://HOST:PORT until interrupted; open the printed login link.

    Every page is read tool calls and every form one write tool call, each a step of the episode: page views
    are recorded but spend neither turns nor simulated time; forms do. The Home page's form submits the task.
    """
    import uvicorn  # the web stack loads only for this command

    from sim.web.app import LOOPBACK, WebBackend, build_web_app

    check_port(port)
    check_bind(host, token)
    if token is not None and not token.strip():
        raise UsageError("--token must not be empty")
    output_file(trace, "--trace", overwrite=overwrite)
    episode = Episode(scenario, store=WorldStore(data_dir), noise=noise, npcs=npcs, apps=APPS if all_apps else None)
    sock = _listen(host, port)
    writer = TraceWriter(trace) if trace is not None else None
    episode.trace = writer
    try:
        backend = WebBackend(episode, token)
        info = backend.start(seed)
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104 - a bind address, compared only
        console.print(f"episode {info['episode_id']}: you are @{info['actor']}", markup=False)
        console.print(f"open http://{shown}:{port}/login?token={backend.token} (Ctrl-C to stop)", markup=False)
        hosts = LOOPBACK | {host}
        config = uvicorn.Config(build_web_app(backend, hosts=frozenset(hosts)), log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        episode.close()
        if writer is not None:
            writer.close()

"""``companysim server``: many episodes over OpenEnv, ORS and MCP over HTTP; ``server status`` reads its admin plane."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Annotated, Any

import typer

from sim.cli.common import DataDir, UsageError, check_count, check_port, console, output_dir

server_app = typer.Typer(help="Serve many concurrent episodes (OpenEnv WS/HTTP, ORS, MCP over HTTP) and inspect them.")

ADMIN_ENV = "COMPANYSIM_ADMIN_TOKEN"
TOKEN_ENV = "COMPANYSIM_SERVER_TOKEN"  # noqa: S105 - the name of a variable, not a secret


def register(app: typer.Typer) -> None:
    """Add the ``server`` group to the application."""
    app.add_typer(server_app, name="server")


@server_app.callback(invoke_without_command=True)
def server(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Bind address (anything but loopback needs --token).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(envvar="COMPANYSIM_PORT", help="TCP port.")] = 8700,
    workers: Annotated[int | None, typer.Option(help="Worker processes (default: one per core).")] = None,
    max_episodes: Annotated[int, typer.Option(help="Live episodes at most (0: 64 per worker).")] = 0,
    idle_timeout: Annotated[float, typer.Option(help="Close episodes untouched for this many seconds.")] = 900.0,
    token: Annotated[
        str | None, typer.Option(envvar=TOKEN_ENV, help="Data-plane token (required off loopback).")
    ] = None,
    admin_token: Annotated[
        str | None, typer.Option(envvar=ADMIN_ENV, help="Control-plane token for /admin (random if omitted).")
    ] = None,
    allow_host: Annotated[
        list[str] | None, typer.Option(help="Host header to accept besides loopback (repeatable; * = any).")
    ] = None,
    max_body: Annotated[int, typer.Option(help="Largest request body or WebSocket message, in bytes.")] = 1 << 20,
    data_dir: DataDir = None,
    state_dir: Annotated[
        Path | None, typer.Option(help="Snapshot live HTTP/MCP episodes here on SIGTERM; resume them on start.")
    ] = None,
) -> None:
    """Serve episodes at http://HOST:PORT until SIGTERM or Ctrl-C (in-flight steps finish first)."""
    if ctx.invoked_subcommand is not None:
        return
    import uvicorn  # the web stack loads only when serving

    from sim.cli.serve import _listen
    from sim.server.app import Settings, build_app, new_secret

    check_port(port)
    check_count("--max-body", max_body, minimum=1024)
    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        raise UsageError(f"binding {host} exposes episodes beyond this machine; pass --token to allow it")
    if "*" in (allow_host or []) and not token:
        raise UsageError("--allow-host '*' turns off the DNS-rebinding check; it needs --token")
    if idle_timeout <= 0:
        raise UsageError(f"--idle-timeout must be positive; got {idle_timeout}")
    output_dir(state_dir, "--state-dir")
    if state_dir is not None and not state_dir.exists() and not state_dir.parent.is_dir():
        # the drain writes there at shutdown: a path that cannot be made would lose every live episode then
        raise UsageError(f"--state-dir {state_dir}: the directory {state_dir.parent} does not exist")
    n = check_count("--workers", workers if workers is not None else (os.cpu_count() or 1))
    wildcard = host in ("0.0.0.0", "::")  # noqa: S104 - a bind to every address answers to no single name
    hosts = tuple(allow_host or ()) + (() if wildcard else (host,))
    settings = Settings(
        admin_token=admin_token or new_secret(), token=token, workers=n, max_episodes=check_count(
            "--max-episodes", max_episodes, minimum=0), idle_timeout=idle_timeout, max_body=max_body,
        data_dir=str(data_dir) if data_dir else None, allowed_hosts=hosts,
        state_dir=str(state_dir) if state_dir else None,
    )  # fmt: skip
    sock = _listen(host, port)
    try:
        console.print(f"companysim server on http://{host}:{port} with {n} workers", markup=False)
        if admin_token is None:
            console.print(f"admin token: {settings.admin_token}", markup=False)
        config = uvicorn.Config(
            build_app(settings), log_level="warning", ws_max_size=max_body, timeout_graceful_shutdown=30
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


@server_app.command("status")
def status(
    url: Annotated[str, typer.Option(help="The server's base URL.")] = "http://127.0.0.1:8700",
    admin_token: Annotated[str | None, typer.Option(envvar=ADMIN_ENV, help="The control-plane token.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON.")] = False,
) -> None:
    """Workers, live episodes and limits of a running server (its /admin/status)."""
    if not admin_token:
        raise UsageError(f"pass --admin-token (or set {ADMIN_ENV}); the server printed it when it started")
    data = _get(url.rstrip("/") + "/admin/status", admin_token)
    if as_json:
        console.print(json.dumps(data, indent=2, sort_keys=True), markup=False)
        return
    from rich.table import Table

    state = "draining" if data["draining"] else "serving"
    line = f"{state}: {data['live_episodes']}/{data['max_episodes']} live episodes, {data['failed_episodes']} failed"
    console.print(f"{line}, idle timeout {data['idle_timeout_s']:g} s", markup=False)
    table = Table("worker", "pid", "alive", "generation", "episodes", "RSS MB")
    for w in data["workers"]:
        rss = w.get("rss_bytes")
        table.add_row(str(w["worker"]), str(w.get("pid", "?")), "yes" if w["alive"] else "no", str(w["generation"]),
                      str(w.get("episodes", "?")), f"{rss / 2**20:.0f}" if rss else "?")  # fmt: skip
    console.print(table)


def _get(url: str, token: str) -> Any:
    """GET ``url`` with the admin token; every failure is one ``UsageError`` line."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--url must start with http:// or https://; got {url!r}")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})  # noqa: S310 - scheme checked
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - scheme checked
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:200]
        raise UsageError(f"{url} answered {exc.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"cannot reach {url}: {reason}") from None

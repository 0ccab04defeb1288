"""``companysim sandbox ...``: which code sandboxes work here, and building the Docker sandbox image.

Both commands exist for operators and CI: ``status`` says in one table which backend would run agent code and
why the others cannot, so a skipped or failing sandbox test can be explained without reading code;
``build-image`` makes the Docker backend usable on an engine that has no registry access (see
``mcp_tools.sandbox.image``). Expected failures are one clear line on stderr and a non-zero exit code.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from mcp_tools.errors import AppError
from mcp_tools.sandbox import get_sandbox, sandbox_names, selected_name
from mcp_tools.sandbox.base import Sandbox
from mcp_tools.sandbox.engine import HOST_ENV, IMAGE
from mcp_tools.sandbox.image import ImageBuildError, build_image
from sim.cli.common import console, err_console

sandbox_app = typer.Typer(help="Code sandbox backends: availability and the Docker image.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add ``sandbox ...`` to the application."""
    app.add_typer(sandbox_app, name="sandbox")


Host = Annotated[
    str | None,
    typer.Option(
        "--host",
        envvar=HOST_ENV,
        help="Docker engine address (unix:///path/docker.sock); default $COMPANYSIM_DOCKER_HOST, $DOCKER_HOST.",
    ),
]


@sandbox_app.command("build-image")
def build_image_command(
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when the engine already has the image.")] = False,
    host: Host = None,
    mirror: Annotated[
        str | None, typer.Option(help="Debian archive for debootstrap (default: the machine's apt mirror).")
    ] = None,
) -> None:
    """Build the Docker sandbox image (debootstrap + import; needs root and debootstrap). Idempotent."""
    try:
        report = build_image(base_url=host, force=force, mirror=mirror, log=lambda line: console.print(f"- {line}"))
    except ImageBuildError as exc:  # the whole message: it ends with the failing tool's last output lines
        err_console.print(f"[bold red]error:[/] could not build {IMAGE}: {exc}", markup=True, soft_wrap=True)
        raise typer.Exit(2) from exc
    table = Table(title="sandbox image")
    for column in ("tag", "built", "image id", "size", "seconds"):
        table.add_column(column)
    built = "yes" if report.built else "no (present)"
    size = f"{report.size_bytes / 2**20:.0f} MiB"
    table.add_row(report.tag, built, report.image_id[:19], size, f"{report.seconds:.0f}")
    console.print(table)


@sandbox_app.command("status")
def status(host: Host = None) -> None:
    """Probe every backend; exit 1 when the selected one ($COMPANYSIM_SANDBOX, default bwrap) cannot run code."""
    selected = selected_name()
    table = Table(title="code sandboxes")
    for column in ("backend", "selected", "available", "details"):
        table.add_column(column)
    usable = {}
    for name in sandbox_names():
        sandbox = _backend(name, host)
        if sandbox is None:
            usable[name] = False
            table.add_row(name, _mark(name == selected), "[red]no[/]", "could not be constructed")
            continue
        ok = sandbox.available()
        usable[name] = ok
        details = _details(sandbox) if ok else str(getattr(sandbox, "reason", "") or "its probe failed")
        if ok:
            missing = [t for t, have in sandbox.tools().items() if not have]
            details += f"; inside: {', '.join(t for t in sandbox.tools() if t not in missing)}"
            details += f"; [red]missing: {', '.join(missing)}[/]" if missing else ""
        table.add_row(name, _mark(name == selected), "[green]yes[/]" if ok else "[red]no[/]", details)
    console.print(table)
    if selected not in usable:
        known = ", ".join(usable)
        err_console.print(f"error: COMPANYSIM_SANDBOX={selected!r} names no backend; known: {known}", soft_wrap=True)
        raise typer.Exit(2)
    if not usable[selected]:
        message = f"error: the selected sandbox {selected!r} is unavailable: code-running tools are disabled"
        err_console.print(message, soft_wrap=True)
        raise typer.Exit(1)


def _backend(name: str, host: str | None) -> Sandbox | None:
    """The shared backend instance, or a Docker one on ``host`` when an engine address was given."""
    if name == "docker" and host:
        from mcp_tools.sandbox.docker import DockerSandbox

        return DockerSandbox(base_url=host)
    try:
        return get_sandbox(name)
    except AppError:
        return None


def _details(sandbox: Sandbox) -> str:
    """What an available backend runs code as, and where."""
    uid = getattr(sandbox, "effective_uid", None)
    parts = [f"uid {uid}"] if uid is not None else []
    where = getattr(sandbox, "where", None)
    if where:
        parts.append(f"engine {where}, image {getattr(sandbox, 'image', IMAGE)}")
    return "; ".join(parts)


def _mark(flag: bool) -> str:
    return "*" if flag else ""

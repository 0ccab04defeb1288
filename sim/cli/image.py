"""``companysim image build``: a Docker image of ``companysim server`` from this checkout (see ``sim.server.image``)."""

from __future__ import annotations

from typing import Annotated

import typer

from sim.cli.common import console

image_app = typer.Typer(help="A Docker image of companysim server, built on the local engine.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add the ``image`` group to the application."""
    app.add_typer(image_app, name="image")


@image_app.command("build")
def build(
    tag: Annotated[str, typer.Option(help="Image tag.")] = "companysim/server:0.1.0",
    docker_host: Annotated[
        str | None, typer.Option(help="Engine address (default: $COMPANYSIM_DOCKER_HOST, else $DOCKER_HOST).")
    ] = None,
) -> None:
    """Build the server image: wheels of this checkout at its pins, installed on the sandbox's Debian base."""
    from mcp_tools.sandbox.engine import docker_host as default_host
    from sim.server.image import build_server_image

    report = build_server_image(
        tag=tag, base_url=docker_host or default_host(), log=lambda line: console.print(f"- {line}", markup=False)
    )
    size = report.size_bytes / 1e6
    console.print(f"built {report.tag} ({report.image_id[:19]}, {size:.0f} MB) in {report.seconds:.0f} s", markup=False)
    console.print(
        f"run: docker run -p 127.0.0.1:8700:8700 -e COMPANYSIM_SERVER_TOKEN=<token> {report.tag}", markup=False
    )

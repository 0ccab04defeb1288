"""The typer application: each command module adds its commands here, and none imports this module back.

Why a ``register`` function per module instead of modules importing ``app``: the import graph stays a tree (the
old circle made the import order matter and every command module load on start).
"""

from __future__ import annotations

import typer

from sim.cli import (
    cache,
    calibrate,
    campaign,
    episodes,
    image,
    rollouts,
    rubric,
    sandbox,
    scenarios,
    serve,
    server,
    tasks,
    view,
    web,
    world,
)
from sim.cli.common import console, err_console, fail_on_errors

app = typer.Typer(
    name="companysim",
    help="Seeded company worlds for training and evaluating LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for module in (
    world,
    scenarios,
    episodes,
    campaign,
    rollouts,
    serve,
    server,
    image,
    web,
    sandbox,
    cache,
    rubric,
    view,
    calibrate,
    tasks,
):
    module.register(app)

__all__ = ["app", "console", "err_console", "fail_on_errors"]

"""The typer application and the error boundary shared by all commands."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

from worlds.errors import WorldError

app = typer.Typer(
    name="companysim",
    help="Seeded company worlds for training and evaluating LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

#: Error roots whose messages are meant for users; other layers register theirs here as they land.
USER_ERRORS: list[type[Exception]] = [WorldError]


@contextmanager
def fail_on_errors() -> Iterator[None]:
    """Turn any user-facing error into one stderr line and exit code 2."""
    try:
        yield
    except tuple(USER_ERRORS) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        sys.stderr.write(f"error: {message}\n")  # plain write: rich would wrap long lines
        sys.exit(2)


# Command modules register themselves on import.
from sim.cli import campaign, episodes, sandbox, serve, world  # noqa: E402, F401

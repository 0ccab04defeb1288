"""What every command shares: consoles, the error boundary, common options and the checks of paths and numbers.

The rule of the command line: a user's mistake is one line on stderr and exit code 2, and changes nothing on
disk; a traceback means a bug. Every error root meant for users is listed in ``user_errors`` (the layers'
roots, and ``UsageError`` for what only the command line can judge: a path that is a directory, a port out of
range, a count below one).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", envvar="COMPANYSIM_DATA_DIR", help="Where base worlds are cached."),
]
Db = Annotated[
    str | None,
    typer.Option("--db", envvar="COMPANYSIM_DB", help="PostgreSQL server URL: worlds live there (default: SQLite)."),
]
NPCS_HELP = "Coworkers: off (default) | sampled | cooperative | adversarial | chaotic | absent | neutral."
DIFFICULTIES = range(0, 4)


class UsageError(Exception):
    """A command-line value that cannot be used (the message says what was expected and what was given)."""


def user_errors() -> tuple[type[Exception], ...]:
    """Every exception type whose message is meant for the user (imported lazily: the CLI starts fast)."""
    from graders.errors import GraderError
    from mcp_tools.errors import AppError
    from npcs.errors import NpcError
    from scenarios.registry import ScenarioRegistryError
    from scenarios.splits import SplitError
    from sim.errors import SimError
    from worlds.errors import WorldError

    return (UsageError, WorldError, SimError, NpcError, GraderError, AppError, ScenarioRegistryError, SplitError)


@contextmanager
def fail_on_errors() -> Iterator[None]:
    """Turn any user-facing error into one stderr line and exit code 2."""
    try:
        yield
    except Exception as exc:
        if not isinstance(exc, user_errors()):
            raise
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        sys.stderr.write(f"error: {message}\n")  # plain write: rich would wrap long lines
        sys.exit(2)


def check_count(name: str, value: int, *, minimum: int = 1) -> int:
    """``value`` if it is at least ``minimum``, else a ``UsageError`` naming the option."""
    if value < minimum:
        raise UsageError(f"{name} must be at least {minimum}; got {value}")
    return value


def check_difficulty(value: int) -> int:
    """A scenario difficulty, 0 to 3 (refused, never clamped)."""
    if value not in DIFFICULTIES:
        raise UsageError(f"--difficulty must be 0, 1, 2 or 3; got {value}")
    return value


def check_port(value: int) -> int:
    """A TCP port, 1 to 65535."""
    if not 1 <= value <= 65535:
        raise UsageError(f"--port must be 1-65535; got {value}")
    return value


def output_file(path: Path | None, option: str, *, overwrite: bool = False) -> Path | None:
    """A file the command will write: its directory must exist, and an existing file needs ``--overwrite``.

    Nothing is created here; a refusal leaves the disk as it was.
    """
    if path is None:
        return None
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory; expected a file path")
    if not path.parent.is_dir():
        raise UsageError(f"{option} {path}: the directory {path.parent} does not exist")
    if path.exists() and not overwrite:
        raise UsageError(f"{option} {path} already exists; pass --overwrite to replace it")
    return path


def output_dir(path: Path | None, option: str) -> Path | None:
    """A directory the command will fill: it may exist, but not as a file."""
    if path is not None and path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} is a file; expected a directory")
    return path

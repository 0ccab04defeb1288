"""The ``companysim`` command line (typer + rich).

Every expected failure (a bad size, an unknown app or scenario, a corrupt world, a path that is a directory,
a value out of range) is one line on stderr and exit code 2, with nothing changed on disk; tracebacks are for
bugs only. ``sim.cli.common`` holds the error boundary and the checks; ``sim.cli.app`` wires the commands.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

from sim.cli.common import fail_on_errors

__all__ = ["main"]


def _exit_on_terminate(signum: int, frame: FrameType | None) -> None:
    """End the command as an exception would, so ``with`` blocks, ``finally`` clauses and ``atexit`` run.

    SIGTERM's default action (``timeout``, a scheduler, ``docker stop``) kills the process without any of them,
    leaving an episode's checkouts in $TMPDIR. 143 is the shell's code for a command ended by SIGTERM. The
    servers (``serve``, ``web``, ``server``) install uvicorn's handlers while they run, which shut down cleanly.
    """
    raise SystemExit(128 + signum)


def main() -> None:
    """Console-script entry point."""
    signal.signal(signal.SIGTERM, _exit_on_terminate)
    from sim.cli.app import app

    with fail_on_errors():
        app()
    sys.exit(0)

"""The ``companysim`` command line (typer + rich).

Every expected failure (a bad size, an unknown app or scenario, a corrupt world, a path that is a directory,
a value out of range) is one line on stderr and exit code 2, with nothing changed on disk; tracebacks are for
bugs only. ``sim.cli.common`` holds the error boundary and the checks; ``sim.cli.app`` wires the commands.
"""

from __future__ import annotations

import sys

from sim.cli.common import fail_on_errors

__all__ = ["main"]


def main() -> None:
    """Console-script entry point."""
    from sim.cli.app import app

    with fail_on_errors():
        app()
    sys.exit(0)

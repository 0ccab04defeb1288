"""The ``companysim`` command line (typer + rich).

Every expected failure (a bad size, an unknown app, a corrupt world, a newer schema) is one line on stderr
and exit code 2; tracebacks are for bugs only.
"""

from __future__ import annotations

import sys

from sim.cli.app import app, fail_on_errors

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    with fail_on_errors():
        app()
    sys.exit(0)

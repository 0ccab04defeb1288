"""The code sandbox: run agent-written commands isolated, unprivileged, offline and resource-limited.

Agent code (tests, shell commands from ``shell_run``, grader probes) is adversarial, so it only ever runs
through a ``Sandbox``. A backend that cannot isolate code on this machine says so (``available()`` is False,
``run`` raises ``SandboxUnavailable``); nothing falls back to running code directly.

Usage::

    sandbox = get_sandbox()            # COMPANYSIM_SANDBOX or "bwrap"
    result = sandbox.run(["python3", "-m", "pytest", "-q"], workspace, limits=Limits(wall_seconds=60))

Backends register a factory by name (``register_sandbox("docker", DockerSandbox)``); ``get_sandbox`` returns
one shared instance per name so the availability probe runs once per process.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from mcp_tools.errors import UnknownSandbox
from mcp_tools.sandbox.base import (
    BASE_ENV,
    KILLED_CPU,
    KILLED_FILE_SIZE,
    KILLED_MEMORY,
    KILLED_OUTPUT,
    KILLED_TIMEOUT,
    WORKSPACE,
    RunResult,
    Sandbox,
)
from mcp_tools.sandbox.bwrap import BwrapSandbox
from mcp_tools.sandbox.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "BASE_ENV",
    "DEFAULT_LIMITS",
    "DEFAULT_SANDBOX",
    "KILLED_CPU",
    "KILLED_FILE_SIZE",
    "KILLED_MEMORY",
    "KILLED_OUTPUT",
    "KILLED_TIMEOUT",
    "WORKSPACE",
    "BwrapSandbox",
    "Limits",
    "RunResult",
    "Sandbox",
    "get_sandbox",
    "register_sandbox",
]

DEFAULT_SANDBOX = "bwrap"
ENV_VAR = "COMPANYSIM_SANDBOX"
_FACTORIES: dict[str, Callable[[], Sandbox]] = {"bwrap": BwrapSandbox}
_INSTANCES: dict[str, Sandbox] = {}


def register_sandbox(name: str, factory: Callable[[], Sandbox]) -> None:
    """Make a backend selectable by ``name`` (replacing any earlier registration and its cached instance)."""
    _FACTORIES[name] = factory
    _INSTANCES.pop(name, None)


def get_sandbox(name: str | None = None) -> Sandbox:
    """The shared backend called ``name``, else ``$COMPANYSIM_SANDBOX``, else bubblewrap.

    Raises:
        UnknownSandbox: No backend is registered under that name.
    """
    chosen = name or os.environ.get(ENV_VAR) or DEFAULT_SANDBOX
    if chosen not in _FACTORIES:
        known = ", ".join(sorted(_FACTORIES))
        raise UnknownSandbox(f"unknown sandbox {chosen!r} (from {'argument' if name else ENV_VAR}); known: {known}")
    if chosen not in _INSTANCES:
        _INSTANCES[chosen] = _FACTORIES[chosen]()
    return _INSTANCES[chosen]

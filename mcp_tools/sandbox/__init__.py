"""The code sandbox: run agent-written commands isolated, unprivileged, offline and resource-limited.

Agent code (tests, shell commands from ``shell_run``, grader probes) is adversarial, so it only ever runs
through a ``Sandbox``. A backend that cannot isolate code on this machine says so (``available()`` is False,
``run`` raises ``SandboxUnavailable``); nothing falls back to running code directly.

Usage::

    sandbox = get_sandbox()            # COMPANYSIM_SANDBOX or "bwrap"
    result = sandbox.run(["python3", "-m", "pytest", "-q"], workspace, limits=Limits(wall_seconds=60))

Backends register a factory by name (``register_sandbox("docker", DockerSandbox)``); ``get_sandbox`` returns
one shared instance per name so the availability probe runs once per process. Two are built in: ``bwrap``
(bubblewrap, the default) and ``docker`` (a container per run on a local engine; its module and the optional
docker SDK are imported only when it is chosen).
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
    "sandbox_names",
    "selected_name",
]

DEFAULT_SANDBOX = "bwrap"
ENV_VAR = "COMPANYSIM_SANDBOX"


def _docker() -> Sandbox:
    """The Docker backend, imported on first use so the docker SDK stays an optional dependency."""
    from mcp_tools.sandbox.docker import DockerSandbox

    return DockerSandbox()


_FACTORIES: dict[str, Callable[[], Sandbox]] = {"bwrap": BwrapSandbox, "docker": _docker}
_INSTANCES: dict[str, Sandbox] = {}


def register_sandbox(name: str, factory: Callable[[], Sandbox]) -> None:
    """Make a backend selectable by ``name`` (replacing any earlier registration and its cached instance)."""
    _FACTORIES[name] = factory
    _INSTANCES.pop(name, None)


def sandbox_names() -> list[str]:
    """The registered backend names, sorted (for status reports and error messages)."""
    return sorted(_FACTORIES)


def selected_name() -> str:
    """The backend ``get_sandbox()`` picks: ``$COMPANYSIM_SANDBOX``, else bubblewrap."""
    return os.environ.get(ENV_VAR) or DEFAULT_SANDBOX


def get_sandbox(name: str | None = None) -> Sandbox:
    """The shared backend called ``name``, else ``$COMPANYSIM_SANDBOX``, else bubblewrap.

    Raises:
        UnknownSandbox: No backend is registered under that name.
    """
    chosen = name or selected_name()
    if chosen not in _FACTORIES:
        known = ", ".join(sandbox_names())
        raise UnknownSandbox(f"unknown sandbox {chosen!r} (from {'argument' if name else ENV_VAR}); known: {known}")
    if chosen not in _INSTANCES:
        _INSTANCES[chosen] = _FACTORIES[chosen]()
    return _INSTANCES[chosen]

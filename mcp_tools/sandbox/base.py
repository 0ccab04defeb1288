"""The sandbox contract shared by every backend: the result type, the abstract backend, argument checks.

A backend runs an argv inside an isolated, unprivileged, network-less environment whose only writable host
directory is the workspace, mounted at ``/workspace``. The result holds nothing nondeterministic (no duration,
no pids), so the same command on the same workspace gives the same ``RunResult``.
"""

from __future__ import annotations

import abc
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from mcp_tools.errors import InvalidArgument, SandboxUnavailable
from mcp_tools.sandbox.limits import DEFAULT_LIMITS, Limits

WORKSPACE = "/workspace"
"""Where the workspace appears inside every sandbox (fixed, so paths in output do not leak host layout)."""
BASE_ENV: Mapping[str, str] = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",  # noqa: S108 - the sandbox's private tmpfs, the only writable place besides the workspace
    "TZ": "UTC",
    "LANG": "C",
    "LC_ALL": "C",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
}
"""The whole environment of sandboxed code before the caller's additions: nothing of the host leaks in."""
MAX_ARGV = 1_000
MAX_ARG_BYTES = 256_000
MAX_STDIN_BYTES = 4_000_000
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

TOOL_PROBES: dict[str, str] = {
    "python3": "command -v python3",
    "pytest": "python3 -c 'import pytest'",
    "git": "command -v git",
}
"""Programs code may need inside a sandbox, each with the shell test that finds it."""
TOOL_PACKAGES = {"python3": "python3", "pytest": "python3-pytest", "git": "git"}
TOOL_SCRIPT = "; ".join(f"{test} >/dev/null 2>&1 && echo {name}" for name, test in TOOL_PROBES.items())

# Why a run was stopped or died; None when it exited on its own.
KILLED_TIMEOUT = "timeout"
KILLED_OUTPUT = "output"
KILLED_CPU = "cpu"
KILLED_MEMORY = "memory"
KILLED_FILE_SIZE = "file_size"


@dataclass(frozen=True)
class RunResult:
    """The outcome of one sandboxed run.

    Attributes:
        exit_code: The command's exit status; ``128 + N`` when it died from signal N inside the sandbox;
            negative (``-9``) when the host killed the whole sandbox (wall timeout, output flood).
        stdout: Decoded UTF-8 (invalid bytes replaced), at most ``max_output_bytes`` of it, then a
            ``[output truncated: N bytes omitted]`` line when more was produced.
        stderr: The same for standard error.
        timed_out: Whether the wall-clock limit ran out.
        killed_by: The limit that stopped the run: ``timeout``, ``output``, ``cpu``, ``memory``, ``file_size``,
            or None. ``memory`` and ``cpu`` (when the process ignored SIGXCPU) are inferred from the exit, so
            code that fakes the symptoms can fake the label; it can never escape the limit itself.
    """

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    killed_by: str | None


def render_output(kept: bytes, produced: int, *, killed: bool = False) -> str:
    """Decode kept bytes and append a truncation marker saying how many bytes were dropped.

    Args:
        kept: The first bytes of the stream (already capped).
        produced: How many bytes the stream produced in total (at least ``len(kept)``).
        killed: Whether the stream was cut off by the output-flood kill (the count is then a lower bound).
    """
    text = kept.decode("utf-8", errors="replace")
    omitted = produced - len(kept)
    if omitted > 0:
        tail = "; output limit exceeded, process killed" if killed else ""
        text += f"\n[output truncated: {omitted} bytes omitted{tail}]"
    return text


def check_request(argv: object, workspace: object, env: object, stdin: object) -> tuple[list[str], Path, bytes]:
    """Validate a run request; bad input is an ``InvalidArgument``, never a launcher failure.

    Returns:
        The argv as a list, the resolved workspace directory and stdin encoded as UTF-8.
    """
    if not isinstance(argv, list | tuple) or not argv:
        raise InvalidArgument("argv must be a non-empty list of strings")
    if len(argv) > MAX_ARGV:
        raise InvalidArgument(f"argv has {len(argv)} items; at most {MAX_ARGV} are allowed")
    if not all(isinstance(a, str) and "\x00" not in a for a in argv):
        raise InvalidArgument("argv items must be strings without NUL characters")
    if sum(len(a.encode("utf-8", errors="surrogateescape")) for a in argv) > MAX_ARG_BYTES:
        raise InvalidArgument(f"argv is longer than {MAX_ARG_BYTES} bytes")
    if not isinstance(workspace, str | Path):
        raise InvalidArgument("workspace must be a path")
    path = Path(workspace)
    if not path.is_absolute() or path.is_symlink() or not path.is_dir():
        raise InvalidArgument(f"workspace must be an existing absolute directory, not a symlink: {workspace}")
    path = path.resolve()
    if path == Path("/") or len(path.parts) < 3:
        raise InvalidArgument(f"workspace must be a dedicated directory at least two levels deep: {path}")
    check_env(env)
    if not isinstance(stdin, str):
        raise InvalidArgument("stdin must be a string")
    data = stdin.encode("utf-8", errors="replace")
    if len(data) > MAX_STDIN_BYTES:
        raise InvalidArgument(f"stdin is longer than {MAX_STDIN_BYTES} bytes")
    return list(argv), path, data


def check_env(env: object) -> None:
    """Refuse environment names that are not identifiers and values with NUL characters."""
    if env is None:
        return
    if not isinstance(env, Mapping):
        raise InvalidArgument("env must be a mapping of strings to strings")
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            raise InvalidArgument(f"env name {key!r} is not a valid variable name")
        if not isinstance(value, str) or "\x00" in value:
            raise InvalidArgument(f"env value of {key} must be a string without NUL characters")


def sandbox_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The fixed base environment overlaid with the caller's variables (sorted, for a stable argv)."""
    merged = dict(BASE_ENV)
    merged.update(env or {})
    return dict(sorted(merged.items()))


class Sandbox(abc.ABC):
    """A way to run untrusted commands. Backends never fall back to running code unsandboxed.

    The contract lives here once: ``run`` validates the request, refuses when the backend's probe failed, and
    turns a failure of the backend's own machinery into ``SandboxUnavailable``; a backend supplies ``_probe``
    (a real run, done once) and ``_run_checked`` (one run of a valid request).
    """

    name: ClassVar[str]
    uid: int
    """The host uid code runs as when this process is root (never 0)."""
    gid: int
    reason: str = ""
    """Why the backend is unavailable (empty when it works or has not been probed)."""
    _ready: bool | None = None

    @property
    def runs_as_root(self) -> bool:
        """Whether this process is root, so code must drop to the sandbox uid (otherwise it runs as the caller)."""
        return os.geteuid() == 0

    @property
    def effective_uid(self) -> int:
        """The host uid sandboxed code runs as."""
        return self.uid if self.runs_as_root else os.getuid()

    @property
    def effective_gid(self) -> int:
        """The host gid sandboxed code runs as."""
        return self.gid if self.runs_as_root else os.getgid()

    def available(self) -> bool:
        """Whether this backend can isolate code on this machine (checked once, by a real probe run)."""
        if self._ready is None:
            self._ready, self.reason = self._probe()
        return self._ready

    _tools: dict[str, bool] | None = None

    def tools(self) -> dict[str, bool]:
        """Which programs code run here can use (``TOOL_PROBES``), found by one real run inside, then kept.

        Why: a sandbox can isolate code yet lack what pipelines run (``python3 -m pytest``); the probe lets
        ``sandbox status`` say so and pipelines refuse with the reason instead of failing with an empty log.
        Empty when the backend is unavailable.
        """
        if self._tools is None:
            self._tools = {}
            if self.available():
                with tempfile.TemporaryDirectory(prefix="sandbox-tools-") as tmp:
                    result = self._run_checked(["/bin/sh", "-c", TOOL_SCRIPT], Path(tmp), DEFAULT_LIMITS, None, b"")
                found = set(result.stdout.split())
                self._tools = {name: name in found for name in TOOL_PROBES}
        return dict(self._tools)

    def require(self, *names: str) -> None:
        """Refuse (``SandboxUnavailable``) unless every program in ``names`` is available inside.

        Raises:
            SandboxUnavailable: with the missing programs named.
        """
        have = self.tools()
        missing = [n for n in names if not have.get(n)]
        if missing:
            packages = ", ".join(TOOL_PACKAGES[n] for n in missing)
            raise SandboxUnavailable(
                f"the {self.name} sandbox lacks {', '.join(missing)} (install {packages} in its image or host;"
                " see `companysim sandbox status`)"
            )

    @abc.abstractmethod
    def _probe(self) -> tuple[bool, str]:
        """Try the backend for real; ``(True, "")`` or ``(False, why)``."""

    @abc.abstractmethod
    def _run_checked(
        self, argv: list[str], workspace: Path, limits: Limits, env: Mapping[str, str] | None, stdin: bytes
    ) -> RunResult:
        """One run of an already validated request on an available backend."""

    def _machinery_errors(self) -> tuple[type[BaseException], ...]:
        """Exceptions of the backend's own machinery (not of the code run) that mean it failed mid-run."""
        return (OSError,)

    def run(
        self,
        argv: list[str],
        workspace: Path,
        *,
        limits: Limits = DEFAULT_LIMITS,
        env: dict[str, str] | None = None,
        stdin: str = "",
    ) -> RunResult:
        """Run ``argv`` in ``/workspace`` (the host directory ``workspace``) under ``limits``.

        Args:
            argv: The command and its arguments; no shell is involved unless argv names one.
            workspace: Host directory mounted read-write at ``/workspace``; the only host path code can change.
            limits: Resource limits for this run.
            env: Extra environment variables, laid over the fixed base environment.
            stdin: Text fed to the command's standard input.

        Raises:
            SandboxUnavailable: The backend cannot isolate code here (its probe failed) or failed mid-run;
                nothing ran unsandboxed.
            InvalidArgument: A malformed argv, workspace, env, stdin or limits.
        """
        args, path, data = check_request(argv, workspace, env, stdin)
        if not isinstance(limits, Limits):
            raise InvalidArgument("limits must be a Limits")
        if not self.available():
            raise SandboxUnavailable(f"the {self.name} sandbox is unavailable: {self.reason}")
        try:
            return self._run_checked(args, path, limits, env, data)
        except self._machinery_errors() as exc:
            text = str(exc).strip()
            detail = text.splitlines()[0][:300] if text else type(exc).__name__
            raise SandboxUnavailable(f"the {self.name} sandbox failed: {detail}") from exc


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give the workspace tree to the sandbox uid without following symlinks (links are re-owned, not targets)."""
    os.chown(root, uid, gid, follow_symlinks=False)
    for top, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            os.chown(os.path.join(top, name), uid, gid, follow_symlinks=False)

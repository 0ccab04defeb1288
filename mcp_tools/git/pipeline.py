"""Running a repository's code in the sandbox: the merge-request pipeline and out-of-process checks.

Both start from ``mcp_tools.git.trees.export``: the tree of one commit written into a fresh directory by host
code (never ``git archive``, whose attributes the committed tree would control), so what runs is exactly what
was committed (never the agent's working tree), and nothing the run writes reaches any repository. Host git
reads the objects as its unprivileged uid; the harness runs with ``python3 -I`` and adds the tree to
``sys.path`` only after its own imports, so a file in the tree cannot stand in for the modules it uses. Code
only ever runs through a ``Sandbox`` (unprivileged, offline, limited); when none works, ``SandboxUnavailable``
says so and nothing runs.

``pipeline`` runs the repository's own test suite, as a forge's CI would, and reports counts without the
timings pytest prints (a replay must give the same bytes). ``call_cases`` runs a harness that imports one
function and calls it on given arguments, printing each result as JSON after a per-run marker line; the host
compares values and exact types itself, so an object that claims to equal anything, a test file edited to
pass, a ``conftest.py`` or a ``sys.exit(0)`` cannot make a check pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp_tools.errors import AppError, SandboxUnavailable
from mcp_tools.git.trees import MAX_BYTES, export
from mcp_tools.sandbox import Limits, RunResult, Sandbox, get_sandbox
from worlds.gitrun import GitRepo

PIPELINE_LIMITS = Limits(cpu_seconds=30, memory_mb=512, max_processes=64, wall_seconds=60, max_output_bytes=20_000)
_TIMING = re.compile(r" in [0-9.]+s( \([0-9:]+\))?")
_COUNTS = re.compile(r"(\d+) (passed|failed|error|errors|skipped|xfailed|xpassed|deselected)")

_HARNESS = """
import importlib, json, os, sys
sys.path.insert(0, os.getcwd())
marker = sys.stdin.readline().strip()
spec = json.loads(sys.stdin.readline())
def tag(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return [type(v).__name__, v]
    if isinstance(v, (list, tuple)):
        return [type(v).__name__, [tag(x) for x in v]]
    if isinstance(v, dict):
        return ["dict", [[tag(k), tag(x)] for k, x in v.items()]]
    return ["other", type(v).__name__]
out = []
try:
    fn = getattr(importlib.import_module(spec["module"]), spec["function"])
except BaseException as exc:
    fn = None
    out = [["import_error", type(exc).__name__]] * len(spec["cases"])
for args in spec["cases"] if fn is not None else []:
    try:
        out.append(["ok", tag(fn(*args))])
    except BaseException as exc:
        out.append(["raised", type(exc).__name__])
sys.stdout.write("\\n" + marker + json.dumps(out) + "\\n")
sys.stdout.flush()
"""


def _summary(result: RunResult) -> dict[str, Any]:
    text = _TIMING.sub("", result.stdout)
    counts = {
        k if k != "errors" else "error": int(n) for n, k in _COUNTS.findall(text.splitlines()[-1] if text else "")
    }
    tail = "\n".join(text.strip().splitlines()[-30:])
    status = "passed" if result.exit_code == 0 and not result.killed_by else "failed"
    return {
        "status": status,
        "exit_code": result.exit_code,
        "counts": counts,
        "killed_by": result.killed_by,
        "log": tail,
    }


def code_sandbox() -> Sandbox:
    """The configured sandbox, or ``SandboxUnavailable`` when it is misconfigured or cannot isolate code here.

    Why not ``get_sandbox`` alone: an operator's bad ``COMPANYSIM_SANDBOX`` (an unknown name, a root uid) is not
    the caller's argument error; the agent and the grader must see one stable code, ``unavailable``.
    """
    try:
        sandbox = get_sandbox()
    except AppError as exc:
        raise SandboxUnavailable(f"the configured code sandbox is unusable: {exc}") from exc
    if not sandbox.available():  # refuse before any export, not only when the run starts
        reason = getattr(sandbox, "reason", "") or "its probe failed"
        raise SandboxUnavailable(f"the {sandbox.name} sandbox is unavailable: {reason}")
    return sandbox


def pipeline(repo: GitRepo, commit: str, scratch: Path | None = None) -> dict[str, Any]:
    """Run the repository's tests at ``commit`` in the sandbox; ``{"status": "passed" | "failed", ...}``.

    Raises:
        SandboxUnavailable: no sandbox works here (the tests never run unsandboxed).
        InvalidPath: the commit's tree has a link out of the tree (see ``trees.export``).
    """
    sandbox = code_sandbox()
    sandbox.require("python3", "pytest")
    with tempfile.TemporaryDirectory(prefix="companysim-ci-", dir=scratch) as tmp:
        tree = export(repo, commit, Path(tmp) / "tree")
        result = sandbox.run(
            ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no"], tree, limits=PIPELINE_LIMITS
        )
    return {"commit": commit, **_summary(result)}


MEMORY_SCRATCH = Path("/dev/shm")  # noqa: S108 - a tmpfs; each export is a fresh private directory in it
"""Where exports go for a sandbox in this mount namespace (bwrap), when it is a writable sticky directory with
room for the largest tree an export writes twice over."""


def _scratch(sandbox: Sandbox, scratch: Path | None) -> Path | None:
    """The directory an export for ``sandbox`` is made in: ``scratch`` if given, else memory if it may be.

    Creating a file on a disk file system costs this process far more than writing it to memory (on the
    machines measured, about 0.5 ms of CPU against 8 us: the journal), and an export creates every file of a
    tree once per request head. A tmpfs is used only for bwrap, which binds the export by path in this
    process's own mount namespace; a Docker engine may not share this machine's ``/dev/shm`` (its probe
    checks ``$TMPDIR``), so it keeps the default temp directory, as does a tmpfs too small for the largest
    tree (``MAX_BYTES``). The export's rules (fresh directory, modes, links kept inside) are the same. Used by
    ``call_cases``, which graders run per request head; ``pipeline`` (run by the merge-request tools) keeps
    ``$TMPDIR``.
    """
    if scratch is not None or sandbox.name != "bwrap":
        return scratch
    try:
        info = os.stat(MEMORY_SCRATCH)
        room = os.statvfs(MEMORY_SCRATCH)
    except OSError:
        return None
    sticky_dir = stat.S_ISDIR(info.st_mode) and bool(info.st_mode & stat.S_ISVTX)
    if sticky_dir and os.access(MEMORY_SCRATCH, os.W_OK | os.X_OK) and room.f_bavail * room.f_frsize > 2 * MAX_BYTES:
        return MEMORY_SCRATCH
    return None


def call_cases(
    repo: GitRepo, commit: str, module: str, function: str, cases: Sequence[Sequence[Any]], scratch: Path | None = None
) -> list[Any]:
    """Call ``module.function(*args)`` for each case on the code at ``commit``, in the sandbox.

    Returns one entry per case: ``["ok", tagged value]`` (the value with its exact types, see the harness),
    ``["raised", exception name]``, ``["import_error", name]``, or ``["missing", why]`` when the run produced
    no result line (it exited early, timed out or was killed).
    """
    marker = "@@companysim-result-" + hashlib.sha256(f"{commit}{module}{function}{cases}".encode()).hexdigest()[:32]
    stdin = marker + "\n" + json.dumps({"module": module, "function": function, "cases": list(cases)}) + "\n"
    sandbox = code_sandbox()
    sandbox.require("python3")
    with tempfile.TemporaryDirectory(prefix="companysim-check-", dir=_scratch(sandbox, scratch)) as tmp:
        tree = export(repo, commit, Path(tmp) / "tree")
        for conftest in sorted(tree.rglob("conftest.py")):
            conftest.unlink()
        result = sandbox.run(["python3", "-I", "-c", _HARNESS], tree, stdin=stdin, limits=PIPELINE_LIMITS)
    found = [line[len(marker) :] for line in result.stdout.splitlines() if line.startswith(marker)]
    if len(found) != 1:
        why = result.killed_by or f"exit {result.exit_code}"
        return [["missing", f"no single result line ({len(found)} found; {why})"]] * len(cases)
    try:
        out = json.loads(found[0])
    except json.JSONDecodeError:
        return [["missing", "unreadable result line"]] * len(cases)
    if not isinstance(out, list) or len(out) != len(cases):
        return [["missing", "wrong number of results"]] * len(cases)
    return out


def tag(value: Any) -> Any:
    """The harness's typed form of a JSON-able expected value (the same function, run on the host)."""
    if value is None or isinstance(value, bool | int | float | str):
        return [type(value).__name__, value]
    if isinstance(value, list | tuple):
        return [type(value).__name__, [tag(x) for x in value]]
    if isinstance(value, Mapping):
        return ["dict", [[tag(k), tag(x)] for k, x in value.items()]]
    return ["other", type(value).__name__]


def remove_tree(path: Path) -> None:
    """Delete a directory tree that sandboxed code may have made read-only."""
    shutil.rmtree(path, ignore_errors=True)

"""``shell_run``: a command in the episode's checkout of a repository, run only inside the code sandbox.

The command runs through ``/bin/sh -c`` in the sandbox (an unprivileged user, no network, a read-only system,
only the checkout writable, limits on CPU, memory, processes, file size, output and wall time), with the fixed
environment of the sandbox (``TZ=UTC``, ``LANG=C``), so the same command on the same tree prints the same
bytes. When no sandbox works here the tool refuses with ``unavailable``: code never runs unsandboxed. Only the
work tree is mounted, never the repository's git directory (see ``mcp_tools.git.workspace``); after the run the
tree is given back to host git's uid, without following links.

Each run is logged as a ``git_activity`` row (op ``shell_run``) with a hash of the command and its outcome (exit
code, timeout, kill reason), so the change log and the state hash of a replay cover what ran.

Wall-clock figures: test runners print how long they took (``42 passed in 0.04s``), and no sandbox can pin that
number; on a busy machine it changes from run to run, and a replay of the same actions would see other bytes.
``normalise_timings`` rewrites the figures of the common tools (pytest's summary and ``--durations`` lines,
unittest's ``Ran N tests in``, the shell's ``time``) to ``[elapsed]`` before the agent sees the output, so
the observation is a function of the command and the tree alone.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from mcp_tools.base import WRITE, ToolSet, current_context
from mcp_tools.errors import InvalidArgument, NotFound
from mcp_tools.git.checkenv import check_environment
from mcp_tools.git.pipeline import code_sandbox
from mcp_tools.git.workspace import current_workspace
from mcp_tools.sandbox import Limits
from worlds.rawsql import Sql

MAX_COMMAND = 4000
_TIMINGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (  # pytest's summary line: "1 failed, 39 passed in 0.21s" (also "(0:01:02)")
        re.compile(
            r"((?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|no tests ran)[^\n]* in )"
            r"\d+(?:\.\d+)?s(?: \(\d+:\d{2}:\d{2}(?:\.\d+)?\))?"
        ),
        r"\1[elapsed]",
    ),
    (re.compile(r"(?m)^\d+(?:\.\d+)?s(?= (?:call|setup|teardown) )"), "[elapsed]"),  # pytest --durations
    (re.compile(r"(?<=^Ran )(\d+ tests?) in \d+(?:\.\d+)?s", re.M), r"\1 in [elapsed]"),  # unittest
    (re.compile(r"(?m)^(real|user|sys)(\s+)\d+m\d+(?:\.\d+)?s$"), r"\1\2[elapsed]"),  # the shell's time
)


def normalise_timings(text: str) -> str:
    """``text`` with the wall-clock figures of common test runners and ``time`` replaced by ``[elapsed]``."""
    for pattern, repl in _TIMINGS:
        text = pattern.sub(repl, text)
    return text


MAX_TIMEOUT = 120

shell = ToolSet("shell")


@shell.tool(WRITE)
def run(repo: str, command: str, timeout_seconds: int = 30) -> dict[str, Any]:
    """Run a shell command in your checkout of a repository (sandboxed: no network, limited CPU, memory, time).

    Args:
        repo: Repository name from git_list_repos; the command runs in its working tree.
        command: The command line, run with /bin/sh -c, e.g. "python3 -m pytest -q tests/test_api.py".
        timeout_seconds: Wall-clock limit, 1-120 seconds; the command and everything it started are killed then.
    """
    ctx = current_context()
    if not command.strip() or len(command) > MAX_COMMAND or "\x00" in command:
        raise InvalidArgument(f"command: expected 1-{MAX_COMMAND} characters without NUL bytes")
    if isinstance(timeout_seconds, bool) or not 1 <= timeout_seconds <= MAX_TIMEOUT:
        raise InvalidArgument(f"timeout_seconds: expected 1-{MAX_TIMEOUT}; got {timeout_seconds!r}")
    sql = Sql.of(ctx.session)
    rid = sql.scalar("SELECT id FROM repositories WHERE name = ?", (repo,))
    if rid is None:
        raise NotFound(f"expected a repository of this company; found none called {repo!r}")
    ws = current_workspace()
    tree = ws.repo(repo).tree
    limits = Limits(cpu_seconds=min(60, timeout_seconds), wall_seconds=timeout_seconds, max_output_bytes=20_000)
    try:
        result = code_sandbox().run(["/bin/sh", "-c", command], tree, limits=limits)
    finally:
        ws.reclaim(repo)
    out = {
        "repo": repo,
        "exit_code": result.exit_code,
        "stdout": normalise_timings(result.stdout),
        "stderr": normalise_timings(result.stderr),
        "timed_out": result.timed_out,
        "killed_by": result.killed_by,
    }
    outcome = [command, result.exit_code, result.timed_out, result.killed_by]
    digest = hashlib.sha256(json.dumps(outcome).encode("utf-8")).hexdigest()
    sql.insert(
        "git_activity",
        {
            "repository_id": int(rid),
            "actor_id": ctx.actor.employee_id,
            "op": "shell_run",
            "branch": None,
            "path": None,
            "commit_sha": None,
            "content_sha256": digest,
            "at": ctx.clock.now(),
        },
    )
    return out


CHECK_ENV = check_environment

EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "shell_run": [
        {"repo": "{repo}", "command": "ls"},
        {"repo": "{repo}", "command": "python3 -c 'print(6 * 7)'"},
    ],
}

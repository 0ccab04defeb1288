"""Code-workspace benchmarks: repository fork, sandbox start, test-pipeline latency, git tool steps.

Driven through ``fix-failing-test-v0`` (a seeded bug in a generated repository): the repository an episode
checks out from the shared object store, a trivial ``true`` in each sandbox backend, the merge-request
pipeline (pytest of the task repository in the sandbox) per backend, and the p50 of the git tool steps an
agent makes most (read, list, diff, commit). A backend that cannot run here gets a null figure with the reason.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from bench.common import fig, percentile, repeat, timed, write_results
from mcp_tools.git.pipeline import pipeline
from mcp_tools.sandbox import get_sandbox
from sim.episode import Episode
from worlds.repos import checkout
from worlds.store import WorldStore

SCENARIO = "fix-failing-test-v0"
BACKENDS = ("bwrap", "docker")
FORKS = 30
STARTS = 20
PIPELINES = 5
STEPS = 40
ROUND_TURNS = 5


def _missing(unit: str, reason: str) -> dict[str, Any]:
    """A figure that could not be measured here, with why (the JSON keeps the key, the value is null)."""
    return {"value": None, "unit": unit, "target": "", "reason": reason}


@contextmanager
def _selected(name: str) -> Iterator[None]:
    """Route ``get_sandbox()`` (and so the pipeline) to backend ``name`` for the block."""
    before = os.environ.get("COMPANYSIM_SANDBOX")
    os.environ["COMPANYSIM_SANDBOX"] = name
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COMPANYSIM_SANDBOX", None)
        else:
            os.environ["COMPANYSIM_SANDBOX"] = before


def _steps(ep: Episode, repo: str, path: str, default: str) -> dict[str, list[float]]:
    """Seconds per git tool step, by tool, in rounds of read, list, diff, write, commit on a work branch.

    An episode has a turn budget (and a simulated-time budget), so a new episode (a fresh checkout) is started
    whenever the next round might not fit; the reset and the branch creation are not timed.
    """
    out: dict[str, list[float]] = {"read": [], "list": [], "diff": [], "commit": []}
    budget = ep.instance.limits.max_turns
    used = budget
    for i in range(STEPS):
        if used + ROUND_TURNS > budget - 1 or ep.done:
            ep.reset(seed=0)
            ep.step({"name": "git_create_branch", "arguments": {"repo": repo, "name": "bench/steps"}})
            used = 1
        calls = {
            "read": {"name": "git_read_file", "arguments": {"repo": repo, "path": path}},
            "list": {"name": "git_tree", "arguments": {"repo": repo, "recursive": True}},
            "diff": {"name": "git_diff", "arguments": {"repo": repo, "base": default}},
        }
        for key, call in calls.items():
            t0 = time.perf_counter()
            ep.step(call)
            out[key].append(time.perf_counter() - t0)
        ep.step({"name": "git_write_file", "arguments": {"repo": repo, "path": "NOTES.md", "content": f"note {i}\n"}})
        t0 = time.perf_counter()
        ep.step({"name": "git_commit", "arguments": {"repo": repo, "message": f"Bench note {i}"}})
        out["commit"].append(time.perf_counter() - t0)
        used += ROUND_TURNS
    return out


def _fork(base: Path, dest: Path, user: tuple[int, int] | None) -> None:
    """One episode checkout, made the way the workspace makes it (git directory apart, as git's uid)."""
    dest.mkdir(parents=True)
    if user is not None:
        os.chown(dest, *user)
    checkout(base, dest / "repo.git", dest / "repo", user=user)


def run() -> Path:
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-code-") as tmp:
        ep = Episode(SCENARIO, store=WorldStore(Path(tmp) / "data"))
        ep.reset(seed=0)  # generates the world, its base repositories and the task base (cached afterwards)
        params = ep.instance.params
        repo, path = str(params["repo"]), str(params["module_path"])
        code = ep.code
        assert code is not None, f"{SCENARIO} has no code workspace"
        base = code.workspace.bases[repo]
        dests = iter(code.scratch / "forks" / str(i) for i in range(FORKS))
        user = code.workspace.user
        forks = repeat(lambda: _fork(base, next(dests), user), FORKS)
        figures["repo_fork_p50_ms"] = fig(percentile(forks, 50) * 1e3, "ms", "checkout from the shared objects")
        first, _ = timed(lambda: ep.step({"name": "git_status", "arguments": {"repo": repo}}))
        figures["first_git_step_with_fork_ms"] = fig(first * 1e3, "ms", "episode's first call on the repo")

        root = code.workspace.repo(repo)
        head = root("rev-parse", "HEAD").decode().strip()
        default = root("rev-parse", "--abbrev-ref", "HEAD").decode().strip()
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        for name in BACKENDS:
            sandbox = get_sandbox(name)
            if not sandbox.available():
                reason = str(getattr(sandbox, "reason", "") or "unavailable")
                figures[f"sandbox_start_{name}_p50_ms"] = _missing("ms", reason)
                figures[f"test_pipeline_{name}_p50_s"] = _missing("s", reason)
                continue
            sandbox.run(["true"], workspace)  # warm: page cache, image layers
            starts = repeat(partial(sandbox.run, ["true"], workspace), STARTS)
            figures[f"sandbox_start_{name}_p50_ms"] = fig(percentile(starts, 50) * 1e3, "ms", "a `true` run")
            with _selected(name):
                report = pipeline(root, head, Path(tmp))
                runs = repeat(lambda: pipeline(root, head, Path(tmp)), PIPELINES)
            figures[f"test_pipeline_{name}_p50_s"] = fig(percentile(runs, 50), "s", "pytest of the task repo")
            outcome = f"{report['status']} {report['counts']}"  # the seeded bug: one test fails
            figures[f"test_pipeline_{name}_outcome"] = {"value": outcome, "unit": "", "target": ""}

        for key, samples in _steps(ep, repo, path, default).items():
            figures[f"git_{key}_step_p50_ms"] = fig(percentile(samples, 50) * 1e3, "ms", "episode step")
        ep.close()
    return write_results("code", figures)


if __name__ == "__main__":
    print(run())

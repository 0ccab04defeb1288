"""companysim beside tau-bench retail, measured in the same run: cold start, steps, resets, episodes/s, memory.

tau-bench is installed into its own virtualenv (never the project's), from a pinned commit: the source comes
from a local clone or mirror named by ``TAU_BENCH_SRC`` (default: the search tool's mirror under
``/work/.mirror``), else ``pip install git+https://github.com/sierra-research/tau-bench@<commit>``; when
neither works the module says so in one line and writes no figures. Only tau-bench's environment is measured:
its ``litellm`` import (a model client the environment never calls with a stub user) is satisfied by a
one-function stub module in that virtualenv, and the user is a stub that ends the conversation, so both
sides measure the environment alone.

What runs on each side (each measurement in a fresh subprocess, the two sides alternating ``ROUNDS`` times;
the figure is the median over rounds):

- cold start to first step: wall time from spawning Python to the first step done, and that process's RSS;
- read and write step p50: tau-bench replays every test task's gold actions (reads are ``get_*``, ``find_*``,
  ``list_*``, ``calculate``, ``think``; writes the rest); companysim replays each family's oracle actions;
- reset to a new task in the same world, and (companysim) to the same task again;
- whole episodes per second with a new task each time (tau: reset, gold actions, reward; companysim: the
  oracle with grading), and with the same task repeated (a GRPO group);
- memory per live episode, 20 episodes of distinct tasks alive at once.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import platformdirs

from bench.common import RESULTS, fig, write_results

TAU_COMMIT = "59a200c6d575d595120f1cb70fea53cef0632f6b"
TAU_MIRROR = Path("/work/.mirror/sierra-research+tau-bench/repo")
TAU_VENV = Path(platformdirs.user_cache_dir("companysim")) / "bench" / f"tau-bench-{TAU_COMMIT[:12]}"
"""The tau-bench virtualenv: a cache beside the base worlds, built once and reused by later runs."""
ROUNDS = 3
FAMILIES = ("triage-tickets-v0", "customer-escalation-v0", "schedule-with-coworkers-v0")
TARGETS = {
    "cold_start_s": ("s", 0.3),
    "cold_start_rss_mib": ("MiB", 80),
    "read_step_p50_us": ("us", 35),
    "write_step_p50_us": ("us", 50),
    "reset_new_task_ms": ("ms", 2),
    "reset_same_task_ms": ("ms", 0.2),
    "episodes_per_s_new_task": ("episodes/s", 200),
    "episodes_per_s_same_task": ("episodes/s", 500),
    "memory_per_live_episode_mb": ("MB", 1),
}
HIGHER_IS_BETTER = {"episodes_per_s_new_task", "episodes_per_s_same_task"}

_TAU_RUNNER = r"""
import json, resource, statistics, sys, time
T0 = float(sys.argv[2])
from tau_bench.envs.retail.env import MockRetailDomainEnv
from tau_bench.envs.user import BaseUserSimulationEnv
from tau_bench.types import Action
class StubUser(BaseUserSimulationEnv):
    def reset(self, instruction=None): return "hello"
    def step(self, content): return "###STOP###"
    def get_total_cost(self): return 0.0
def make(i):
    env = MockRetailDomainEnv(user_strategy="human", task_split="test", task_index=i)
    env.user = StubUser()
    return env
READS = ("get_", "find_", "list_", "calculate", "think")
mode = sys.argv[1]
out = {}
if mode == "cold":
    env = make(0); env.reset(0)
    first = next(a for a in env.task.actions if a.name != "respond")
    env.step(first)
    out["cold_start_s"] = time.time() - T0
    out["cold_start_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
else:
    env = make(0)
    tasks = env.tasks
    reads, writes, resets = [], [], []
    for i, task in enumerate(tasks):
        t = time.perf_counter(); env.reset(i); resets.append(time.perf_counter() - t)
        for a in task.actions:
            if a.name == "respond" or a.name not in env.tools_map:
                continue
            t = time.perf_counter(); env.step(a); dt = time.perf_counter() - t
            (reads if a.name.startswith(READS) else writes).append(dt)
    out["read_step_p50_us"] = statistics.median(reads) * 1e6
    out["write_step_p50_us"] = statistics.median(writes) * 1e6
    out["reset_new_task_ms"] = statistics.median(resets) * 1e3
    n = min(60, len(tasks))
    t = time.perf_counter()
    for i in range(n):
        env.reset(i)
        for a in tasks[i].actions:
            if a.name != "respond" and a.name in env.tools_map:
                env.step(a)
        env.calculate_reward()
    out["episodes_per_s_new_task"] = n / (time.perf_counter() - t)
    def rss():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS:"))
    before = rss()
    live = []
    for i in range(20):
        e = make(i); e.reset(i); live.append(e)
    out["memory_per_live_episode_mb"] = (rss() - before) / 1024 / 20
print(json.dumps(out))
"""

_OURS_RUNNER = r"""
import json, resource, statistics, sys, time
T0 = float(sys.argv[2])
mode, store_dir = sys.argv[1], sys.argv[3]
from sim.episode import Episode
from worlds.store import WorldStore
store = WorldStore(store_dir)
out = {}
if mode == "cold":
    ep = Episode("triage-tickets-v0", store=store)
    ep.reset(seed=0)
    ep.step({"name": "tickets_search", "arguments": {}})
    out["cold_start_s"] = time.time() - T0
    out["cold_start_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
else:
    from mcp_tools.base import READ
    from sim.agents import run_agent
    families = json.loads(sys.argv[4])
    per = {}
    for fam in families:
        ep = Episode(fam, store=store)
        run_agent(ep, "oracle", 0)
        actions = [s["action"] for s in ep.steps]
        reads, writes = [], []
        for _ in range(20):
            ep.reset(seed=0)
            tools = ep._live.tools
            for a in actions:
                if ep.done:
                    break
                spec = tools.get(a["name"])
                t = time.perf_counter(); ep.step(a); dt = time.perf_counter() - t
                if spec is not None:
                    (reads if spec.kind == READ else writes).append(dt)
        per[fam] = {"read": statistics.median(reads) * 1e6, "write": statistics.median(writes) * 1e6}
        ep.close()
    out["per_family"] = per
    out["read_step_p50_us"] = per[families[0]]["read"]
    out["write_step_p50_us"] = per[families[0]]["write"]
    fresh = Episode(families[0], store=store, setup_cache=False)
    fresh.reset(seed=0)
    ts = []
    for seed in range(100, 160):
        t = time.perf_counter(); fresh.reset(seed=seed, options={"world_seed": 0}); ts.append(time.perf_counter() - t)
    out["reset_new_task_ms"] = statistics.median(ts) * 1e3
    fresh.close()
    ep = Episode(families[0], store=store)
    ep.reset(seed=0)
    ts = []
    for _ in range(200):
        t = time.perf_counter(); ep.reset(seed=0); ts.append(time.perf_counter() - t)
    out["reset_same_task_ms"] = statistics.median(ts) * 1e3
    n = 60
    t = time.perf_counter()
    for seed in range(1000, 1000 + n):
        run_agent(ep, "oracle", seed, {"world_seed": 0})
    out["episodes_per_s_new_task"] = n / (time.perf_counter() - t)
    n = 120
    t = time.perf_counter()
    for _ in range(n):
        run_agent(ep, "oracle", 7, {"world_seed": 0})
    out["episodes_per_s_same_task"] = n / (time.perf_counter() - t)
    ep.close()
    def rss():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS:"))
    warm = Episode(families[0], store=store)
    warm.reset(seed=2000, options={"world_seed": 0})
    before = rss()
    live = []
    for i in range(20):
        e = Episode(families[0], store=store)
        e.reset(seed=3000 + i, options={"world_seed": 0})
        live.append(e)
    out["memory_per_live_episode_mb"] = (rss() - before) / 1024 / 20
print(json.dumps(out))
"""


def _tau_source() -> Path | None:
    """A source tree of tau-bench at ``TAU_COMMIT`` (exported from a local clone or mirror), or None."""
    src = Path(os.environ.get("TAU_BENCH_SRC", TAU_MIRROR))
    git_dir = src / ".git" if (src / ".git").exists() else src
    if not (git_dir / "objects").is_dir():
        return None
    dest = Path(tempfile.mkdtemp(prefix="tau-src-"))
    paths = ["tau_bench", "setup.py", "README.md", "MANIFEST.in"]  # the package, not its recorded trajectories
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", TAU_COMMIT, *paths], capture_output=True, check=False
    )
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def prepare_tau() -> tuple[Path | None, str]:
    """The tau-bench virtualenv's python (built once), or (None, why it cannot be had)."""
    python = TAU_VENV / "bin" / "python"
    stamp = TAU_VENV / ".ready"
    if stamp.exists():
        return python, ""
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(TAU_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    if subprocess.run([*pip, "pydantic>=2"], capture_output=True, check=False).returncode != 0:
        return None, "pydantic could not be installed into the tau-bench virtualenv"
    site = next((TAU_VENV / "lib").glob("python3*/site-packages"))
    (site / "litellm.py").write_text(
        '"""Stub for tau-bench\'s model client: the measured environment never calls it."""\n\n\n'
        "def completion(*args, **kwargs):\n    raise RuntimeError('no model in the benchmark')\n"
    )
    source = _tau_source()
    if source is not None:
        done = subprocess.run([*pip, "--no-deps", str(source)], capture_output=True, check=False)
        shutil.rmtree(source, ignore_errors=True)
    else:
        url = f"git+https://github.com/sierra-research/tau-bench@{TAU_COMMIT}"
        done = subprocess.run([*pip, "--no-deps", url], capture_output=True, check=False)
    if done.returncode != 0:
        return None, "tau-bench's source could not be had (no local mirror, and its repository is unreachable)"
    stamp.touch()
    return python, ""


def _measure(python: str, runner: str, mode: str, *extra: str) -> dict[str, Any]:
    import time

    t0 = time.time()
    out = subprocess.run(
        [python, "-c", runner, mode, repr(t0), *extra], capture_output=True, text=True, check=True, timeout=1800
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def run() -> Path:
    tau_python, why = prepare_tau()
    if tau_python is None:
        print(f"bench compare_tau: skipped: {why}")
        return RESULTS / "compare_tau.json"
    store = Path(tempfile.mkdtemp(prefix="bench-compare-"))
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    try:
        _measure(sys.executable, _OURS_RUNNER, "cold", str(store))  # generates the base world once, untimed
        _rounds(tau_python, store, ours, theirs)
    finally:
        shutil.rmtree(store, ignore_errors=True)
    return _report(ours, theirs)


def _rounds(tau_python: Path, store: Path, ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    for _ in range(ROUNDS):
        theirs.append(
            {**_measure(str(tau_python), _TAU_RUNNER, "cold"), **_measure(str(tau_python), _TAU_RUNNER, "warm")}
        )
        ours.append(
            {
                **_measure(sys.executable, _OURS_RUNNER, "cold", str(store)),
                **_measure(sys.executable, _OURS_RUNNER, "warm", str(store), json.dumps(FAMILIES)),
            }
        )


def _report(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> Path:
    figures: dict[str, dict[str, Any]] = {}
    for key, (unit, target) in TARGETS.items():
        a = statistics.median(r[key] for r in ours)
        b = statistics.median(r[key] for r in theirs) if all(key in r for r in theirs) else None
        met = a >= target if key in HIGHER_IS_BETTER else a <= target
        sense = ">=" if key in HIGHER_IS_BETTER else "<="
        figures[key] = fig(a, unit, f"{sense} {target} ({'met' if met else 'not met'})")
        if b is not None:
            figures[f"{key}_tau_bench"] = fig(b, unit)
            ratio = (a / b) if key in HIGHER_IS_BETTER else (b / a)
            figures[f"{key}_advantage"] = fig(ratio, "x", "companysim over tau-bench; > 1 is better")
    per = {fam: {k: round(statistics.median(r["per_family"][fam][k] for r in ours), 1) for k in ("read", "write")}
           for fam in FAMILIES}  # fmt: skip
    for fam, vals in per.items():
        figures[f"steps_p50_us_{fam}"] = {"value": vals, "unit": "us", "target": "read <= 35, write <= 50"}
    return write_results("compare_tau", figures)


if __name__ == "__main__":
    print(run())

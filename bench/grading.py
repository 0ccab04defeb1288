"""Dense rubrics and the per-step progress score: checks per task, grade time, what progress costs a step.

Per family, the oracle plays several seeds and difficulties (twice: the first pass warms the caches). For each
task: how many checks its rubric has, and the p50 of a full ``grade`` of the final state. Every call of
``graders.progress.Progress.update`` is timed where it runs, inside the step, so the figure is the progress
score's own cost: per step over the oracle's real mix of reads and writes (mean and p50), per step that
changed rows (the only steps that re-run state checks), and the first step's (which grades every check once).
fix-failing-test-v0's grade runs the hidden cases in the code sandbox; it is reported apart from the rule-check
families.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import graders.progress as progress
from bench.common import fig, percentile, repeat, write_results
from sim.agents import run_agent
from sim.episode import Episode
from worlds.store import WorldStore

FAMILIES = ("triage-tickets-v0", "customer-escalation-v0", "schedule-with-coworkers-v0", "fix-failing-test-v0")
SEEDS = range(6)


class _Timed(progress.Progress):
    """Progress that records how long each update took and whether the step changed rows."""

    samples: list[tuple[float, bool, bool]] = []  # (seconds, rows changed, first update of the episode)

    def update(self, rows: Any) -> float:
        first = not self._started
        t0 = time.perf_counter()
        value = super().update(rows)
        _Timed.samples.append((time.perf_counter() - t0, bool(rows), first))
        return value


def run() -> Path:
    figures: dict[str, Any] = {}
    original = progress.Progress
    import sim.live

    sim.live.Progress = _Timed  # type: ignore[misc]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = WorldStore(tmp)
            for family in FAMILIES:
                _family(figures, family, store)
    finally:
        sim.live.Progress = original  # type: ignore[misc]
    return write_results("grading", figures)


def _family(figures: dict[str, Any], family: str, store: WorldStore) -> None:
    short = family.removesuffix("-v0").replace("-", "_")
    checks: list[int] = []
    grades: list[float] = []
    with Episode(family, store=store) as ep:
        for warm in (True, False):
            _Timed.samples = []
            for seed in SEEDS:
                run_agent(ep, "oracle", seed, {"difficulty": 1 + seed % 3, "progress": True})
                if not warm:
                    checks.append(len(ep.instance.rubric.checks))
                    live = ep._live
                    assert live is not None
                    grades += repeat(live.grade, 3 if family.startswith("fix") else 30)
    steps = [t for t, _, first in _Timed.samples if not first]
    writes = [t for t, changed, first in _Timed.samples if changed and not first]
    firsts = [t for t, _, first in _Timed.samples if first]
    sandbox = family.startswith("fix")
    figures[f"{short}_checks_per_task"] = fig(statistics.mean(checks), "checks", "typical >= 20")
    figures[f"{short}_grade_p50_ms"] = fig(
        percentile(grades, 50) * 1e3, "ms", "sandbox run included" if sandbox else "<= 2"
    )
    figures[f"{short}_progress_mean_us_per_step"] = fig(statistics.mean(steps) * 1e6, "us", "<= 20")
    figures[f"{short}_progress_p50_us_per_step"] = fig(percentile(steps, 50) * 1e6, "us", "<= 20")
    figures[f"{short}_progress_mean_us_per_write"] = fig(
        statistics.mean(writes) * 1e6, "us", f"{len(writes)} of {len(steps)} steps"
    )
    figures[f"{short}_progress_first_step_ms"] = fig(statistics.mean(firsts) * 1e3, "ms", "grades every check once")

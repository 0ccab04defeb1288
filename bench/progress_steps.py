"""What the per-step progress score costs by kind of step: where a family's ``info["progress"]`` time goes.

``bench/grading.py`` gives one figure a family (CPU mean per step of ``graders.progress.Progress.update`` over
the oracle's steps); this splits it by the tool each step called, which is what tells where to look: nearly
all of it is the few steps that create or change what the rubric is about (the report written, the meeting
booked, the sheet filled), a read costs about a microsecond. The oracle plays the same seeds and difficulties
as in ``bench/grading.py`` (a first pass warms the caches), then ``ROUNDS`` timed passes; each update is timed
with this thread's CPU clock (``thread_time``: a process clock would count the store's and LibreOffice's other
threads too), and the first update of an episode, which grades every check once, is left out as there.

Run ``python -m bench.progress_steps FAMILY [FAMILY ...]``: per family its mean per step, then per tool the
calls, the mean CPU us of its updates and its share of the family's mean (shares add up to the mean). An
unknown family is one error line and exit 2 before any world is built.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import graders.progress as progress
from bench.grading import SEEDS
from scenarios.registry import registered
from sim.agents import run_agent
from sim.episode import Episode
from worlds.store import WorldStore

ROUNDS = 3
"""Timed passes over the seeds after the warm one (more samples of the few writing steps an episode has)."""


class _ByTool(progress.Progress):
    """Progress that records each update's CPU time under the name of the tool its step called."""

    samples: dict[str, list[float]] | None = None
    """CPU seconds by tool name while timing (None: a warm pass, nothing kept)."""

    def update(self, rows: Sequence[Mapping[str, Any]]) -> float:
        first = not self._started
        c0 = time.thread_time()
        value = super().update(rows)
        spent = time.thread_time() - c0
        steps = self.ctx.steps
        if _ByTool.samples is not None and not first and steps:
            action = steps[-1].get("action") or {}
            _ByTool.samples[str(action.get("name", "?"))].append(spent)
        return value


def measure(family: str, store: WorldStore) -> dict[str, list[float]]:
    """CPU seconds of each ``Progress.update`` after the first, by tool name, over ``ROUNDS`` oracle passes."""
    import sim.live

    original = vars(sim.live)["Progress"]
    setattr(sim.live, "Progress", _ByTool)  # noqa: B010 - the episode builds its Progress from sim.live
    samples: dict[str, list[float]] = defaultdict(list)
    try:
        with Episode(family, store=store) as ep:
            for timed in (False, *([True] * ROUNDS)):
                if timed:
                    gc.collect()  # the garbage of what ran before is not collected inside the timed updates
                _ByTool.samples = samples if timed else None
                for seed in SEEDS:
                    run_agent(ep, "oracle", seed, {"difficulty": 1 + seed % 3, "progress": True})
    finally:
        setattr(sim.live, "Progress", original)  # noqa: B010
        _ByTool.samples = None
    return dict(samples)


def main(argv: list[str]) -> dict[str, dict[str, list[float]]]:
    """Print and return, per family of ``argv``, the CPU seconds of its progress updates by tool name."""
    known = {r.id for r in registered()}
    unknown = [f for f in argv if f not in known]
    if not argv or unknown:  # before any world is built: a typo costs nothing and changes nothing
        what = f"unknown family {unknown[0]!r}; see `companysim scenarios list`" if unknown else "name a family"
        print(f"error: {what} (usage: python -m bench.progress_steps FAMILY [FAMILY ...])", file=sys.stderr)
        raise SystemExit(2)
    out: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = WorldStore(tmp)
        for family in argv:
            by_tool = out[family] = measure(family, store)
            n = sum(len(v) for v in by_tool.values())
            total = sum(sum(v) for v in by_tool.values())
            print(f"{family}: {total / n * 1e6:.1f} us a step (CPU) over {n} steps", flush=True)
            for name, spent in sorted(by_tool.items(), key=lambda kv: -sum(kv[1])):
                mean, share = sum(spent) / len(spent) * 1e6, sum(spent) / n * 1e6
                print(f"  {name:34} {len(spent):5d} calls  {mean:8.1f} us each  {share:6.1f} us a step", flush=True)
    return out


if __name__ == "__main__":
    main(sys.argv[1:])

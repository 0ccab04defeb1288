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

``--twin`` asks how much of that time is the caches the tool call left cold rather than the work itself: each
episode gets a second ``Progress`` (its own context and state, the same session) that every step updates with the
same rows, right before or right after the episode's own (turn about, so neither is always first). The one that
runs first pays for the code, the step's rows and the document text the tool call evicted; the second finds them
warm and pays for its own state and the work. Per family it prints the mean CPU us a step of the update run first
and of the one run second, and of the step outside progress (this thread's: the tool call, the oracle, the
episode's bookkeeping), then the same per tool as medians; the two values must agree at every step, or the run
stops with the step that differed (the twin is also a check that an update's result does not hang on state outside
its own ``Progress``).
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import graders.progress as progress
from bench.grading import SEEDS
from graders.base import GradingContext
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


class _Twin(progress.Progress):
    """Progress updated alongside a twin of itself (``--twin``): CPU of whichever of the two runs first and second."""

    samples: dict[str, list[tuple[float, float, float]]] | None = None
    """(first, second, outside) CPU seconds by tool name while timing (None: a warm pass, nothing kept)."""
    turn = 0
    ended = 0.0
    """This thread's CPU clock when the last update ended: what the step spent outside progress starts there."""

    def __init__(self, rubric: Any, ctx: GradingContext) -> None:
        super().__init__(rubric, ctx)
        twin_ctx = GradingContext(
            session=ctx.session,
            changes=list(ctx.log),
            trace=ctx.trace,
            actor_id=ctx.actor_id,
            params=ctx.params,
            workspace=ctx.workspace,
        )
        self.twin = progress.Progress(rubric, twin_ctx)

    def update(self, rows: Sequence[Mapping[str, Any]]) -> float:
        c0 = time.thread_time()
        outside = c0 - _Twin.ended
        timed = _Twin.samples is not None and self._started
        _Twin.turn += 1
        twin_first = _Twin.turn % 2 == 1
        own_update = super().update
        first, second = (self.twin.update, own_update) if twin_first else (own_update, self.twin.update)
        a = first(rows)
        c1 = time.thread_time()
        b = second(rows)
        c2 = time.thread_time()
        steps = self.ctx.steps
        name = str((steps[-1].get("action") or {}).get("name", "?")) if steps else "?"
        if a != b:
            raise RuntimeError(f"the twin updates disagree after step {len(steps)} ({name}): {a!r} != {b!r}")
        if timed and _Twin.samples is not None:
            _Twin.samples[name].append((c1 - c0, c2 - c1, outside))
        _Twin.ended = time.thread_time()
        return b if twin_first else a


def _play(family: str, store: WorldStore, cls: type[progress.Progress], keep: Callable[[bool], None]) -> None:
    """Play the oracle over ``SEEDS`` once to warm, then ``ROUNDS`` times timed, with ``cls`` as the Progress.

    ``keep(timed)`` is told before each pass whether that pass is timed (the class then keeps its samples).
    """
    import sim.live

    original = vars(sim.live)["Progress"]
    setattr(sim.live, "Progress", cls)  # noqa: B010 - the episode builds its Progress from sim.live
    try:
        with Episode(family, store=store) as ep:
            for timed in (False, *([True] * ROUNDS)):
                if timed:
                    gc.collect()  # the garbage of what ran before is not collected inside the timed updates
                keep(timed)
                for seed in SEEDS:
                    run_agent(ep, "oracle", seed, {"difficulty": 1 + seed % 3, "progress": True})
    finally:
        setattr(sim.live, "Progress", original)  # noqa: B010
        keep(False)


def measure(family: str, store: WorldStore) -> dict[str, list[float]]:
    """CPU seconds of each ``Progress.update`` after the first, by tool name, over ``ROUNDS`` oracle passes."""
    samples: dict[str, list[float]] = defaultdict(list)

    def keep(timed: bool) -> None:
        _ByTool.samples = samples if timed else None

    _play(family, store, _ByTool, keep)
    return dict(samples)


def measure_twin(family: str, store: WorldStore) -> dict[str, list[tuple[float, float, float]]]:
    """(first, second, outside) CPU seconds of each step's twin updates after the first, by tool (``--twin``)."""
    samples: dict[str, list[tuple[float, float, float]]] = defaultdict(list)

    def keep(timed: bool) -> None:
        _Twin.samples = samples if timed else None

    _play(family, store, _Twin, keep)
    return dict(samples)


def _print_twin(family: str, by_tool: Mapping[str, list[tuple[float, float, float]]]) -> None:
    """The family's mean per step run first and second; per tool the medians, and of the step outside progress."""
    every = [s for spent in by_tool.values() for s in spent]
    first, second, outside = (sum(s[k] for s in every) / len(every) * 1e6 for k in range(3))
    print(f"{family}: {first:.1f} us a step (CPU) run first, {second:.1f} second, over {len(every)} steps")
    print(f"  the step outside progress: {outside:.1f} us a step (CPU of this thread)")
    print("  by tool: steps, median CPU us of the update run first, run second, and of the step outside progress")
    for name, spent in sorted(by_tool.items(), key=lambda kv: -sum(s[0] for s in kv[1])):
        first, second, outside = (statistics.median(s[k] for s in spent) * 1e6 for k in range(3))
        print(f"  {name:34} {len(spent):5d} steps  {first:8.1f} first  {second:8.1f} second  {outside:9.1f} outside")


def main(argv: list[str]) -> dict[str, dict[str, list[float]]]:
    """Print and return, per family of ``argv``, the CPU seconds of its progress updates by tool name.

    With ``--twin`` among them, print each family's first and second updates instead (nothing is returned).
    """
    twin = "--twin" in argv
    families = [a for a in argv if a != "--twin"]
    known = {r.id for r in registered()}
    unknown = [f for f in families if f not in known]
    if not families or unknown:  # before any world is built: a typo costs nothing and changes nothing
        what = f"unknown family {unknown[0]!r}; see `companysim scenarios list`" if unknown else "name a family"
        print(f"error: {what} (usage: python -m bench.progress_steps [--twin] FAMILY [FAMILY ...])", file=sys.stderr)
        raise SystemExit(2)
    out: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = WorldStore(tmp)
        for family in families:
            if twin:
                _print_twin(family, measure_twin(family, store))
                continue
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

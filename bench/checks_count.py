"""Checks per task: how many checks each family's rubric has, per difficulty, over seeds 0-5.

Issue 14 item 5 asks that a typical task be scored per item (>= 20 checks). ``bench/grading.py`` counts the
families it times (the oracle's seeds, one difficulty each); this counts any family without playing it: each
task is only built (``Episode.reset``), which is what fixes its rubric. Run
``python -m bench.checks_count [FAMILY ...]`` (default: every registered family that is not impossible); it
prints one line per family (checks at difficulty 1, 2, 3 averaged over the seeds, and the mean over all nine
columns) and returns the figures.
"""

from __future__ import annotations

import statistics
import sys

from scenarios.registry import registered
from sim.episode import Episode
from worlds.store import WorldStore

SEEDS = range(6)
DIFFICULTIES = (1, 2, 3)


def count(family: str, store: WorldStore) -> dict[int, float]:
    """Mean number of checks at each difficulty over ``SEEDS``."""
    out: dict[int, float] = {}
    with Episode(family, store=store) as ep:
        for d in DIFFICULTIES:
            sizes = []
            for seed in SEEDS:
                ep.reset(seed, {"difficulty": d})
                sizes.append(len(ep.instance.rubric.checks))
            out[d] = statistics.mean(sizes)
    return out


def main(argv: list[str]) -> dict[str, dict[int, float]]:
    """Print and return the checks per task of ``argv``'s families (default: every possible family)."""
    known = [r.id for r in registered()]
    unknown = [f for f in argv if f not in known]
    if unknown:  # before any world is built: a typo costs nothing and changes nothing
        print(f"error: unknown family {unknown[0]!r}; see `companysim scenarios list`", file=sys.stderr)
        raise SystemExit(2)
    families = argv or [r.id for r in registered() if not r.impossible]
    figures: dict[str, dict[int, float]] = {}
    store = WorldStore()  # the cache dir (COMPANYSIM_DATA_DIR): base worlds are built once
    for family in families:
        per = count(family, store)
        figures[family] = per
        cols = " ".join(f"d{d}={v:5.1f}" for d, v in per.items())
        print(f"{family:34} {cols}  mean={statistics.mean(per.values()):5.1f}", flush=True)
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])

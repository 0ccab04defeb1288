"""Timing helpers and result files shared by the benchmark modules."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

RESULTS = Path(__file__).resolve().parent / "results"
console = Console()


def percentile(samples: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank."""
    ordered = sorted(samples)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds taken by one call, and its result."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def repeat(fn: Callable[[], Any], n: int) -> list[float]:
    """Seconds of each of n calls."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    versions = {}
    for pkg in ("sqlalchemy", "numpy", "faker", "fastmcp"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "absent"
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "packages": versions,
    }


def write_results(name: str, figures: dict[str, dict[str, Any]]) -> Path:
    """Write bench/results/<name>.json and print the figures as a table."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), "figures": figures}, indent=2, sort_keys=True) + "\n")
    table = Table(title=f"bench: {name}")
    for col in ("figure", "value", "unit", "target"):
        table.add_column(col)
    for key, fig in figures.items():
        value = fig["value"]
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        table.add_row(key, shown, fig.get("unit", ""), str(fig.get("target", "")))
    console.print(table)
    return path


def fig(value: float, unit: str, target: str = "") -> dict[str, Any]:
    """One named figure."""
    return {"value": round(value, 6) if isinstance(value, float) else value, "unit": unit, "target": target}


__all__ = ["fig", "percentile", "repeat", "statistics", "timed", "write_results"]

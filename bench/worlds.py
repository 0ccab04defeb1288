"""World benchmarks: generation, fork, snapshot/restore, hashing, size."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import fig, percentile, repeat, timed, write_results
from worlds.spec import WorldSpec
from worlds.store import create_world


def run() -> Path:
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        small_spec = WorldSpec(seed=1, employees=100, history_days=90)
        secs, small = timed(lambda: create_world(small_spec, Path(tmp) / "small.db"))
        figures["generate_100x90_s"] = fig(secs, "s", "<= 1")
        figures["db_size_100x90_mb"] = fig(small.target.path.stat().st_size / 1e6, "MB")
        figures["bytes_per_employee_100x90"] = fig(small.target.path.stat().st_size / 100, "B")
        big_spec = WorldSpec(seed=1, employees=1000, history_days=365)
        secs, big = timed(lambda: create_world(big_spec, Path(tmp) / "big.db"))
        figures["generate_1000x365_s"] = fig(secs, "s", "<= 10")
        figures["db_size_1000x365_mb"] = fig(big.target.path.stat().st_size / 1e6, "MB")
        big.close()
        figures["bytes_per_employee_1000x365"] = fig(big.target.path.stat().st_size / 1000, "B")
        for employees in (10_000, 20_000):  # the largest headcounts the spec allows (issue 12 item 5)
            label = f"{employees}x90"
            spec = WorldSpec(seed=1, employees=employees, history_days=90)
            secs, huge = timed(lambda spec=spec, label=label: create_world(spec, Path(tmp) / f"{label}.db"))
            size = huge.target.path.stat().st_size
            huge.close()
            (Path(tmp) / f"{label}.db").unlink()
            figures[f"generate_{label}_s"] = fig(secs, "s")
            figures[f"db_size_{label}_mb"] = fig(size / 1e6, "MB")
            figures[f"bytes_per_employee_{label}"] = fig(size / employees, "B")
        tenx = create_world(WorldSpec(seed=1, employees=1000, history_days=90), Path(tmp) / "tenx.db")
        for label, world, target in (("100x90", small, "<= 1"), ("1000x90", tenx, "<= 2")):
            world.fork().close()  # serialize the image once, as a process does on its first fork
            samples = repeat(lambda w=world: w.fork().close(), 1000)
            figures[f"fork_p50_{label}_ms"] = fig(percentile(samples, 50) * 1e3, "ms", target)
            figures[f"fork_p90_{label}_ms"] = fig(percentile(samples, 90) * 1e3, "ms")
            figures[f"image_{label}_mb"] = fig(world.image_size / 1e6, "MB")
        fork = small.fork()
        snap_samples = repeat(fork.snapshot, 50)
        snap = fork.snapshot()
        restore_samples = repeat(lambda: fork.restore(snap), 50)
        figures["snapshot_p50_100x90_ms"] = fig(percentile(snap_samples, 50) * 1e3, "ms")
        figures["restore_p50_100x90_ms"] = fig(percentile(restore_samples, 50) * 1e3, "ms")
        secs, _ = timed(small.state_hash)
        figures["state_hash_100x90_ms"] = fig(secs * 1e3, "ms")
        fork.close()
        tenx.close()
        small.close()
    return write_results("worlds", figures)

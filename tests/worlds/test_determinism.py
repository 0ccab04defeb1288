"""The same spec gives the same world in processes that differ in hash seed, time zone and locale."""

import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worlds.spec import WorldSpec

WORKER = Path(__file__).with_name("_hash_worker.py")
ENVS = (
    {"PYTHONHASHSEED": "0", "TZ": "UTC", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
    {"PYTHONHASHSEED": "12345", "TZ": "Pacific/Kiritimati", "LANG": "C", "LC_ALL": "C"},
)


class Worker:
    def __init__(self, env: dict[str, str]) -> None:
        import os

        full = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "TZ", "LANG", "LC_ALL")}
        full.update(env)
        root = str(Path(__file__).resolve().parents[2])
        full["PYTHONPATH"] = root
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=full,
            cwd=root,
        )

    def hash(self, spec: WorldSpec) -> str:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(spec.model_dump_json() + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().strip()
        assert len(line) == 64, f"worker died or misbehaved: {line!r}"
        return line

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def workers():
    pair = [Worker(env) for env in ENVS]
    yield pair
    for w in pair:
        w.close()


specs = st.builds(
    WorldSpec,
    seed=st.integers(0, 2**63 - 1),
    employees=st.integers(5, 25),
    history_days=st.integers(0, 10),
    start_date=st.dates(date(2020, 1, 6), date(2030, 12, 30)),
)


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(spec=specs)
def test_determinism__same_hash_across_processes_hashseeds_timezones_locales(workers, spec):
    a, b = (w.hash(spec) for w in workers)
    assert a == b, f"{spec.canonical_json()} hashed differently across processes"


def test_determinism__hash_depends_on_the_seed(workers):
    h0 = workers[0].hash(WorldSpec(seed=1, employees=10, history_days=3))
    h1 = workers[0].hash(WorldSpec(seed=2, employees=10, history_days=3))
    assert h0 != h1

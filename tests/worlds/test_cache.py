"""The base-world cache stays within its size limit (least recently used evicted) and sheds dead writers' temps."""

import os
import subprocess
import sys

from worlds.cache import entries, sweep_temps, temp_name
from worlds.spec import MIN_EMPLOYEES, WorldSpec
from worlds.store import WorldStore


def tiny(seed):
    return WorldSpec.parse(seed=seed, employees=MIN_EMPLOYEES, history_days=0, apps=("chat", "tickets"))


def test_cache__stays_under_its_limit_across_1000_task_seeds(tmp_path):
    store = WorldStore(tmp_path, max_bytes=3 * 2**20)
    worst = 0
    for seed in range(1000):  # by default every task seed is a company of its own
        store.base(tiny(seed)).close()
        worst = max(worst, sum(e.size for e in entries(store.worlds_dir)))
    assert worst <= store.max_bytes, worst
    assert store.path_for(tiny(999)).exists()  # the newest world is never the one evicted


def test_cache__evicts_the_least_recently_used_world(tmp_path):
    store = WorldStore(tmp_path, max_bytes=10 * 2**20)
    for seed in range(3):
        store.base(tiny(seed)).close()
    one = entries(store.worlds_dir)[0].size
    os.utime(f"{store.path_for(tiny(1))}.used", (1, 1))  # world 1: used longest ago
    os.utime(f"{store.path_for(tiny(0))}.used", (2, 2))
    store.max_bytes = 3 * one + one // 2
    store.base(tiny(3)).close()
    assert not store.path_for(tiny(1)).exists() and not os.path.exists(f"{store.path_for(tiny(1))}.used")
    assert all(store.path_for(tiny(s)).exists() for s in (0, 2, 3))


def test_cache_cli__show_prune_clear(tmp_path):
    env = {**os.environ, "COMPANYSIM_DATA_DIR": str(tmp_path)}
    store = WorldStore(tmp_path)
    for seed in range(3):
        store.base(tiny(seed)).close()

    def cli(*args):
        out = subprocess.run([sys.executable, "-m", "sim.cli", "cache", *args], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert "3 world(s)" in cli("show")
    assert "removed" in cli("prune", "--max-mb", "0") and entries(store.worlds_dir) == []
    store.base(tiny(5)).close()
    assert "removed 1 world(s)" in cli("clear") and entries(store.worlds_dir) == []


def test_sweep_temps__removes_what_dead_writers_left_and_keeps_live_ones(tmp_path):
    mine = temp_name(tmp_path / "w.db")
    mine.write_text("being written")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".w.db.tmp{dead.stdout.strip()}-1"
    stale.write_text("left by a killed process")
    stale_dir = tmp_path / f"w.db.repos.tmp{dead.stdout.strip()}"
    stale_dir.mkdir()
    (tmp_path / "w.db").write_text("a world")
    assert sorted(sweep_temps(tmp_path)) == sorted([stale, stale_dir])
    assert mine.exists() and (tmp_path / "w.db").exists()

"""``companysim tasks list|export``: tasks as rows that ``datasets`` loads, with splits that never move."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.registry import registered
from scenarios.splits import SPLITS, family_split, seeds_in, source_split, split_of, world_split
from sim.adapters.common import TaskRow
from sim.episode import Episode
from sim.taskset import TaskSelection, task_rows

CLI = [sys.executable, "-m", "sim.cli"]
ROOT = Path(__file__).resolve().parents[2]


def cli(args, data_dir):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COMPANYSIM_DATA_DIR": str(data_dir)}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False)


def test_tasks_export__jsonl_and_parquet_load_with_datasets_and_match_the_episode(tmp_path, store):
    datasets = pytest.importorskip("datasets")
    select = ["--family", "triage-tickets-v0", "--family", "customer-escalation-v0", "--seeds", "3:5"]
    select += ["--world-seed", "0", "--difficulty", "2"]
    jsonl, parquet = tmp_path / "tasks.jsonl", tmp_path / "tasks.parquet"
    for out in (jsonl, parquet):
        done = cli(["tasks", "export", "--out", str(out), *select], store.data_dir)
        assert done.returncode == 0, done.stderr
        assert "wrote 4 task(s)" in done.stdout
    cache = str(tmp_path / "hf")
    from_json = datasets.load_dataset("json", data_files=str(jsonl), split="train", cache_dir=cache)
    from_parquet = datasets.load_dataset("parquet", data_files=str(parquet), split="train", cache_dir=cache)
    assert from_json.to_list() == from_parquet.to_list()
    rows = from_parquet.to_list()
    assert [r["id"] for r in rows] == [
        "triage-tickets-v0/w0/s3/d2", "triage-tickets-v0/w0/s4/d2",
        "customer-escalation-v0/w0/s3/d2", "customer-escalation-v0/w0/s4/d2",
    ]  # fmt: skip
    with Episode("customer-escalation-v0", store=store) as ep:
        prompt, info = ep.reset(seed=4, options={"world_seed": 0, "difficulty": 2})
    row = rows[3]
    assert row["prompt"] == prompt and json.loads(row["tools"]) == info["tools"]
    assert row["family"] == "customer-escalation" and row["split"] == world_split(0)
    # a row is what a trainer adapter reads to start that very task
    task = TaskRow.parse(row, "customer-escalation-v0")
    assert (task.seed, task.difficulty, task.options["world_seed"]) == (4, 2, 0)
    # the same selection gives the same bytes
    again = tmp_path / "again.jsonl"
    assert cli(["tasks", "export", "--out", str(again), *select], store.data_dir).returncode == 0
    assert again.read_bytes() == jsonl.read_bytes()


def test_tasks_list__filters_by_split_and_builds_no_world(tmp_path):
    empty = tmp_path / "data"
    empty.mkdir()
    held_out = [r.id for r in registered() if family_split(r.id) == "val"]
    done = cli(
        ["tasks", "list", "--split-by", "family", "--split", "val", "--seeds", "0:2", "--difficulty", "1"], empty
    )
    assert done.returncode == 0, done.stderr
    assert f"{2 * len(held_out)} task(s)" in done.stdout
    assert list(empty.iterdir()) == []
    keys = TaskSelection(seeds=tuple(range(40)), difficulties=(1,), split="test").keys()
    assert keys and {k.world_seed for k in keys} <= set(seeds_in("test", 40))


def test_splits__by_hash_stable_independent_and_in_proportion():
    # pinned: a split must never move (these are the companies `campaign --split` has always used)
    assert [world_split(s) for s in (16, 17, 18)] == ["train", "test", "val"]
    assert family_split("triage-tickets-v0") == family_split("triage-tickets-v7")  # versions stay together
    counts = {s: 0 for s in SPLITS}
    for n in range(20_000):
        counts[source_split(f"mined/redo/ticket:{n}")] += 1
    assert abs(counts["train"] / 20_000 - 0.8) < 0.02 and abs(counts["test"] / 20_000 - 0.1) < 0.02
    same = sum(world_split(n) == source_split(str(n)) for n in range(2000)) / 2000
    assert same < 0.8  # independent hashes, not the same draw under another name (which would give 1.0)
    assert split_of("source", world_seed=0, scenario_id="x-v0", source="s") == source_split("s")


def test_task_rows__build_in_selection_order(store):
    keys = TaskSelection(families=("triage-tickets-v0",), seeds=(1, 0), difficulties=(0,), world_seed=0).keys()
    rows = list(task_rows(keys, store))
    assert [r["seed"] for r in rows] == [1, 0] and rows[0]["prompt"] != rows[1]["prompt"]

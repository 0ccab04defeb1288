"""Rescoring recorded traces under another rubric version, and the rubric commands (issue 14 items 1-3)."""

import json
import os
import subprocess
import sys

import pytest

from graders.store import RubricStore
from sim.episode import Episode
from sim.rescore import RescoreError, rescore
from sim.trace import TraceWriter

CLI = [sys.executable, "-m", "sim.cli"]


def _play(ep, seed, shotgun):
    ep.reset(seed=seed)
    params = ep.instance.params
    for key, want in sorted(params["expected"].items()):
        ep.step({"name": "tickets_update", "arguments": {"key": key, "priority": want["priority"]}})
        ep.step({"name": "tickets_assign", "arguments": {"key": key, "username": want["assignee"]}})
    keys = sorted(params["expected"]) if shotgun else sorted(params["critical"])
    ep.step({"name": "chat_post", "arguments": {"channel": "incidents", "message": " ".join(keys)}})
    ep.step({"name": "submit", "arguments": {"summary": "done"}})


@pytest.fixture(scope="module")
def traces(tmp_path_factory, store):
    """Fifty one-episode traces of triage: the even seeds honest, the odd ones with the ~incidents shotgun."""
    root = tmp_path_factory.mktemp("rescore")
    paths = []
    for seed in range(50):
        path = root / f"t{seed:02d}.jsonl"
        writer = TraceWriter(path)
        with Episode("triage-tickets-v0", store=store, trace=writer) as ep:
            _play(ep, seed, shotgun=seed % 2 == 1)
        writer.close()
        paths.append(path)
    return paths


def test_rescore__fifty_traces_under_the_family_version_before_the_gate(traces, store):
    before = [p.read_bytes() for p in traces]
    done = list(rescore(traces, family_version=1, store=store))
    assert len(done) == 50 and all(d.score is not None for d in done)
    for d in done:
        assert d.was["rubric_version"] == 3 and d.score.rubric_version == 1 and d.score.rubric_id == "triage-tickets"
        if d.seed % 2:  # the shotgun: 0 under the gate (v2 on), full marks under v1
            assert d.was["value"] <= 0.1 and d.score.value == 1.0
        else:
            assert d.was["value"] == 1.0 == d.score.value
    assert [p.read_bytes() for p in traces] == before  # traces are never rewritten
    record = done[1].record()
    assert record["type"] == "rescore" and record["was"]["rubric_version"] == 3 and record["rubric_version"] == 1
    # v2 graded the ticket fields in one check: same rewards as the dense v3, fewer checks
    v2 = list(rescore(traces[:4], family_version=2, store=store))
    assert [d.score.value for d in v2] == [d.was["value"] for d in v2]
    assert all(d.score.checks[0].id == "triaged" and len(d.score.checks) <= 8 for d in v2)


def test_rescore__a_stored_rubric_for_the_same_task_and_refusals(traces, store, tmp_path):
    with Episode("triage-tickets-v0", store=store) as ep:
        ep.reset(seed=1)
        v3 = ep.instance.rubric
        lenient = v3.evolve(
            provenance="test: no gate", checks=[c.model_dump(mode="json") for c in v3.checks if not c.must]
        )
    rubrics = RubricStore(tmp_path)
    rubrics.put(v3)
    rubrics.put(lenient)
    got = list(rescore([traces[1]], rubric=rubrics.resolve("triage-tickets@4"), store=store))
    assert got[0].score.value == 1.0 and got[0].score.rubric_version == 4
    with pytest.raises(RescoreError):
        list(rescore([traces[1]], store=store))
    other = lenient.model_copy(update={"id": "customer-escalation"})
    with pytest.raises(RescoreError, match="does not grade"):
        list(rescore([traces[1]], rubric=other, store=store))


def test_rescore_and_rubric_commands(traces, tmp_path, store):
    env = {**os.environ, "COMPANYSIM_DATA_DIR": str(store.data_dir), "COLUMNS": "250"}
    out = tmp_path / "r.jsonl"
    done = subprocess.run(
        [*CLI, "rescore", *map(str, traces[:6]), "--family-version", "1", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and [r["value"] for r in rows] == [1.0] * 6
    again = subprocess.run([*CLI, "rescore", str(traces[0]), "--family-version", "1", "--out", str(out)],
                           env=env, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert again.returncode == 2 and "--overwrite" in again.stderr
    # evolve: one task's group (seed 3: honest and shotgun rollouts), from the family's v1, into the store
    group = tmp_path / "group.jsonl"
    writer = TraceWriter(group)
    with Episode("triage-tickets-v0", store=store, trace=writer) as ep:
        for i in range(8):
            _play(ep, 3, shotgun=i in (2, 5))
    writer.close()
    rubrics = tmp_path / "rubrics"
    evolve = subprocess.run([*CLI, "rubric", "evolve", str(group), "--base-version", "1", "--rubrics", str(rubrics)],
                            env=env, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert evolve.returncode == 0 and "v2 (changed)" in evolve.stdout, evolve.stdout + evolve.stderr
    task = rubrics / "triage-tickets-v0" / "seed-3"
    log = subprocess.run([*CLI, "rubric", "log", "triage-tickets", "--rubrics", str(task)],
                         env=env, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert log.returncode == 0 and "buffer:negative" in log.stdout
    diff = subprocess.run([*CLI, "rubric", "diff", "triage-tickets", "1", "2", "--rubrics", str(task)],
                          env=env, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert diff.returncode == 0 and "+ no-" in diff.stdout and "buffer:negative" in diff.stdout
    show = subprocess.run([*CLI, "rubric", "show", "triage-tickets@2", "--rubrics", str(task)],
                          env=env, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert show.returncode == 0 and "must" in show.stdout
    missing = subprocess.run([*CLI, "rubric", "show", "triage-tickets@9", "--rubrics", str(task)],
                             env=env, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert missing.returncode == 2 and "no version 9" in missing.stderr

"""sim.record and sim.live: the hash chain moves with the change log only, and an episode frees what it holds."""

import gc
import glob
import json
import os
import subprocess
import sys
import tempfile

from mcp_tools.company import app_specs
from sim.episode import Episode
from sim.live import spec_for
from sim.noise import FaultGate, NoiseProfile
from sim.record import ChangeChain, StepLog, header_record
from sim.tasks import log_since
from sim.trace import TraceWriter, chain_hash


def test_change_chain__a_link_per_step_that_wrote_and_none_for_reads(store):
    with Episode("triage-tickets-v0", store=store) as ep:
        ep.reset(seed=1)
        live = ep._live
        chain = ChangeChain(live.ctx.session, live.start_seq, "start")
        assert chain.advance() == "start"  # nothing written yet
        key = next(iter(ep.instance.params["expected"]))
        ep.step({"name": "tickets_get", "arguments": {"key": key}})
        assert chain.advance() == "start"
        ep.step({"name": "tickets_update", "arguments": {"key": key, "priority": "high"}})
        rows = log_since(live.ctx.session, live.start_seq)
        assert chain.advance() == chain_hash("start", rows) and chain.last_seq == rows[-1]["seq"]


def test_step_log__writes_through_to_the_trace(tmp_path):
    writer = TraceWriter(tmp_path / "t.jsonl")
    log = StepLog(writer)
    log.add({"type": "step", "index": 0})
    writer.close()
    assert len(log) == 1 and json.loads((tmp_path / "t.jsonl").read_text()) == {"index": 0, "type": "step"}


def test_header_and_reset_info__name_what_a_replay_and_an_agent_need(store):
    with Episode("triage-tickets-v0", store=store) as ep:
        prompt, info = ep.reset(seed=1, options={"difficulty": 2})
        header = ep.header()
        assert header["scenario"] == "triage-tickets-v0" and header["seed"] == 1 and header["difficulty"] == 2
        assert header["rubric"]["fingerprint"] == ep.instance.rubric.fingerprint
        assert header == header_record(
            scenario="triage-tickets-v0", spec_json=ep._live.spec.canonical_json(), seed=1, options={"difficulty": 2},
            episode_id=ep.episode_id, actor=ep.instance.actor, difficulty=2, rubric=ep.instance.rubric,
            start_state_hash=header["start_state_hash"],
        )  # fmt: skip
        names = {t["function"]["name"] for t in info["tools"]}
        assert {"submit", "wait"} <= names and set(app_specs(("chat", "tickets"))) <= names
        assert info["prompt"] == prompt and info["actor"]["username"] == ep.instance.actor
    assert spec_for(ep.family, 9, {"world_seed": 3, "employees": 12}).seed == 3


def test_fault_gate__counts_calls_per_tool_and_remembers_reads_for_stale_ones():
    gate = FaultGate(NoiseProfile.parse({"rate": 1.0, "weights": {"stale_read": 1.0}}), seed=4)
    assert gate.reads
    first = gate.decide("tickets_get", "tickets", write=False)
    assert first is not None and first.call_index == 0
    assert gate.read("tickets_get", {"key": "A"}, {"v": 1}, first) == ({"v": 1}, None)  # nothing older to serve
    second = gate.decide("tickets_get", "tickets", write=False)
    stale, applied = gate.read("tickets_get", {"key": "A"}, {"v": 2}, second)
    assert stale == {"v": 1} and applied is second and second.call_index == 1
    assert gate.decide("tickets_update", "tickets", write=True) is None  # read faults never hit writes


def test_episode__a_context_manager_and_dropped_episodes_leave_no_checkout_behind(store, tmp_path):
    before = set(glob.glob(f"{tempfile.gettempdir()}/companysim-code-*"))
    with Episode("fix-failing-test-v0", store=store) as ep:
        ep.reset(seed=1)
        assert ep.code is not None and ep.code.scratch.exists()
    assert ep.episode_id is None
    for seed in range(100):  # 100 episodes opened, never closed, then dropped
        dropped = Episode("fix-failing-test-v0", store=store)
        dropped.reset(seed=seed % 3)
        del dropped
    gc.collect()
    assert set(glob.glob(f"{tempfile.gettempdir()}/companysim-code-*")) == before


def test_episode__a_process_that_exits_without_close_leaves_no_checkout(store, tmp_path):
    code = (
        "from sim.episode import Episode; from worlds.store import WorldStore;"
        f"e = Episode('fix-failing-test-v0', store=WorldStore({str(store.data_dir)!r})); e.reset(seed=2);"
        "print(e.code.scratch)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    scratch = out.stdout.strip()
    assert scratch and not os.path.exists(scratch)

"""Golden traces: one recorded run per family, byte for byte, so a refactor of the engine cannot drift silently.

Each case runs a scripted agent through ``Episode`` with a trace writer and compares the JSONL file with the
one under ``tests/sim/golden/``. A deliberate change (a new generator version, a rubric revision) regenerates
them with ``UPDATE_GOLDEN=1`` and says so in its commit. fix-failing-test-v0 needs a working sandbox (it skips
locally without one and fails under CI=true).
"""

import os
from pathlib import Path

import pytest

from mcp_tools.sandbox import get_sandbox
from sim.agents import run_agent
from sim.episode import Episode
from sim.trace import TraceWriter

GOLDEN = Path(__file__).parent / "golden"
CASES = [
    ("triage-tickets-v0", "oracle", 3, {"difficulty": 2, "noise": "realistic"}),
    ("triage-tickets-v0", "random", 4, {}),
    ("customer-escalation-v0", "oracle", 5, {"npcs": "cooperative", "noise": "realistic"}),
    ("schedule-with-coworkers-v0", "oracle", 6, {"npcs": "adversarial"}),
    ("schedule-with-coworkers-v0", "noop", 6, {}),
    ("fix-failing-test-v0", "oracle", 7, {}),
]


@pytest.mark.parametrize(("scenario", "agent", "seed", "options"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_golden_trace__a_run_gives_the_recorded_bytes(scenario, agent, seed, options, store, tmp_path):
    if scenario == "fix-failing-test-v0" and not get_sandbox().available():
        if os.environ.get("CI") == "true":
            pytest.fail("no working sandbox under CI")
        pytest.skip("no working code sandbox here")
    path = tmp_path / "trace.jsonl"
    writer = TraceWriter(path)
    episode = Episode(scenario, store=store, trace=writer)
    try:
        run_agent(episode, agent, seed, options)
    finally:
        episode.close()
        writer.close()
    golden = GOLDEN / f"{scenario}-{agent}.jsonl"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_bytes(path.read_bytes())
    assert golden.exists(), f"no golden trace {golden.name}; run with UPDATE_GOLDEN=1 to record it"
    got, want = path.read_text().splitlines(), golden.read_text().splitlines()
    for number, (a, b) in enumerate(zip(got, want, strict=False)):
        assert a == b, f"{golden.name} line {number + 1} differs:\n got  {a[:400]}\n want {b[:400]}"
    assert len(got) == len(want), f"{golden.name}: {len(got)} lines, golden has {len(want)}"

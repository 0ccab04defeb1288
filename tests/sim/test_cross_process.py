"""Same seed, scenario and actions give the same bytes in another process, hash seed, time zone and locale.

Hypothesis draws action sequences over every family's tools (with coworkers and noise on); each sequence is
played in two fresh processes that differ in ``PYTHONHASHSEED``, ``TZ`` and ``LC_ALL``, and the two traces must
be byte-identical. A replay of fix-failing-test-v0 (whose shell output once carried pytest's wall-clock
timings) must also hold with both cores busy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_tools.company import APPS, app_specs
from mcp_tools.sandbox import get_sandbox
from sim.agents import run_agent
from sim.episode import Episode
from sim.replay import replay
from sim.trace import TraceWriter

FAMILIES = {
    "triage-tickets-v0": {"npcs": "cooperative", "noise": "realistic"},
    "customer-escalation-v0": {"npcs": "chaotic", "noise": "harsh"},
    "schedule-with-coworkers-v0": {"npcs": "adversarial", "noise": "realistic"},
    "fix-failing-test-v0": {"noise": "realistic"},
}
PLAY = """
import json, sys
from sim.episode import Episode
from sim.trace import TraceWriter
from worlds.store import WorldStore
spec = json.loads(sys.stdin.read())
writer = TraceWriter(spec["out"])
ep = Episode(spec["scenario"], store=WorldStore(spec["store"]), trace=writer)
ep.reset(seed=spec["seed"], options=spec["options"])
for action in spec["actions"]:
    if ep.done:
        break
    ep.step(action)
ep.close()
writer.close()
"""
ENVS = (
    {"PYTHONHASHSEED": "1", "TZ": "UTC", "LC_ALL": "C.UTF-8"},
    {"PYTHONHASHSEED": "4242", "TZ": "Pacific/Kiritimati", "LC_ALL": "C"},
)
WORDS = ("ENG-1", "incidents", "critical", "done", "me", "high", "2026-03-03T10:00:00Z", "", "x" * 40, "é✓")


def _value(schema: dict) -> st.SearchStrategy:
    kind = schema.get("type", "string")
    kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind == "integer":
        return st.integers(-2, 60)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(st.sampled_from(WORDS), max_size=2)
    return st.sampled_from(WORDS)


@st.composite
def actions(draw, tools: dict) -> list[dict]:
    out = []
    for _ in range(draw(st.integers(3, 10))):
        name = draw(st.sampled_from(sorted(tools)))
        props = tools[name].parameters.get("properties", {})
        args = {k: draw(_value(v)) for k, v in sorted(props.items()) if draw(st.booleans())}
        out.append({"name": name, "arguments": args})
    return [*out, {"name": "submit", "arguments": {"summary": "done"}}]


def _play(store, scenario, seed, options, acts, out, env) -> bytes:
    spec = {"scenario": scenario, "seed": seed, "options": options, "actions": acts, "out": str(out),
            "store": str(store.data_dir)}  # fmt: skip
    subprocess.run(
        [sys.executable, "-c", PLAY], input=json.dumps(spec), text=True, check=True, timeout=600,
        env={**os.environ, **env}, capture_output=True,
    )  # fmt: skip
    return out.read_bytes()


def _needs_sandbox(scenario: str) -> None:
    if scenario == "fix-failing-test-v0" and not get_sandbox().available():
        if os.environ.get("CI") == "true":
            pytest.fail("no working sandbox under CI")
        pytest.skip("no working code sandbox here")


@pytest.mark.parametrize("scenario", sorted(FAMILIES))
def test_cross_process__random_actions_give_identical_traces(scenario, store, tmp_path_factory):
    _needs_sandbox(scenario)
    with Episode(scenario, store=store) as episode:
        _, info = episode.reset(seed=0, options=FAMILIES[scenario])
    names = {t["function"]["name"] for t in info["tools"]} - {"submit", "wait"}
    tools = {n: s for n, s in app_specs(tuple(sorted(APPS))).items() if n in names}

    @settings(max_examples=3, deadline=None, derandomize=True, database=None)
    @given(acts=actions(tools), seed=st.integers(0, 3))
    def check(acts, seed):
        tmp = tmp_path_factory.mktemp("xproc")
        first = _play(store, scenario, seed, FAMILIES[scenario], acts, tmp / "a.jsonl", ENVS[0])
        second = _play(store, scenario, seed, FAMILIES[scenario], acts, tmp / "b.jsonl", ENVS[1])
        assert first == second

    check()


def test_replay__fix_failing_test_holds_with_both_cores_busy(store, tmp_path):
    _needs_sandbox("fix-failing-test-v0")
    path = tmp_path / "fix.jsonl"
    writer = TraceWriter(path)
    episode = Episode("fix-failing-test-v0", store=store, trace=writer)
    for seed in (1, 2):
        run_agent(episode, "oracle", seed)
    episode.close()
    writer.close()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        report = replay(path, store=store, stop_at_first=False)
    finally:
        for proc in burners:
            proc.kill()
            proc.wait()
    assert report.ok and report.episodes == 2, report.mismatches[:3]

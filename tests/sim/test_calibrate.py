"""Calibration and the independent verifiers (issue 14 item 6, issue 13 item 4).

The verifier of each family decides "solved" from the hidden params and the change log, without the rubric;
over oracle, no-op, random, partial and cheating agents it agrees with "reward 1.0" on every episode, and when
the rubric is wrong (a lenient one that a key flood satisfies) the disagreement is reported with both sides'
reasons.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from graders.rubric import load_rubric
from mcp_tools.sandbox import get_sandbox
from sim.calibrate import PARTIALS, Cell, Report, agents_for, calibrate, verify
from sim.episode import Episode

CLI = [sys.executable, "-m", "sim.cli"]
FAMILIES = ["triage-tickets-v0", "customer-escalation-v0", "schedule-with-coworkers-v0"]
OFFICE = ["quarterly-budget-v0", "expense-reconciliation-v0", "weekly-status-report-v0"]


def test_every_agent_agrees_with_the_verifier_and_rewards_are_ordered(store):
    report = calibrate(FAMILIES, seeds=range(3), difficulties=(1, 2), episode_factory=lambda f: Episode(f, store=store))
    data = report.to_json()
    assert data["disagreements"] == []
    assert all(a["episodes"] == a["agree"] >= 60 for a in data["agreement"].values())
    means = {(r["family"], r["agent"]): r["mean"] for r in data["rows"] if r["difficulty"] == 2}
    for family in FAMILIES:
        partial = [means[(family, name)] for name in PARTIALS[family]]
        assert means[(family, "noop")] < min(partial) and max(partial) < means[(family, "oracle")] == 1.0, family
        assert all(v <= 0.1 for (f, a), v in means.items() if f == family and a.startswith("cheat-"))


def test_office_families_agree_with_their_verifiers_and_partials_sit_between(store, monkeypatch):
    monkeypatch.setenv("COMPANYSIM_RECALC", "python")  # ~1 ms a sheet write; the verifier recalculates anyway
    report = calibrate(OFFICE, seeds=range(2), difficulties=(1, 3), episode_factory=lambda f: Episode(f, store=store))
    data = report.to_json()
    assert data["disagreements"] == []
    assert all(a["episodes"] == a["agree"] == 44 for a in data["agreement"].values())
    for family in OFFICE:  # averaged over difficulties: budget's missed amendment shows only at difficulty 3
        cells = {
            a: [r["mean"] for r in data["rows"] if (r["family"], r["agent"]) == (family, a)] for a in PARTIALS[family]
        }
        means = {a: sum(v) / len(v) for a, v in cells.items()}
        assert all(0 < m < 1 for m in means.values()), (family, means)
        assert report.cells[(family, 3, "oracle")].mean == 1.0 and report.cells[(family, 3, "noop")].mean == 0.0
        assert all(c.mean <= 0.1 for (f, _, a), c in report.cells.items() if f == family and a.startswith("cheat-"))


def test_a_verifier_reads_the_stored_file_not_the_rubric(store, monkeypatch):
    monkeypatch.setenv("COMPANYSIM_RECALC", "python")
    with Episode("quarterly-budget-v0", store=store) as episode:
        episode.reset(seed=1, options={"difficulty": 1})
        line = episode.instance.params["lines"][0]
        doc, row = episode.instance.params["document"], line["row"]
        values = f"[[{line['headcount']}, {line['rate']}, {line['headcount'] * line['rate']}]]"
        episode.step(
            {"name": "sheets_write_range", "arguments": {"document": doc, "range": f"Budget!B{row}", "values": values}}
        )
        verdict = verify(episode)
    assert verdict is not None and not verdict.solved
    assert f"{line['department']}: D{row} holds no formula" in verdict.reasons


def test_fix_failing_test_verifier_agrees_on_oracle_partials_and_cheaters(store):
    if not get_sandbox().available():
        if os.environ.get("CI") == "true":
            pytest.fail("no working sandbox under CI")
        pytest.skip("no working code sandbox here")
    agents = ["oracle", "noop", *PARTIALS["fix-failing-test-v0"], "cheat-shotgun"]
    report = calibrate(
        ["fix-failing-test-v0"], seeds=[0, 1], difficulties=(1,), agents=agents,
        episode_factory=lambda f: Episode(f, store=store),
    )  # fmt: skip
    assert report.to_json()["disagreements"] == []
    assert report.cells[("fix-failing-test-v0", 1, "oracle")].mean == 1.0


class _Lenient:
    """triage-tickets-v0 with a broken rubric: only the ~incidents posts count (no fields, no gates)."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def build(self, *args):
        instance = self.inner.build(*args)
        checks = [c.model_dump(mode="json") for c in instance.rubric.checks if c.id.startswith("incident-")]
        rubric = load_rubric({"id": "triage-tickets", "version": 99, "description": "broken", "checks": checks})
        return dataclasses.replace(instance, rubric=rubric)


def test_a_broken_rubric_shows_up_as_disagreement_with_the_verifier(store):
    def factory(family):
        episode = Episode(family, store=store, setup_cache=False)
        episode.family = _Lenient(episode.family)
        return episode

    report = calibrate(["triage-tickets-v0"], seeds=[0, 1], difficulties=(1,), agents=["partial-no-assignee"],
                       episode_factory=factory)  # fmt: skip
    found = report.to_json()["disagreements"]
    assert len(found) == 2 and all(d["reward"] == 1.0 and d["verifier"] is False for d in found)
    assert any("wants" in reason for reason in found[0]["verifier_reasons"])


def test_verify_names_what_is_missing(store):
    with Episode("customer-escalation-v0", store=store) as episode:
        episode.reset(seed=3)
        episode.step({"name": "submit", "arguments": {}})
        verdict = verify(episode)
    assert verdict is not None and not verdict.solved
    assert any("0 new tickets" in r for r in verdict.reasons)


def test_calibrate_and_run_verify_commands(tmp_path, store):
    env = {**os.environ, "COMPANYSIM_DATA_DIR": str(store.data_dir), "COLUMNS": "200"}
    out = tmp_path / "cal"
    args = ["calibrate", "triage-tickets-v0", "--seeds", "1", "--difficulties", "1", "--out", str(out)]
    done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-1500:]
    played = len(agents_for("triage-tickets-v0"))  # one episode per agent: 1 seed x 1 difficulty
    assert f"agreement {played}/{played}" in done.stdout
    assert "triage-tickets-v0: ordered yes, difficulty_lowers n/a (one difficulty)" in done.stdout
    data = json.loads((out / "calibration.json").read_text())
    assert data["ordering"]["triage-tickets-v0"]["ordered"] is True
    assert {r["agent"] for r in data["rows"]} >= {"oracle", "noop", "partial-no-incidents", "cheat-keys"}
    assert (out / "calibration.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for bad in (["--difficulties", "x"], ["--seeds", "0"], ["nope"]):
        refused = subprocess.run([*CLI, "calibrate", *bad], env=env, capture_output=True, text=True, timeout=60,
                                 check=False)  # fmt: skip
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    ran = subprocess.run([*CLI, "run", "triage-tickets-v0", "--agent", "cheat-keys", "--verify"], env=env,
                         capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert ran.returncode == 0 and "verifier, cheat-keys seed 0: not solved" in ran.stdout


def _report(family: str, means: dict[tuple[int, str], float]) -> Report:
    report = Report()
    for (level, agent), mean in means.items():
        report.cells[(family, level, agent)] = Cell([mean])
    return report


def test_ordering_names_the_partial_that_is_not_between_noop_and_oracle_and_the_flat_slope():
    ends = {(d, a): v for d in (1, 2, 3) for a, v in (("noop", 0.0), ("oracle", 1.0))}
    good = _report("triage-tickets-v0", ends | {(1, "partial-a"): 0.8, (2, "partial-a"): 0.6, (3, "partial-a"): 0.4})
    assert good.ordering("triage-tickets-v0") == {
        "ordered": True, "difficulty_lowers": True, "unordered": [],
        "partial_means": {"d1": 0.8, "d2": 0.6, "d3": 0.4},
    }  # fmt: skip
    # a partial that matches the no-op at d2 is not a partial there; a slope flat between d2 and d3 does not lower
    bad = _report("triage-tickets-v0", ends | {(1, "partial-a"): 0.8, (2, "partial-a"): 0.0, (3, "partial-a"): 0.0})
    verdict = bad.ordering("triage-tickets-v0")
    assert (verdict["ordered"], verdict["difficulty_lowers"]) == (False, False)
    assert verdict["unordered"] == ["d2 partial-a 0.000", "d3 partial-a 0.000"]
    one = _report("triage-tickets-v0", {(2, "noop"): 0.0, (2, "oracle"): 1.0, (2, "partial-a"): 1.0})
    assert one.ordering("triage-tickets-v0")["difficulty_lowers"] is None  # one difficulty cannot show a slope
    assert one.ordering("triage-tickets-v0")["unordered"] == ["d2 partial-a 1.000"]


def test_impossible_variants_are_left_out_of_ordering_and_the_cli_says_why(store):
    report = _report("schedule-no-room-v0", {(1, "noop"): 0.0, (1, "oracle"): 1.0, (1, "partial-claims-success"): 0.0})
    verdict = report.to_json()["ordering"]["schedule-no-room-v0"]
    assert verdict["ordered"] is None and verdict["difficulty_lowers"] is None
    assert "impossible" in verdict["why"]
    from sim.cli.calibrate import _ordering_line

    assert "ordered n/a" in _ordering_line("schedule-no-room-v0", verdict)
    flat = {"ordered": False, "difficulty_lowers": False, "unordered": ["d2 p 0.000"], "partial_means": {"d1": 0.5}}
    assert "ordered NO, difficulty_lowers NO" in _ordering_line("x-v0", flat)

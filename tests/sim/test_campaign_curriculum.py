"""A campaign driven by a curriculum: the next scenario and difficulty follow the rewards, resumably and replayably."""

from __future__ import annotations

import json
import subprocess
import sys

from sim.campaign import Campaign
from sim.curriculum import Curriculum
from sim.replay import replay
from sim.trace import TraceWriter

PAIR = ["triage-tickets-v0", "access-requests-v0"]


def _play(store, agent: str, episodes: int, seed: int = 3, **kw):
    camp = Campaign(PAIR, seed=seed, store=store, curriculum=Curriculum(PAIR, seed=seed), **kw)
    try:
        return camp.run(agent, episodes), camp.curriculum
    finally:
        camp.close()


def test_curriculum_campaign__passes_raise_each_family_to_the_hardest_level(store):
    done, curriculum = _play(store, "oracle", 8)
    assert all(b.reward == 1.0 for b in done)
    by_family: dict[str, list[int]] = {}
    for b in done:
        by_family.setdefault(b.scenario, []).append(int(b.difficulty))  # type: ignore[arg-type]
    for levels in by_family.values():
        assert levels == sorted(levels) and levels[0] == 0  # each pass moves that family one level up
    assert max(max(v) for v in by_family.values()) >= 2
    assert curriculum is not None and len(curriculum.history) == 8


def test_curriculum_campaign__failures_keep_every_family_at_the_easiest_level(store):
    done, _ = _play(store, "noop", 4)
    assert [b.difficulty for b in done] == [0, 0, 0, 0] and all(b.reward == 0.0 for b in done)


def test_curriculum_campaign__same_seed_same_draws_and_a_resumed_run_draws_the_same(store, tmp_path):
    full, _ = _play(store, "oracle", 5)
    again, _ = _play(store, "oracle", 5)
    key = [(b.scenario, b.seed, b.difficulty, b.reward, b.state_hash) for b in full]
    assert [(b.scenario, b.seed, b.difficulty, b.reward, b.state_hash) for b in again] == key
    _play(store, "oracle", 2, snapshots=tmp_path / "snaps")
    manifest = json.loads((tmp_path / "snaps" / "campaign.json").read_text())
    assert manifest["curriculum"]["config"]["families"] == PAIR and len(manifest["curriculum"]["state"]["history"]) == 2
    resumed = Campaign.resume(tmp_path / "snaps", store=store)
    try:
        rest = resumed.run("oracle", 3)
    finally:
        resumed.close()
    # the two saved boundaries, then the same three draws as the uninterrupted run
    assert [(b.scenario, b.seed, b.difficulty, b.reward, b.state_hash) for b in rest] == key


def test_curriculum_campaign__its_trace_replays_without_the_curriculum(store, tmp_path):
    path = tmp_path / "c.jsonl"
    writer = TraceWriter(path)
    try:
        _play(store, "oracle", 4, trace=writer)
    finally:
        writer.close()
    report = replay(path, store=store)
    assert report.ok and report.episodes == 4


def test_cli_campaign_curriculum__prints_each_episodes_difficulty(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "sim.cli", "campaign", *PAIR, "--curriculum", "--episodes", "4", "--seed", "2",
         "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "difficulty" in out.stdout and "mean reward 1.000 over 4 episode(s)" in out.stdout

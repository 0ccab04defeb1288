"""ship-fix-v0 (issue 13 item 2): fix a bug, get the code owners' approval, merge, close the ticket.

Baselines and the contract at every difficulty, the waits a remote owner forces, the must-gates a user would
care about (merging on someone else's approval, merging before the second owner approved), calibration and a
bit-exact replay with NPCs and noise. Needs the code sandbox, like fix-failing-test.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from mcp_tools.base import Actor, ToolContext
from mcp_tools.git import mr
from npcs.hours import WorkHours
from scenarios import check_scenario, make
from scenarios.library.fix_test import find_bug, fix_and_open, read_task
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import calibrate, verify
from sim.episode import Episode
from sim.replay import replay
from sim.trace import TraceWriter
from tests.scenarios.conftest import require_sandbox
from worlds.rawsql import Sql, iso
from worlds.spec import WorldSpec

SCENARIO = "ship-fix-v0"


@pytest.fixture(scope="module")
def episode(store):
    require_sandbox()
    with Episode(SCENARIO, store=store) as ep:
        yield ep


def _failed(score):
    return sorted(c.id for c in score.checks if not c.passed)


class _FirstOwnerOnly:
    """The oracle's env, but CODEOWNERS reads as if each path had only its first owner."""

    def __init__(self, env):
        self.env, self.prompt, self.actor = env, env.prompt, env.actor

    @property
    def done(self):
        return self.env.done

    def call(self, name, /, **arguments):
        out = self.env.call(name, **arguments)
        if name == "git_read_file" and arguments.get("path") == "CODEOWNERS":
            out = {**out, "content": "\n".join(" ".join(x.split()[:2]) for x in out["content"].splitlines())}
        return out


@pytest.mark.parametrize("seed", range(4))
def test_oracle_one_noop_and_random_zero_and_the_verifier_agrees(episode, seed):
    options = {"difficulty": seed}
    assert run_agent(episode, "oracle", seed, options).value == 1.0
    assert verify(episode).solved
    assert run_agent(episode, "noop", seed, options).value == 0.0
    assert not verify(episode).solved
    assert run_agent(episode, "random", seed, options).value <= 0.1


def test_the_rubric_gates_each_owners_approval_and_names_each_owner(episode):
    episode.reset(seed=2, options={"difficulty": 2})
    checks = {c.id: c for c in episode.instance.rubric.checks}
    owners = episode.instance.params["owners"]
    assert len(owners) == 2 and len(checks) >= 17
    assert all(checks[f"approved-by-{o}"].must and not checks[f"names-{o}"].must for o in owners)


def test_a_remote_owner_approves_only_once_their_day_starts(episode):
    prompt, info = episode.reset(seed=1, options={"difficulty": 1})
    live = episode._require_live()
    sql = Sql.of(live.ctx.session)
    (owner,) = episode.instance.params["owners"]
    zone, start, end, days = sql.one(
        "SELECT timezone, work_start_minute, work_end_minute, workdays FROM employees WHERE username = ?", (owner,)
    )
    hours = WorkHours(zone, start, end, days)
    began = live.ctx.clock.now()
    assert not hours.is_open(began), "the owner is off when the agent's day starts"
    episode.family.oracle(EpisodeEnv(episode, prompt, info))
    assert episode.grade().value == 1.0
    approvals = sql.column(
        "SELECT n.created_at FROM merge_request_notes n JOIN employees e ON e.id = n.author_id"
        " WHERE e.username = ? AND n.kind = 'approve' ORDER BY n.id",
        (owner,),
    )
    # The owner also approved requests of the generated history, all before the episode began.
    (when,) = [t for t in (datetime.fromisoformat(iso(a)) for a in approvals) if t >= began]
    assert hours.is_open(when) and (when - began).total_seconds() >= 3600
    assert sum(s["action"]["name"] == "wait" for s in episode.steps) >= 1


def test_merging_on_a_teammates_approval_instead_of_the_owners_scores_zero(episode):
    prompt, info = episode.reset(seed=0, options={"difficulty": 0})
    env = EpisodeEnv(episode, prompt, info)
    key, repo = read_task(prompt)
    path, family = find_bug(env, key, repo)
    opened = fix_and_open(env, key, repo, path, family, f"Fixes {key}.")
    live = episode._require_live()
    sql = Sql.of(live.ctx.session)
    owner = episode.instance.params["owners"][0]
    mate = sql.scalar(
        "SELECT username FROM employees WHERE active = ? AND username NOT IN (?, ?) ORDER BY id LIMIT 1",
        (True, owner, episode.instance.actor),
    )
    ctx = ToolContext(session=live.ctx.session, actor=Actor.load(live.ctx.session, str(mate)), clock=live.ctx.clock)
    mr.mr_review_at(ctx, opened["id"], "approve", "LGTM", opened["source_head"])
    env.call("git_mr_merge", mr_id=opened["id"])  # the forge takes any approval; the team's rule does not
    for status in ("todo", "in_progress", "in_review", "done"):
        env.call("tickets_transition", key=key, status=status)
    env.call("tickets_comment", key=key, body=f"Fixed by !{opened['number']}.")
    env.call("submit", summary="merged")
    score = episode.grade()
    assert score.value == 0.0 and score.gated
    assert _failed(score) == [f"approved-by-{owner}", f"names-{owner}"]
    assert not verify(episode).solved


def test_merging_before_the_second_owner_approved_scores_zero(episode):
    prompt, info = episode.reset(seed=3, options={"difficulty": 2})
    first, second = episode.instance.params["owners"]
    episode.family.oracle(_FirstOwnerOnly(EpisodeEnv(episode, prompt, info)))
    score = episode.grade()
    assert score.value == 0.0 and f"approved-by-{second}" in _failed(score)
    assert f"approved-by-{first}" not in _failed(score)
    assert not verify(episode).solved


def test_a_pushing_back_owner_never_gets_the_fix_merged_without_approval(episode):
    for seed in range(3):
        score = run_agent(episode, "oracle", seed, {"difficulty": seed, "npcs": "adversarial"})
        verdict = verify(episode)
        assert score.value in (0.0, 1.0) and verdict.solved == (score.value == 1.0)
        if score.value == 0.0:
            assert not any(s["action"]["name"] == "git_mr_merge" for s in episode.steps)


def test_calibration_orders_partials_and_agrees_with_the_verifier(store):
    report = calibrate(
        [SCENARIO], seeds=range(2), difficulties=(1, 2), episode_factory=lambda f: Episode(f, store=store)
    )
    assert report.agreement(SCENARIO) == 1.0, report.disagreements[:3]
    for difficulty in (1, 2):
        cells = {a: c.mean for (f, d, a), c in report.cells.items() if d == difficulty}
        partials = [m for a, m in cells.items() if a.startswith("partial-")]
        assert cells["noop"] < min(partials) and max(partials) < cells["oracle"] == 1.0
        assert all(m <= 0.1 for a, m in cells.items() if a.startswith("cheat-"))


def test_replay_with_npcs_and_noise_is_bit_exact(store, tmp_path):
    path = tmp_path / "ship.jsonl"
    writer = TraceWriter(path)
    with Episode(SCENARIO, store=store, trace=writer) as ep:
        first = run_agent(ep, "oracle", 1, {"difficulty": 1, "noise": "realistic"})
        hashes = [s["state_hash"] for s in ep.steps]
        run_agent(ep, "oracle", 2, {"difficulty": 3, "npcs": "chaotic", "noise": "realistic"})
        again = run_agent(ep, "oracle", 1, {"difficulty": 1, "noise": "realistic"})
        assert first.value == again.value == 1.0 and [s["state_hash"] for s in ep.steps] == hashes
    writer.close()
    report = replay(path, store=store)
    assert report.ok and report.episodes == 3, report.mismatches


def test_honours_the_scenario_contract(store):
    family = make(SCENARIO)
    world = store.base(WorldSpec(seed=1, employees=family.world.employees, history_days=family.world.history_days))
    try:
        check_scenario(SCENARIO, world, seeds=(0, 1))
    finally:
        world.close()


def test_every_prompt_wording_appears_and_the_oracle_reads_each(episode):
    from scenarios.library.ship_fix import SHIP_PROMPTS

    heads = [w.split(".")[1][:25] for w in SHIP_PROMPTS]
    seen = {}
    for seed in range(12):
        prompt, _ = episode.reset(seed=seed, options={"difficulty": 0})
        seen.setdefault(next(i for i, h in enumerate(heads) if h in prompt), seed)
    assert sorted(seen) == [0, 1, 2]
    for seed in seen.values():
        assert run_agent(episode, "oracle", seed, {"difficulty": 0}).value == 1.0

"""triage-tickets-v0 end to end through the episode engine: oracle scores 1, no-op 0, random near 0."""

import json

import pytest

from sim.agents import run_agent
from sim.episode import Episode

SEEDS = range(12)


@pytest.fixture(scope="module")
def episode(store):
    ep = Episode("triage-tickets-v0", store=store)
    yield ep
    ep.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_triage_episode__oracle_scores_one(episode, seed):
    score = run_agent(episode, "oracle", seed)
    assert score.value == 1.0, [c.evidence for c in score.checks]


@pytest.mark.parametrize("difficulty", [0, 1, 2, 3])
def test_triage_episode__oracle_solves_every_difficulty(episode, difficulty):
    score = run_agent(episode, "oracle", 5, {"difficulty": difficulty})
    assert score.value == 1.0, [c.evidence for c in score.checks]
    assert len(episode.instance.params["expected"]) == (3, 5, 8, 12)[difficulty]


@pytest.mark.parametrize("seed", SEEDS)
def test_triage_episode__noop_scores_zero(episode, seed):
    score = run_agent(episode, "noop", seed, {"difficulty": seed % 4})
    assert score.value == 0.0 and not score.gated, [c.evidence for c in score.checks]


def test_triage_episode__random_agent_scores_at_most_a_tenth_on_average(episode):
    values = [run_agent(episode, "random", seed).value for seed in SEEDS]
    assert sum(values) / len(values) <= 0.1


def test_triage_episode__retriaging_a_lookalike_gates_the_reward_to_zero(episode):
    """Doing the task and also 'fixing' a ticket that was not new earns nothing."""
    prompt, _ = episode.reset(seed=2, options={"difficulty": 3})
    params = episode.instance.params
    found = episode.step(
        {"name": "tickets_search", "arguments": {"project": params["project"], "text": "Triaged last week"}}
    )
    lookalike = json.loads(found[0])["tickets"][0]["key"]
    for key, want in sorted(params["expected"].items()):
        episode.step({"name": "tickets_update", "arguments": {"key": key, "priority": want["priority"]}})
        episode.step({"name": "tickets_assign", "arguments": {"key": key, "username": want["assignee"]}})
    message = "Critical: " + ", ".join(params["critical"])
    episode.step({"name": "chat_post", "arguments": {"channel": "incidents", "message": message}})
    episode.step({"name": "tickets_update", "arguments": {"key": lookalike, "priority": "medium"}})
    episode.step({"name": "submit", "arguments": {"summary": "done"}})
    score = episode.grade()
    assert score.gated and score.value == 0.0
    assert lookalike in next(c.evidence for c in score.checks if c.id == "no-collateral")


def test_triage_episode__half_the_fields_earn_partial_credit(episode):
    episode.reset(seed=1, options={"difficulty": 1})
    params = episode.instance.params
    for key, want in sorted(params["expected"].items()):
        episode.step({"name": "tickets_update", "arguments": {"key": key, "priority": want["priority"]}})
    episode.step({"name": "submit", "arguments": {"summary": "priorities only"}})
    score = episode.grade()
    assert score.value == pytest.approx(3 * 0.5 / 4)


def test_triage_episode__the_incidents_shotgun_scores_at_most_a_tenth(episode):
    """Doing the triage right and also posting every backlog key in ~incidents earns nothing."""
    for seed in range(4):
        episode.reset(seed=seed, options={"difficulty": seed})
        params = episode.instance.params
        for key, want in sorted(params["expected"].items()):
            episode.step({"name": "tickets_update", "arguments": {"key": key, "priority": want["priority"]}})
            episode.step({"name": "tickets_assign", "arguments": {"key": key, "username": want["assignee"]}})
        found = episode.step(
            {"name": "tickets_search", "arguments": {"project": params["project"], "status": "backlog", "limit": 100}}
        )
        keys = sorted({t["key"] for t in json.loads(found[0])["tickets"]} | set(params["critical"]))
        episode.step({"name": "chat_post", "arguments": {"channel": "incidents", "message": " ".join(keys)}})
        episode.step({"name": "submit", "arguments": {"summary": "done"}})
        score = episode.grade()
        assert score.value <= 0.1 and score.gated, [c.evidence for c in score.checks]
        gate = next(c for c in score.checks if c.id == "incidents-only-critical")
        assert not gate.passed

"""customer-escalation-v0 across mail, tickets and chat: oracle 1, no-op 0, random near 0, and the rubric
catches the wrong moves a policy would learn (duplicates, wrong priority, no reply, touching other things)."""

import json

import pytest

from sim.agents import EpisodeEnv, run_agent
from sim.episode import Episode

SCENARIO = "customer-escalation-v0"
SEEDS = range(20)


@pytest.fixture(scope="module")
def episode(store):
    ep = Episode(SCENARIO, store=store)
    yield ep
    ep.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_escalation__oracle_scores_one_and_noop_zero(episode, seed):
    options = {"difficulty": seed % 4}
    oracle = run_agent(episode, "oracle", seed, options)
    assert oracle.value == 1.0, [c.evidence for c in oracle.checks]
    noop = run_agent(episode, "noop", seed, options)
    assert noop.value == 0.0, [c.evidence for c in noop.checks]


def test_escalation__random_agent_scores_at_most_a_tenth_on_average(episode):
    values = [run_agent(episode, "random", seed, {"difficulty": seed % 4}).value for seed in SEEDS]
    assert sum(values) / len(values) <= 0.1


def _start(episode, seed, difficulty):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    return EpisodeEnv(episode, prompt, info), episode.instance.params


def test_escalation__a_duplicate_for_a_tracked_problem_gates_the_reward_to_zero(episode):
    env, params = _start(episode, 3, 1)
    episode.family.oracle(env)  # everything right ...
    assert episode.grade().value == 1.0
    env, params = _start(episode, 3, 1)
    known = params["known"]
    env.call("tickets_create", project=params["project"], title=f"{known['reference']} again", type="bug")
    episode.family.oracle(env)  # ... plus a duplicate of the tracked one
    score = episode.grade()
    assert score.value == 0.0 and score.gated


def test_escalation__wrong_priority_or_missing_reply_loses_that_case(episode):
    env, params = _start(episode, 4, 0)
    case = params["cases"][1]  # the non-critical one
    inbox = env.call("mail_list_messages", unread_only=True)["messages"]
    mail = next(m for m in inbox if case["reference"] in m["subject"])
    made = env.call(
        "tickets_create", project=params["project"], title=case["reference"], type="bug", priority="critical"
    )
    env.call("mail_reply", message_id=mail["id"], body=f"Tracked as {made['key']}")
    env.call("submit")
    checks = {c.id: c for c in episode.grade().checks}
    ref = case["reference"]
    assert checks[f"filed-{ref}"].passed and checks[f"reply-{ref}"].passed  # the other parts of the case count
    assert not checks[f"priority-{ref}"].passed
    assert "priority" in checks[f"priority-{ref}"].evidence


def test_escalation__the_answer_is_not_in_any_tool_result(episode):
    """Priorities come from applying the policy; no tool output states a case's expected priority."""
    env, params = _start(episode, 6, 2)
    seen = json.dumps(env.call("mail_list_messages", limit=100)) + json.dumps(env.call("chat_list_channels"))
    for case in params["cases"]:
        assert f'"priority": "{case["priority"]}"' not in seen


def test_escalation__the_reference_only_in_the_description_loses_the_title_part_alone(episode):
    """Version 3 checks the policy's rules one by one: a bug whose title misses the reference loses that part."""
    env, params = _start(episode, 4, 2)
    assert episode.instance.rubric.version == 3 and len(episode.instance.rubric.checks) >= 20
    case = params["cases"][1]
    ref = case["reference"]
    mail = next(m for m in env.call("mail_list_messages", unread_only=True)["messages"] if ref in m["subject"])
    made = env.call(
        "tickets_create",
        project=params["project"],
        title="Customer problem",
        description=f"Reported as {ref}.",
        type="bug",
        priority=case["priority"],
    )
    env.call("mail_reply", message_id=mail["id"], body=f"Tracked as {made['key']}")
    env.call("submit")
    checks = {c.id: c for c in episode.grade().checks}
    assert all(checks[f"{part}-{ref}"].passed for part in ("filed", "bug", "priority", "reply"))
    assert not checks[f"title-{ref}"].passed and "only in its description" in checks[f"title-{ref}"].evidence
    old = episode.regrade(episode.family.older_rubric(episode.instance, 2))
    assert old.rubric_version == 2 and {c.id: c.passed for c in old.checks}[f"filed-{ref}"]
    assert f"title-{ref}" not in {c.id for c in old.checks}

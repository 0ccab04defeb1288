"""The SkyRL text env, made through skyrl-gym's own registry and driven with raw model text."""

from __future__ import annotations

import json

import pytest

from scenarios.registry import registered
from sim.adapters.common import TextAgentEnv

skyrl_gym = pytest.importorskip(
    "skyrl_gym", reason="skyrl-gym is not installed (pip install -e '.[skyrl]' or '.[dev]')"
)

from sim.adapters.skyrl import ENV_ID, CompanySimTextEnv  # noqa: E402  (importing registers the env)

SCENARIOS = [r.id for r in registered()]


def make(store, **extras):
    config = {"data_dir": str(store.data_dir), "scenario": "triage-tickets-v0"}
    env = skyrl_gym.make(ENV_ID, env_config=config, extras=extras)
    assert isinstance(env, CompanySimTextEnv) and isinstance(env, skyrl_gym.Env)
    return env


def calls_text(*calls: tuple[str, dict]) -> str:
    """Model output with tool calls in the Hermes format, with some thinking around them."""
    body = "".join(f'<tool_call>{{"name": "{n}", "arguments": {json.dumps(a)}}}</tool_call>\n' for n, a in calls)
    return f"Let me look.\n{body}"


def responses(output) -> list[str]:
    (message,) = output["observations"]
    assert message["role"] == "user"
    return [part.split("</tool_response>")[0].strip() for part in message["content"].split("<tool_response>")[1:]]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_oracle_as_model_text_reaches_reward_1(scenario, store):
    env = make(store, scenario=scenario, seed=7)
    messages, meta = env.init([{"role": "system", "content": "Be careful."}, {"role": "user", "content": "Task:"}])
    assert messages[0] == {"role": "system", "content": "Be careful."}
    assert messages[-1]["content"].startswith("Task:\n\n") and "<tools>" in messages[-1]["content"]
    assert {t["function"]["name"] for t in meta["tools"]} >= {"submit", "wait"}
    outputs = []

    def call_text(name: str, args: dict) -> str:
        out = env.step(calls_text((name, args)))
        outputs.append(out)
        (text,) = responses(out)
        return text

    agent = TextAgentEnv(call_text, messages[-1]["content"], meta["actor"]["username"], lambda: env.runner.done)
    env.runner.episode.family.oracle(agent)
    assert outputs[-1]["done"] is True and outputs[-1]["reward"] == 1.0
    assert all(o["reward"] == 0.0 and not o["done"] for o in outputs[:-1])
    env.close()


def test_several_calls_in_one_message_run_in_order(store):
    env = make(store, seed=0)
    env.init([])
    out = env.step(calls_text(("tickets_search", {"status": "backlog", "limit": 1}), ("submit", {"summary": "x"})))
    first, second = responses(out)
    assert json.loads(first)["tickets"] and second == '{"submitted":true}'
    assert out["done"] is True and out["reward"] == 0.0  # submitted without triaging anything
    assert [c["name"] for c in out["metadata"]["calls"]] == ["tickets_search", "submit"]
    env.close()


def test_bad_text_is_an_error_response_and_the_episode_goes_on(store):
    env = make(store, seed=0, max_turns=6)
    env.init(None)
    (text,) = responses(env.step("I think I should triage the tickets."))
    assert text.startswith("error [bad_action]: no tool call found")
    (text,) = responses(env.step("<tool_call>{not json</tool_call>"))
    assert text == 'error [bad_action]: action is not JSON; expected {"name": ..., "arguments": {...}}'
    (text,) = responses(env.step(calls_text(("tickets_fly", {}))))
    assert text == "error [unknown_tool]: unknown tool 'tickets_fly'; see the tool list"
    (text,) = responses(env.step(calls_text(("tickets_get", {"key": 1}))))
    assert text.startswith("error [invalid_argument]: tickets_get: argument 'key' must be string")
    out = env.step(calls_text(("submit", {}), ("tickets_get", {"key": "SEA-1"})))
    assert responses(out)[1] == "error [episode_over]: the episode ended before this call" and out["done"]
    out = env.step(calls_text(("tickets_get", {"key": "SEA-1"})))
    assert responses(out) == ["error [episode_over]: the episode has ended"] and out["done"] and out["reward"] == 0.0
    env.close()


def test_max_turns_ends_the_rollout_with_the_current_score(store):
    env = make(store, seed=0, max_turns=2)
    env.init([])
    assert env.step("thinking...")["done"] is False
    out = env.step("still thinking")
    assert out["done"] is True and out["reward"] == 0.0
    env.close()


def test_a_row_without_a_task_is_refused_at_make(store):
    from sim.errors import BadOption

    with pytest.raises(BadOption, match="integer 'seed'"):
        make(store, scenario="triage-tickets-v0")
    with pytest.raises(BadOption, match="name the scenario"):
        skyrl_gym.make(ENV_ID, env_config={}, extras={"seed": 0})

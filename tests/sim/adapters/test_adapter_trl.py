"""The TRL environment_factory adapter, checked against transformers' own get_json_schema (what TRL renders)."""

from __future__ import annotations

import inspect

import pytest

from scenarios.registry import registered
from sim.adapters.common import TextAgentEnv, scenario_tools
from sim.errors import BadOption

transformers_utils = pytest.importorskip(
    "transformers.utils", reason="transformers is not installed (pip install -e '.[trl]' or '.[dev]')"
)
get_json_schema = transformers_utils.get_json_schema

from sim.adapters.trl import CompanySimEnv, trl_environment  # noqa: E402

SCENARIOS = [r.id for r in registered()]


def _tool_members(cls: type) -> list[str]:
    """The functions TRL offers as tools: every public function of the class except reset and get_reward."""
    return sorted(
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    )


def _types(prop: dict) -> tuple[set[str], str | None]:
    """(JSON types with null, item type) of a property, from our ``["x", "null"]`` or transformers' ``nullable``."""
    kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    nulls = {"null"} if prop.get("nullable") else set()
    return set(kinds) | nulls, prop.get("items", {}).get("type")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_get_json_schema_gives_back_every_tool_schema(scenario, store):
    cls = trl_environment(scenario, store=store)
    env = cls()
    ours = {t["function"]["name"]: t["function"] for t in scenario_tools(scenario, store)}
    assert _tool_members(cls) == sorted(ours), "TRL would offer exactly the scenario's tools, nothing else"
    for name, want in ours.items():
        got = get_json_schema(getattr(env, name))["function"]
        assert got["name"] == name
        assert got["description"] == want["description"]
        params, wanted = got["parameters"], want["parameters"]
        assert list(params["properties"]) == list(wanted["properties"]), name
        assert set(params.get("required", [])) == set(wanted.get("required", [])), name
        for pname, prop in wanted["properties"].items():
            assert _types(params["properties"][pname]) == _types(prop), (name, pname)
            assert params["properties"][pname]["description"] == " ".join(prop["description"].split()), (name, pname)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_oracle_through_the_methods_reaches_reward_1(scenario, store):
    env = trl_environment(scenario, store=store)()
    prompt = env.reset(seed=3, difficulty=1, scenario=scenario, prompt=[{"role": "user", "content": "ignored"}])
    assert env.get_reward() == 0.0
    runner = env._runner
    agent = TextAgentEnv(lambda name, args: getattr(env, name)(**args), prompt, runner.actor, lambda: runner.done)
    runner.episode.family.oracle(agent)
    assert runner.done, "the oracle submits"
    assert env.get_reward() == 1.0
    # TRL pools instances and resets them: the next row starts a fresh episode on the same object.
    env.reset(seed=4)
    assert not runner.done and env.get_reward() < 1.0
    env._close()


def test_bad_calls_are_error_lines_not_exceptions(store):
    env = trl_environment("triage-tickets-v0", store=store)()
    assert env.tickets_search(text="x") == "error [not_reset]: call reset() before using a tool"
    env.reset(seed=0)
    assert env.tickets_search(bogus=1).startswith("error [invalid_argument]: tickets_search: unknown argument 'bogus'")
    assert env.tickets_get(key=7).startswith("error [invalid_argument]: tickets_get: argument 'key' must be string")
    assert env.tickets_get().startswith("error [invalid_argument]: tickets_get: missing required argument 'key'")
    assert env.tickets_get("SEA-1").startswith("error [invalid_argument]: tickets_get: pass arguments by name")
    assert env.submit(summary="done") == '{"submitted":true}'
    assert env.tickets_search(text="x").startswith("error [episode_over]: ")
    assert env.get_reward() == 0.0  # nothing was triaged
    env._close()


def test_a_row_for_another_task_is_refused_at_reset(store):
    env = trl_environment("triage-tickets-v0", store=store)()
    with pytest.raises(BadOption, match="row is for scenario 'fix-failing-test-v0'"):
        env.reset(scenario="fix-failing-test-v0", seed=0)
    with pytest.raises(BadOption, match="integer 'seed'"):
        env.reset(seed="0")


def test_results_are_the_episodes_own_text(store):
    """A method returns exactly the observation Episode.step gives for the same call."""
    from sim.episode import Episode

    env = trl_environment("triage-tickets-v0", store=store)()
    env.reset(seed=2)
    with Episode("triage-tickets-v0", store=store) as ep:
        ep.reset(seed=2, options={"difficulty": 1})
        direct, *_ = ep.step({"name": "tickets_search", "arguments": {"status": "backlog"}})
    assert env.tickets_search(status="backlog") == direct
    env._close()


def test_classes_are_plain_subclasses_with_the_scenario_bound(store):
    cls = trl_environment("triage-tickets-v0", store=store)
    assert issubclass(cls, CompanySimEnv) and cls.scenario == "triage-tickets-v0"
    assert cls.__name__ == "CompanySim_triage_tickets_v0"

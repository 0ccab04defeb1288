"""The verl tool adapter, driven the way verl's ToolAgentLoop drives a native tool.

verl itself cannot be installed here without torch, so these tests check the contract its code defines
(verl 0.9.1: ``verl/tools/schemas.py``, ``verl/tools/base_tool.py``,
``verl/experimental/agent_loop/tool_agent_loop.py``): the tool-schema model below restates the shape of
verl's ``OpenAIFunctionToolSchema``, and ``agent_loop_call`` does what ``ToolAgentLoop._call_tool`` does per call
(create with the row's create_kwargs, execute with agent_data, release). When a verl source tree is importable,
``test_verls_own_schema_model_accepts_every_schema`` runs the schemas against verl's own module as well.
"""

from __future__ import annotations

import asyncio
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, Field

from scenarios.registry import registered
from sim.adapters.common import TextAgentEnv, scenario_tools
from sim.adapters.verl import POOL, CompanySimTool, ToolSchema, verl_row, verl_tool_config, verl_tool_schema

SCENARIOS = [r.id for r in registered()]


@pytest.fixture(autouse=True)
def _free_pool():
    """Each test ends with the process-wide pool empty (its worlds and checkouts freed)."""
    yield
    POOL.close_all()


# -- verl 0.9.1's tool-schema contract, restated (field names and types as its pydantic models declare them) ---
class VerlProperty(BaseModel):
    type: str | list[str]
    description: str | None = None
    enum: list[Any] | None = None


class VerlParameters(BaseModel):
    type: str
    properties: dict[str, VerlProperty]
    required: list[str] = Field(default_factory=list)


class VerlFunction(BaseModel):
    name: str
    description: str
    parameters: VerlParameters = Field(default_factory=lambda: VerlParameters(type="object", properties={}))
    strict: bool = False


class VerlTool(BaseModel):
    type: str
    function: VerlFunction


@dataclass
class AgentData:
    """The one field of verl's AgentData a tool may key on."""

    request_id: str


def agent_loop_call(tools: dict[str, CompanySimTool], row: dict, request_id: str, name: str, args: Any):
    """One tool call as ToolAgentLoop makes it: create(create_kwargs=...) -> execute(agent_data=...) -> release."""

    async def run():
        tool = tools[name]
        kwargs = row["extra_info"]["tools_kwargs"].get(name, {})
        handle, _ = await tool.create(create_kwargs=kwargs.get("create_kwargs", {}))
        try:
            return await tool.execute(handle, args, agent_data=AgentData(request_id))
        finally:
            await tool.release(handle)

    return asyncio.run(run())


def tools_from_yaml(scenario: str, store) -> dict[str, CompanySimTool]:
    """The tool objects verl builds from our YAML: each entry's schema parsed by the schema model."""
    config = yaml.safe_load(yaml.safe_dump(verl_tool_config(scenario, data_dir=store.data_dir)))
    tools = {}
    for entry in config["tools"]:
        assert entry["class_name"] == "sim.adapters.verl.CompanySimTool"
        assert entry["config"]["type"] == "native"
        tool = CompanySimTool(entry["config"], VerlTool.model_validate(entry["tool_schema"]))
        tools[tool.name] = tool
    return tools


def _no_any_of(value: Any) -> bool:
    if isinstance(value, dict):
        return "anyOf" not in value and all(_no_any_of(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_any_of(v) for v in value)
    return True


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_schema_passes_the_schema_model_without_losing_a_field(scenario, store):
    for tool in scenario_tools(scenario, store):
        flat = verl_tool_schema(tool)
        assert _no_any_of(flat)
        parsed = VerlTool.model_validate(flat)
        # verl drops unknown keys silently; nothing of ours may be among them.
        assert parsed.model_dump(exclude_unset=True, exclude_none=True) == flat
        assert ToolSchema.model_validate(flat).model_dump(exclude_unset=True, exclude_none=True) == flat
        props = tool["function"]["parameters"]["properties"]
        for pname, prop in props.items():
            kept = flat["function"]["parameters"]["properties"][pname]
            assert kept["type"] == prop["type"]
            if "items" in prop:
                assert f"A list of {prop['items']['type']} values." in kept["description"]
            if "default" in prop:
                assert "Default: " in kept["description"]


def test_verls_own_schema_model_accepts_every_schema(store):
    spec = importlib.util.find_spec("verl")
    if spec is None or spec.origin is None:
        pytest.skip("verl is not installed (it requires torch); the restated contract above is checked instead")
    path = Path(spec.origin).parent / "tools" / "schemas.py"  # loaded alone: verl/__init__ imports torch
    module_spec = importlib.util.spec_from_file_location("verl_tool_schemas", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    for scenario in SCENARIOS:
        for tool in scenario_tools(scenario, store):
            flat = verl_tool_schema(tool)
            parsed = module.OpenAIFunctionToolSchema.model_validate(flat)
            assert parsed.model_dump(exclude_unset=True, exclude_none=True) == flat


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_oracle_through_the_agent_loop_contract_reaches_reward_1(scenario, store):
    tools = tools_from_yaml(scenario, store)
    row = verl_row(scenario, 5, data_dir=store.data_dir)
    rewards: list[float] = []
    metrics: list[dict] = []

    def call_text(name: str, args: dict) -> str:
        response, reward, metric = agent_loop_call(tools, row, "req-A", name, args)
        rewards.append(reward)
        metrics.append(metric)
        return response.text

    # The rollout's episode starts at its first call; here a create with the rollout's id starts it up front so
    # the scripted oracle knows who it acts as (a model reads that from the prompt).
    submit = tools["submit"]
    _, response = asyncio.run(
        submit.create("req-A", create_kwargs=row["extra_info"]["tools_kwargs"]["submit"]["create_kwargs"])
    )
    assert response.text == row["prompt"][0]["content"], "the row's prompt is the episode's"
    runner = POOL.get("req-A")
    agent = TextAgentEnv(call_text, response.text, runner.actor, lambda: runner.done)
    runner.episode.family.oracle(agent)
    assert rewards[-1] == 1.0 and set(rewards[:-1]) == {0.0}, "0 per step, the score on the submit call"
    assert metrics[-1]["done"] is True and metrics[-1]["error"] is None
    assert POOL.get("req-A") is None, "an ended episode is freed at its release"
    assert asyncio.run(submit.calc_reward("h", agent_data=AgentData("req-A"))) == 1.0, "its score is kept"


def test_rollouts_of_one_row_play_separate_episodes(store):
    tools = tools_from_yaml("triage-tickets-v0", store)
    row = verl_row("triage-tickets-v0", 1, data_dir=store.data_dir)
    response, reward, _ = agent_loop_call(tools, row, "group-1", "submit", {"summary": "quit early"})
    assert response.text == '{"submitted":true}' and reward == 0.0
    response, _, metric = agent_loop_call(tools, row, "group-2", "tickets_search", {"status": "backlog"})
    assert not response.text.startswith("error"), "the other rollout's episode is still running"
    assert metric["done"] is False and metric["episode_id"].startswith("triage-tickets-v0/1/")
    assert asyncio.run(tools["tickets_search"].calc_reward("x", agent_data=AgentData("group-2"))) == 0.0
    POOL.close("group-2")


def test_bad_input_is_an_error_response(store):
    tools = tools_from_yaml("triage-tickets-v0", store)
    row = verl_row("triage-tickets-v0", 0, data_dir=store.data_dir)
    text = lambda name, args, rid="bad": agent_loop_call(tools, row, rid, name, args)[0].text  # noqa: E731
    assert text("tickets_get", {"nope": 1}).startswith("error [invalid_argument]: tickets_get: unknown argument")
    assert text("tickets_get", ["SEA-1"]).startswith("error [bad_action]: arguments of 'tickets_get' must be")
    assert text("submit", {}) == '{"submitted":true}'
    # The ended episode was released; a later call of that rollout is refused, it does not start a new one.
    assert text("tickets_get", {"key": "SEA-1"}) == "error [episode_over]: episode 'bad' has ended"
    assert asyncio.run(tools["submit"].calc_reward("h", agent_data=AgentData("bad"))) == 0.0
    search = tools["tickets_search"]

    async def after_end():
        await search.create("ep-x", create_kwargs={"seed": 0})
        await search.execute("ep-x", {"text": "a"})
        await tools["submit"].execute("ep-x", {})
        return await search.execute("ep-x", {"text": "a"})

    response, reward, _ = asyncio.run(after_end())
    assert response.text.startswith("error [episode_over]: ") and reward == 0.0
    POOL.close("ep-x")
    response, _, _ = asyncio.run(search.execute("never-created", {}))
    assert response.text.startswith("error [not_reset]: no episode for 'never-created'")
    no_seed = {"extra_info": {"tools_kwargs": {"tickets_search": {"create_kwargs": {"difficulty": 1}}}}}
    response, _, _ = agent_loop_call(tools, no_seed, "r", "tickets_search", {})
    assert response.text == "error [bad_option]: row needs an integer 'seed'; got None"
    bad = {"extra_info": {"tools_kwargs": {"tickets_search": {"create_kwargs": {"seed": 0, "scenario": "nope-v0"}}}}}
    response, _, _ = agent_loop_call(tools, bad, "r2", "tickets_search", {})
    assert response.text.startswith("error [unknown_scenario]: ")

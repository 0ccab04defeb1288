"""verl: play one triage task through the native tool class, the way ToolAgentLoop calls it (no GPU, no verl).

Writes the tool YAML verl's ``tool_config_path`` takes, builds the tools from it, and runs every call as verl
does: ``create(create_kwargs=row's tools_kwargs)``, ``execute(handle, args, agent_data=...)``, ``release``.
The scripted oracle stands in for the model.

Run: python examples/verl_tool.py
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sim.adapters.common import TextAgentEnv
from sim.adapters.verl import POOL, CompanySimTool, ToolSchema, verl_row, verl_tool_config

SCENARIO = "triage-tickets-v0"


@dataclass
class AgentData:
    """The field of verl's per-trajectory AgentData the tools key episodes by."""

    request_id: str


def main() -> None:
    """Write the YAML, build the tools, play the task as rollout 'rollout-0', print the reward."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "companysim_tools.yaml"
        path.write_text(yaml.safe_dump(verl_tool_config(SCENARIO)))
        entries = yaml.safe_load(path.read_text())["tools"]
    tools = {
        e["tool_schema"]["function"]["name"]: CompanySimTool(e["config"], ToolSchema(**e["tool_schema"]))
        for e in entries
    }
    row = verl_row(SCENARIO, seed=0)
    print(f"{len(tools)} tools in {path.name}; prompt: {row['prompt'][0]['content'][:60]}...")
    rewards: list[float] = []

    async def call(name: str, args: dict[str, Any]) -> str:
        tool = tools[name]
        handle, _ = await tool.create(create_kwargs=row["extra_info"]["tools_kwargs"][name]["create_kwargs"])
        try:
            response, reward, _ = await tool.execute(handle, args, agent_data=AgentData("rollout-0"))
        finally:
            await tool.release(handle)
        rewards.append(reward)
        return str(response.text)

    # A create under the rollout's id starts its episode now, so the scripted oracle knows who it is.
    asyncio.run(
        tools["submit"].create("rollout-0", create_kwargs=row["extra_info"]["tools_kwargs"]["submit"]["create_kwargs"])
    )
    runner = POOL.get("rollout-0")
    assert runner is not None
    oracle = TextAgentEnv(
        lambda n, a: asyncio.run(call(n, a)), row["prompt"][0]["content"], runner.actor, lambda: runner.done
    )
    runner.episode.family.oracle(oracle)
    print(f"reward: {rewards[-1]:.2f}")
    POOL.close_all()


if __name__ == "__main__":
    main()

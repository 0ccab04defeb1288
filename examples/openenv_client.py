"""OpenEnv: play a companysim episode with OpenEnv's own ``EnvClient`` over ``companysim server``'s ``/ws``.

This runs in a virtualenv with ``openenv-core`` (it needs nothing from companysim; its pins clash with ours):

    python3 -m venv /tmp/oe && /tmp/oe/bin/pip install openenv-core==0.3.0
    companysim server --port 8000 &
    /tmp/oe/bin/python examples/openenv_client.py --url http://127.0.0.1:8000

Without ``--actions`` it posts a chat message and submits (reward 0: nothing was done). ``--actions FILE`` plays
a JSON list of ``{"name", "arguments"}`` instead (a recorded policy). It prints one JSON line: the reward, whether
the episode is done, the step count the server reports and the errors met.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.types import Action, Observation, State
from pydantic import ConfigDict


class ToolAction(Action):
    """One tool call: the tool's name and its arguments."""

    name: str
    arguments: dict[str, Any] = {}


class CompanyObservation(Observation):
    """What companysim answers: the reset's prompt and tools, or a step's text and error."""

    model_config = ConfigDict(extra="allow")


class CompanyState(State):
    """The episode's state (``episode_id``, ``step_count``, and companysim's fields)."""

    model_config = ConfigDict(extra="allow")


class CompanyEnv(EnvClient[ToolAction, CompanyObservation, CompanyState]):
    """``EnvClient`` for companysim: the action is ``{"name", "arguments"}``."""

    def _step_payload(self, action: ToolAction) -> dict[str, Any]:
        return {"name": action.name, "arguments": action.arguments}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CompanyObservation]:
        obs = CompanyObservation(**payload.get("observation", {}), done=payload.get("done", False),
                                 reward=payload.get("reward"))  # fmt: skip
        return StepResult(observation=obs, reward=payload.get("reward"), done=bool(payload.get("done")))

    def _parse_state(self, payload: dict[str, Any]) -> CompanyState:
        return CompanyState(**payload)


async def play(url: str, scenario: str, seed: int, actions: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Reset, play the actions until the episode ends, read the state."""
    async with CompanyEnv(base_url=url) as env:
        reset = await env.reset(seed=seed, scenario=scenario)
        obs = reset.observation.model_dump()
        tools = [t["function"]["name"] for t in obs["tools"]]
        if actions is None:
            actions = [
                {"name": "chat_post", "arguments": {"channel": "town-square", "message": "looking into it"}},
                {"name": "submit", "arguments": {"summary": "done"}},
            ]
        result, errors = reset, []
        for action in actions:
            result = await env.step(ToolAction(**action))
            error = result.observation.model_dump().get("error")
            if error:
                errors.append(error["code"])
            if result.done:
                break
        state = await env.state()
        return {
            "reward": result.reward, "done": result.done, "step_count": state.step_count, "errors": errors,
            "tools": len(tools), "prompt": obs["prompt"][:80],
        }  # fmt: skip


def main() -> None:
    """Parse the arguments, play, print the result as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--scenario", default="triage-tickets-v0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--actions", help="a JSON file: a list of {name, arguments}")
    args = parser.parse_args()
    actions = None
    if args.actions:
        with open(args.actions) as f:
            actions = json.load(f)
    print(json.dumps(asyncio.run(play(args.url, args.scenario, args.seed, actions))))


if __name__ == "__main__":
    main()

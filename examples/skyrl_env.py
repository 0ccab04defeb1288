"""SkyRL: play one triage task through the skyrl-gym text env, feeding it model-style text (no GPU).

``skyrl_gym.make("companysim", env_config=..., extras=row)`` is what SkyRL's generator calls per trajectory;
each step gets raw text with ``<tool_call>`` blocks. The scripted oracle stands in for the model.

Run: python examples/skyrl_env.py
"""

from __future__ import annotations

import json
from typing import Any

import skyrl_gym

from sim.adapters.common import TextAgentEnv
from sim.adapters.skyrl import ENV_ID

SCENARIO = "triage-tickets-v0"


def main() -> None:
    """Make the env from a row, play the task as tool-call text, print the reward."""
    env = skyrl_gym.make(ENV_ID, env_config={"scenario": SCENARIO}, extras={"seed": 0, "max_turns": 60})
    messages, meta = env.init([{"role": "user", "content": "Solve the company task."}])
    last: dict[str, Any] = {}

    def call_text(name: str, args: dict[str, Any]) -> str:
        text = f'<tool_call>{{"name": "{name}", "arguments": {json.dumps(args)}}}</tool_call>'
        last.update(env.step(text))
        content = str(last["observations"][0]["content"])
        return content.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>")

    oracle = TextAgentEnv(call_text, messages[-1]["content"], meta["actor"]["username"], lambda: env.runner.done)
    env.runner.episode.family.oracle(oracle)
    print(f"done: {last['done']}, reward: {last['reward']:.2f}")
    env.close()


if __name__ == "__main__":
    main()

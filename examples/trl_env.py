"""TRL: play one triage task through the environment_factory class, the way GRPOTrainer would (no GPU).

The scripted oracle stands in for the model: it calls the generated methods by name with keyword arguments
and reads their text. In training, pass the class to ``GRPOTrainer(environment_factory=Env)`` instead.

Run: python examples/trl_env.py
"""

from __future__ import annotations

from transformers.utils import get_json_schema

from sim.adapters.common import TextAgentEnv
from sim.adapters.trl import trl_environment

SCENARIO = "triage-tickets-v0"


def main() -> None:
    """Build the class, show one tool as TRL renders it, play the task, print the reward."""
    env_cls = trl_environment(SCENARIO)
    env = env_cls()
    print("tool as TRL renders it:", get_json_schema(env.tickets_get)["function"]["parameters"])
    row = {"prompt": [{"role": "user", "content": "Solve the task."}], "seed": 0}
    prompt = env.reset(**row)
    runner = env._runner
    assert runner is not None
    oracle = TextAgentEnv(lambda name, args: getattr(env, name)(**args), prompt, runner.actor, lambda: runner.done)
    runner.episode.family.oracle(oracle)
    print(f"reward: {env.get_reward():.2f}")
    env._close()


if __name__ == "__main__":
    main()

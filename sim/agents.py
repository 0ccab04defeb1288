"""Built-in baseline agents: the scenario's oracle, a no-op agent and a seeded random agent.

Agents act only through ``EpisodeEnv.call`` (one tool call = one ``Episode.step``), exactly like a model
would: the oracle must find what it needs through the tools, never through the scenario's hidden params.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from graders.base import Score
from scenarios.base import ToolFailed
from sim.episode import Episode, StartState
from sim.errors import EpisodeOver
from worlds.seeding import Seeds

AGENTS: tuple[str, ...] = (
    "oracle", "noop", "random",
    "cheat-shotgun", "cheat-keys", "cheat-hunt", "cheat-spoof", "cheat-others", "cheat-flood",
)  # fmt: skip
"""Built-in agents; ``cheat-*`` are the scripted reward hacks of ``sim.cheaters``."""


class EpisodeEnv:
    """The ``scenarios.base.AgentEnv`` view of a running episode.

    Args:
        episode: An episode that has just been reset.
        prompt: The prompt reset() returned.
        info: The info reset() returned.
    """

    def __init__(self, episode: Episode, prompt: str, info: dict[str, Any]) -> None:
        self.episode = episode
        self.prompt = prompt
        self.info = info
        self.actor: str = info["actor"]["username"]
        self.reward = 0.0

    @property
    def done(self) -> bool:
        """Whether the episode has ended."""
        return self.episode.done

    def call(self, name: str, /, **arguments: Any) -> Any:
        """Run one tool; returns its result, or raises ToolFailed with the tool's error code.

        Like a careful client, it retries (up to ``RETRIES`` times) what production systems fail transiently:
        timeouts, rate limits, server errors, a permission check that says it failed, and a result marked
        ``partial``. Each retry is a real step: it costs turns and simulated time.
        """
        for attempt in range(RETRIES + 1):
            obs, reward, _, _, info = self.episode.step({"name": name, "arguments": arguments})
            self.reward = reward
            error = info["error"]
            last = attempt == RETRIES or self.episode.done
            if error is not None:
                transient = error["code"] in TRANSIENT or "transient" in error["message"]
                if transient and not last:
                    continue
                raise ToolFailed(error["code"], error["message"])
            result = json.loads(obs)
            if isinstance(result, dict) and result.get("partial") and not last:
                continue
            return result
        raise AssertionError("unreachable")  # pragma: no cover


RETRIES = 4
TRANSIENT = frozenset({"timeout", "rate_limited", "server_error"})


def noop_agent(env: EpisodeEnv) -> None:
    """Does nothing and submits: the baseline every rubric must score 0."""
    env.call("submit", summary="nothing done")


def _random_value(rng: np.random.Generator, schema: dict[str, Any]) -> Any:
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if "enum" in schema:
        return schema["enum"][int(rng.integers(len(schema["enum"])))]
    if kind == "integer":
        return int(rng.integers(0, 50))
    if kind == "number":
        return float(rng.uniform(0, 50))
    if kind == "boolean":
        return bool(rng.integers(2))
    if kind == "array":
        return [_random_value(rng, schema.get("items", {})) for _ in range(int(rng.integers(0, 3)))]
    words = ("town-square", "incidents", "hello", "ENG-1", "critical", "high", "todo", "", "bug", "me")
    return words[int(rng.integers(len(words)))]


def random_agent(env: EpisodeEnv, seed: int, steps: int = 12) -> None:
    """Calls random tools with random (mostly wrong) arguments, then submits."""
    rng = Seeds(seed).rng("agent/random")
    tools = [t["function"] for t in env.info["tools"] if t["function"]["name"] not in ("submit", "wait")]
    for _ in range(steps):
        if env.done:
            return
        tool = tools[int(rng.integers(len(tools)))]
        props: dict[str, Any] = tool["parameters"].get("properties", {})
        args = {k: _random_value(rng, v) for k, v in sorted(props.items()) if rng.random() < 0.8}
        try:
            env.call(tool["name"], **args)
        except ToolFailed:
            pass
    if not env.done:
        env.call("submit", summary="random")


def run_agent(
    episode: Episode,
    agent: str,
    seed: int,
    options: dict[str, Any] | None = None,
    *,
    start: StartState | None = None,
) -> Score:
    """Reset ``episode`` with ``seed`` (from ``start`` if given), let ``agent`` play it to the end, and score it."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; expected one of {', '.join(AGENTS)}")
    prompt, info = episode.reset(seed=seed, options=options, start=start)
    env = EpisodeEnv(episode, prompt, info)
    try:
        if agent == "oracle":
            episode.family.oracle(env)
        elif agent == "noop":
            noop_agent(env)
        elif agent == "random":
            random_agent(env, seed)
        else:
            from sim.cheaters import CHEATERS  # the red team loads only when asked for

            CHEATERS[agent.removeprefix("cheat-")](env, seed)
    except EpisodeOver:
        # The agent kept acting after the turn limit or time budget ended the episode: that is its score,
        # not a crash of the run (or of the campaign around it).
        if not episode.done:
            raise
    if not episode.done:
        env.call("submit", summary="agent stopped")
    return episode.grade()

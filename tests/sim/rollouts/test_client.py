"""The GRPO group client against a real ``companysim server``: G WebSocket rollouts of one task, their rewards."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sim.agents import run_agent
from sim.episode import Episode
from sim.errors import RolloutError
from sim.rollouts.client import group
from tests.sim.server.conftest import Server, running_server
from worlds.store import WorldStore

SCENARIO, SEED, TOKEN = "triage-tickets-v0", 3, "data-plane-secret"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("client-worlds")


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[Server]:
    with running_server(data_dir, "--workers", "2", "--token", TOKEN) as s:
        yield s


@pytest.fixture(scope="module")
def oracle_actions(data_dir: Path) -> list[dict[str, Any]]:
    """The oracle's tool calls on the task, played in-process (the submit left out)."""
    with Episode(SCENARIO, store=WorldStore(data_dir)) as episode:
        assert run_agent(episode, "oracle", SEED, {"difficulty": 1}).value == 1.0
        return [r["action"] for r in episode.steps if r["action"]["name"] != "submit"]


def test_group__returns_one_reward_per_rollout_in_index_order(server: Server, oracle_actions: list) -> None:
    seen: list[tuple[int, str]] = []

    async def policy(index: int, reset: dict, last: dict | None) -> dict | None:
        """Rollout i replays the first i/3 of the oracle's calls, then submits (None)."""
        assert reset["scenario"] == SCENARIO and reset["seed"] == SEED and "tools" in reset
        if last is not None:
            assert last["observation"]["error"] is None  # every replayed call was accepted
        done = sum(1 for i, _ in seen if i == index)
        share = oracle_actions[: len(oracle_actions) * index // 3]
        if done >= len(share):
            return None
        seen.append((index, share[done]["name"]))
        await asyncio.sleep(0)  # let the other rollouts of the group interleave
        return share[done]

    rewards = asyncio.run(group(server.url, TOKEN, SCENARIO, SEED, 4, policy))
    assert rewards[0] == 0.0 and rewards[3] == 1.0  # nothing done; everything the oracle did
    assert rewards[0] < rewards[1] < rewards[2] < rewards[3]  # partial work earns partial credit
    assert {i for i, _ in seen} == {1, 2, 3}


def test_group__same_policy_same_rewards_and_a_wrong_token_is_refused(server: Server, oracle_actions: list) -> None:
    def policy(index: int, reset: dict, last: dict | None) -> dict | None:
        step = 0 if last is None else last["observation"]["info"]["turn"]
        return oracle_actions[step] if step < len(oracle_actions) else None

    assert asyncio.run(group(server.url, TOKEN, SCENARIO, SEED, 3, policy)) == [1.0, 1.0, 1.0]
    with pytest.raises(RolloutError, match="HTTP 40[13]"):
        asyncio.run(group(server.url, "wrong", SCENARIO, SEED, 2, policy))
    with pytest.raises(RolloutError, match="unknown_scenario|no-such"):
        asyncio.run(group(server.url, TOKEN, "no-such-v0", SEED, 2, policy))
    with pytest.raises(RolloutError, match="at least one"):
        asyncio.run(group(server.url, TOKEN, SCENARIO, SEED, 0, policy))

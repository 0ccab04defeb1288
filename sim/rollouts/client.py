"""A GRPO group against a running ``companysim server``: G rollouts of one task at once, their rewards back.

Each rollout is one OpenEnv WebSocket session on the server (``/ws``: reset, step ... until ``done``; see
``sim.server.openenv``), so the G episodes run side by side in the server's worker processes while this client
waits on the network. The policy is whatever the trainer samples actions from; it is called once per step with
the rollout's index in the group, the reset observation and the last step's answer (None before the first
step), and returns the next action (``{"name": tool, "arguments": {...}}``) or None to submit and stop.

Why a WebSocket per rollout: the socket is the session (no episode token to carry), a step is one small message
on a connection that stays open, and closing the socket frees the episode even if the client dies.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

from sim.errors import RolloutError

__all__ = ["Policy", "group", "rollout"]

Action = dict[str, Any] | None
Policy = Callable[[int, dict[str, Any], dict[str, Any] | None], Awaitable[Action] | Action]
"""``policy(index, reset_observation, last_step) -> action | None`` (plain or ``async``)."""

SUBMIT = {"name": "submit", "arguments": {"summary": "policy stopped"}}


def _ws_url(url: str) -> str:
    base = url.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base.removeprefix("https://") + "/ws"
    if base.startswith("http://"):
        return "ws://" + base.removeprefix("http://") + "/ws"
    raise RolloutError(f"the server URL must start with http:// or https://; got {url!r}")


async def _ask(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(message))
    answer = json.loads(await ws.recv())
    if answer.get("type") == "error":
        data = answer.get("data", {})
        raise RolloutError(f"the server refused a {message['type']}: {data.get('error_code')}: {data.get('message')}")
    return dict(answer["data"])


async def rollout(
    url: str,
    token: str | None,
    scenario: str,
    seed: int,
    policy: Policy,
    *,
    index: int = 0,
    options: dict[str, Any] | None = None,
) -> float:
    """Play one episode of ``scenario`` at ``seed`` over the server's WebSocket; return its final reward.

    Raises:
        RolloutError: the server refused the session or a message (its code and message are in the error).
    """
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    headers = {"Authorization": f"Bearer {token}"} if token else None
    try:
        async with connect(_ws_url(url), additional_headers=headers, max_size=None) as ws:
            return await _play(ws, scenario, seed, policy, index, options)
    except InvalidStatus as exc:
        status = exc.response.status_code
        raise RolloutError(f"the server refused the session: HTTP {status} (a wrong or missing token?)") from None


async def _play(ws: Any, scenario: str, seed: int, policy: Policy, index: int, options: dict[str, Any] | None) -> float:
    """Reset, then ask the policy for actions until the episode is done."""
    data = {"seed": seed, "scenario": scenario, "options": options or {}}
    reset = await _ask(ws, {"type": "reset", "data": data})
    observation: dict[str, Any] = reset["observation"]
    limit = int(observation.get("limits", {}).get("max_turns", 1000)) * 4 + 8  # retries and refusals included
    last: dict[str, Any] | None = None
    for _ in range(limit):
        action = policy(index, observation, last)
        if inspect.isawaitable(action):
            action = await action
        last = await _ask(ws, {"type": "step", "data": action if action is not None else SUBMIT})
        if last["done"]:
            await ws.send(json.dumps({"type": "close"}))
            return float(last["reward"])
    raise RolloutError(f"the policy did not finish {scenario} seed {seed} in {limit} steps")


async def group(
    url: str,
    token: str | None,
    scenario: str,
    seed: int,
    size: int,
    policy: Policy,
    *,
    options: dict[str, Any] | None = None,
) -> list[float]:
    """Run ``size`` rollouts of the same task (a GRPO group) concurrently; return their rewards by index.

    Raises:
        RolloutError: ``size`` is below one, or any rollout was refused (the others are cancelled).
    """
    if size < 1:
        raise RolloutError(f"a group needs at least one rollout; got {size}")
    runs = [rollout(url, token, scenario, seed, policy, index=i, options=options) for i in range(size)]
    return list(await asyncio.gather(*runs))

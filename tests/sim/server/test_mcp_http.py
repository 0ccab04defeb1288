"""Per-episode MCP over streamable HTTP, driven by the official ``mcp`` client in both protocol eras."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from scenarios.base import ToolFailed
from scenarios.registry import make
from tests.sim.server.conftest import Server


def _episode(server: Server, scenario: str, seed: int) -> dict[str, Any]:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        r = c.post("/episodes", json={"scenario": scenario, "seed": seed})
        assert r.status_code == 200, r.text
        return r.json()


class McpEnv:
    """The scripted agents' ``AgentEnv`` over an MCP client session held open by a loop in another thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, client: Any, prompt: str, actor: str) -> None:
        self.loop, self.client, self.prompt, self.actor = loop, client, prompt, actor
        self.finished, self.reward = False, 0.0

    @property
    def done(self) -> bool:
        return self.finished

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def call(self, name: str, /, **arguments: Any) -> Any:
        res = self.run(self.client.call_tool(name, arguments))
        meta = res.meta or {}
        if "reward" in meta:
            self.finished, self.reward = True, meta["reward"]
        text = res.content[0].text
        if res.is_error:
            code, _, message = text.partition(": ")
            if code == "episode_over":
                self.finished = True
            raise ToolFailed(code, message)
        return json.loads(text)


@contextmanager
def mcp_session(url: str, token: str, mode: str) -> Iterator[tuple[asyncio.AbstractEventLoop, Any]]:
    """An ``mcp.Client`` over streamable HTTP, entered and left by one task on a loop in a thread."""
    loop = asyncio.new_event_loop()
    ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
    stop = asyncio.Event()

    async def hold() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                ready.set_result(client)
                await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(hold(),))
    thread.start()
    try:
        yield loop, ready.result(timeout=30)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
        loop.close()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_mcp_http__official_client_plays_an_episode_in_each_era(server: Server, mode: str) -> None:
    ep = _episode(server, "customer-escalation-v0", 5)
    with mcp_session(server.url + ep["mcp_path"], ep["token"], mode) as (loop, client):
        env = McpEnv(loop, client, ep["prompt"], ep["actor"]["username"])
        tools = env.run(client.list_tools()).tools
        assert {t.name for t in tools} == {t["function"]["name"] for t in ep["tools"]}
        with pytest.raises(ToolFailed) as refused:
            env.call("tickets_get", key="NOPE-404")
        assert refused.value.code == "not_found" and "Traceback" not in str(refused.value)
        make("customer-escalation-v0").oracle(env)
        if not env.done:
            env.call("submit", summary="oracle done")
        assert env.reward == 1.0


def test_mcp_http__an_episode_answers_only_to_its_own_token(server: Server) -> None:
    a = _episode(server, "triage-tickets-v0", 1)
    b = _episode(server, "triage-tickets-v0", 2)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28"}
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.post(a["mcp_path"], json=body, headers=headers).status_code == 401
        wrong = c.post(a["mcp_path"], json=body, headers={**headers, "Authorization": f"Bearer {b['token']}"})
        assert wrong.status_code == 404 and wrong.json()["code"] == "no_episode"
        gone = c.post("/episodes/ep-999999/mcp", json=body, headers={**headers, "Authorization": "Bearer x"})
        assert gone.status_code == 404
        auth = {"Authorization": f"Bearer {a['token']}"}
        assert c.get(f"/episodes/{a['id']}", headers=auth).json()["step_count"] == 0
        assert c.delete(f"/episodes/{a['id']}", headers=auth).json() == {"id": a["id"], "closed": True}
        assert c.post(a["mcp_path"], json=body, headers={**headers, **auth}).status_code == 404
        assert c.delete(f"/episodes/{b['id']}", headers={"Authorization": f"Bearer {b['token']}"}).status_code == 200

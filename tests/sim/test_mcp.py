"""An episode served over MCP: the official client over stdio (both protocol modes) and fastmcp in memory."""

import asyncio
import json
import os
import sys

import pytest
from mcp import Client as McpClient
from mcp import StdioServerParameters

from sim.episode import Episode
from sim.mcp_server import episode_server


def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _drive(mode: str, data_dir: str) -> dict:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sim.cli", "mcp", "--scenario", "triage-tickets-v0", "--seed", "0"],
        env={**os.environ, "COMPANYSIM_DATA_DIR": data_dir},
    )
    out = {}
    async with McpClient(params, mode=mode) as client:
        tools = await client.list_tools()
        out["names"] = sorted(t.name for t in tools.tools)
        found = await client.call_tool("tickets_search", {"status": "backlog", "priority": "none", "limit": 50})
        out["search"] = json.loads(_text(found))
        bad = await client.call_tool("tickets_get", {"key": "NOPE-1"})
        out["bad"] = (bad.is_error, _text(bad))
        wrong = await client.call_tool("tickets_get", {"key": 12})
        out["wrong"] = (wrong.is_error, _text(wrong))
        done = await client.call_tool("submit", {"summary": "stop"})
        out["submit"] = (done.is_error, done.meta)
    return out


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_mcp_stdio__official_client_runs_an_episode(store, mode):
    out = asyncio.run(_drive(mode, str(store.data_dir)))
    assert {"tickets_search", "chat_post", "submit"} <= set(out["names"])
    assert out["search"]["total"] >= 3
    assert out["bad"][0] and out["bad"][1].startswith("not_found")
    assert out["wrong"][0] and "invalid_argument" in out["wrong"][1]
    assert not out["submit"][0]


def test_mcp_in_memory__fastmcp_client_runs_an_episode(store):
    from fastmcp import Client

    episode = Episode("triage-tickets-v0", store=store)
    prompt, info = episode.reset(seed=1)
    server = episode_server(episode, info["tools"])

    async def go():
        async with Client(server) as client:
            tools = await client.list_tools()
            assert len(tools) == len(info["tools"])
            result = await client.call_tool("chat_list_channels", {})
            assert any(c["name"] == "incidents" for c in result.structured_content["channels"])
            failed = await client.call_tool("chat_post", {"channel": "nope", "message": "x"}, raise_on_error=False)
            assert failed.is_error and _text(failed).startswith("not_found")
            await client.call_tool("submit", {})

    asyncio.run(go())
    assert episode.done and episode.grade().value == 0.0
    assert [s["action"]["name"] for s in episode.steps] == ["chat_list_channels", "chat_post", "submit"]
    episode.close()

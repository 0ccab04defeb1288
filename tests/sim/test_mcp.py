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


async def _refuse(data_dir: str, errlog) -> list[tuple[bool, str]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sim.cli", "mcp", "--scenario", "triage-tickets-v0", "--seed", "0"],
        env={**os.environ, "COMPANYSIM_DATA_DIR": data_dir},
    )
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    out = []
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        for _ in range(20):
            bad = await client.call_tool("tickets_get", {"key": "NOPE-1"})
            out.append((bad.is_error, _text(bad)))
        await client.call_tool("submit", {"summary": "stop"})
        after = await client.call_tool("tickets_search", {"limit": 1})
        out.append((after.is_error, _text(after)))
    return out


def test_mcp_stdio__refused_calls_log_one_line_each_and_say_their_code(store, tmp_path):
    with (tmp_path / "stderr.log").open("w") as errlog:
        out = asyncio.run(_refuse(str(store.data_dir), errlog))
    assert all(is_error and text.startswith("not_found: ") for is_error, text in out[:-1])
    assert out[-1][0] and out[-1][1].startswith("episode_over: ")  # a call after the end says why, with its code
    lines = (tmp_path / "stderr.log").read_text().splitlines()
    refused = [line for line in lines if line.startswith("companysim mcp: refused ")]
    assert len(refused) == 21 and refused[-1] == "companysim mcp: refused tickets_search: episode_over"
    assert not any("Traceback" in line for line in lines) and len(lines) <= 25

"""Serve one episode over MCP: every tool call is an ``Episode.step``.

MCP sessions of the 2026-07-28 protocol are stateless, so the episode is not tied to a session: the server
process (stdio) or URL holds exactly one episode, and every call from any session acts on it. Routing each
call through ``step`` keeps the MCP path identical to the in-process one: the same validation, savepoints,
clock, trace records and error codes.

Errors: a refused call (a tool error, or a call after the episode ended) reaches the client as an error result
whose text starts with its stable code (``not_found: ...``, ``episode_over: ...``) and is logged as one line
(``refused <tool>: <code>``); only a real fault inside the server is logged with a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools.base import Tool, ToolResult
from mcp.types import TextContent

from sim.episode import Episode
from sim.errors import SimError

log = logging.getLogger("companysim.mcp")


def _refused(tool: str, code: str, message: str) -> ToolError:
    """The error result of a refused call, logged here as one line (and not again, with a traceback, by FastMCP)."""
    log.info("refused %s: %s", tool, code)
    return ToolError(f"{code}: {message}", log_level=logging.DEBUG)


class EpisodeTool(Tool):
    """An MCP tool whose schema is the episode's and whose body is ``episode.step``."""

    def bind(self, episode: Episode, lock: asyncio.Lock) -> EpisodeTool:
        """Attach the episode (kept out of the pydantic fields)."""
        object.__setattr__(self, "_episode", episode)
        object.__setattr__(self, "_lock", lock)
        return self

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Run one step; a tool error becomes an MCP error result whose text starts with its code."""
        episode: Episode = self._episode  # type: ignore[attr-defined]
        async with self._lock:  # type: ignore[attr-defined]
            try:
                obs, reward, terminated, truncated, info = episode.step({"name": self.name, "arguments": arguments})
            except SimError as exc:  # the episode has ended, or was never reset: say so with its code
                raise _refused(self.name, exc.code, str(exc)) from None
        if info["error"] is not None:
            raise _refused(self.name, info["error"]["code"], info["error"]["message"])
        meta = {"episode_id": episode.episode_id, "turn": info["turn"]}
        if terminated or truncated:
            meta.update({"reward": reward, "terminated": terminated, "truncated": truncated})
        structured = json.loads(obs)
        return ToolResult(
            content=[TextContent(type="text", text=obs)],
            structured_content=structured if isinstance(structured, dict) else {"result": structured},
            meta=meta,
        )


def episode_server(episode: Episode, tools: list[dict[str, Any]], name: str = "companysim") -> FastMCP:
    """A FastMCP server exposing ``tools`` (OpenAI schemas from reset info) as steps of ``episode``."""
    server: FastMCP = FastMCP(name, mask_error_details=True)
    lock = asyncio.Lock()
    for schema in tools:
        fn = schema["function"]
        tool = EpisodeTool(name=fn["name"], description=fn["description"], parameters=fn["parameters"])
        server.add_tool(tool.bind(episode, lock))
    return server

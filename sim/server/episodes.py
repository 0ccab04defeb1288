"""Episodes for MCP clients: ``POST /episodes`` starts one, ``/episodes/{id}/mcp`` serves it over streamable HTTP.

MCP sessions of the 2026-07-28 era are stateless, so the episode cannot hang on a session: it is in the URL,
and the URL answers only to the episode's own bearer token (``Authorization: Bearer <token>``, given by
``POST /episodes``). One FastMCP server serves every episode: a middleware reads the episode the guard put
on the request, lists that episode's tools (its scenario's, as ``Episode.reset`` gives them) and runs a call
as a step on the episode's worker. Both eras work: the modern stateless envelope, and the legacy
``initialize`` handshake with its ``mcp-session-id``. A refused call is an error result whose text starts with
its stable code (``not_found: ...``, ``episode_over: ...``); nothing reaches the client as a traceback.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, Request
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from mcp import types as mt
from mcp.types import TextContent
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from sim.server.errors import ServerError, Unauthorized
from sim.server.hub import Hub, Served
from sim.server.security import bearer

log = logging.getLogger("companysim.server.mcp")
PROTOCOL = "mcp-http"
_PATH = re.compile(r"^/episodes/(ep-\d{1,12})/mcp/?$")


class CreateBody(BaseModel):
    """An episode to start for an MCP client."""

    model_config = ConfigDict(extra="forbid")
    scenario: str | None = None
    seed: int = 0
    difficulty: int | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class _Forward(Tool):
    """A listed tool; calls never reach it (the middleware answers them)."""

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Not called: ``EpisodeCalls.on_call_tool`` answers every call."""
        raise ToolError("internal: the call was not routed to an episode")


def _refused(code: str, message: str) -> ToolError:
    return ToolError(f"{code}: {message}", log_level=logging.DEBUG)


class EpisodeCalls(Middleware):
    """Lists the episode's tools and runs each call as one of its steps."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.listed: dict[str, list[Tool]] = {}  # by scenario: built once (FastMCP lists tools on every call)

    def _served(self) -> Served:
        eid = get_http_request().scope.get("companysim.episode")
        try:
            return self.hub.get(str(eid))
        except ServerError as exc:
            raise _refused(exc.code, str(exc)) from None

    async def on_list_tools(
        self, context: MiddlewareContext[mt.ListToolsRequest], call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]]
    ) -> Sequence[Tool]:
        """The scenario's tools, with the schemas the episode validates against."""
        served = self._served()
        if served.scenario not in self.listed:
            schemas = await self.hub.scenario_tools(served.scenario)
            self.listed[served.scenario] = [
                _Forward(name=f["function"]["name"], description=f["function"]["description"],
                         parameters=f["function"]["parameters"])
                for f in schemas
            ]  # fmt: skip
        return list(self.listed[served.scenario])

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """One step; a refusal is an error result starting with its code."""
        served = self._served()
        name, arguments = context.message.name, dict(context.message.arguments or {})
        try:
            out = await self.hub.step(served, {"name": name, "arguments": arguments}, PROTOCOL)
        except ServerError as exc:
            raise _refused(exc.code, str(exc)) from None
        error = out["info"].get("error")
        if error:
            raise _refused(error["code"], error["message"])
        meta: dict[str, Any] = {"episode_id": served.id, "turn": out["info"].get("turn")}
        if out["terminated"] or out["truncated"]:
            meta.update({"reward": out["reward"], "terminated": out["terminated"], "truncated": out["truncated"]})
        structured = json.loads(out["obs"])
        return ToolResult(
            content=[TextContent(type="text", text=out["obs"])],
            structured_content=structured if isinstance(structured, dict) else {"result": structured},
            meta=meta,
        )


class McpFace:
    """The MCP server of every episode, and the ASGI hook that routes ``/episodes/{id}/mcp`` to it."""

    def __init__(self, hub: Hub, settings: Any) -> None:
        self.hub = hub
        server: FastMCP = FastMCP("companysim", mask_error_details=True, middleware=[EpisodeCalls(hub)])
        self.app = server.http_app(path="/mcp", host_origin_protection=False)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the MCP app's lifespan (its session manager) for as long as the server runs."""
        async with self.app.router.lifespan_context(self.app):
            yield

    def wrap(self, inner: ASGIApp) -> ASGIApp:
        """``inner`` with ``/episodes/{id}/mcp`` answered by the MCP app (after the episode's token checks out)."""

        async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
            match = _PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
            if match is None:
                await inner(scope, receive, send)
                return
            eid, token = match.group(1), bearer(scope.get("headers") or [])
            try:
                if token is None:
                    raise Unauthorized("this episode's MCP URL needs its token: Authorization: Bearer <token>")
                self.hub.get(eid, token)
            except ServerError as exc:
                from sim.server.app import error_response  # noqa: PLC0415 - app imports this module

                await error_response(exc)(scope, receive, send)
                return
            inner_scope = {**scope, "path": "/mcp", "raw_path": b"/mcp", "companysim.episode": eid}
            await self.app(inner_scope, receive, send)

        return dispatch


def router(hub: Hub, settings: Any, mcp: McpFace) -> APIRouter:
    """``POST /episodes`` (data-plane token) and ``DELETE /episodes/{id}`` (the episode's token)."""
    api = APIRouter()

    @api.post("/episodes")
    async def create(body: CreateBody, request: Request) -> dict[str, Any]:
        settings.check_data(request.headers.raw)
        options = dict(body.options)
        if body.difficulty is not None:
            options["difficulty"] = body.difficulty
        served, payload = await hub.create(body.scenario or settings.default_scenario, body.seed, options, PROTOCOL)
        return {
            "id": served.id, "token": served.token, "mcp_path": f"/episodes/{served.id}/mcp",
            "episode_id": served.episode_id, "prompt": payload["prompt"], "actor": payload["info"]["actor"],
            "tools": payload["info"]["tools"],
        }  # fmt: skip

    @api.get("/episodes/{eid}")
    async def state(eid: str, request: Request) -> dict[str, Any]:
        served = hub.get(eid, _token(request))
        return {**(await hub.call(served, "state")), "id": served.id}

    @api.delete("/episodes/{eid}")
    async def delete(eid: str, request: Request) -> dict[str, Any]:
        served = hub.get(eid, _token(request))
        await hub.close(served)
        return {"id": eid, "closed": True}

    return api


def _token(request: Request) -> str:
    token = bearer(request.headers.raw)
    if token is None:
        raise Unauthorized("this episode needs its token: Authorization: Bearer <token>")
    return token

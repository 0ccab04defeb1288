"""The OpenEnv face: a session over WebSocket at ``/ws`` and HTTP ``/reset`` ``/step`` ``/state`` ``/schema``.

Messages follow OpenEnv's server (openenv 0.10: ``core/env_server/http_server.py`` and ``types.py``):
``{"type": "reset", "data": {"seed": 1, ...}}``, ``{"type": "step", "data": <action>}``, ``{"type": "state"}``,
``{"type": "close"}``; answers are ``{"type": "observation", "data": {"observation", "reward", "done"}}``,
``{"type": "state", "data": {...}}`` and ``{"type": "error", "data": {"message", "code"}}`` with OpenEnv's codes
(``INVALID_JSON``, ``UNKNOWN_TYPE``, ``VALIDATION_ERROR``, ``EXECUTION_ERROR``, ``CAPACITY_REACHED``,
``SESSION_ERROR``) plus our stable code as ``error_code``.

A WebSocket is one session: a reset replaces the connection's episode, and closing the socket frees it. The
action is the episode's own: ``{"name": tool, "arguments": {...}}`` (or an OpenAI ``tool_call``); reset data
may add ``scenario``, ``difficulty`` and ``options`` (reset options such as ``noise`` or ``npcs``).

OpenEnv's HTTP ``/reset`` and ``/step`` build a fresh environment per call, so a step never sees a reset. Ours
keep the episode: ``/reset`` answers with ``episode_id`` and ``token`` in the observation, and ``/step``,
``/state`` and ``/close`` act on that episode given ``episode_id`` and its ``token`` (in the body, or the
``X-Episode-Id`` / ``X-Episode-Token`` headers).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sim.server.errors import Busy, ServerError, Unauthorized
from sim.server.hub import Hub, Served

PROTOCOL_WS, PROTOCOL_HTTP = "openenv-ws", "openenv-http"
_SESSION_CODES = frozenset({"not_reset", "no_episode", "episode_failed"})


class ResetData(BaseModel):
    """What a reset may carry."""

    model_config = ConfigDict(extra="ignore")
    seed: int = 0
    scenario: str | None = None
    difficulty: int | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class StepBody(BaseModel):
    """``POST /step``: the action, and which episode (id and token, unless given as headers)."""

    model_config = ConfigDict(extra="forbid")
    action: dict[str, Any]
    episode_id: str | None = None
    token: str | None = None
    timeout_s: float | None = None
    request_id: str | None = None


ACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The tool to call (see the reset observation's tools)."},
        "arguments": {"type": "object", "description": "The tool's arguments."},
    },
    "required": ["name"],
}
OBSERVATION_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The tool's result as JSON, or 'error [code]: message'."},
        "error": {"type": ["object", "null"], "description": "code and message when the call was refused."},
        "info": {"type": "object", "description": "turn, simulated clock, fault, state hash."},
        "prompt": {"type": "string", "description": "The task (reset only)."},
        "tools": {"type": "array", "description": "OpenAI function schemas (reset only)."},
        "episode_id": {"type": "string"},
    },
}
STATE_SCHEMA = {
    "type": "object",
    "properties": {
        "episode_id": {"type": "string"},
        "step_count": {"type": "integer"},
        "done": {"type": "boolean"},
        "reward": {"type": ["number", "null"]},
        "clock": {"type": "string"},
    },
}


def reset_observation(served: Served, payload: dict[str, Any], *, with_token: bool) -> dict[str, Any]:
    """The OpenEnv answer to a reset: prompt, tools and who the agent is; the token only where asked for."""
    info = payload["info"]
    obs: dict[str, Any] = {
        "prompt": payload["prompt"], "tools": info["tools"], "actor": info["actor"], "episode_id": served.id,
        "scenario": served.scenario, "seed": served.seed, "clock": info["clock"], "limits": info["limits"],
    }  # fmt: skip
    if with_token:
        obs["token"] = served.token
    return {"observation": obs, "reward": None, "done": False}


def step_observation(out: dict[str, Any]) -> dict[str, Any]:
    """The OpenEnv answer to a step: the observation text, error, info; reward and done beside it."""
    done = bool(out["terminated"] or out["truncated"])
    info = out["info"]
    obs = {
        "text": out["obs"], "error": info.get("error"), "info": info,
        "terminated": out["terminated"], "truncated": out["truncated"],
    }  # fmt: skip
    return {"observation": obs, "reward": out["reward"], "done": done}


def router(hub: Hub, settings: Any) -> APIRouter:
    """The OpenEnv routes over ``hub``; ``settings`` gives the default scenario and the data-plane check."""
    api = APIRouter()

    async def create(data: ResetData, protocol: str) -> tuple[Served, dict[str, Any]]:
        options = dict(data.options)
        if data.difficulty is not None:
            options["difficulty"] = data.difficulty
        return await hub.create(data.scenario or settings.default_scenario, data.seed, options, protocol)

    @api.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "draining" if hub.draining else "healthy"}

    @api.get("/schema")
    async def schema() -> dict[str, Any]:
        return {"action": ACTION_SCHEMA, "observation": OBSERVATION_SCHEMA, "state": STATE_SCHEMA}

    @api.post("/reset")
    async def reset(request: Request) -> dict[str, Any]:
        settings.check_data(request.headers.raw)
        data = ResetData.model_validate(await _json(request, default={}))
        served, payload = await create(data, PROTOCOL_HTTP)
        return reset_observation(served, payload, with_token=True)

    def episode_of(request: Request, eid: str | None, token: str | None) -> Served:
        settings.check_data(request.headers.raw)
        eid = eid or request.headers.get("x-episode-id")
        token = token or request.headers.get("x-episode-token")
        if not eid or not token:
            raise Unauthorized("name the episode: episode_id and token (from /reset) in the body or headers")
        return hub.get(eid, token)

    @api.post("/step")
    async def step(request: Request) -> dict[str, Any]:
        body = StepBody.model_validate(await _json(request))
        served = episode_of(request, body.episode_id, body.token)
        return step_observation(await hub.step(served, body.action, PROTOCOL_HTTP))

    @api.get("/state")
    async def state(request: Request) -> dict[str, Any]:
        served = episode_of(request, None, None)
        return dict(await hub.call(served, "state"))

    @api.post("/close")
    async def close(request: Request) -> dict[str, Any]:
        body = await _json(request, default={})
        served = episode_of(request, body.get("episode_id"), body.get("token"))
        await hub.close(served)
        return {"episode_id": served.id, "closed": True}

    @api.websocket("/ws")
    async def ws(socket: WebSocket) -> None:
        try:
            settings.check_data(socket.headers.raw)
        except Unauthorized as exc:
            await socket.close(code=1008, reason=str(exc))
            return
        await socket.accept()
        session = WsSession(hub, socket, create)
        try:
            await session.run()
        except WebSocketDisconnect:
            pass
        finally:
            await session.end()

    return api


class WsSession:
    """One WebSocket: at most one episode at a time, freed when the socket goes."""

    def __init__(self, hub: Hub, socket: WebSocket, create: Any) -> None:
        self.hub, self.socket, self.create = hub, socket, create
        self.served: Served | None = None

    async def run(self) -> None:
        """Answer messages until ``close`` or a disconnect."""
        while True:
            raw = await self.socket.receive_text()
            try:
                message = json.loads(raw)
            except ValueError as exc:
                await self._error("INVALID_JSON", "invalid_json", f"Invalid JSON: {exc}")
                continue
            kind = message.get("type") if isinstance(message, dict) else None
            if kind == "close":
                return
            try:
                reply = await self._answer(kind, message)
            except ValidationError as exc:
                await self._error("VALIDATION_ERROR", "bad_message", "Invalid message", errors=_errors(exc))
                continue
            except Busy as exc:
                await self._error("CAPACITY_REACHED", exc.code, str(exc), retry_after=exc.retry_after)
                continue
            except ServerError as exc:
                kind_code = "SESSION_ERROR" if exc.code in _SESSION_CODES else "EXECUTION_ERROR"
                kind_code = "UNKNOWN_TYPE" if isinstance(exc, _Unknown) else kind_code
                await self._error(kind_code, exc.code, str(exc))
                continue
            await self.socket.send_text(json.dumps(reply))

    async def _answer(self, kind: Any, message: dict[str, Any]) -> dict[str, Any]:
        data = message.get("data")
        if kind == "reset":
            reset = ResetData.model_validate(data if data is not None else {})
            await self.end()
            self.served, payload = await self.create(reset, PROTOCOL_WS)
            return {"type": "observation", "data": reset_observation(self.served, payload, with_token=False)}
        if kind in ("step", "state"):
            if self.served is None:
                raise ServerError("send a reset first", code="not_reset", status=409)
            served = self.hub.get(self.served.id)
            if kind == "state":
                return {"type": "state", "data": await self.hub.call(served, "state")}
            if not isinstance(data, dict):
                raise ServerError('a step\'s data is the action: {"name": tool, "arguments": {...}}', code="bad_action")
            return {"type": "observation", "data": step_observation(await self.hub.step(served, data, PROTOCOL_WS))}
        raise _Unknown(kind)

    async def _error(self, code: str, error_code: str, message: str, **extra: Any) -> None:
        data = {"message": message, "code": code, "error_code": error_code, **extra}
        await self.socket.send_text(json.dumps({"type": "error", "data": data}))

    async def end(self) -> None:
        """Close this socket's episode, if any."""
        served, self.served = self.served, None
        if served is not None:
            await self.hub.close(served)


class _Unknown(ServerError):
    def __init__(self, kind: Any) -> None:
        super().__init__(f"Unknown message type: {kind}", code="unknown_type")


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]


async def _json(request: Request, default: Any = None) -> Any:
    """The request's JSON body (``default`` when empty); a malformed body is a ``bad_request`` error."""
    raw = await request.body()
    if not raw.strip():
        if default is None:
            raise ServerError("expected a JSON body", code="bad_request")
        return default
    try:
        return json.loads(raw)
    except ValueError:
        raise ServerError("the body is not valid JSON", code="bad_request") from None

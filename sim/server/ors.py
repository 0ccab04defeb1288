"""The Open Reward Standard face: the routes of ors-sdk 0.1.0's ``ors/server.py``, over the hub's episodes.

Environments are scenario ids (already lower case). Splits are the world splits of ``scenarios.splits``
(``train``, ``validation`` for our ``val``, ``test``): task ``i`` of a split is the scenario played in the
``i``-th company of that split, ``{"scenario", "seed", "difficulty"}``, so a test task never runs in a company a
policy trained in. A ``task_spec`` may name any seed, ``difficulty`` and reset ``options``.

Sessions: ``POST /create_session`` mints the session id over SSE (128 random bits: it is the session's only
key), ``POST /create`` with ``X-Session-ID`` starts the episode, ``/{env}/call`` runs one tool call and answers
over SSE (``task_id``, then ``chunk``* and ``end`` carrying a RunToolOutput of at most 4 KB per event, with a
keep-alive comment every 10 s), ``/ping`` keeps it alive and ``/delete`` ends it; idle sessions are reaped
like every episode. A refused call is ``ok: true`` with the text ``error [code]: message`` and the error in
``metadata``: it is an observation for the agent, not a failure of the protocol; only an unknown tool is
``ok: false``. ``reward`` is 0 until the episode ends, then the rubric's score, with ``finished: true``.
The session's last answer is kept under its ``task_id`` so a client that lost the stream can re-post it.
Not served: ``messages`` and ``score_group`` (openreward's additions), and the redirect of an unknown first path
segment to the first environment.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, model_validator

from scenarios.splits import seeds_in
from sim.server.errors import NoEpisode, ServerError
from sim.server.hub import Hub, Served

PROTOCOL = "ors"
SPLITS = (("train", "train"), ("validation", "val"), ("test", "test"))
CHUNK = 4096
PING_S = 10.0


class CreateSession(BaseModel):
    """``POST /create``: exactly one of ``task_spec`` or (``split``, ``index``)."""

    model_config = ConfigDict(extra="forbid")
    env_name: str | None = None
    task_spec: dict[str, Any] | None = None
    split: str | None = None
    index: int | None = None
    secrets: dict[str, str] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> CreateSession:
        has_index = self.split is not None and self.index is not None
        if (self.task_spec is not None) == has_index or (self.split is None) != (self.index is None):
            raise ValueError("Provide either task_spec or both split and index, not both/neither")
        return self


class TaskSpec(BaseModel):
    """What an ORS task names."""

    model_config = ConfigDict(extra="forbid")
    scenario: str | None = None
    seed: int
    difficulty: int = 1
    options: dict[str, Any] = {}


class ToolCall(BaseModel):
    """``POST /{env}/call``."""

    model_config = ConfigDict(extra="forbid")
    name: str
    input: dict[str, Any]
    task_id: str | None = None


class SplitBody(BaseModel):
    """A split, and optionally an index or a range in it."""

    model_config = ConfigDict(extra="forbid")
    split: str
    index: int | None = None
    start: int | None = None
    stop: int | None = None


@dataclass
class Session:
    """One ORS session: its episode once created, and its last call's answer for a reconnect."""

    sid: str
    minted: float
    served: Served | None = None
    prompt: str = ""
    last: tuple[str, str] | None = None  # (task_id, RunToolOutput JSON)


def _sse(event: str, data: str) -> bytes:
    return f"event: {event}\r\ndata: {data}\r\n\r\n".encode()


def router(hub: Hub, settings: Any) -> APIRouter:
    """The ORS routes."""
    api = APIRouter()
    sessions: dict[str, Session] = {}
    names = settings.scenarios or _registered()
    envs = {n.lower(): n for n in names}

    def env_of(name: str) -> str:
        scenario = envs.get(name.lower())
        if scenario is None:
            raise ServerError(f"unknown environment {name!r}", code="unknown_environment", status=404)
        return scenario

    def split_seed(split: str, index: int) -> int:
        world = dict(SPLITS).get(split)
        if world is None:
            raise ServerError("Invalid split", code="bad_split")
        if not 0 <= index < settings.tasks_per_split:
            raise ServerError("Invalid index", code="bad_index")
        return seeds_in(world, index + 1)[index]

    def tasks(scenario: str, split: str, start: int, stop: int) -> list[dict[str, Any]]:
        world = dict(SPLITS).get(split)
        if world is None:
            raise ServerError("Invalid split", code="bad_split")
        n = settings.tasks_per_split
        start, stop = max(0, min(start, n)), max(0, min(stop, n))
        seeds = seeds_in(world, stop)[start:]
        return [{"scenario": scenario, "seed": s, "difficulty": 1} for s in seeds]

    def session_of(request: Request, created: bool = True) -> Session:
        settings.check_data(request.headers.raw)
        sid = (request.headers.get("x-session-id") or "").strip()
        if not sid:
            raise ServerError("X-Session-ID header is required", code="bad_request")
        session = sessions.get(sid)
        if session is None or (created and session.served is None):
            raise NoEpisode("Active environment not found")
        if session.served is not None:
            try:
                hub.get(session.served.id)
            except ServerError:
                sessions.pop(sid, None)
                raise
        return session

    @api.get("/list_environments")
    async def list_environments(request: Request) -> list[str]:
        settings.check_data(request.headers.raw)
        return list(envs)

    @api.get("/{env}/tools")
    async def tools(env: str, request: Request) -> dict[str, Any]:
        settings.check_data(request.headers.raw)
        return {"tools": _specs(await hub.scenario_tools(env_of(env)))}

    @api.get("/{env}/splits")
    async def splits(env: str, request: Request) -> list[dict[str, str]]:
        settings.check_data(request.headers.raw)
        env_of(env)
        return [{"name": name, "type": name} for name, _ in SPLITS]

    @api.post("/{env}/tasks")
    async def list_tasks(env: str, body: SplitBody, request: Request) -> dict[str, Any]:
        settings.check_data(request.headers.raw)
        return {"tasks": tasks(env_of(env), body.split, 0, settings.tasks_per_split), "env_name": env}

    @api.post("/{env}/num_tasks")
    async def num_tasks(env: str, body: SplitBody, request: Request) -> dict[str, int]:
        settings.check_data(request.headers.raw)
        env_of(env)
        tasks(env, body.split, 0, 0)  # validates the split
        return {"num_tasks": settings.tasks_per_split}

    @api.post("/{env}/task")
    async def task(env: str, body: SplitBody, request: Request) -> dict[str, Any]:
        settings.check_data(request.headers.raw)
        scenario = env_of(env)
        seed = split_seed(body.split, body.index if body.index is not None else -1)
        return {"task": {"scenario": scenario, "seed": seed, "difficulty": 1}}

    @api.post("/{env}/task_range")
    async def task_range(env: str, body: SplitBody, request: Request) -> dict[str, Any]:
        settings.check_data(request.headers.raw)
        start = body.start or 0
        stop = settings.tasks_per_split if body.stop is None else body.stop
        return {"tasks": tasks(env_of(env), body.split, start, stop)}

    @api.post("/create_session")
    async def create_session(request: Request) -> StreamingResponse:
        settings.check_data(request.headers.raw)
        _expire(sessions, hub.idle_timeout)
        sid = os.urandom(16).hex()  # allow-nondeterminism: a session key, never world state
        sessions[sid] = Session(sid=sid, minted=time.monotonic())

        async def stream() -> AsyncIterator[bytes]:
            yield _sse("task_id", sid)
            yield _sse("end", "")

        return StreamingResponse(stream(), media_type="text/event-stream", headers=_SSE_HEADERS)

    @api.post("/create")
    async def create(body: CreateSession, request: Request) -> dict[str, str]:
        session = session_of(request, created=False)
        if session.served is not None:
            raise ServerError("Session already exists", code="session_exists")
        scenario = env_of(body.env_name or (body.task_spec or {}).get("scenario") or next(iter(envs)))
        if body.task_spec is not None:
            spec = TaskSpec.model_validate(body.task_spec)
            if spec.scenario is not None:
                scenario = env_of(spec.scenario)
        else:
            assert body.split is not None and body.index is not None
            spec = TaskSpec(seed=split_seed(body.split, body.index))
        options = {**spec.options, "difficulty": spec.difficulty}
        served, payload = await hub.create(scenario, spec.seed, options, PROTOCOL)
        session.served, session.prompt = served, payload["prompt"]
        return {"sid": session.sid}

    @api.get("/{env}/prompt")
    async def prompt(env: str, request: Request) -> list[dict[str, Any]]:
        session = session_of(request)
        return [{"type": "text", "text": session.prompt, "detail": None}]

    @api.get("/{env}/task_tools")
    async def task_tools(env: str, request: Request) -> dict[str, Any]:
        session = session_of(request)
        assert session.served is not None
        return {"tools": _specs(await hub.scenario_tools(session.served.scenario))}

    @api.post("/{env}/call")
    async def call(env: str, body: ToolCall, request: Request) -> StreamingResponse:
        session = session_of(request)
        served = session.served
        assert served is not None
        if body.task_id is not None:
            if session.last is None or session.last[0] != body.task_id:
                raise ServerError("unknown task_id", code="unknown_task")
            result: Awaitable[str] = _ready(session.last[1])
            task_id = body.task_id
        else:
            task_id = os.urandom(8).hex()  # allow-nondeterminism: a reconnect handle, never world state
            result = _run(hub, served, session, task_id, body)
        return StreamingResponse(_stream(task_id, result), media_type="text/event-stream", headers=_SSE_HEADERS)

    @api.post("/ping")
    async def ping(request: Request) -> dict[str, str]:
        session = session_of(request)
        assert session.served is not None
        session.served.last_used = time.monotonic()
        return {"status": "ok"}

    @api.post("/delete")
    async def delete(request: Request) -> dict[str, str]:
        settings.check_data(request.headers.raw)
        sid = (request.headers.get("x-session-id") or "").strip()
        session = sessions.pop(sid, None)
        if session is not None and session.served is not None:
            await hub.close(session.served)
        return {"sid": sid}

    @api.post("/delete_session")
    async def delete_session(request: Request) -> dict[str, str]:
        settings.check_data(request.headers.raw)
        sid = (request.headers.get("x-session-id") or "").strip()
        session = sessions.get(sid)
        if session is not None and session.served is None:
            sessions.pop(sid, None)
        return {"sid": sid}

    return api


async def _run(hub: Hub, served: Served, session: Session, task_id: str, body: ToolCall) -> str:
    tools = {f["function"]["name"] for f in await hub.scenario_tools(served.scenario)}
    if body.name not in tools:
        return json.dumps({"ok": False, "error": f"{body.name!r} is not a valid tool"})
    out = await hub.step(served, {"name": body.name, "arguments": body.input}, PROTOCOL)
    info = out["info"]
    finished = bool(out["terminated"] or out["truncated"])
    metadata = {
        "episode_id": served.id, "turn": info.get("turn"), "clock": info.get("clock"), "error": info.get("error"),
        "fault": info.get("fault"), "terminated": out["terminated"], "truncated": out["truncated"],
    }  # fmt: skip
    output = {
        "blocks": [{"type": "text", "text": out["obs"], "detail": None}],
        "metadata": metadata, "reward": float(out["reward"]), "finished": finished,
    }  # fmt: skip
    text = json.dumps({"ok": True, "output": output})
    session.last = (task_id, text)
    return text


async def _ready(text: str) -> str:
    return text


async def _stream(task_id: str, result: Awaitable[str]) -> AsyncIterator[bytes]:
    """``task_id``, keep-alive comments while the call runs, then the answer in 4 KB events."""
    yield _sse("task_id", task_id)
    job = asyncio.ensure_future(result)
    while True:
        done, _ = await asyncio.wait({job}, timeout=PING_S)
        if done:
            break
        yield b": ping\r\n\r\n"
    try:
        text = job.result()
    except ServerError as exc:
        yield _sse("error", f"{exc.code}: {exc}")
        return
    for i in range(0, len(text), CHUNK):
        yield _sse("end" if i + CHUNK >= len(text) else "chunk", text[i : i + CHUNK])


def _specs(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": f["function"]["name"], "description": f["function"]["description"],
         "input_schema": f["function"]["parameters"]}
        for f in tools
    ]  # fmt: skip


def _registered() -> tuple[str, ...]:
    from scenarios.registry import registered  # noqa: PLC0415 - only when no list was configured

    return tuple(r.id for r in registered())


def _expire(sessions: dict[str, Session], idle: float) -> None:
    """Forget minted session ids never used for ``/create`` within the idle timeout (bounded memory)."""
    cutoff = time.monotonic() - idle
    for sid in [s.sid for s in sessions.values() if s.served is None and s.minted < cutoff]:
        sessions.pop(sid, None)


_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

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

openreward 0.1.167's additions: ``GET /{env}/messages`` is the session's conversation so far as role-tagged
Anthropic-style messages (the prompt as a user turn, then per call an assistant ``tool_call`` block and a user
``tool_result`` block with the observation, ``is_error`` for a refused call). ``POST /{env}/score_group`` scores a
GRPO group: each candidate names its ORS session in ``metadata.sid`` (a session of the same task as the one
posting), and its score is that session's grade now (its final reward once it ended) with the group advantage
(reward minus the group mean) in the score's metadata; our rubric grades state, not transcripts, so a candidate
without a session is refused. It answers over SSE like ``call``. ``/{env}/tools`` does not advertise
``supports_score_group``: ors-sdk 0.1.0's client forbids extra fields there.
Not served: the redirect of an unknown first path segment to the first environment.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
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


class Candidate(BaseModel):
    """One rollout of a ``score_group`` request; ``metadata.sid`` names its ORS session."""

    model_config = ConfigDict(extra="forbid")
    messages: list[dict[str, Any]]
    metadata: dict[str, Any] | None = None


class ScoreGroup(BaseModel):
    """``POST /{env}/score_group``."""

    model_config = ConfigDict(extra="forbid")
    candidates: list[Candidate]
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
    history: list[dict[str, Any]] = field(default_factory=list)  # the Messages of GET /{env}/messages


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
        session.history = [_message("user", [_text(session.prompt)])]
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

    @api.get("/{env}/messages")
    async def messages(env: str, request: Request) -> list[dict[str, Any]]:
        return list(session_of(request).history)

    @api.post("/{env}/score_group")
    async def score_group(env: str, body: ScoreGroup, request: Request) -> StreamingResponse:
        session = session_of(request)
        assert session.served is not None
        if body.task_id is not None:
            if session.last is None or session.last[0] != body.task_id:
                raise ServerError("unknown task_id", code="unknown_task")
            result: Awaitable[str] = _ready(session.last[1])
            task_id = body.task_id
        else:
            group = [_member(sessions, session, i, c) for i, c in enumerate(body.candidates)]
            task_id = os.urandom(8).hex()  # allow-nondeterminism: a reconnect handle, never world state
            result = _score(hub, session, task_id, group)
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
    session.history.append(_message("assistant", [_tool_call(task_id, body)]))
    if body.name not in tools:
        error = f"{body.name!r} is not a valid tool"
        session.history.append(_message("user", [_tool_result(task_id, error, True)]))
        return json.dumps({"ok": False, "error": error})
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
    session.history.append(_message("user", [_tool_result(task_id, out["obs"], bool(info.get("error")))]))
    return text


def _member(sessions: dict[str, Session], own: Session, index: int, candidate: Candidate) -> Session:
    """The session a group candidate names; it must play the same task as the session scoring the group."""
    sid = (candidate.metadata or {}).get("sid")
    if not isinstance(sid, str) or not sid:
        raise ServerError(
            f"candidate {index} names no session: put its ORS session id in metadata.sid "
            "(this environment grades an episode's state, not a transcript)",
            code="bad_request",
        )
    member = sessions.get(sid)
    if member is None or member.served is None:
        raise NoEpisode(f"candidate {index}: no ORS session {sid!r}")
    mine, theirs = own.served, member.served
    assert mine is not None
    if (theirs.scenario, theirs.seed) != (mine.scenario, mine.seed):
        raise ServerError(
            f"candidate {index} played {theirs.scenario} seed {theirs.seed}, not this session's task "
            f"({mine.scenario} seed {mine.seed}); a group is rollouts of one task",
            code="bad_request",
        )
    return member


async def _score(hub: Hub, session: Session, task_id: str, group: list[Session]) -> str:
    """Every member's grade now (its final reward once ended), with its advantage over the group mean."""
    grades = []
    for member in group:
        assert member.served is not None
        grades.append(await hub.call(member.served, "grade"))
    mean = sum(g["value"] for g in grades) / len(grades) if grades else 0.0
    scores = [
        {"reward": float(g["value"]), "metadata": {
            "sid": m.sid, "finished": m.served is not None and m.served.status == "ended",
            "advantage": float(g["value"]) - mean, "checks_passed": g["passed"], "checks": g["checks"],
        }}
        for m, g in zip(group, grades, strict=True)
    ]  # fmt: skip
    text = json.dumps({"scores": scores})
    session.last = (task_id, text)
    return text


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "detail": None}


def _message(role: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": role, "blocks": blocks, "detail": None}


def _tool_call(task_id: str, body: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": task_id, "name": body.name, "input": body.input, "detail": None}


def _tool_result(task_id: str, text: str, is_error: bool) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_call_id": task_id,
        "blocks": [_text(text)],
        "is_error": is_error,
        "detail": None,
    }


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

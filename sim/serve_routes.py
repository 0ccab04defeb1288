"""The HTTP side of ``companysim serve``: the Mattermost facade plus the ``/api/v4/companysim`` control routes.

Kept apart from ``sim.serve`` so FastAPI loads only when something is actually served (the CLI imports
``sim.serve`` for every command).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Body, FastAPI, Request

from mcp_tools.chat.mattermost import build_mattermost_app, session_token
from sim.errors import SimError
from sim.serve import EpisodeBackend, StepError


def add_control_routes(backend: EpisodeBackend) -> FastAPI:
    """The facade over ``backend`` with ``episode`` (GET), ``wait``, ``submit`` and ``reset`` (POST)."""
    app: FastAPI = build_mattermost_app(backend)

    @app.get("/api/v4/companysim/episode")
    async def episode(request: Request) -> dict[str, Any]:
        session_token(backend, request)
        return backend.status()

    @app.post("/api/v4/companysim/wait")
    async def wait(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        session_token(backend, request)
        obs, over = backend.step("wait", {"minutes": body.get("minutes")})
        return {**json.loads(obs), "over": over}

    @app.post("/api/v4/companysim/submit")
    async def submit(request: Request) -> dict[str, Any]:
        session_token(backend, request)
        backend.step("submit", {})
        return backend.status()

    @app.post("/api/v4/companysim/reset")
    async def reset(request: Request, body: dict[str, Any] | None = Body(None)) -> dict[str, Any]:  # noqa: B008
        session_token(backend, request)
        seed = (body or {}).get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise StepError("invalid_argument", f"seed must be a non-negative integer; got {seed!r:.40}")
        try:
            return backend.start(seed)
        except SimError as exc:
            raise StepError(exc.code, str(exc)) from None

    return app

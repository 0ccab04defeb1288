"""``companysim server``: the FastAPI application that puts every face on one ``Hub`` of worker processes.

Design (the front process and N workers):

- The front process runs uvicorn with one event loop. It holds no episode: it checks tokens, parses the
  protocol, and routes each call by episode id to the worker process that holds the episode
  (``sim.server.pool``). Workers (default: one per core) each hold a dict of live ``Episode`` objects
  (``sim.server.worker``); an episode never moves.
- Faces, one module each: ``openenv`` (``/ws``, ``/reset``, ``/step``, ``/state``, ``/schema``, ``/health``), ``ors``
  (the Open Reward Standard routes), ``mcp_http`` (``/episodes/{id}/mcp``), and ``admin`` (``/admin/*``).
  ``POST /episodes`` starts an episode for a client that will speak MCP to it (its answer carries the URL and
  the episode's bearer token); ``DELETE /episodes/{id}`` ends one.
- Tokens: ``token`` guards the data plane (required when binding anything but loopback; ``Authorization:
  Bearer`` or ``X-API-Key``); each episode has its own token, the only key to its MCP URL and its OpenEnv HTTP
  routes; ``admin_token`` guards ``/admin``. Host/Origin checks and the body limit are ``security.Guard``.
- Shutdown: uvicorn stops accepting on SIGTERM/SIGINT, lets in-flight requests finish, then the lifespan's
  exit drains the hub (``Hub.drain``: no new steps, in-flight worker calls finish, workers close their episodes
  and exit). With ``state_dir``, the drain then snapshots each live HTTP-addressed episode there and the next
  server on the same directory resumes them (``sim.server.resume``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from sim.serve import same_secret
from sim.server.errors import Busy, ServerError, Unauthorized
from sim.server.hub import Hub
from sim.server.security import BodyTooLarge, Guard, bearer

log = logging.getLogger("companysim.server")


def new_secret() -> str:
    """A random token for a server started without one (printed by the CLI)."""
    return os.urandom(16).hex()  # allow-nondeterminism: an auth secret, never world state


@dataclass
class Settings:
    """How one server runs.

    Args:
        token: The data-plane token (None: loopback only, no token asked).
        admin_token: The control-plane token (always required for ``/admin``).
        workers: Worker processes.
        max_episodes: Live episodes at most (0: 64 per worker).
        idle_timeout: Seconds without a request before an episode is closed.
        max_body: Largest request body or WebSocket message, in bytes.
        data_dir: The base-world cache.
        scenarios: The scenarios served as ORS environments (default: every registered one).
        default_scenario: What a reset without ``scenario`` plays.
        tasks_per_split: How many tasks (world seeds) each ORS split lists.
        allowed_hosts: Host names besides loopback the server answers to (``*``: any, only with a token).
        state_dir: Where live episodes are snapshotted on shutdown and resumed from on start (None: not kept).
    """

    admin_token: str
    token: str | None = None
    workers: int = 1
    max_episodes: int = 0
    idle_timeout: float = 900.0
    max_body: int = 1 << 20
    data_dir: str | None = None
    scenarios: tuple[str, ...] = ()
    default_scenario: str = "triage-tickets-v0"
    tasks_per_split: int = 100
    allowed_hosts: tuple[str, ...] = field(default_factory=tuple)
    state_dir: str | None = None

    def check_data(self, headers: Iterable[tuple[bytes, bytes]]) -> None:
        """Require the data-plane token when one is configured.

        Raises:
            Unauthorized: it is configured and missing or wrong.
        """
        if self.token is None:
            return
        given = bearer(headers)
        if given is None or not same_secret(given, self.token):
            raise Unauthorized("this server needs its token: Authorization: Bearer <token> or X-API-Key")

    def check_admin(self, headers: Iterable[tuple[bytes, bytes]]) -> None:
        """Require the admin token.

        Raises:
            Unauthorized: it is missing or wrong.
        """
        given = bearer(headers)
        if given is None or not same_secret(given, self.admin_token):
            raise Unauthorized("the control plane needs the admin token: Authorization: Bearer <admin token>")


def error_response(exc: ServerError) -> JSONResponse:
    """One JSON line with a stable code; 429 says when to come back."""
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Busy) else None
    if isinstance(exc, Unauthorized):
        headers = {"WWW-Authenticate": "Bearer"}
    return JSONResponse({"detail": str(exc), "code": exc.code}, status_code=exc.status, headers=headers)


def build_app(settings: Settings) -> Any:
    """The whole server as an ASGI app (the guard around FastAPI); ``app.state.hub`` once started."""
    from sim.server import admin, episodes, openenv, ors  # noqa: PLC0415 - the faces load with the app

    hub = Hub(
        workers=settings.workers, max_episodes=settings.max_episodes, idle_timeout=settings.idle_timeout,
        data_dir=settings.data_dir, state_dir=settings.state_dir,
    )  # fmt: skip
    mcp = episodes.McpFace(hub, settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        hub.start()
        resumed = await hub.resume()
        if resumed:
            log.warning("resumed %d episodes from %s", resumed, settings.state_dir)
        try:
            async with mcp.running():
                yield
        finally:
            await hub.drain()

    app = FastAPI(title="companysim server", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.hub, app.state.settings = hub, settings

    @app.exception_handler(ServerError)
    async def server_error(request: Request, exc: ServerError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(ValidationError)
    async def invalid(request: Request, exc: ValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid"}
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return JSONResponse({"detail": f"{where}: {first['msg']}", "code": "bad_request"}, status_code=422)

    @app.exception_handler(BodyTooLarge)
    async def too_large(request: Request, exc: BodyTooLarge) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "code": "too_large"}, status_code=413)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        log.warning("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return JSONResponse({"detail": "internal error", "code": "internal"}, status_code=500)

    app.include_router(admin.router(hub, settings), prefix="/admin")
    app.include_router(openenv.router(hub, settings))
    app.include_router(episodes.router(hub, settings, mcp))
    app.include_router(ors.router(hub, settings))
    guard = Guard(mcp.wrap(app), allowed_hosts=settings.allowed_hosts, max_body=settings.max_body)
    guard.state = app.state  # tests and the CLI reach the hub through it
    return guard

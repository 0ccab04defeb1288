"""The control plane under ``/admin`` (admin token): episodes, workers, Prometheus metrics, status.

``GET /admin/status``   workers, live and maximum episodes, whether draining (what ``companysim server status`` shows)
``GET /admin/workers``  per worker: slot, generation, alive, pid, episodes, resident memory
``GET /admin/episodes`` every live episode (never a token); ``GET /admin/episodes/{id}`` one with its score,
                        every check's evidence and its faults (the admin may see what the agent may not)
``POST /admin/episodes`` start one (``scenario``, ``seed``, ``options``): its id and token, to hand to a client
``DELETE /admin/episodes/{id}`` kill one
``GET /admin/metrics``  Prometheus text
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from sim.server.hub import Hub


class CreateBody(BaseModel):
    """An episode to start."""

    model_config = ConfigDict(extra="forbid")
    scenario: str | None = None
    seed: int = 0
    options: dict[str, Any] = Field(default_factory=dict)


def router(hub: Hub, settings: Any) -> APIRouter:
    """The admin routes; every one checks the admin token first."""
    api = APIRouter()

    @api.get("/status")
    async def status(request: Request) -> dict[str, Any]:
        settings.check_admin(request.headers.raw)
        workers = await hub.health()
        return {
            "live_episodes": len(hub.episodes), "max_episodes": hub.max_episodes, "draining": hub.draining,
            "idle_timeout_s": hub.idle_timeout, "workers": workers,
            "failed_episodes": len(hub.failed),
        }  # fmt: skip

    @api.get("/workers")
    async def workers(request: Request) -> list[dict[str, Any]]:
        settings.check_admin(request.headers.raw)
        return await hub.health()

    @api.get("/episodes")
    async def episodes(request: Request) -> list[dict[str, Any]]:
        settings.check_admin(request.headers.raw)
        return [s.summary() for s in sorted(hub.episodes.values(), key=lambda s: int(s.id.split("-")[1]))]

    @api.get("/episodes/{eid}")
    async def inspect(eid: str, request: Request) -> dict[str, Any]:
        settings.check_admin(request.headers.raw)
        served = hub.get(eid)
        return {**served.summary(), **(await hub.call(served, "inspect"))}

    @api.post("/episodes")
    async def create(body: CreateBody, request: Request) -> dict[str, Any]:
        settings.check_admin(request.headers.raw)
        served, payload = await hub.create(body.scenario or settings.default_scenario, body.seed, body.options, "admin")
        return {**served.summary(), "token": served.token, "prompt": payload["prompt"]}

    @api.delete("/episodes/{eid}")
    async def kill(eid: str, request: Request) -> dict[str, Any]:
        settings.check_admin(request.headers.raw)
        served = hub.get(eid)
        await hub.close(served, "killed")
        return {"id": eid, "killed": True}

    @api.get("/metrics")
    async def metrics(request: Request) -> Response:
        settings.check_admin(request.headers.raw)
        return Response(hub.metrics.text(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return api

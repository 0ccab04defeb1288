"""App benchmarks: read and write step p50 per app (on each app's check_app examples), and the Mattermost
facade's HTTP round trip. Office recalculation figures are added by the office apps when installed."""

from __future__ import annotations

import importlib
import socket
import tempfile
import threading
import time
from datetime import UTC, datetime
from datetime import time as dtime
from typing import Any

from bench.common import fig, percentile, write_results
from mcp_tools.base import READ, Actor, ToolContext, call_tool
from mcp_tools.check import Placeholders, _examples
from mcp_tools.company import company_toolsets
from worlds.changelog import track
from worlds.clock import FixedClock
from worlds.rawsql import Sql
from worlds.spec import WorldSpec
from worlds.store import WorldStore


def _app_steps(world: Any) -> dict[str, Any]:
    """p50 of one tool call per app, READ and WRITE (each write in a savepoint rolled back, as a refused step)."""
    figures: dict[str, Any] = {}
    fork = world.fork()
    session = fork.session()
    sql = Sql.of(session)
    lead = sql.scalar("SELECT lead_id FROM projects ORDER BY id LIMIT 1")
    actor = Actor.load(session, int(lead))
    clock = FixedClock(datetime.combine(world.spec.start_date, dtime(10), tzinfo=UTC))
    track(session, clock=clock, actor_id=actor.employee_id)
    ctx = ToolContext(session=session, actor=actor, clock=clock)
    places = Placeholders(sql, actor, world.spec.start_date)
    for toolset in company_toolsets():
        examples = _examples(toolset)
        times: dict[str, list[float]] = {"read": [], "write": []}
        for spec in toolset.specs:
            for raw in examples.get(spec.name, []):
                args = {k: places.fill(v) for k, v in raw.items()}
                kind = "read" if spec.kind == READ else "write"
                for _ in range(30):
                    sql.execute("SAVEPOINT b")
                    t0 = time.perf_counter()
                    try:
                        call_tool(spec, args, ctx)
                        ok = True
                    except Exception:  # noqa: BLE001 - a refused example is simply not timed
                        ok = False
                    took = time.perf_counter() - t0
                    sql.execute("ROLLBACK TO SAVEPOINT b")
                    sql.execute("RELEASE SAVEPOINT b")
                    if ok:
                        times[kind].append(took)
        for kind, samples in times.items():
            if samples:
                figures[f"{toolset.app}_{kind}_p50_us"] = fig(percentile(samples, 50) * 1e6, "us")
    session.close()
    fork.close()
    return figures


def _facade_rtt(store: WorldStore) -> dict[str, Any]:
    """HTTP round trip of the Mattermost facade on loopback (read a channel's posts; create a post)."""
    import httpx
    import uvicorn

    from mcp_tools.chat.mattermost import build_mattermost_app
    from sim.episode import Episode
    from sim.serve import EpisodeBackend

    episode = Episode("triage-tickets-v0", store=store)
    _, info = episode.reset(seed=0)
    backend = EpisodeBackend(episode, "bench-token")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_mattermost_app(backend), port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    figures: dict[str, Any] = {}
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}/api/v4", headers={"Authorization": "Bearer bench-token"}
        ) as c:
            team = c.get("/users/me/teams").json()[0]["name"]
            channel = c.get(f"/teams/name/{team}/channels/name/town-square").json()["id"]
            reads, writes = [], []
            for i in range(40):
                t0 = time.perf_counter()
                c.get(f"/channels/{channel}/posts", params={"per_page": 20}).raise_for_status()
                reads.append(time.perf_counter() - t0)
                if episode.done:
                    break
                t0 = time.perf_counter()
                c.post("/posts", json={"channel_id": channel, "message": f"bench {i}"}).raise_for_status()
                writes.append(time.perf_counter() - t0)
                if episode.done:
                    break
        figures["mattermost_read_rtt_p50_ms"] = fig(percentile(reads, 50) * 1e3, "ms")
        figures["mattermost_post_rtt_p50_ms"] = fig(percentile(writes, 50) * 1e3, "ms")
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        episode.close()
    return figures


def run() -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        store = WorldStore(tmp)
        world = store.base(WorldSpec.parse(seed=0, employees=40, history_days=30))
        figures = _app_steps(world)
        figures.update(_facade_rtt(store))
        try:  # office apps measure their own recalculation engines when present
            office = importlib.import_module("bench.office")
            figures.update(office.figures())
        except (ImportError, AttributeError):
            pass
        world.close()
    return write_results("apps", figures)

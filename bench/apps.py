"""App benchmarks: read and write step p50 per app (on each app's check_app examples; the office apps in their
CHECK_ENV), the Mattermost facade's HTTP round trip, and spreadsheet recalculation latency on the generated
workbooks with the long-lived LibreOffice (when installed) and with the Python engine."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from contextlib import nullcontext
from datetime import UTC, datetime
from datetime import time as dtime
from pathlib import Path
from typing import Any

from bench.common import fig, percentile, write_results
from mcp_tools.base import READ, Actor, ToolContext, call_tool
from mcp_tools.check import Placeholders, _environment, _examples
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
    scratch = tempfile.TemporaryDirectory(prefix="companysim-bench-")
    for toolset in company_toolsets():
        examples = _examples(toolset)
        sql.execute("SAVEPOINT env")  # each app's CHECK_ENV (documents, a git workspace) is undone after it
        # Only the office apps' environment: git's needs repositories this bench does not generate.
        env = _environment(toolset, ctx, Path(scratch.name)) if toolset.app in ("docs", "sheets") else nullcontext()
        env.__enter__()
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
        env.__exit__(None, None, None)
        sql.execute("ROLLBACK TO SAVEPOINT env")
        sql.execute("RELEASE SAVEPOINT env")
        for kind, samples in times.items():
            if samples:
                figures[f"{toolset.app}_{kind}_p50_us"] = fig(percentile(samples, 50) * 1e6, "us")
    scratch.cleanup()
    session.close()
    fork.close()
    return figures


def _office_recalc(world: Any) -> dict[str, Any]:
    """Recalculation of the generated workbooks: Python engine, warm long-lived LibreOffice, its cold start.

    Also a sheets write step with each engine forced (``COMPANYSIM_RECALC``), on the generated budget.
    """
    from mcp_tools.sheets import libreoffice
    from worlds.office import files, formula

    fork = world.fork()
    session = fork.session()
    sql = Sql.of(session)
    rows = sql.all(
        "SELECT b.data, d.mime_type FROM documents d JOIN blobs b ON b.sha256 = d.blob_sha256"
        " WHERE d.kind = 'spreadsheet' ORDER BY d.id"
    )
    books = [
        (files.read_workbook(bytes(data), files.format_of_mime(str(mime))), files.format_of_mime(str(mime)))
        for data, mime in rows
    ]
    figures: dict[str, Any] = {"office_workbooks": fig(len(books), "workbooks")}
    py = []
    for _ in range(50):
        for book, _fmt in books:
            t0 = time.perf_counter()
            formula.recalculate(book)
            py.append(time.perf_counter() - t0)
    figures["sheets_recalc_python_p50_us"] = fig(percentile(py, 50) * 1e6, "us")
    if libreoffice.available():
        office = libreoffice.office()
        office.shutdown()
        t0 = time.perf_counter()
        libreoffice.engine().recalculate(*books[0])
        figures["sheets_recalc_libreoffice_cold_start_ms"] = fig((time.perf_counter() - t0) * 1e3, "ms")
        lo = []
        for _ in range(10):
            for book, fmt in books:
                t0 = time.perf_counter()
                libreoffice.engine().recalculate(book, fmt)
                lo.append(time.perf_counter() - t0)
        figures["sheets_recalc_libreoffice_p50_ms"] = fig(percentile(lo, 50) * 1e3, "ms")
    lead = sql.scalar("SELECT owner_id FROM documents WHERE kind = 'spreadsheet' ORDER BY id LIMIT 1")
    actor = Actor.load(session, int(lead))
    clock = FixedClock(datetime.combine(world.spec.start_date, dtime(10), tzinfo=UTC))
    track(session, clock=clock, actor_id=actor.employee_id)
    ctx = ToolContext(session=session, actor=actor, clock=clock)
    doc = str(sql.scalar("SELECT id FROM documents WHERE kind = 'spreadsheet' ORDER BY id LIMIT 1"))
    from mcp_tools.company import company_specs

    spec = company_specs()["sheets_write_cell"]
    saved = os.environ.get("COMPANYSIM_RECALC")
    for engine in ("python", "libreoffice") if libreoffice.available() else ("python",):
        os.environ["COMPANYSIM_RECALC"] = engine
        times = []
        for i in range(20):
            sql.execute("SAVEPOINT b")
            t0 = time.perf_counter()
            call_tool(spec, {"document": doc, "cell": "C2", "value": str(1000 + i)}, ctx)
            times.append(time.perf_counter() - t0)
            sql.execute("ROLLBACK TO SAVEPOINT b")
            sql.execute("RELEASE SAVEPOINT b")
        figures[f"sheets_write_step_{engine}_p50_ms"] = fig(percentile(times, 50) * 1e3, "ms")
    if saved is None:
        os.environ.pop("COMPANYSIM_RECALC", None)
    else:
        os.environ["COMPANYSIM_RECALC"] = saved
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
        figures.update(_office_recalc(world))
        world.close()
    return write_results("apps", figures)

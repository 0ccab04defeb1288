"""The raw-SQL tool path on a real PostgreSQL 15: the same calls give the same results, log and dump as SQLite."""

from datetime import UTC, datetime, time

import pytest
from sqlalchemy import select
from sqlalchemy.engine import make_url

from mcp_tools.base import Actor, ToolContext, call_tool
from mcp_tools.company import company_specs
from mcp_tools.errors import AppError
from worlds.changelog import track
from worlds.clock import FixedClock
from worlds.schema import ChangeLog, Project, Ticket
from worlds.spec import WorldSpec
from worlds.store import create_world

pytestmark = pytest.mark.postgres


def _play(world):
    """A fixed script of reads, writes and refused calls as the lead of the first project."""
    session = world.session()
    clock = FixedClock(datetime.combine(world.spec.start_date, time(9), tzinfo=UTC))
    project = session.scalars(select(Project).order_by(Project.id)).first()
    lead = Actor.load(session, project.lead_id)
    track(session, clock=clock, actor_id=lead.employee_id, tag="test")
    ctx = ToolContext(session=session, actor=lead, clock=clock)
    key = session.scalar(select(Ticket.key).where(Ticket.project_id == project.id).order_by(Ticket.number))
    calls = [
        ("tickets_search", {"project": project.key, "limit": 5}),
        ("tickets_search", {"text": "50%_off", "limit": 5}),
        ("tickets_get", {"key": key}),
        ("tickets_update", {"key": key, "priority": "critical", "story_points": 5}),
        ("tickets_comment", {"key": key, "body": "Looking — ünïcode and 100% sure"}),
        ("tickets_create", {"project": project.key, "title": "New thing", "labels": "b,a"}),
        ("tickets_transition", {"key": key, "status": "wont_do"}),
        ("tickets_transition", {"key": key, "status": "no_such"}),
        ("chat_list_channels", {}),
        ("chat_post", {"channel": "town-square", "message": "hello @" + lead.username}),
        ("chat_search_posts", {"text": "hello", "limit": 3}),
        ("chat_direct_message", {"username": lead.username, "message": "self"}),
    ]
    out = []
    for name, args in calls:
        try:
            out.append(call_tool(company_specs()[name], args, ctx))
        except AppError as exc:
            out.append({"error": exc.code})
    session.flush()
    log = [
        (r.table_name, r.row_key, r.op, r.changes, r.actor_id, r.at, r.tag)
        for r in session.scalars(select(ChangeLog).order_by(ChangeLog.seq))
    ]
    session.commit()
    session.close()
    return out, log


def test_tools__same_results_log_and_dump_on_sqlite_and_postgres(postgres_url, tmp_path):
    spec = WorldSpec(seed=7, employees=12, history_days=10)
    lite = create_world(spec, tmp_path / "w.db")
    pg = create_world(spec, make_url(postgres_url).set(database="world_tools").render_as_string(False))
    try:
        lite_out, lite_log = _play(lite)
        pg_out, pg_log = _play(pg)
        assert lite_out == pg_out
        assert any(r.get("error") == "invalid_argument" for r in lite_out if isinstance(r, dict))
        assert len(lite_log) > 5 and lite_log == pg_log
        assert lite.state_hash() == pg.state_hash()
    finally:
        lite.close()
        pg.close()

"""Leavers in the generated history (issue 12 items 1 and 4): who leaves, what their last day leaves behind.

Why: a departure touches every app (the directory, tickets, chat, mail, calendar, budgets); these tests generate
worlds with leavers, assert the trail is there and coherent, and break one thing at a time to see the
``leavers``/``leaver_trail`` checks catch it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from worlds.check import check_world, world_report
from worlds.generate import generate
from worlds.rows import load_in_memory
from worlds.spec import WorldSpec
from worlds.store import create_world
from worlds.workflow import TERMINAL_STATUSES

Rows = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def world() -> Rows:
    return generate(WorldSpec(seed=1, employees=200, history_days=90))


def _copy(rows: Rows) -> Rows:
    return {t: [dict(r) for r in batch] for t, batch in rows.items()}


def _failures(rows: Rows, check: str) -> list[str]:
    with load_in_memory(rows).connect() as conn:
        report = {r.name: r for r in world_report(conn)}
    return list(report[check].problems) if report[check].failed else []


def _leavers(rows: Rows) -> list[dict[str, Any]]:
    return [e for e in rows["employees"] if e["leave_date"] is not None]


def test_generate__a_few_people_leave_and_nobody_key(world: Rows) -> None:
    gone = _leavers(world)
    assert 1 <= len(gone) <= 6  # about 1.5% of 200 over 90 days
    heads = {d["head_id"] for d in world["departments"]} | {t["lead_id"] for t in world["teams"]}
    bosses = {e["manager_id"] for e in world["employees"]}
    moved = {r["employee_id"] for r in world.get("reporting_changes", [])}
    for e in gone:
        assert not e["active"] and e["id"] not in heads | bosses | moved
    assert all(e["active"] for e in world["employees"] if e["leave_date"] is None)


def test_generate__each_leaver_leaves_a_coherent_trail(world: Rows) -> None:
    gone = {e["id"]: e for e in _leavers(world)}
    assert not [m for m in world["channel_members"] if m["employee_id"] in gone]
    assert not [t for t in world["tickets"] if t["assignee_id"] in gone and t["status"] not in TERMINAL_STATUSES]
    for e in gone.values():
        assert [m for m in world["mail_messages"] if m["subject"] == f"Farewell {e['first_name']}"]
    with load_in_memory(world).connect() as conn:
        assert check_world(conn) == []
        report = {r.name: r for r in world_report(conn)}
    assert report["leaver_trail"].checked >= len(gone) and report["leavers"].checked > 0


@pytest.mark.parametrize(("seed", "employees", "days"), [(5, 9, 90), (6, 40, 10), (7, 150, 365), (8, 1, 90)])
def test_generate__leavers_only_where_there_is_room(seed: int, employees: int, days: int) -> None:
    rows = generate(WorldSpec(seed=seed, employees=employees, history_days=days))
    if employees < 10 or days < 14:
        assert not _leavers(rows)
    with load_in_memory(rows).connect() as conn:
        assert check_world(conn) == []


def test_check__catches_a_post_after_the_last_day(world: Rows) -> None:
    rows = _copy(world)
    e = _leavers(rows)[0]
    post = next(p for p in rows["posts"] if p["author_id"] == e["id"])
    post["created_at"] = rows["posts"][-1]["created_at"].replace(year=e["leave_date"].year + 1)
    assert any(f"by employee {e['id']} is after their last day" in p for p in _failures(rows, "leavers"))


def test_check__catches_an_open_ticket_left_with_a_leaver(world: Rows) -> None:
    rows = _copy(world)
    e = _leavers(rows)[0]
    ticket = next(t for t in rows["tickets"] if t["status"] not in TERMINAL_STATUSES and t["assignee_id"])
    ticket["assignee_id"] = e["id"]
    assert any(ticket["key"] in p for p in _failures(rows, "leaver_trail"))


def test_check__catches_a_leaver_still_in_a_channel_or_a_later_meeting(world: Rows) -> None:
    rows = _copy(world)
    e = _leavers(rows)[0]
    rows["channel_members"].append(
        {"id": 10**6, "channel_id": 1, "employee_id": e["id"], "joined_at": rows["channels"][0]["created_at"],
         "last_viewed_at": None}
    )  # fmt: skip
    late = next(v for v in rows["events"] if v["rrule"] is None and v["start_at"].date() > e["leave_date"])
    rows["event_attendees"].append(
        {"id": 10**6, "event_id": late["id"], "employee_id": e["id"], "rsvp": "accepted", "optional": False}
    )
    problems = _failures(rows, "leaver_trail")
    assert any("still in channel 1" in p for p in problems)
    assert any(f"event {late['id']} has employee {e['id']}" in p for p in problems)


def test_check__catches_a_leaver_without_goodbye_or_still_active(world: Rows) -> None:
    rows = _copy(world)
    e = _leavers(rows)[0]
    last = e["leave_date"]
    rows["posts"] = [
        p for p in rows["posts"] if not (p["author_id"] == e["id"] and p["created_at"].date() >= last - timedelta(1))
    ]
    for m in rows["mail_messages"]:
        if m["subject"] == f"Farewell {e['first_name']}":
            m["subject"] = "Team news"
    assert any("without a goodbye" in p for p in _failures(rows, "leaver_trail"))
    rows = _copy(world)
    rows["employees"][e["id"] - 1]["active"] = True
    assert any("but is active" in p for p in _failures(rows, "leaver_trail"))


@pytest.mark.postgres
def test_create_world__leavers_insert_alike_on_postgres(postgres_url: str, tmp_path: Any) -> None:
    """A leaver is still referenced (tickets they reported, posts, mail); PostgreSQL must take the rows as SQLite."""
    spec = WorldSpec(seed=2, employees=60, history_days=30)
    assert _leavers(generate(spec))
    lite = create_world(spec, tmp_path / "w.db")
    name = "world_leavers"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.dispose()
    pg = create_world(spec, make_url(postgres_url).set(database=name).render_as_string(hide_password=False))
    try:
        assert pg.backend == "postgresql" and lite.state_hash() == pg.state_hash()
        with pg.connect() as conn:
            assert check_world(conn) == []
    finally:
        lite.close()
        pg.close()

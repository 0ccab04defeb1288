"""sim.tasks: the four ways a reset gets its world give the same bytes, and each costs what it should."""

from zoneinfo import ZoneInfo

import pytest

from scenarios.registry import make
from sim.errors import SimError
from sim.tasks import SETUP_CACHE, SetupCache, StartState, TaskSetup, TaskWorlds, log_since, next_workday_morning
from worlds.rawsql import Sql
from worlds.spec import WorldSpec

FAMILY = "triage-tickets-v0"


@pytest.fixture
def worlds(store):
    w = TaskWorlds(make(FAMILY), store)
    yield w
    w.close()


def spec(seed=0):
    return WorldSpec.parse(seed=seed, employees=40, history_days=30)


def test_task_worlds__fresh_cached_and_warm_paths_give_the_same_state(worlds, store):
    SETUP_CACHE.clear()
    fresh = worlds.open(spec(), 3, 1, None)
    state = fresh.world.state_hash()
    rows = fresh.setup.rows
    assert rows and all(r["tag"] == "setup" for r in rows)
    worlds.release(fresh.world, fresh.session)  # the warm world: rolled back, kept open
    warm = worlds.open(spec(), 3, 1, None)
    assert warm.world is fresh.world and warm.world.state_hash() == state
    other = TaskWorlds(make(FAMILY), store)  # a second episode: the image comes from the process-wide cache
    try:
        cached = other.open(spec(), 3, 1, None)
        assert cached.world is not fresh.world and cached.setup is SETUP_CACHE.get(cached.key)
        assert cached.world.state_hash() == state and cached.setup.rows == rows
    finally:
        other.close()
    uncached = TaskWorlds(make(FAMILY), store, use_cache=False)
    try:
        again = uncached.open(spec(), 3, 1, None)
        assert again.world.state_hash() == state and again.setup.rows == rows
    finally:
        uncached.close()


def test_task_worlds__a_start_state_runs_the_setup_on_it_and_a_foreign_one_is_refused(worlds):
    first = worlds.open(spec(), 3, 1, None)
    first.session.commit()
    start = StartState(
        spec_hash=spec().spec_hash,
        image=first.world.image(),
        state_hash="x",
        clock_at=next_workday_morning(first.clock.now()),
    )
    nxt = worlds.open(spec(), 4, 1, start)
    assert nxt.setup.base_seq == first.setup.rows[-1]["seq"]  # the second setup's rows follow the first's
    assert nxt.setup.rows[0]["seq"] > nxt.setup.base_seq
    # the start state is the earliest the next day may begin; the setup starts it at 09:00 in its actor's zone
    zone = ZoneInfo(
        str(Sql.of(nxt.session).scalar("SELECT timezone FROM employees WHERE id = ?", (nxt.setup.actor.employee_id,)))
    )
    local = nxt.clock.now().astimezone(zone)
    assert nxt.clock.now() >= start.clock_at and (local.hour, local.minute) == (9, 0) and local.weekday() < 5
    with pytest.raises(SimError, match="belongs to world"):
        worlds.open(spec(seed=1), 4, 1, start)


def test_setup_cache__evicts_the_least_recently_used_beyond_its_bytes():
    cache = SetupCache(max_bytes=10)
    item = TaskSetup(b"12345", None, [], None, None)
    for k in ("a", "b", "c"):
        cache.put((k, "", 0, 0), item)
        if k == "b":
            cache.get(("a", "", 0, 0))  # a is used again: b goes first
    assert cache.get(("b", "", 0, 0)) is None and cache.get(("a", "", 0, 0)) is item


def test_log_since__rows_after_a_seq_in_order(worlds):
    task = worlds.open(spec(), 5, 2, None)
    rows = log_since(task.session, 0)
    assert [r["seq"] for r in rows] == sorted(r["seq"] for r in rows)
    assert log_since(task.session, rows[-1]["seq"]) == []
    assert set(rows[0]) == {"seq", "table", "key", "op", "changes", "actor", "at", "tag"}

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from worlds.check import check_world
from worlds.generate import generate
from worlds.rows import load_in_memory
from worlds.spec import WorldSpec

load = load_in_memory


@pytest.fixture(scope="module")
def world():
    return load(generate(WorldSpec(seed=5, employees=40, history_days=30)))


def test_generate__same_spec_same_rows_other_seed_other_rows():
    spec = WorldSpec(seed=3, employees=20, history_days=10)
    assert generate(spec) == generate(spec)
    assert generate(spec) != generate(spec.model_copy(update={"seed": 4}))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), employees=st.integers(5, 60), days=st.integers(0, 30))
def test_check_world__generated_worlds_are_valid(seed, employees, days):
    engine = load(generate(WorldSpec(seed=seed, employees=employees, history_days=days)))
    with engine.connect() as conn:
        assert check_world(conn) == []


def test_generate__tiny_world_has_a_ceo_a_team_and_a_project():
    rows = generate(WorldSpec(seed=0, employees=5, history_days=0))
    assert len(rows["employees"]) == 5
    assert sum(1 for e in rows["employees"] if e["manager_id"] is None) == 1
    assert rows["teams"] and rows["projects"]


def test_generate__org_shape_is_plausible(world):
    with world.connect() as conn:
        spans = (
            conn.execute(text("select count(*) from employees where manager_id is not null group by manager_id"))
            .scalars()
            .all()
        )
        assert max(spans) <= 13
        eng = conn.execute(
            text(
                "select count(*) from employees e join departments d on d.id = e.department_id "
                "where d.name = 'Engineering'"
            )
        ).scalar()
        assert 0.25 * 40 <= eng <= 0.55 * 40
        statuses = dict(conn.execute(text("select status, count(*) from tickets group by status")).all())
        assert statuses.get("done", 0) > 0 and sum(statuses.values()) > statuses.get("done", 0)
        refs = conn.execute(
            text("select count(*) from posts where message like '%-%' and message glob '*[A-Z]-[0-9]*'")
        ).scalar()
        assert refs > 0


def test_generate__apps_subset_leaves_other_tables_empty():
    rows = generate(WorldSpec(seed=1, employees=15, history_days=5, apps=("tickets",)))
    assert rows["tickets"]
    for table in ("posts", "mail_messages", "events", "documents", "repositories"):
        assert not rows.get(table)


def _violations(mutate):
    rows = generate(WorldSpec(seed=9, employees=20, history_days=10))
    mutate(rows)
    engine = load(rows)
    with engine.connect() as conn:
        return check_world(conn)


def test_check_world__catches_two_ceos():
    def two(rows):
        rows["employees"][5]["manager_id"] = None

    assert any("exactly one CEO" in p for p in _violations(two))


def test_check_world__catches_a_reporting_cycle():
    def cycle(rows):
        emps = rows["employees"]
        a = next(e for e in emps if e["manager_id"] not in (None, 1))
        boss = emps[a["manager_id"] - 1]
        boss["manager_id"] = a["id"]

    assert any("reporting cycle" in p for p in _violations(cycle))


def test_check_world__catches_an_illegal_transition():
    def illegal(rows):
        change = next(c for c in rows["ticket_status_changes"] if c["from_status"] == "backlog")
        change["to_status"] = "done"

    assert any("illegal status transition backlog -> done" in p for p in _violations(illegal))


def test_check_world__catches_a_post_before_its_channel():
    def early(rows):
        rows["posts"][0]["created_at"] = rows["channels"][0]["created_at"] - timedelta(days=30)

    assert any("before its channel was created" in p for p in _violations(early))

"""The same world on SQLite and a real PostgreSQL 15: identical dumps, isolated forks, portable snapshots."""

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from worlds.dump import diff
from worlds.errors import StoreError, WorldNotFound
from worlds.spec import WorldSpec
from worlds.store import create_world, open_world

pytestmark = pytest.mark.postgres


def _url(server_url: str, name: str, *, drop: bool = True) -> str:
    if drop:
        admin = create_engine(server_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def _databases(server_url: str) -> set[str]:
    admin = create_engine(server_url, poolclass=NullPool)
    with admin.connect() as conn:
        names = set(conn.scalars(text("SELECT datname FROM pg_database ORDER BY datname")))
    admin.dispose()
    return names


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_dump__identical_on_sqlite_and_postgres(postgres_url, tmp_path, seed):
    spec = WorldSpec(seed=seed, employees=12, history_days=10)
    lite = create_world(spec, tmp_path / f"w{seed}.db")
    pg = create_world(spec, _url(postgres_url, f"world_{seed}"))  # the database is created on demand
    try:
        assert pg.backend == "postgresql" and lite.backend == "sqlite"
        lite_dump, pg_dump = lite.dump(), pg.dump()
        assert len(lite_dump) > 100
        first_diff = next((i for i, (a, b) in enumerate(zip(lite_dump, pg_dump, strict=False)) if a != b), None)
        assert first_diff is None, f"line {first_diff}: {lite_dump[first_diff]!r} != {pg_dump[first_diff]!r}"
        assert len(lite_dump) == len(pg_dump)
        assert lite.state_hash() == pg.state_hash()
        with lite.connect() as a, pg.connect() as b:
            assert diff(a, b).identical
    finally:
        lite.close()
        pg.close()


def test_fork__postgres_fork_is_isolated_and_dropped(postgres_url):
    spec = WorldSpec(seed=42, employees=12, history_days=10)
    base = create_world(spec, _url(postgres_url, "world_fork_base"))
    h0 = base.state_hash()
    a, b = base.fork(), base.fork()
    names = {make_url(a.url).database, make_url(b.url).database}
    try:
        with a.connect() as conn:
            conn.execute(text("UPDATE employees SET title = 'Changed' WHERE id = 1"))
            conn.commit()
        assert a.state_hash() != h0
        assert b.state_hash() == h0
        assert base.state_hash() == h0
        with base.connect() as ca, a.connect() as cb:
            assert diff(ca, cb).tables["employees"].changed == (1,)
    finally:
        a.close()
        b.close()
        base.close()
    assert not names & _databases(postgres_url)


def test_snapshot__postgres_round_trip_and_portable_to_sqlite(postgres_url):
    spec = WorldSpec(seed=7, employees=12, history_days=10)
    base = create_world(spec, _url(postgres_url, "world_snap"))
    fork = base.fork()
    lite = create_world(spec, "sqlite://")
    try:
        h0 = fork.state_hash()
        snap = fork.snapshot()
        with fork.connect() as conn:
            conn.execute(text("UPDATE employees SET title = 'Changed' WHERE id = 2"))
            conn.execute(text("DELETE FROM reactions"))
            conn.commit()
        assert fork.state_hash() != h0
        fork.restore(snap)
        assert fork.state_hash() == h0
        lite_fork = lite.fork()
        _set_title(lite_fork, "Elsewhere")
        lite_fork.restore(snap)  # a PostgreSQL snapshot restores into a SQLite world of the same spec
        assert lite_fork.state_hash() == h0
        lite_fork.close()
    finally:
        fork.close()
        base.close()
        lite.close()


def _set_title(world, title):
    with world.connect() as conn:
        conn.execute(text("UPDATE employees SET title = :t WHERE id = 1"), {"t": title})
        conn.commit()


def test_create__postgres_refuses_existing_world_and_open_reports_missing(postgres_url):
    spec = WorldSpec(seed=3, employees=12, history_days=10)
    url = _url(postgres_url, "world_exists")
    create_world(spec, url).close()
    with pytest.raises(StoreError, match="already holds a world"):
        create_world(spec, url)
    world = open_world(url)
    assert world.spec == spec
    world.close()
    with pytest.raises(WorldNotFound, match="does not exist"):
        open_world(_url(postgres_url, "no_such_world"))


def test_dump__string_keys_ordered_alike_under_a_non_c_collation(postgres_url):
    """A server whose default collation is not C (here ICU en-US) must still dump in SQLite's order."""
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.exec_driver_sql('DROP DATABASE IF EXISTS "world_icu" WITH (FORCE)')
        conn.exec_driver_sql(
            "CREATE DATABASE world_icu TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
        )
    admin.dispose()
    spec = WorldSpec(seed=9, employees=12, history_days=10)
    pg = create_world(spec, _url(postgres_url, "world_icu", drop=False))
    lite = create_world(spec, "sqlite://")
    extra = ["B", "aC", "a_b", "ab", "Zebra", "äpfel", "z"]
    try:
        for world in (pg, lite):
            with world.connect() as conn:
                for key in extra:
                    conn.execute(text("INSERT INTO world_meta (key, value) VALUES (:k, 'x')"), {"k": key})
                conn.commit()
        assert pg.dump() == lite.dump()
        assert pg.state_hash() == lite.state_hash()
    finally:
        pg.close()
        lite.close()

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from worlds.spec import WorldSpec
from worlds.store import create_world

pytestmark = pytest.mark.postgres


def _database(server_url: str, name: str) -> str:
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_dump__identical_on_sqlite_and_postgres(postgres_url, tmp_path, seed):
    spec = WorldSpec(seed=seed, employees=12 + seed * 3, history_days=5 + seed)
    lite = create_world(spec, tmp_path / f"w{seed}.db")
    pg = create_world(spec, _database(postgres_url, f"world_{seed}"))
    try:
        lite_dump, pg_dump = lite.dump(), pg.dump()
        assert len(lite_dump) > 100
        first_diff = next((i for i, (a, b) in enumerate(zip(lite_dump, pg_dump, strict=False)) if a != b), None)
        assert first_diff is None, f"line {first_diff}: {lite_dump[first_diff]!r} != {pg_dump[first_diff]!r}"
        assert len(lite_dump) == len(pg_dump)
        assert lite.state_hash() == pg.state_hash()
    finally:
        lite.close()
        pg.close()


def test_fork__postgres_fork_is_isolated(postgres_url):
    spec = WorldSpec(seed=42, employees=10, history_days=3)
    base = create_world(spec, _database(postgres_url, "world_fork_base"))
    h0 = base.state_hash()
    fork = base.fork()
    try:
        with fork.connect() as conn:
            conn.execute(text("UPDATE employees SET title = 'Changed' WHERE id = 1"))
            conn.commit()
        assert fork.state_hash() != h0
        assert base.state_hash() == h0
    finally:
        fork.close()
        base.close()

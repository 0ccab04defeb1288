import sqlite3
import threading
from dataclasses import replace

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from worlds.db import parse_target
from worlds.errors import (
    BadDatabaseURL,
    CorruptWorld,
    IncompatibleWorld,
    SnapshotError,
    StoreError,
    WorldNotFound,
)
from worlds.schema import Employee, Ticket, WorldMeta
from worlds.spec import WorldSpec
from worlds.store import Snapshot, WorldStore, create_world, open_world
from worlds.version import SCHEMA_VERSION

SPEC = WorldSpec(seed=11, employees=15, history_days=7)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    store = WorldStore(tmp_path_factory.mktemp("store"))
    world = store.base(SPEC)
    yield world
    world.close()


def _rename_first_employee(world, name):
    with world.session() as s:
        emp = s.scalars(select(Employee).order_by(Employee.id).limit(1)).one()
        emp.first_name = name
        s.commit()


def test_fork__writes_never_reach_base_or_sibling(base):
    before = base.state_hash()
    a, b = base.fork(), base.fork()
    try:
        _rename_first_employee(a, "Forked")
        assert a.state_hash() != before
        assert b.state_hash() == before
        assert base.state_hash() == before
        with b.session() as s:
            assert s.scalars(select(Employee.first_name).order_by(Employee.id).limit(1)).one() != "Forked"
    finally:
        a.close()
        b.close()


def test_fork__savepoint_rollback_leaves_state_unchanged(base):
    fork = base.fork()
    try:
        before = fork.state_hash()
        session = fork.session()
        sp = session.begin_nested()
        session.scalars(select(Ticket).order_by(Ticket.id).limit(1)).first()
        emp = session.scalars(select(Employee).order_by(Employee.id).limit(1)).one()
        emp.title = "Changed"
        session.flush()
        sp.rollback()
        session.flush()
        assert fork.state_hash() == before
        session.close()
    finally:
        fork.close()


def test_snapshot__round_trips_and_refuses_foreign_snapshots(base, tmp_path):
    fork = base.fork()
    try:
        snap = fork.snapshot()
        h0 = fork.state_hash()
        _rename_first_employee(fork, "Changed")
        assert fork.state_hash() != h0
        fork.restore(snap)
        assert fork.state_hash() == h0
        snap.save(tmp_path / "s.snap")
        fork.restore(Snapshot.load(tmp_path / "s.snap"))
        assert fork.state_hash() == h0
        foreign = Snapshot(spec_hash="0" * 64, schema_version=1, image=snap.image)
        with pytest.raises(SnapshotError, match="cannot restore"):
            fork.restore(foreign)
        assert fork.state_hash() == h0
        (tmp_path / "junk.snap").write_bytes(b"nope")
        with pytest.raises(SnapshotError, match="not a companysim snapshot"):
            Snapshot.load(tmp_path / "junk.snap")
    finally:
        fork.close()


def test_base__is_cached_not_regenerated(base, tmp_path):
    store = WorldStore(tmp_path)
    w1 = store.base(SPEC)
    mtime = store.path_for(SPEC).stat().st_mtime_ns
    w1.close()
    w2 = store.base(SPEC)
    assert store.path_for(SPEC).stat().st_mtime_ns == mtime
    assert w2.state_hash() == base.state_hash()
    w2.close()


def test_create__refuses_existing_target_and_leaves_it_untouched(tmp_path):
    target = tmp_path / "w.db"
    target.write_bytes(b"precious")
    with pytest.raises(StoreError, match="already exists"):
        create_world(SPEC, target)
    assert target.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.db"]


def test_open__refuses_missing_corrupt_incomplete_and_newer_worlds(base, tmp_path):
    with pytest.raises(WorldNotFound, match="no world at"):
        open_world(tmp_path / "missing.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 10)
    with pytest.raises(CorruptWorld, match="not a SQLite database"):
        open_world(junk)
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("create table x(a)").connection.close()
    with pytest.raises(CorruptWorld, match="not a companysim world"):
        open_world(empty)

    def tampered(name, key, value):
        path = tmp_path / name
        src = sqlite3.connect(base.target.path)
        dst = sqlite3.connect(path)
        src.backup(dst)
        src.close()
        dst.execute("PRAGMA journal_mode=DELETE")
        if value is None:
            dst.execute("delete from world_meta where key=?", (key,))
        else:
            dst.execute("update world_meta set value=? where key=?", (value, key))
        dst.commit()
        dst.close()
        return path

    with pytest.raises(CorruptWorld, match="incomplete world"):
        open_world(tampered("half.db", "complete", None))
    with pytest.raises(IncompatibleWorld, match=f"schema version 99; this companysim knows up to {SCHEMA_VERSION}"):
        open_world(tampered("newer.db", "schema_version", "99"))
    with pytest.raises(IncompatibleWorld, match="schema version 0, which lacks tables"):
        open_world(tampered("older.db", "schema_version", "0"))
    with pytest.raises(IncompatibleWorld, match="generator version 7"):
        open_world(tampered("newer_gen.db", "generator_version", "7"))


@pytest.mark.parametrize("url", ["mysql://x/y", "postgresql://host", "postgresql+asyncpg://h/d", "::not a url::/x://"])
def test_open__bad_urls_are_one_line_errors(url):
    with pytest.raises(BadDatabaseURL) as info:
        open_world(url)
    assert "\n" not in str(info.value)


def test_open__memory_url_holds_no_world():
    with pytest.raises(WorldNotFound, match="in-memory"):
        open_world("sqlite://")


def test_world__records_versions_and_spec(base):
    assert base.spec == SPEC
    assert base.schema_version == SCHEMA_VERSION
    with base.session() as s:
        keys = s.scalars(select(WorldMeta.key).order_by(WorldMeta.key)).all()
    assert keys == ["complete", "generator_version", "schema_version", "spec", "spec_hash"]


def test_open__messages_are_one_line(base, tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    for target in (tmp_path / "missing.db", junk, tmp_path):
        with pytest.raises(StoreError) as info:
            open_world(target)
        assert "\n" not in str(info.value)


def test_open__readonly_reads_but_refuses_writes(base):
    world = open_world(base.target.path, readonly=True)
    try:
        assert world.state_hash() == base.state_hash()
        with pytest.raises(Exception, match="readonly"):
            with world.connect() as conn:
                conn.execute(text("UPDATE employees SET title = 'x'"))
                conn.commit()
    finally:
        world.close()


def test_base__generates_once_per_spec(tmp_path, monkeypatch):
    import worlds.store as store_mod

    calls = []
    real = store_mod._generate
    monkeypatch.setattr(store_mod, "_generate", lambda spec, progress: calls.append(spec) or real(spec, progress))
    store = WorldStore(tmp_path)
    store.base(SPEC).close()
    store.base(SPEC).close()
    WorldStore(tmp_path).base(SPEC).close()
    assert len(calls) == 1
    assert [p.name for p in (tmp_path / "worlds").iterdir() if p.suffix == ".db"] == [store.path_for(SPEC).name]
    assert not [p for p in (tmp_path / "worlds").iterdir() if p.name.endswith(".tmp")]


def test_base__data_dir_from_env(tmp_data_dir):
    assert WorldStore().data_dir == tmp_data_dir


def test_fork__forks_of_forks_and_threads(base):
    h0 = base.state_hash()
    parent = base.fork()
    _rename_first_employee(parent, "Parent")
    h_parent = parent.state_hash()
    child = parent.fork()
    try:
        assert child.state_hash() == h_parent
        _rename_first_employee(child, "Child")
        assert parent.state_hash() == h_parent
        results = {}
        thread = threading.Thread(target=lambda: results.setdefault("h", child.state_hash()))
        thread.start()
        thread.join()
        assert results["h"] == child.state_hash() != h_parent
        assert base.state_hash() == h0
    finally:
        child.close()
        parent.close()


def test_fork__has_foreign_keys_on(base):
    fork = base.fork()
    try:
        with pytest.raises(IntegrityError):
            with fork.connect() as conn:
                conn.execute(text("UPDATE employees SET department_id = 999999 WHERE id = 1"))
                conn.commit()
    finally:
        fork.close()


def test_fork__connect_rolls_back_what_it_left_open(base):
    fork = base.fork()
    try:
        h0 = fork.state_hash()
        with fork.connect() as conn:
            conn.execute(text("UPDATE employees SET title = 'uncommitted' WHERE id = 1"))
        assert fork.state_hash() == h0
        session = fork.session()
        session.get(Employee, 1).title = "flushed"
        session.flush()
        assert fork.state_hash() != h0  # a session's open transaction is visible, and left alone
        session.rollback()
        session.close()
        assert fork.state_hash() == h0
    finally:
        fork.close()


def test_snapshot__corrupt_images_are_refused(base, tmp_path):
    fork = base.fork()
    try:
        h0 = fork.state_hash()
        snap = fork.snapshot()
        with pytest.raises(SnapshotError, match="corrupt"):
            fork.restore(replace(snap, image=b"junk"))
        with pytest.raises(SnapshotError, match="corrupt"):
            fork.restore(replace(snap, image=snap.image[: len(snap.image) // 2]))
        assert fork.state_hash() == h0
        path = tmp_path / "s.snap"
        snap.save(path)
        data = bytearray(path.read_bytes())
        data[-100] ^= 0xFF
        path.write_bytes(bytes(data))
        with pytest.raises(SnapshotError, match="checksum"):
            Snapshot.load(path)
        with pytest.raises(SnapshotError, match="no snapshot"):
            Snapshot.load(tmp_path / "missing.snap")
    finally:
        fork.close()


def test_snapshot__file_world_round_trip(tmp_path):
    world = create_world(SPEC, tmp_path / "w.db")
    try:
        snap = world.snapshot()
        h0 = world.state_hash()
        _rename_first_employee(world, "Changed")
        assert world.state_hash() != h0
        assert world.snapshot().image != snap.image  # the image cache notices the write (WAL)
        world.restore(snap)
        assert world.state_hash() == h0
        fork = world.fork()
        assert fork.state_hash() == h0
        fork.close()
    finally:
        world.close()


def test_create__memory_world_forks_and_snapshots(base):
    world = create_world(SPEC, "sqlite://")
    try:
        assert world.url == "sqlite://"
        assert world.state_hash() == base.state_hash()
        snap = world.snapshot()
        fork = world.fork()
        _rename_first_employee(world, "Changed")
        assert fork.state_hash() == base.state_hash()
        world.restore(snap)
        assert world.state_hash() == base.state_hash()
        fork.close()
    finally:
        world.close()


def test_create__overwrite_replaces_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "w.db"
    target.write_bytes(b"old")
    world = create_world(SPEC, target, overwrite=True)
    world.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.db"]
    reopened = open_world(target)
    assert reopened.spec == SPEC
    reopened.close()


def test_parse_target__paths_and_urls(tmp_path):
    assert parse_target(tmp_path / "a.db").path == tmp_path / "a.db"
    assert parse_target(f"sqlite:///{tmp_path}/a.db").path == tmp_path / "a.db"
    assert parse_target("sqlite://").memory
    pg = parse_target("postgresql://u:secret@h:5433/db")
    assert (pg.backend, pg.url, pg.database) == ("postgresql", "postgresql+psycopg://u:secret@h:5433/db", "db")
    assert "secret" not in pg.display
    with pytest.raises(BadDatabaseURL, match="names no database"):
        parse_target("postgresql://u:secret@h")

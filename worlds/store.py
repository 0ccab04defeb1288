"""The world store: create, open, fork, snapshot and restore worlds; cache base worlds.

A world is generated once per (spec hash, generator version) and forked for every episode. A SQLite fork is
the base's serialized image ``deserialize()``-d into a private in-memory database: a memcpy of the image, no
engine setup, no regeneration, and nothing shared with the base or a sibling afterwards. A PostgreSQL fork is
``CREATE DATABASE ... TEMPLATE``. A world is written to a temporary location and its ``complete`` flag is
written last, so a half-built world is never opened.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Connection, Engine, create_engine, delete, event, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DatabaseError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from worlds.db import Target, configure_sqlite_connection, make_engine, parse_target, sqlite_transactions
from worlds.dump import canonical_dump, state_hash
from worlds.errors import CorruptWorld, IncompatibleWorld, SnapshotError, StoreError, WorldNotFound
from worlds.rows import WorldRows, insert_rows
from worlds.schema import Base, WorldMeta
from worlds.spec import WorldSpec
from worlds.version import GENERATOR_VERSION, SCHEMA_VERSION

Progress = Callable[[str, int, int], None]
_SNAPSHOT_MAGIC = b"companysim-snapshot-1\n"
_images: dict[tuple[str, int, int], bytes] = {}
_images_lock = threading.Lock()
_pg_counter = 0


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """A world's state at one moment: a SQLite image, or rows (PostgreSQL)."""

    spec_hash: str
    schema_version: int
    image: bytes | None = None
    rows: WorldRows | None = None

    def save(self, path: str | Path) -> None:
        """Write the snapshot to a file (header line of JSON, then the payload)."""
        header = {
            "spec_hash": self.spec_hash,
            "schema_version": self.schema_version,
            "kind": "image" if self.image is not None else "rows",
        }
        payload = self.image if self.image is not None else json.dumps(self.rows, default=str).encode()
        Path(path).write_bytes(_SNAPSHOT_MAGIC + json.dumps(header).encode() + b"\n" + payload)

    @classmethod
    def load(cls, path: str | Path) -> Snapshot:
        """Read a snapshot file.

        Raises:
            SnapshotError: the file is missing or not a snapshot.
        """
        p = Path(path)
        if not p.is_file():
            raise SnapshotError(f"no snapshot at {p}")
        data = p.read_bytes()
        if not data.startswith(_SNAPSHOT_MAGIC):
            raise SnapshotError(f"{p} is not a companysim snapshot")
        head, _, payload = data[len(_SNAPSHOT_MAGIC) :].partition(b"\n")
        try:
            header = json.loads(head)
        except json.JSONDecodeError:
            raise SnapshotError(f"{p} has a corrupt snapshot header") from None
        if header.get("kind") == "image":
            return cls(spec_hash=header["spec_hash"], schema_version=header["schema_version"], image=payload)
        raise SnapshotError(f"{p}: only SQLite image snapshots can be loaded from a file")


def default_data_dir() -> Path:
    """COMPANYSIM_DATA_DIR, else the user cache directory."""
    env = os.environ.get("COMPANYSIM_DATA_DIR")
    return Path(env) if env else Path(platformdirs.user_cache_dir("companysim"))


class World:
    """A handle on one world (a file, a PostgreSQL database, or a private in-memory fork)."""

    def __init__(
        self,
        *,
        target: Target,
        engine: Engine,
        meta: dict[str, str],
        connection: Connection | None = None,
        raw: sqlite3.Connection | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.target = target
        self.url = target.url
        self.backend = target.backend
        self.engine = engine
        self.meta = meta
        self.spec = WorldSpec.model_validate_json(meta["spec"])
        self.schema_version = int(meta["schema_version"])
        self.generator_version = int(meta["generator_version"])
        self._conn = connection
        self._raw = raw
        self._on_close = on_close
        self._fork_engine: Engine | None = None
        self.closed = False

    # -- access ------------------------------------------------------------------------------------------

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A connection on the world (the fork's own connection for in-memory forks)."""
        if self._conn is not None:
            yield self._conn
            return
        with self.engine.connect() as conn:
            yield conn

    def session(self) -> Session:
        """A new ORM session on the world; forks bind it to their single connection."""
        if self._conn is not None:
            return Session(bind=self._conn, autoflush=True)
        return Session(bind=self.engine)

    @property
    def image_size(self) -> int:
        """Bytes of the serialized SQLite image that forks copy (0 on PostgreSQL)."""
        return len(self._image()) if self.backend == "sqlite" else 0

    # -- forks -------------------------------------------------------------------------------------------

    def _image(self) -> bytes:
        if self._raw is not None:
            return self._raw.serialize()
        assert self.target.path is not None
        st = self.target.path.stat()
        key = (str(self.target.path), st.st_mtime_ns, st.st_size)
        with _images_lock:
            image = _images.get(key)
            if image is None:
                src = sqlite3.connect(f"file:{self.target.path}?mode=ro", uri=True)
                try:
                    raw_image = bytearray(src.serialize())
                finally:
                    src.close()
                # Bytes 18-19 of the header say "WAL"; an in-memory copy has no WAL file and would refuse
                # writes, so mark the image as a rollback-journal database.
                raw_image[18] = raw_image[19] = 1
                image = bytes(raw_image)
                _images[key] = image
            return image

    def fork(self) -> World:
        """A private copy; writes to it never reach this world or another fork."""
        if self.backend == "postgresql":
            return _pg_fork(self)
        if self._fork_engine is None:
            image = self._image()

            def creator() -> sqlite3.Connection:
                conn = sqlite3.connect(":memory:", check_same_thread=False)
                conn.deserialize(image)
                configure_sqlite_connection(conn, wal=False)
                return conn

            engine = create_engine("sqlite://", creator=creator, poolclass=NullPool)
            sqlite_transactions(engine)
            self._fork_engine = engine
        conn = self._fork_engine.connect()
        raw: Any = conn.connection.dbapi_connection  # the sqlite3.Connection the creator made
        target = Target(backend="sqlite", url="sqlite://")
        return World(target=target, engine=self._fork_engine, meta=self.meta, connection=conn, raw=raw)

    # -- snapshots ---------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Capture the current state (commits the fork's open transaction first)."""
        if self.backend == "sqlite":
            if self._conn is not None:
                if self._conn.in_transaction():
                    self._conn.commit()
                image = self._image()
            else:
                image = self._image()
            return Snapshot(spec_hash=self.spec.spec_hash, schema_version=self.schema_version, image=image)
        rows: WorldRows = {}
        with self.engine.connect() as conn:
            for table in Base.metadata.sorted_tables:
                pk = list(table.primary_key.columns)
                rows[table.name] = [dict(r) for r in conn.execute(select(table).order_by(*pk)).mappings()]
        return Snapshot(spec_hash=self.spec.spec_hash, schema_version=self.schema_version, rows=rows)

    def restore(self, snapshot: Snapshot) -> None:
        """Put the world back to ``snapshot``.

        Raises:
            SnapshotError: the snapshot belongs to another world or is unreadable.
        """
        if snapshot.spec_hash != self.spec.spec_hash or snapshot.schema_version != self.schema_version:
            raise SnapshotError(
                f"snapshot of world {snapshot.spec_hash[:12]} (schema {snapshot.schema_version}) cannot restore "
                f"world {self.spec.spec_hash[:12]} (schema {self.schema_version})"
            )
        if self.backend == "sqlite" and snapshot.image is not None:
            if self._raw is not None and self._conn is not None:
                if self._conn.in_transaction():
                    self._conn.rollback()
                try:
                    self._raw.deserialize(snapshot.image)
                except sqlite3.DatabaseError as exc:
                    raise SnapshotError(f"snapshot image is corrupt: {exc}") from None
                configure_sqlite_connection(self._raw, wal=False)
                return
            assert self.target.path is not None
            dst = sqlite3.connect(self.target.path)
            src = sqlite3.connect(":memory:")
            try:
                src.deserialize(snapshot.image)
                src.backup(dst)
            except sqlite3.DatabaseError as exc:
                raise SnapshotError(f"snapshot image is corrupt: {exc}") from None
            finally:
                src.close()
                dst.close()
            return
        if snapshot.rows is None:
            raise SnapshotError("snapshot has no rows to restore into a PostgreSQL world")
        with self.engine.begin() as conn:
            for table in reversed(Base.metadata.sorted_tables):
                conn.execute(delete(table))
            if conn.dialect.name == "postgresql":
                conn.execute(text("SET CONSTRAINTS ALL DEFERRED"))
            insert_rows(conn, snapshot.rows)

    # -- hashing -----------------------------------------------------------------------------------------

    def state_hash(self) -> str:
        """SHA-256 of the canonical dump."""
        with self.connect() as conn:
            return state_hash(conn)

    def dump(self) -> list[str]:
        """The canonical dump as lines."""
        with self.connect() as conn:
            return list(canonical_dump(conn))

    def close(self) -> None:
        """Release the world's connections (a fork's memory is freed)."""
        if self.closed:
            return
        self.closed = True
        if self._conn is not None:
            self._conn.close()
        if self._fork_engine is not None:
            self._fork_engine.dispose()
        if self._raw is None and self._conn is None:
            self.engine.dispose()
        if self._on_close is not None:
            self._on_close()


# -- creating and opening -----------------------------------------------------------------------------------


def _meta_rows(spec: WorldSpec) -> list[dict[str, str]]:
    return [
        {"key": "schema_version", "value": str(SCHEMA_VERSION)},
        {"key": "generator_version", "value": str(GENERATOR_VERSION)},
        {"key": "spec", "value": spec.canonical_json()},
        {"key": "spec_hash", "value": spec.spec_hash},
    ]


def _generate(spec: WorldSpec, progress: Progress | None) -> WorldRows:
    from worlds.generate import generate  # imported lazily: the generator is the heaviest module

    return generate(spec, progress=progress)


def create_world(
    spec: WorldSpec, target: str | Path, progress: Progress | None = None, overwrite: bool = False
) -> World:
    """Generate ``spec`` into ``target`` (a path or URL) and open it.

    Raises:
        StoreError: the target exists and ``overwrite`` is false.
    """
    tgt = parse_target(target)
    rows = _generate(spec, progress)
    if tgt.backend == "sqlite":
        assert tgt.path is not None
        if tgt.path.exists() and not overwrite:
            raise StoreError(f"{tgt.path} already exists; pass overwrite to replace it")
        tgt.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = tgt.path.with_name(f".{tgt.path.name}.tmp-{os.getpid()}")
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}-journal")):
            leftover.unlink(missing_ok=True)
        try:
            raw = sqlite3.connect(tmp, isolation_level=None)
            raw.execute("PRAGMA journal_mode=OFF")
            raw.execute("PRAGMA synchronous=OFF")
            raw.close()
            engine = create_engine(f"sqlite:///{tmp}", poolclass=NullPool)

            @event.listens_for(engine, "connect")
            def _fast(dbapi_conn: sqlite3.Connection, record: Any) -> None:
                dbapi_conn.isolation_level = None
                dbapi_conn.execute("PRAGMA foreign_keys=ON")
                dbapi_conn.execute("PRAGMA synchronous=OFF")

            sqlite_transactions(engine)
            Base.metadata.create_all(engine)
            with engine.begin() as conn:
                insert_rows(conn, rows)
                conn.execute(insert(WorldMeta), _meta_rows(spec))
                conn.execute(insert(WorldMeta), [{"key": "complete", "value": "1"}])
            engine.dispose()
            raw = sqlite3.connect(tmp, isolation_level=None)
            try:
                bad = raw.execute("PRAGMA foreign_key_check").fetchall()
                if bad:
                    raise StoreError(f"generated world breaks a foreign key: {bad[0]}")
                raw.execute("PRAGMA journal_mode=WAL")
            finally:
                raw.close()
            os.replace(tmp, tgt.path)
        finally:
            tmp.unlink(missing_ok=True)
        return open_world(tgt.path)
    engine = make_engine(tgt)
    try:
        with engine.begin() as conn:
            if conn.dialect.has_table(conn, "world_meta") and not overwrite:
                raise StoreError(f"{make_url(tgt.url).database} already holds a world; pass overwrite to replace it")
            Base.metadata.drop_all(conn)
            Base.metadata.create_all(conn)
            conn.execute(text("SET CONSTRAINTS ALL DEFERRED"))
            insert_rows(conn, rows)
            conn.execute(insert(WorldMeta), _meta_rows(spec))
            conn.execute(insert(WorldMeta), [{"key": "complete", "value": "1"}])
    except (OperationalError, ProgrammingError) as exc:
        raise StoreError(
            f"cannot write world to {make_url(tgt.url).database}: {str(exc.orig).strip().splitlines()[0]}"
        ) from None
    finally:
        engine.dispose()
    return open_world(tgt.url)


def _read_meta(engine: Engine, where: str) -> dict[str, str]:
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(WorldMeta.key, WorldMeta.value).order_by(WorldMeta.key)).all()
    except (DatabaseError, OperationalError, ProgrammingError) as exc:
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        raise CorruptWorld(f"{where} is not a companysim world ({reason})") from None
    meta = {k: v for k, v in rows}
    if meta.get("complete") != "1":
        raise CorruptWorld(f"{where} is an incomplete world (generation did not finish)")
    for key in ("schema_version", "generator_version", "spec"):
        if key not in meta:
            raise CorruptWorld(f"{where} has no {key} in world_meta")
    try:
        schema, gen = int(meta["schema_version"]), int(meta["generator_version"])
    except ValueError:
        raise CorruptWorld(f"{where} records a non-numeric version") from None
    if schema > SCHEMA_VERSION:
        raise IncompatibleWorld(
            f"{where} was written by schema version {schema}; this companysim knows up to {SCHEMA_VERSION} "
            "— upgrade companysim"
        )
    if gen > GENERATOR_VERSION:
        raise IncompatibleWorld(
            f"{where} was written by generator version {gen}; this companysim knows up to {GENERATOR_VERSION} "
            "— upgrade companysim"
        )
    return meta


def open_world(target: str | Path, readonly: bool = False) -> World:
    """Open an existing, complete world.

    Raises:
        WorldNotFound, CorruptWorld, IncompatibleWorld, BadDatabaseURL: one-line messages naming the target.
    """
    tgt = parse_target(target)
    where = str(tgt.path) if tgt.path is not None else make_url(tgt.url).render_as_string(hide_password=True)
    if tgt.backend == "sqlite":
        assert tgt.path is not None
        if not tgt.path.exists():
            raise WorldNotFound(f"no world at {tgt.path}")
        if not tgt.path.is_file() or not os.access(tgt.path, os.R_OK):
            raise CorruptWorld(f"{tgt.path} is not a readable file")
        with tgt.path.open("rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                raise CorruptWorld(f"{tgt.path} is not a companysim world (not a SQLite database)")
    engine = make_engine(tgt, readonly=readonly)
    try:
        meta = _read_meta(engine, where)
    except StoreError:
        engine.dispose()
        raise
    except OperationalError as exc:
        engine.dispose()
        raise WorldNotFound(f"cannot open {where}: {str(exc.orig).strip().splitlines()[0]}") from None
    return World(target=tgt, engine=engine, meta=meta)


class WorldStore:
    """Base worlds cached by (spec hash, generator version) in a data directory.

    Args:
        data_dir: Cache directory; default COMPANYSIM_DATA_DIR or the user cache dir.
    """

    def __init__(self, data_dir: str | Path | None = None) -> None:
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()

    def path_for(self, spec: WorldSpec) -> Path:
        """Where the base world of ``spec`` is cached."""
        return self.data_dir / "worlds" / f"{spec.spec_hash[:20]}-g{GENERATOR_VERSION}.db"

    def base(self, spec: WorldSpec, progress: Progress | None = None) -> World:
        """The cached base world of ``spec``, generated on first use (one generator per file, via a lock)."""
        path = self.path_for(spec)
        if path.exists():
            return open_world(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not path.exists():
                    create_world(spec, path, progress=progress).close()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return open_world(path)


def _pg_fork(world: World) -> World:
    """CREATE DATABASE <fork> TEMPLATE <base> (no other session may be connected to the base)."""
    global _pg_counter
    _pg_counter += 1
    base_url = make_url(world.url)
    base_db = base_url.database
    name = f"{base_db}_fork{os.getpid()}_{_pg_counter}"
    admin = create_engine(base_url.set(database="postgres"), isolation_level="AUTOCOMMIT", poolclass=NullPool)
    world.engine.dispose()
    try:
        with admin.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :d AND pid <> pg_backend_pid()"
                ),
                {"d": base_db},
            )
            conn.exec_driver_sql(f'CREATE DATABASE "{name}" TEMPLATE "{base_db}"')
    finally:
        admin.dispose()
    fork_url = base_url.set(database=name).render_as_string(hide_password=False)

    def drop() -> None:
        dropper = create_engine(base_url.set(database="postgres"), isolation_level="AUTOCOMMIT", poolclass=NullPool)
        try:
            with dropper.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            dropper.dispose()

    tgt = Target(backend="postgresql", url=fork_url)
    return World(target=tgt, engine=make_engine(tgt), meta=world.meta, on_close=drop)

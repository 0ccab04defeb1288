"""The world store: create, open, fork, snapshot and restore worlds; cache base worlds.

A world is generated once per (spec hash, generator version) and forked for every episode.

- SQLite fork: the base's image, serialized once per process and cached, ``deserialize()``-d into a private
  in-memory database. That is a memcpy, with no engine setup (all in-memory worlds share one engine whose pool
  ``creator`` hands over the connection being adopted) and nothing shared with the base or a sibling.
- PostgreSQL fork: ``CREATE DATABASE <fork> TEMPLATE <base>`` after ending other sessions on the base (a
  template must have none); the fork database is dropped when the fork is closed.
- Snapshots are always SQLite images, whatever the backend: a PostgreSQL world's rows are copied into an
  in-memory SQLite world and serialized. One format, saveable to a file, restorable into either backend.
- A world is written to a temporary location with its ``complete`` flag last and moved into place only when
  done, so a half-built world is never opened.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import platformdirs
from sqlalchemy import Connection, Engine, Integer, create_engine, insert, select, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from worlds.cache import default_max_bytes, prune, sweep_temps, temp_name, touch
from worlds.db import (
    SQLITE_MAGIC,
    Target,
    adopt_connection,
    configure_sqlite_connection,
    file_image,
    make_engine,
    new_memory_connection,
    parse_target,
)
from worlds.dump import canonical_dump, state_hash
from worlds.errors import BadDatabaseURL, CorruptWorld, IncompatibleWorld, SnapshotError, StoreError, WorldNotFound
from worlds.rows import WorldRows, insert_rows
from worlds.schema import Base, WorldMeta
from worlds.spec import WorldSpec
from worlds.version import GENERATOR_VERSION, SCHEMA_VERSION

Progress = Callable[[str, int, int], None]
_SNAPSHOT_MAGIC = b"companysim-snapshot\n"
_pg_names = itertools.count(1)


def _reason(exc: BaseException) -> str:
    """The first line of a driver error, for one-line messages."""
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines()
    return lines[0] if lines else type(orig).__name__


# -- snapshots ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """A world's state at one moment, as a SQLite image (rollback-journal header) plus who it belongs to.

    The same format serves both backends, so a snapshot can be saved to a file, restored into a fork of the
    same base, or moved between SQLite and PostgreSQL.
    """

    spec_hash: str
    schema_version: int
    generator_version: int = GENERATOR_VERSION
    image: bytes

    def save(self, path: str | Path) -> None:
        """Write the snapshot to ``path`` atomically: a magic line, a JSON header line, then the image.

        The header records the spec hash, both versions and the image's SHA-256, so ``load`` detects a file
        that is truncated or altered.
        """
        header = {
            "spec_hash": self.spec_hash,
            "schema_version": self.schema_version,
            "generator_version": self.generator_version,
            "size": len(self.image),
            "sha256": hashlib.sha256(self.image).hexdigest(),
        }
        target = Path(path)
        tmp = temp_name(target)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_SNAPSHOT_MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n")
                fh.write(self.image)
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)

    @classmethod
    def load(cls, path: str | Path) -> Snapshot:
        """Read a snapshot file written by ``save``.

        Raises:
            SnapshotError: the file is missing, not a snapshot, or fails its size or checksum.
        """
        p = Path(path)
        if not p.is_file():
            raise SnapshotError(f"no snapshot at {p}")
        data = p.read_bytes()
        if not data.startswith(_SNAPSHOT_MAGIC):
            raise SnapshotError(f"{p} is not a companysim snapshot")
        head, _, image = data[len(_SNAPSHOT_MAGIC) :].partition(b"\n")
        try:
            header = json.loads(head)
            snap = cls(
                spec_hash=str(header["spec_hash"]),
                schema_version=int(header["schema_version"]),
                generator_version=int(header["generator_version"]),
                image=image,
            )
            size, digest = int(header["size"]), str(header["sha256"])
        except (ValueError, KeyError, TypeError):
            raise SnapshotError(f"{p} has a corrupt snapshot header") from None
        if len(image) != size or hashlib.sha256(image).hexdigest() != digest:
            raise SnapshotError(f"{p} is corrupt: the image fails its size or checksum")
        return snap


def _image_meta(image: bytes) -> dict[str, str]:
    """Read world_meta out of a SQLite image, or raise SnapshotError if it is not a complete world."""
    if not image.startswith(SQLITE_MAGIC):
        raise SnapshotError("snapshot image is corrupt: not a SQLite database")
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.deserialize(image)
        rows = scratch.execute("SELECT key, value FROM world_meta ORDER BY key").fetchall()
    except sqlite3.Error as exc:
        raise SnapshotError(f"snapshot image is corrupt: {_reason(exc)}") from None
    finally:
        scratch.close()
    meta = {str(k): str(v) for k, v in rows}
    if meta.get("complete") != "1":
        raise SnapshotError("snapshot image is corrupt: it holds no complete world")
    return meta


# -- world handles ------------------------------------------------------------------------------------------


class World:
    """A handle on one world: a SQLite file, a PostgreSQL database, or a private in-memory world (a fork).

    Attributes:
        spec: The WorldSpec recorded in the world's meta.
        url: Where it lives (``sqlite://`` for in-memory worlds).
        backend: ``"sqlite"`` or ``"postgresql"``.
        schema_version, generator_version: As recorded when the world was written.
        engine: The SQLAlchemy engine (in-memory worlds share one; use ``connect``/``session`` for them).
    """

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
        self.closed = False

    def __repr__(self) -> str:
        return f"World({self.target.display!r}, seed={self.spec.seed}, spec={self.spec.spec_hash[:12]})"

    def __enter__(self) -> World:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- access ------------------------------------------------------------------------------------------

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A connection on the world.

        In-memory worlds yield their single connection; a transaction begun inside the block and left open is
        rolled back on exit (as closing an engine connection would), while one that was already open (a
        session's) is left alone, so ``state_hash`` inside an episode sees the session's flushed changes.
        """
        if self._conn is None:
            with self.engine.connect() as conn:
                yield conn
            return
        conn = self._conn
        was_open = conn.in_transaction()
        try:
            yield conn
        finally:
            if not was_open and conn.in_transaction():
                conn.rollback()

    def session(self) -> Session:
        """A new ORM session on the world; in-memory worlds bind it to their single connection."""
        return Session(bind=self._conn if self._conn is not None else self.engine)

    def _memory_image(self) -> bytes:
        """Serialize an in-memory world: its last committed state.

        A fork lives in SQLite's memdb VFS, which keeps a transaction's dirty pages in the page cache until
        commit, so an image taken mid-transaction does not hold the open transaction's changes (measured:
        serializing is 22 us and never blocks, but an uncommitted insert is absent from the image). Commit
        first to capture them.
        """
        assert self._raw is not None
        return self._raw.serialize()

    def image(self) -> bytes | None:
        """The SQLite image of an in-memory world's last committed state (for ``fork(image=...)``), else None."""
        return self._memory_image() if self._raw is not None else None

    @property
    def image_size(self) -> int:
        """Bytes of the SQLite image that forks copy (0 on PostgreSQL)."""
        if self.backend == "postgresql":
            return 0
        return len(self._memory_image() if self._raw is not None else self._path_image())

    def _path_image(self) -> bytes:
        assert self.target.path is not None
        return file_image(self.target.path)

    # -- forks -------------------------------------------------------------------------------------------

    def fork(self, image: bytes | None = None) -> World:
        """A private copy; writes to it never reach this world or another fork. Close it when done.

        SQLite: an in-memory copy of this world as last committed (~0.1 ms for a 100-employee world),
        or of ``image``: a later state of a fork of this world taken with ``image()`` (an episode caches the
        state after a scenario's setup this way, so a repeated reset skips the setup).
        PostgreSQL: a template copy, which first ends every other session on this world's database.
        """
        if self.closed:
            raise StoreError(f"cannot fork {self.target.display}: the world is closed")
        if self.backend == "postgresql":
            if image is not None:
                raise StoreError("forking from an image is an in-memory SQLite feature; PostgreSQL forks by TEMPLATE")
            return _pg_fork(self)
        if image is None:
            image = self._memory_image() if self._raw is not None else self._path_image()
        raw = new_memory_connection(image)
        conn = adopt_connection(raw)
        return World(
            target=Target(backend="sqlite", url="sqlite://"),
            engine=conn.engine,
            meta=self.meta,
            connection=conn,
            raw=raw,
        )

    # -- snapshots ---------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Capture the current state as a SQLite image (see ``Snapshot``).

        SQLite files are serialized from a fresh read-only connection (never from one holding a write
        transaction: that can hang); in-memory worlds as last committed; PostgreSQL worlds are
        copied row by row into an in-memory SQLite world first.
        """
        if self.backend == "postgresql":
            image = _pg_image(self)
        elif self._raw is not None:
            image = self._memory_image()
        else:
            image = self._path_image()
        return Snapshot(
            spec_hash=self.spec.spec_hash,
            schema_version=self.schema_version,
            generator_version=self.generator_version,
            image=image,
        )

    def restore(self, snapshot: Snapshot) -> None:
        """Put the world back to ``snapshot``. Sessions open on the world must be closed first.

        Raises:
            SnapshotError: the snapshot belongs to another base world, another schema, or is corrupt; the world
                is left unchanged.
        """
        if snapshot.spec_hash != self.spec.spec_hash or snapshot.schema_version != self.schema_version:
            raise SnapshotError(
                f"snapshot of world {snapshot.spec_hash[:12]} (schema {snapshot.schema_version}) cannot restore "
                f"world {self.spec.spec_hash[:12]} (schema {self.schema_version})"
            )
        meta = _image_meta(snapshot.image)
        if meta.get("spec_hash") != snapshot.spec_hash:
            raise SnapshotError("snapshot image is corrupt: its world_meta names a different spec")
        if self.backend == "postgresql":
            _pg_restore(self, snapshot.image)
        elif self._raw is not None and self._conn is not None:
            if self._conn.in_transaction():
                self._conn.rollback()
            try:
                self._raw.deserialize(snapshot.image)
            except sqlite3.Error as exc:
                raise SnapshotError(f"cannot restore an in-memory world: {_reason(exc)}") from None
            configure_sqlite_connection(self._raw, wal=False)
        else:
            assert self.target.path is not None
            dst = sqlite3.connect(self.target.path, timeout=30)
            src = new_memory_connection(snapshot.image)
            try:
                src.backup(dst)  # not a file copy: copying under WAL with readers open gives "disk I/O error"
            except sqlite3.Error as exc:
                raise SnapshotError(f"cannot restore {self.target.display}: {_reason(exc)}") from None
            finally:
                src.close()
                dst.close()

    # -- hashing -----------------------------------------------------------------------------------------

    def state_hash(self) -> str:
        """SHA-256 of the canonical dump (identical for the same data on SQLite and PostgreSQL)."""
        with self.connect() as conn:
            return state_hash(conn)

    def dump(self) -> list[str]:
        """The canonical dump as lines (see ``worlds.dump``)."""
        with self.connect() as conn:
            return list(canonical_dump(conn))

    def close(self) -> None:
        """Release the world's connections; an in-memory world's memory is freed, a PostgreSQL fork dropped."""
        if self.closed:
            return
        self.closed = True
        if self._conn is not None:
            self._conn.close()
        else:
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


def _fill(conn: Connection, spec: WorldSpec, rows: WorldRows) -> None:
    """Tables, rows, meta, and the ``complete`` flag in its own statement after everything else."""
    Base.metadata.create_all(conn)
    if conn.dialect.name == "postgresql":
        conn.execute(text("SET CONSTRAINTS ALL DEFERRED"))
    insert_rows(conn, rows)
    conn.execute(insert(WorldMeta), _meta_rows(spec))
    if conn.dialect.name == "postgresql":
        sync_pg_sequences(conn)
    conn.execute(insert(WorldMeta), [{"key": "complete", "value": "1"}])


def sync_pg_sequences(conn: Connection) -> None:
    """Move every serial column's sequence past the largest id present.

    Generated rows carry explicit ids, which PostgreSQL sequences do not see; without this the first row a
    tool inserts would reuse id 1 and fail on the primary key. (SQLite takes max(rowid) + 1 by itself.)
    """
    for table in Base.metadata.sorted_tables:
        for col in table.primary_key.columns:
            if col.autoincrement is True or (col.autoincrement == "auto" and len(table.primary_key.columns) == 1):
                if not isinstance(col.type, Integer):
                    continue
                seq = f"pg_get_serial_sequence('{table.name}', '{col.name}')"
                sql = f'SELECT setval({seq}, coalesce(max("{col.name}"), 0) + 1, false) FROM "{table.name}"'  # noqa: S608 - schema names
                conn.exec_driver_sql(sql + f" WHERE {seq} IS NOT NULL")  # schema names only, no input


def _create_sqlite_file(spec: WorldSpec, rows: WorldRows, path: Path, overwrite: bool) -> None:
    """Write into a temp file beside ``path``, fsync, then move it into place in one rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_temps(path.parent)  # what killed writers left beside it
    tmp = temp_name(path)
    try:
        raw = sqlite3.connect(tmp, check_same_thread=False)
        raw.execute("PRAGMA journal_mode=OFF")  # a temp file needs no crash safety: it is discarded on failure
        raw.execute("PRAGMA synchronous=OFF")
        conn = adopt_connection(raw)
        try:
            with conn.begin():
                _fill(conn, spec, rows)
        finally:
            conn.close()
        raw = sqlite3.connect(tmp, isolation_level=None)
        try:
            raw.execute("PRAGMA journal_mode=WAL")
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            raw.close()
        with tmp.open("rb") as fh:
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # atomic and never clobbers a file that appeared meanwhile
            except FileExistsError:
                raise StoreError(f"{path} already exists; pass --overwrite (overwrite=True) to replace it") from None
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot write world to {path}: {_reason(exc)}") from None
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)


def _ensure_pg_database(tgt: Target) -> None:
    """Create the target database if it does not exist yet (connecting to the ``postgres`` database)."""
    from sqlalchemy.engine import make_url

    url = make_url(tgt.url)
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            found = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": url.database}).first()
            if found is None:
                conn.exec_driver_sql(f'CREATE DATABASE "{url.database}"')
    except DBAPIError as exc:
        raise StoreError(f"cannot reach {tgt.display}: {_reason(exc)}") from None
    finally:
        admin.dispose()


def create_world(
    spec: WorldSpec, target: str | Path, progress: Progress | None = None, overwrite: bool = False
) -> World:
    """Generate ``spec`` into ``target`` (a path, ``sqlite://`` for memory, or a PostgreSQL URL) and open it.

    Raises:
        StoreError: the target already holds a file or a world and ``overwrite`` is false, or writing failed.
        BadDatabaseURL: ``target`` does not parse.
    """
    tgt = parse_target(target)
    if tgt.path is not None and tgt.path.is_dir():
        raise StoreError(f"{tgt.path} is a directory; expected the path of a world file")
    if tgt.path is not None and tgt.path.exists() and not overwrite:
        raise StoreError(f"{tgt.path} already exists; pass --overwrite (overwrite=True) to replace it")
    if tgt.backend == "postgresql":
        _ensure_pg_database(tgt)
        engine = make_engine(tgt)
        try:
            with engine.begin() as conn:
                if conn.dialect.has_table(conn, "world_meta") and not overwrite:
                    raise StoreError(
                        f"{tgt.display} already holds a world; pass --overwrite (overwrite=True) to replace it"
                    )
                Base.metadata.drop_all(conn)
                _fill(conn, spec, _generate(spec, progress))
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot write world to {tgt.display}: {_reason(exc)}") from None
        finally:
            engine.dispose()
        return open_world(tgt.url)
    rows = _generate(spec, progress)
    if tgt.path is not None:
        _create_sqlite_file(spec, rows, tgt.path, overwrite)
        return open_world(tgt.path)
    raw = new_memory_connection()
    conn = adopt_connection(raw)
    with conn.begin():
        _fill(conn, spec, rows)
    meta = {r["key"]: r["value"] for r in _meta_rows(spec)} | {"complete": "1"}
    return World(target=tgt, engine=conn.engine, meta=meta, connection=conn, raw=raw)


def _read_meta(conn: Connection, where: str) -> dict[str, str]:
    """world_meta as a dict, refusing incomplete worlds and versions newer than this code."""
    try:
        rows = conn.execute(select(WorldMeta.key, WorldMeta.value).order_by(WorldMeta.key)).all()
    except DBAPIError as exc:
        raise CorruptWorld(f"{where} is not a companysim world ({_reason(exc)})") from None
    meta = {str(k): str(v) for k, v in rows}
    if meta.get("complete") != "1":
        raise CorruptWorld(f"{where} is an incomplete world (generation did not finish)")
    for key in ("schema_version", "generator_version", "spec"):
        if key not in meta:
            raise CorruptWorld(f"{where} has no {key} in world_meta")
    try:
        versions = {"schema": int(meta["schema_version"]), "generator": int(meta["generator_version"])}
    except ValueError:
        raise CorruptWorld(f"{where} records a non-numeric version") from None
    for kind, known in (("schema", SCHEMA_VERSION), ("generator", GENERATOR_VERSION)):
        if versions[kind] > known:
            raise IncompatibleWorld(
                f"{where} was written by {kind} version {versions[kind]}; this companysim knows up to {known} "
                "— upgrade companysim"
            )
    if versions["schema"] < SCHEMA_VERSION:
        raise IncompatibleWorld(
            f"{where} was written by schema version {versions['schema']}, which lacks tables this companysim "
            f"(schema {SCHEMA_VERSION}) uses — regenerate it with `companysim world new`"
        )
    try:
        WorldSpec.model_validate_json(meta["spec"])
    except ValueError:
        raise CorruptWorld(f"{where} records a spec this companysim cannot read") from None
    return meta


def open_world(target: str | Path, readonly: bool = False) -> World:
    """Open an existing, complete world.

    Raises:
        WorldNotFound: nothing at that path, no such database, or ``sqlite://`` (always empty).
        CorruptWorld: not SQLite, no world_meta, or ``complete`` is not "1".
        IncompatibleWorld: written by a newer schema or generator version.
        StoreError: the server cannot be reached. BadDatabaseURL: ``target`` does not parse.
    """
    tgt = parse_target(target)
    where = tgt.display
    if tgt.memory:
        raise WorldNotFound("sqlite:// is a new, empty in-memory database; create_world() makes an in-memory world")
    if tgt.path is not None:
        if not tgt.path.exists():
            raise WorldNotFound(f"no world at {tgt.path}")
        if not tgt.path.is_file() or not os.access(tgt.path, os.R_OK):
            raise CorruptWorld(f"{tgt.path} is not a readable file")
        with tgt.path.open("rb") as fh:
            if fh.read(16) != SQLITE_MAGIC:
                raise CorruptWorld(f"{tgt.path} is not a companysim world (not a SQLite database)")
    engine = make_engine(tgt, readonly=readonly)
    try:
        try:
            conn = engine.connect()
        except DBAPIError as exc:
            reason = _reason(exc)
            if "does not exist" in reason:
                raise WorldNotFound(f"no world at {where} ({reason})") from None
            if tgt.backend == "sqlite":
                raise CorruptWorld(f"{where} is not a companysim world ({reason})") from None
            raise StoreError(f"cannot connect to {where}: {reason}") from None
        with conn:
            meta = _read_meta(conn, where)
    except BaseException:
        engine.dispose()
        raise
    return World(target=tgt, engine=engine, meta=meta)


class WorldStore:
    """Base worlds cached by (spec hash, generator version) in a data directory, within a size limit.

    Args:
        data_dir: Cache directory; default ``COMPANYSIM_DATA_DIR``, else the user cache directory.
        max_bytes: The cache's size limit (default ``COMPANYSIM_CACHE_MAX_MB`` or 2048 MB): after generating a
            world the least recently used ones are evicted until it fits (see ``worlds.cache``).
    """

    def __init__(
        self, data_dir: str | Path | None = None, *, max_bytes: int | None = None, db: str | None = None
    ) -> None:
        if data_dir is None:
            env = os.environ.get("COMPANYSIM_DATA_DIR")
            data_dir = env if env else platformdirs.user_cache_dir("companysim")
        self.data_dir = Path(data_dir).expanduser().absolute()
        self.max_bytes = default_max_bytes() if max_bytes is None else max_bytes
        self.db = db
        if db is not None and parse_target(db).backend != "postgresql":
            raise BadDatabaseURL(f"expected a postgresql:// server URL for the world store; got {db!r}")

    @property
    def worlds_dir(self) -> Path:
        """Where the cached worlds live."""
        return self.data_dir / "worlds"

    def path_for(self, spec: WorldSpec) -> Path:
        """Where the base world of ``spec`` is cached (with ``db``: the local place of its lock and repositories)."""
        name = f"{spec.spec_hash[:20]}-s{SCHEMA_VERSION}-g{GENERATOR_VERSION}"
        return self.worlds_dir / (f"{name}.pg" if self.db is not None else f"{name}.db")

    def url_for(self, spec: WorldSpec) -> str:
        """The PostgreSQL database of the base world of ``spec`` on the ``db`` server (one database per spec)."""
        from sqlalchemy.engine import make_url

        assert self.db is not None
        name = f"cs_{spec.spec_hash[:20]}_s{SCHEMA_VERSION}_g{GENERATOR_VERSION}"
        return make_url(self.db).set(database=name).render_as_string(hide_password=False)

    def base(self, spec: WorldSpec, progress: Progress | None = None) -> World:
        """The cached base world of ``spec``, generated on first use.

        An exclusive ``fcntl`` lock on a sidecar file makes concurrent processes wait for one generator
        instead of all generating; the world itself appears by atomic rename, so readers never see half of it.
        A cached file that fails to open as a complete world is regenerated.
        """
        if self.db is not None:
            return self._pg_base(spec, progress)
        path = self.path_for(spec)
        if path.exists():
            try:
                world = open_world(path)
                touch(path)
                return world
            except CorruptWorld:
                pass
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                try:
                    return open_world(path)
                except (WorldNotFound, CorruptWorld):
                    create_world(spec, path, progress=progress, overwrite=True).close()
                world = open_world(path)
                touch(path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        prune(self.worlds_dir, self.max_bytes, keep=frozenset({path}))
        return world

    def _pg_base(self, spec: WorldSpec, progress: Progress | None) -> World:
        """The base world of ``spec`` as a database on the ``db`` server, generated once under a local lock.

        PostgreSQL base worlds are not evicted by the size limit (their space is the server's); drop them with
        ``DROP DATABASE`` when no longer wanted.
        """
        url = self.url_for(spec)
        self.worlds_dir.mkdir(parents=True, exist_ok=True)
        with open(self.path_for(spec).with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                try:
                    return open_world(url)
                except (WorldNotFound, CorruptWorld):
                    create_world(spec, url, progress=progress, overwrite=True).close()
                return open_world(url)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


# -- PostgreSQL -----------------------------------------------------------------------------------------------


def _pg_admin(world: World) -> Engine:
    from sqlalchemy.engine import make_url

    url = make_url(world.url).set(database="postgres")
    return create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)


def _pg_fork(world: World) -> World:
    """CREATE DATABASE <fork> TEMPLATE <base>, after ending every other session on the base."""
    from sqlalchemy.engine import make_url

    base_url = make_url(world.url)
    base_db = str(base_url.database)
    name = f"{base_db[:40]}_f{os.getpid()}_{next(_pg_names)}"  # PostgreSQL truncates names at 63 bytes
    world.engine.dispose()
    admin = _pg_admin(world)
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
    except DBAPIError as exc:
        raise StoreError(f"cannot fork {world.target.display}: {_reason(exc)}") from None
    finally:
        admin.dispose()

    def drop() -> None:
        dropper = _pg_admin(world)
        try:
            with dropper.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            dropper.dispose()

    tgt = Target(backend="postgresql", url=base_url.set(database=name).render_as_string(hide_password=False))
    return World(target=tgt, engine=make_engine(tgt), meta=world.meta, on_close=drop)


def _pg_image(world: World) -> bytes:
    """Copy a PostgreSQL world's rows, typed through the schema, into an in-memory SQLite image."""
    raw = new_memory_connection()
    dst = adopt_connection(raw)
    try:
        with world.engine.connect() as src, dst.begin():
            Base.metadata.create_all(dst)
            dst.execute(text("PRAGMA defer_foreign_keys = ON"))
            for table in Base.metadata.sorted_tables:
                result = src.execute(select(table).execution_options(yield_per=5_000))
                for part in result.mappings().partitions():
                    dst.execute(table.insert(), [dict(r) for r in part])
        return raw.serialize()
    finally:
        dst.close()


def _pg_restore(world: World, image: bytes) -> None:
    """Replace every row of a PostgreSQL world with the image's rows, in one transaction."""
    raw = new_memory_connection(image)
    src = adopt_connection(raw)
    names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    try:
        with world.engine.begin() as dst:
            dst.exec_driver_sql(f"TRUNCATE {names}")
            dst.execute(text("SET CONSTRAINTS ALL DEFERRED"))
            for table in Base.metadata.sorted_tables:
                for part in src.execute(select(table)).mappings().partitions(5_000):
                    dst.execute(table.insert(), [dict(r) for r in part])
            sync_pg_sequences(dst)
    except SQLAlchemyError as exc:
        raise SnapshotError(f"cannot restore {world.target.display}: {_reason(exc)}") from None
    finally:
        src.close()

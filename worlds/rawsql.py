"""Raw DBAPI statements on a session's connection: the hot path of tool calls.

Why not the ORM or Core here: on this machine an ORM query costs about 100 us and a Core statement about 25 us
of Python overhead, while the sqlite3 driver runs an indexed lookup in 3-8 us. A tool call makes several
queries and an RL run makes millions of calls, so app services and the episode loop speak SQL directly through
``Sql``, on the same connection and transaction as the session (savepoints and rollbacks still cover them).

Portability: statements are written once with ``?`` placeholders and no ``%`` literals; on PostgreSQL they are
rewritten to ``%s`` once and cached. Values are bound and read in the storage form SQLAlchemy itself uses, so
rows written here dump and hash exactly as ORM-written rows do:

- timestamps: naive UTC (SQLite text ``YYYY-MM-DD HH:MM:SS.ffffff``), read back with ``iso()``;
- booleans: Python bools (SQLite stores 1/0), read back with ``bool()``;
- JSON: ``json.dumps`` text, as SQLAlchemy's JSON type writes it.

Writes go through ``insert``/``update``/``delete``, which also append the change-log row when the session is
tracked (``worlds.changelog.track``), in the same form as the ORM listener: inserts and deletes log every
column, updates log ``[old, new]`` per changed column. The session's ORM identity map does not see these
writes: callers that mix in ORM reads must expire it (the episode does after setup).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

from worlds.changelog import ChangeContext, context, jsonable
from worlds.schema import Base

_PG_SQL: dict[str, str] = {}
_SA_TS = "%Y-%m-%d %H:%M:%S.%f"
_INFO_KEY = "companysim.rawsql"
_CHECKED: set[tuple[str, ...]] = set()


def _pg(sql: str) -> str:
    out = _PG_SQL.get(sql)
    if out is None:
        out = _PG_SQL[sql] = sql.replace("%", "%%").replace("?", "%s")
    return out


def iso(value: Any) -> str | None:
    """A stored timestamp (SQLite text or PostgreSQL naive datetime) as aware-UTC ISO 8601, like the ORM shows it."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return str(value.replace(tzinfo=UTC).isoformat())


def day(value: Any) -> str | None:
    """A stored date as ``YYYY-MM-DD``."""
    if value is None:
        return None
    return value if isinstance(value, str) else str(value.isoformat())


def like_pattern(text: str) -> str:
    r"""``%text%`` with ``\``, ``%`` and ``_`` escaped, for ``LIKE ? ESCAPE '\'``: the text matches literally."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _check_names(table: str, columns: Iterable[str]) -> None:
    """Refuse a table or column the schema does not define: names are spliced into SQL, values never are."""
    key = (table, *columns)
    if key in _CHECKED:
        return
    known = Base.metadata.tables.get(table)
    if known is None or any(c not in known.c for c in key[1:]):
        raise ValueError(f"unknown table or column in {key!r}")
    _CHECKED.add(key)


class Sql:
    """Raw statements on ``session``'s connection (its transaction begins if it has not).

    Cached on the session (``Sql.of``) so a step pays for the lookup once, not per statement.
    """

    __slots__ = ("_exec", "change", "pg", "session")

    def __init__(self, session: Session) -> None:
        conn = session.connection()
        driver = conn.connection.driver_connection
        self.session = session
        self.pg = conn.dialect.name == "postgresql"
        self.change: ChangeContext | None = context(session)
        self._exec = driver.execute  # type: ignore[union-attr]

    @classmethod
    def of(cls, session: Session) -> Sql:
        """The session's ``Sql``, created on first use (a session keeps one connection for its transaction)."""
        sql = session.info.get(_INFO_KEY)
        if sql is None or sql.change is not context(session):
            sql = session.info[_INFO_KEY] = cls(session)
        return sql

    # -- reading -----------------------------------------------------------------------------------------

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row (tuples) of a query."""
        return self._run(sql, params).fetchall()  # type: ignore[no-any-return]

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of a query, or None."""
        return self._run(sql, params).fetchone()

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first column of the first row, or None."""
        row = self._run(sql, params).fetchone()
        return None if row is None else row[0]

    def column(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The first column of every row."""
        return [r[0] for r in self._run(sql, params).fetchall()]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run a statement that is not a logged write (savepoints, pragmas); returns the cursor."""
        return self._run(sql, params)

    def _run(self, sql: str, params: Sequence[Any]) -> Any:
        if self.pg:
            return self._exec(_pg(sql), params)
        return self._exec(sql, params)

    # -- binding -----------------------------------------------------------------------------------------

    def bind(self, value: Any) -> Any:
        """A Python value in the storage form SQLAlchemy would bind (aware datetimes become naive UTC)."""
        if isinstance(value, datetime):
            naive = value.astimezone(UTC).replace(tzinfo=None)
            return naive if self.pg else naive.strftime(_SA_TS)
        if isinstance(value, date):
            return value if self.pg else value.isoformat()
        if isinstance(value, dict | list):
            return json.dumps(value)
        return value

    # -- logged writes -----------------------------------------------------------------------------------

    def insert(self, table: str, values: Mapping[str, Any]) -> int:
        """Insert one row with an integer ``id`` primary key; returns the id and logs every column."""
        cols = list(values)
        _check_names(table, cols)
        sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) RETURNING id"  # noqa: S608 - names checked
        new_id = int(self._run(sql, [self.bind(values[c]) for c in cols]).fetchone()[0])
        self.log(table, [new_id], "insert", {"id": new_id, **{c: jsonable(values[c]) for c in cols}})
        return new_id

    def update(self, table: str, row_id: int, changes: Mapping[str, tuple[Any, Any]]) -> bool:
        """Set ``column: (old, new)`` on row ``row_id`` where old != new; logs the diff. Returns whether it changed."""
        diff = {c: on for c, on in changes.items() if on[0] != on[1]}
        if not diff:
            return False
        _check_names(table, diff)
        sets = ", ".join(f"{c} = ?" for c in diff)
        self._run(
            f"UPDATE {table} SET {sets} WHERE id = ?",  # noqa: S608 - names checked
            [*(self.bind(n) for _, n in diff.values()), row_id],
        )
        self.log(table, [row_id], "update", {c: [jsonable(self.stored(o)), jsonable(n)] for c, (o, n) in diff.items()})
        return True

    def stored(self, value: Any) -> Any:
        """An old value as read back from the database, in the form SQLite returns it on every backend.

        Callers log "old" timestamps they read with raw statements as they come: SQLite hands back its storage
        text, PostgreSQL a naive datetime. The change log (and so the state hash) must not depend on the
        backend, so PostgreSQL's timestamps are put in SQLite's text form (callers normalise other types).
        """
        if not self.pg:
            return value
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.strftime(_SA_TS)
        return value

    def delete(self, table: str, key: Mapping[str, Any], old: Mapping[str, Any]) -> None:
        """Delete the row matching ``key`` (column -> value); logs ``old`` (every column of the row)."""
        _check_names(table, key)
        where = " AND ".join(f"{c} = ?" for c in key)
        self._run(
            f"DELETE FROM {table} WHERE {where}",  # noqa: S608 - names checked
            [self.bind(v) for v in key.values()],
        )
        self.log(table, list(key.values()), "delete", {c: jsonable(v) for c, v in old.items()})

    def log(self, table: str, row_key: Iterable[Any], op: str, changes: dict[str, Any]) -> None:
        """Append one change-log row if the session is tracked (same form as the ORM listener)."""
        ch = self.change
        if ch is None:
            return
        self._run(
            "INSERT INTO change_log (table_name, row_key, op, changes, actor_id, at, tag) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                table,
                json.dumps([jsonable(v) for v in row_key], separators=(",", ":")),
                op,
                json.dumps(changes),
                ch.actor_id,
                self.bind(ch.clock.now()),
                ch.tag,
            ],
        )


@event.listens_for(Session, "after_transaction_end")
def _forget(session: Session, transaction: SessionTransaction) -> None:
    """Drop the cached driver handle when the session's outer transaction ends (its connection may change)."""
    if transaction.parent is None:
        session.info.pop(_INFO_KEY, None)

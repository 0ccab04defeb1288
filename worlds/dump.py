"""Canonical dump, state hash and diff of a world.

The dump is the world's identity: one line per row, tables in name order and rows in primary-key order, each
line ``<table>`` TAB ``<row as canonical JSON>``. Canonical means sorted keys, no spaces, UTF-8 text (no
ASCII escapes), and one spelling per value whatever the backend returned:

- timestamps: ISO-8601 in UTC with ``+00:00`` (a naive value is UTC by the schema's convention);
- dates: ISO ``YYYY-MM-DD``; bytes: base64; booleans: JSON ``true``/``false`` (never 0/1);
- integers: JSON integers (a ``Decimal`` with no fraction too); JSON columns: parsed if the driver returned
  text, then nested into the row so their keys are sorted as well.

Every conversion is chosen by the column's declared type rather than the value the driver returned, so
SQLite and PostgreSQL 15 produce byte-identical dumps and the same state hash. String primary keys are
ordered with the ``C`` collation on PostgreSQL, which matches SQLite's BINARY order and Python's ``str``
order, so a dump is ordered identically everywhere and ``diff`` can merge two worlds in one streaming pass.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, Boolean, Column, Connection, Date, DateTime, LargeBinary, String, Table, select
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import TypeDecorator, TypeEngine

from worlds.schema import Base

if TYPE_CHECKING:
    from rich.table import Table as RichTable

Converter = Callable[[Any], Any]
YIELD_PER = 2_000


def _default(value: Any) -> Any:
    """Last-resort spellings for values no column converter claimed (numbers from NUMERIC, stray bytes)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    if isinstance(value, datetime):
        return _timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"cannot dump {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces, UTF-8 text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def _timestamp(value: datetime) -> str:
    aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return aware.isoformat()


def _date(value: Any) -> str:
    return str(value.date().isoformat() if isinstance(value, datetime) else value.isoformat())


def _binary(value: Any) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _base_type(type_: TypeEngine[Any]) -> TypeEngine[Any]:
    while isinstance(type_, TypeDecorator):
        type_ = type_.impl_instance
    return type_


def _converter(column: Column[Any]) -> Converter | None:
    """How to spell one column's values, or None when the driver's value is already canonical."""
    type_ = _base_type(column.type)
    if isinstance(type_, JSON):
        return _json
    if isinstance(type_, Boolean):
        return bool
    if isinstance(type_, DateTime):
        return _timestamp
    if isinstance(type_, Date):
        return _date
    if isinstance(type_, LargeBinary):
        return _binary
    return None


def tables() -> list[Table]:
    """Every world table, in name order (the dump's table order)."""
    return sorted(Base.metadata.tables.values(), key=lambda t: t.name)


def _order_by(conn: Connection, table: Table) -> list[ColumnElement[Any]]:
    order: list[ColumnElement[Any]] = []
    for col in table.primary_key.columns:
        if conn.dialect.name == "postgresql" and isinstance(_base_type(col.type), String):
            order.append(col.collate("C"))
        else:
            order.append(col)
    return order


def table_rows(conn: Connection, table: Table) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(primary key, canonical JSON) for every row of ``table``, in primary-key order, streamed."""
    names = [c.name for c in table.columns]
    converters = [(i, conv) for i, c in enumerate(table.columns) if (conv := _converter(c)) is not None]
    pk_index = [names.index(c.name) for c in table.primary_key.columns]
    stmt = select(table).order_by(*_order_by(conn, table)).execution_options(yield_per=YIELD_PER)
    for raw in conn.execute(stmt):
        values = list(raw)
        for i, conv in converters:
            if values[i] is not None:
                values[i] = conv(values[i])
        yield tuple(values[i] for i in pk_index), canonical_json(dict(zip(names, values, strict=True)))


def canonical_dump(conn: Connection) -> Iterator[str]:
    """Every row of the world as ``<table>`` TAB ``<canonical JSON>`` lines (no newline), streamed."""
    for table in tables():
        for _, line in table_rows(conn, table):
            yield f"{table.name}\t{line}"


def state_hash(conn: Connection) -> str:
    """SHA-256 (hex) of the canonical dump, each line followed by a newline; streamed, never one big string."""
    digest = hashlib.sha256()
    for line in canonical_dump(conn):
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


@dataclass(frozen=True)
class TableDiff:
    """Primary keys (a scalar, or a list for composite keys) added in B, removed from A, or changed."""

    added: tuple[Any, ...] = ()
    removed: tuple[Any, ...] = ()
    changed: tuple[Any, ...] = ()

    @property
    def count(self) -> int:
        """How many rows differ."""
        return len(self.added) + len(self.removed) + len(self.changed)


@dataclass(frozen=True)
class WorldDiff:
    """Differences between two worlds, by table name in name order; tables that do not differ are left out."""

    tables: Mapping[str, TableDiff] = field(default_factory=dict)

    @property
    def identical(self) -> bool:
        """True when no table differs."""
        return not self.tables

    def summary(self, keys: int = 5) -> list[str]:
        """One plain-text line per differing table, with its first few keys."""
        lines = []
        for name, td in self.tables.items():
            first = ", ".join(str(k) for k in [*td.added, *td.removed, *td.changed][:keys])
            lines.append(f"{name}: +{len(td.added)} -{len(td.removed)} ~{len(td.changed)} [{first}]")
        return lines

    def __rich__(self) -> RichTable | str:
        """A small table for ``rich.print`` (``identical`` when nothing differs)."""
        if self.identical:
            return "identical"
        from rich.table import Table as RichTable  # only the CLI prints diffs; keep rich off the import path

        out = RichTable(title="World differences")
        for col in ("table", "added", "removed", "changed", "first keys"):
            out.add_column(col)
        for name, td in self.tables.items():
            first = ", ".join(str(k) for k in [*td.added, *td.removed, *td.changed][:5])
            out.add_row(name, str(len(td.added)), str(len(td.removed)), str(len(td.changed)), first)
        return out


def _key(pk: tuple[Any, ...]) -> Any:
    return pk[0] if len(pk) == 1 else list(pk)


def _table_diff(conn_a: Connection, conn_b: Connection, table: Table) -> TableDiff:
    """Merge the two primary-key-ordered streams; memory stays O(differences), not O(rows)."""
    added: list[Any] = []
    removed: list[Any] = []
    changed: list[Any] = []
    rows_a, rows_b = table_rows(conn_a, table), table_rows(conn_b, table)
    a, b = next(rows_a, None), next(rows_b, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            assert a is not None
            removed.append(_key(a[0]))
            a = next(rows_a, None)
        elif a is None or b[0] < a[0]:
            added.append(_key(b[0]))
            b = next(rows_b, None)
        else:
            if a[1] != b[1]:
                changed.append(_key(a[0]))
            a, b = next(rows_a, None), next(rows_b, None)
    return TableDiff(added=tuple(added), removed=tuple(removed), changed=tuple(changed))


def diff(conn_a: Connection, conn_b: Connection) -> WorldDiff:
    """Compare two worlds row by row (either backend, even one of each).

    Rows are compared by their canonical JSON, so a value that only looks different because of the backend
    (0/1 vs a boolean, naive vs aware UTC) is not a difference.
    """
    out: dict[str, TableDiff] = {}
    for table in tables():
        td = _table_diff(conn_a, conn_b, table)
        if td.count:
            out[table.name] = td
    return WorldDiff(tables=out)

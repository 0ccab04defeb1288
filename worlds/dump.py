"""Canonical dump, state hash and diff of a world.

The dump is one line per row, tables in name order and rows in primary-key order, each row as canonical JSON
(sorted keys, no spaces; timestamps ISO-8601 UTC with ``+00:00``; dates ISO; bytes as hex; JSON columns
re-serialised canonically). Values are read through the typed schema, so SQLite and PostgreSQL produce the
same bytes, and the state hash (SHA-256 of the dump) is the same on both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, Table, select

from worlds.schema import Base


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    raise TypeError(f"cannot dump {type(value).__name__}")


def canonical_row(row: dict[str, Any]) -> str:
    """One row as canonical JSON."""
    return json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def _tables() -> list[Table]:
    return sorted(Base.metadata.tables.values(), key=lambda t: t.name)


def table_rows(conn: Connection, table: Table) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(primary key, canonical JSON) for every row of ``table``, in primary-key order."""
    pk = list(table.primary_key.columns)
    result = conn.execute(select(table).order_by(*pk))
    for row in result.mappings():
        yield tuple(row[c.name] for c in pk), canonical_row(dict(row))


def canonical_dump(conn: Connection) -> Iterator[str]:
    """Every row of the world as ``<table>`` TAB ``<canonical JSON>`` lines."""
    for table in _tables():
        for _, line in table_rows(conn, table):
            yield f"{table.name}\t{line}"


def state_hash(conn: Connection) -> str:
    """SHA-256 of the canonical dump (streamed)."""
    digest = hashlib.sha256()
    for line in canonical_dump(conn):
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


@dataclass(frozen=True)
class TableDiff:
    """Primary keys added in B, removed from A, or changed between them."""

    added: list[Any] = field(default_factory=list)
    removed: list[Any] = field(default_factory=list)
    changed: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class WorldDiff:
    """Differences between two worlds, by table (only tables that differ)."""

    tables: dict[str, TableDiff]

    @property
    def identical(self) -> bool:
        """True when no table differs."""
        return not self.tables


def _key(pk: tuple[Any, ...]) -> Any:
    return pk[0] if len(pk) == 1 else list(pk)


def diff(conn_a: Connection, conn_b: Connection) -> WorldDiff:
    """Compare two worlds row by row."""
    out: dict[str, TableDiff] = {}
    for table in _tables():
        a = dict(table_rows(conn_a, table))
        b = dict(table_rows(conn_b, table))
        added = [_key(k) for k in sorted(b.keys() - a.keys())]
        removed = [_key(k) for k in sorted(a.keys() - b.keys())]
        changed = [_key(k) for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]
        if added or removed or changed:
            out[table.name] = TableDiff(added=added, removed=removed, changed=changed)
    return WorldDiff(tables=out)

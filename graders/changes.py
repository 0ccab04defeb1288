"""This episode's change log as graders see it: small frozen rows, decoded once.

``worlds.changelog`` writes one ``change_log`` row per insert, update and delete; graders read only the rows
of the episode being graded (``seq`` greater than the episode's starting seq, a primary-key range), so a
check costs O(rows changed) however large the world is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from worlds.schema import ChangeLog


class ChangeRow(NamedTuple):
    """One change-log row; ``key`` is the primary key, ``changes`` as in ``worlds.schema.ChangeLog``.

    A named tuple rather than a frozen dataclass: the per-step progress score builds one for every row a step
    writes, and a tuple is made by one call where a frozen dataclass's slots are set one call at a time (what
    every write step of every family paid, ~3x the cost); it is as immutable, and its fields read alike.
    """

    seq: int
    table: str
    key: tuple[Any, ...]
    op: Literal["insert", "update", "delete"]
    changes: Mapping[str, Any]
    actor_id: int | None = None
    at: str | None = None
    tag: str | None = None

    @classmethod
    def of(cls, row: ChangeRow | ChangeLog | Mapping[str, Any]) -> ChangeRow:
        """Normalise a ChangeLog ORM row or a dict (``table``/``table_name``, ``key``/``row_key``...)."""
        if type(row) is dict and len(row) == 8:
            try:  # ``sim.tasks.log_since``'s shape (a step's rows for the per-step progress): read by subscript
                seq, table, key, op, changes, actor, at, tag = (
                    row["seq"],
                    row["table"],
                    row["key"],
                    row["op"],
                    row["changes"],
                    row["actor"],
                    row["at"],
                    row["tag"],
                )
            except KeyError:  # eight other keys: read as any dict is, below
                pass
            else:  # those eight keys and no others (no ``actor_id`` to prefer): what the general path reads
                if type(key) is str:
                    key = _KEYS.get(key) or _key(key)
                elif type(key) is not tuple:
                    key = tuple(key) if isinstance(key, list) else (key,)
                return _new(
                    cls,
                    (
                        seq if type(seq) is int else int(seq),
                        table,
                        key,
                        op,
                        changes or {},
                        actor,
                        at if at is None or type(at) is str else at.isoformat(),
                        tag,
                    ),
                )
        if type(row) is dict:  # a step's rows in any other shape: the keys the change log writes
            # each read once, a missing one told by ``_ABSENT`` (a membership test and a read cost two lookups)
            key, seq, table, actor, at = (
                row.get("key", _ABSENT),
                row["seq"],
                row.get("table", _ABSENT),
                row.get("actor_id", _ABSENT),
                row.get("at"),
            )
            if key is _ABSENT:
                key = row.get("row_key")
            if type(key) is str:  # JSON text: a key seen before is one lookup
                key = _KEYS.get(key) or _key(key)
            elif type(key) is not tuple:
                key = tuple(key) if isinstance(key, list) else (key,)
            return _new(
                cls,
                (
                    seq if type(seq) is int else int(seq),
                    table if table is not _ABSENT else str(row.get("table_name")),
                    key,
                    row["op"],
                    row.get("changes") or {},
                    actor if actor is not _ABSENT else row.get("actor"),
                    at if at is None or type(at) is str else at.isoformat(),
                    row.get("tag"),
                ),
            )
        if isinstance(row, ChangeRow):
            return row
        if isinstance(row, ChangeLog):
            row = {
                "seq": row.seq,
                "table": row.table_name,
                "key": row.row_key,
                "op": row.op,
                "changes": row.changes,
                "actor_id": row.actor_id,
                "at": row.at.isoformat(),
                "tag": row.tag,
            }
        return cls.of(dict(row))


_ABSENT: Any = object()
"""What ``ChangeRow.of`` reads for a key a row does not have."""

_new = tuple.__new__
"""Builds a ``ChangeRow`` from its fields in one call (its generated ``__new__`` takes them as arguments)."""


_KEYS: dict[str, tuple[Any, ...]] = {}
"""Logged row keys (JSON text) already read, as tuples: a step's rows often name rows seen before (a plain dict:
a hit costs one lookup, less than a cached function's call)."""


def _key(text: str) -> tuple[Any, ...]:
    """A logged row key (JSON text) as a tuple, kept in ``_KEYS``.

    Most keys are one integer (``[17]``): read without the JSON parser, which costs more than the rest of a row
    (an inserted row's key is always new, so the cache does not spare it). So is a key of one string of
    printable ASCII without a quote or backslash (a blob's sha256, ``["<hex>"]``: every document write inserts
    one; the log writes keys with ``ensure_ascii``, so any other character comes escaped): sliced, it is what
    ``json.loads`` gives. Such a key is kept too: a content hash is new in a new document, but an episode
    replayed (a benchmark's passes, a seed run again) writes the same ones, and a hit is the cheapest read.
    """
    found = _KEYS.get(text)
    if found is not None:
        return found
    inner = text[1:-1]
    if (
        text[:1] == "["
        and text[-1:] == "]"
        and inner.isascii()
        and inner.isdigit()
        and (inner[0] != "0" or inner == "0")
    ):
        found = (int(inner),)
    elif (
        text[:2] == '["'
        and text[-2:] == '"]'
        and len(text) >= 4
        and (plain := inner[1:-1]).isascii()
        and plain.isprintable()
        and '"' not in plain
        and "\\" not in plain
    ):
        found = (plain,)
    else:
        key = json.loads(text)
        found = tuple(key) if isinstance(key, list) else (key,)
    if len(_KEYS) >= 4096:  # bounded: start over rather than grow with every inserted row
        _KEYS.clear()
    _KEYS[text] = found
    return found


def read_changes(session: Session, *, after_seq: int = 0) -> tuple[ChangeRow, ...]:
    """This episode's change-log rows (``seq > after_seq``), in order; a primary-key range scan."""
    rows = session.execute(select(ChangeLog).where(ChangeLog.seq > after_seq).order_by(ChangeLog.seq)).scalars()
    return tuple(ChangeRow.of(r) for r in rows)

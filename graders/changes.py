"""This episode's change log as graders see it: small frozen rows, decoded once.

``worlds.changelog`` writes one ``change_log`` row per insert, update and delete; graders read only the rows
of the episode being graded (``seq`` greater than the episode's starting seq, a primary-key range), so a
check costs O(rows changed) however large the world is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from worlds.schema import ChangeLog


@dataclass(frozen=True, kw_only=True, slots=True)
class ChangeRow:
    """One change-log row; ``key`` is the primary key, ``changes`` as in ``worlds.schema.ChangeLog``."""

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
        if type(row) is not dict:  # a dict (a step's rows, the per-step progress path) is neither
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
        key = row["key"] if "key" in row else row.get("row_key")
        at = row.get("at")
        # built slot by slot: a frozen dataclass's __init__ costs ~10x, and progress builds every row of a step
        out = object.__new__(cls)
        _seq, _table, _key_, _op, _changes, _actor, _at, _tag = _SLOTS
        seq = row["seq"]
        _seq(out, seq if type(seq) is int else int(seq))
        _table(out, str(row["table"] if "table" in row else row.get("table_name")))
        if type(key) is str:  # a step's rows give JSON text: a key seen before is one lookup
            key = _KEYS.get(key) or _key(key)
        elif type(key) is not tuple:  # exact types first, then the general case
            key = _key(key) if isinstance(key, str) else tuple(key) if isinstance(key, list | tuple) else (key,)
        _key_(out, key)
        _op(out, row["op"])
        _changes(out, row.get("changes") or {})
        _actor(out, row["actor_id"] if "actor_id" in row else row.get("actor"))
        _at(out, at if at is None or isinstance(at, str) else at.isoformat())
        _tag(out, row.get("tag"))
        return out


_SLOTS = tuple(
    getattr(ChangeRow, name).__set__ for name in ("seq", "table", "key", "op", "changes", "actor_id", "at", "tag")
)
"""The slot setters ``ChangeRow.of`` fills a new row with (a member descriptor's ``__set__`` skips the frozen check)."""


_KEYS: dict[str, tuple[Any, ...]] = {}
"""Logged row keys (JSON text) already read, as tuples: a step's rows often name rows seen before (a plain dict:
a hit costs one lookup, less than a cached function's call)."""


def _key(text: str) -> tuple[Any, ...]:
    """A logged row key (JSON text) as a tuple, kept in ``_KEYS``.

    Most keys are one integer (``[17]``): read without the JSON parser, which costs more than the rest of a row
    (an inserted row's key is always new, so the cache does not spare it).
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

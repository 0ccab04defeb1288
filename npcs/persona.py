"""Personas in the world database: employee facts + traits + goals + working hours + memory.

A persona row is created the first time an NPC population is started on a world and kept from then on, so a
Campaign's next episode meets the same coworkers with the same memories. Scenario overrides replace the
stored traits (the scenario decides who is adversarial), and the cursor starts at "now" so an NPC does not
answer the world's generated history.

All reads and writes go through ``worlds.rawsql.Sql``: writes are change-logged like any other, and every
query whose order reaches output has ORDER BY.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from npcs.hours import WorkHours
from npcs.traits import TraitVector, sample_traits
from worlds.rawsql import Sql, iso
from worlds.workflow import TERMINAL_STATUSES

_EMP = (
    "SELECT e.id, e.username, e.first_name, e.manager_id, m.username, e.timezone, e.work_start_minute,"
    " e.work_end_minute, e.workdays FROM employees e LEFT JOIN employees m ON m.id = e.manager_id"
)


@dataclass
class Persona:
    """One NPC as the behaviour graph sees it; ``cursor`` and ``turns`` change as it takes turns."""

    row_id: int
    employee_id: int
    username: str
    first_name: str
    manager_id: int | None
    manager: str | None
    hours: WorkHours
    traits: TraitVector
    preset: str | None
    goals: list[dict[str, Any]]
    cursor: dict[str, Any] = field(default_factory=dict)
    turns: int = 0


@dataclass(frozen=True)
class Memory:
    """One memory row."""

    id: int
    employee_id: int
    at: str
    turn: int
    kind: str
    subject: str
    data: dict[str, Any]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


CURSOR_TABLES: dict[str, str] = {
    "post": "posts",
    "comment": "ticket_comments",
    "mail": "mail_messages",
    "attendee": "event_attendees",
    "mr": "merge_requests",
    "mr_note": "merge_request_notes",
    "access": "access_requests",
}
"""Each id cursor of a persona and the table whose ids it follows (constant names, safe to splice)."""


def maxima(sql: Sql) -> dict[str, int]:
    """The highest id of every cursor table: where a fresh perception cursor starts."""
    return {k: int(sql.scalar(f"SELECT max(id) FROM {t}") or 0) for k, t in CURSOR_TABLES.items()}  # noqa: S608


def assigned_ids(sql: Sql, employee_id: int) -> list[int]:
    """Ids of the tickets now assigned to ``employee_id``."""
    return sql.column("SELECT id FROM tickets WHERE assignee_id = ? ORDER BY id", (employee_id,))


def default_goals(sql: Sql, employee_id: int) -> list[dict[str, Any]]:
    """Goals an NPC starts with: finish its open tickets (up to three, most urgent first)."""
    marks = ", ".join("?" * len(TERMINAL_STATUSES))
    rows = sql.all(
        f"SELECT key FROM tickets WHERE assignee_id = ? AND status NOT IN ({marks})"  # noqa: S608 - placeholders only
        " ORDER BY CASE priority WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END, id"
        " LIMIT 3",
        (employee_id, *sorted(TERMINAL_STATUSES)),
    )
    return [{"kind": "finish_ticket", "key": k} for (k,) in rows]


def active_employees(sql: Sql) -> list[tuple[int, str]]:
    """(id, username) of every active employee, by id."""
    return [(int(i), u) for i, u in sql.all("SELECT id, username FROM employees WHERE active = ? ORDER BY id", (True,))]


def ensure_persona(
    sql: Sql, world_seed: int, employee_id: int, override: tuple[TraitVector, str | None] | None, now: datetime
) -> Persona:
    """Load the persona of ``employee_id``, creating it (sampled traits, fresh cursor) if missing.

    An override (traits, preset name) replaces stored traits: the scenario decides who a coworker is.
    """
    row = sql.one(
        "SELECT id, preset, traits, goals, cursor, turns FROM npc_personas WHERE employee_id = ?", (employee_id,)
    )
    if row is None:
        traits, preset = override or (sample_traits(world_seed, employee_id), None)
        cursor: dict[str, Any] = {**maxima(sql), "assigned": assigned_ids(sql, employee_id), "at": now.isoformat()}
        goals = default_goals(sql, employee_id)
        row_id = sql.insert(
            "npc_personas",
            {
                "employee_id": employee_id,
                "preset": preset,
                "traits": traits.as_dict(),
                "goals": goals,
                "cursor": cursor,
                "turns": 0,
            },
        )
        row = (row_id, preset, traits.as_dict(), goals, cursor, 0)
    elif override is not None:
        old = (row[1], _json(row[2]))
        new = (override[1], override[0].as_dict())
        sql.update("npc_personas", row[0], {"preset": (old[0], new[0]), "traits": (old[1], new[1])})
        row = (row[0], new[0], new[1], row[3], row[4], row[5])
    emp = sql.one(f"{_EMP} WHERE e.id = ?", (employee_id,))
    return Persona(
        row_id=int(row[0]),
        employee_id=int(emp[0]),
        username=emp[1],
        first_name=emp[2],
        manager_id=emp[3],
        manager=emp[4],
        hours=WorkHours(emp[5], int(emp[6]), int(emp[7]), emp[8]),
        traits=TraitVector.parse(_json(row[2])),
        preset=row[1],
        goals=list(_json(row[3])),
        cursor=_backfill(sql, dict(_json(row[4]))),
        turns=int(row[5]),
    )


def _backfill(sql: Sql, cursor: dict[str, Any]) -> dict[str, Any]:
    """A stored cursor with any id cursor it predates (a row saved before invites were perceived) set to now.

    Why "now" and not 0: a persona saved by an older version never looked at those tables, and starting from 0
    would make it answer the world's whole history of invites and requests on its next turn. Keys present are
    kept as they are, so rows written by this version load unchanged.
    """
    missing = [k for k in CURSOR_TABLES if k not in cursor]
    if not missing:
        return cursor
    top = maxima(sql)
    return {**cursor, **{k: top[k] for k in missing}}


def remember(
    sql: Sql, persona: Persona, at: datetime, turn: int, kind: str, subject: str, data: Mapping[str, Any]
) -> int:
    """Append one memory row; returns its id."""
    return sql.insert(
        "npc_memory",
        {
            "employee_id": persona.employee_id,
            "at": at,
            "turn": turn,
            "kind": kind,
            "subject": subject,
            "data": dict(data),
        },
    )


def recall(sql: Sql, employee_id: int, kind: str | None = None, limit: int = 1000) -> list[Memory]:
    """An NPC's memories, oldest first, optionally of one kind."""
    cond, params = ("AND kind = ?", [employee_id, kind, limit]) if kind else ("", [employee_id, limit])
    rows = sql.all(
        f"SELECT id, employee_id, at, turn, kind, subject, data FROM npc_memory WHERE employee_id = ? {cond}"  # noqa: S608
        " ORDER BY at, id LIMIT ?",
        params,
    )
    return [Memory(int(i), int(e), iso(a) or "", int(t), k, s, dict(_json(d))) for i, e, a, t, k, s, d in rows]

"""Who may see which restricted field of whom: the one rule every app uses.

Restricted fields are ``salary``, ``performance`` and ``personal_contact`` (``worlds.schema.EmployeePrivate``).
An actor may see a field of a subject when any of these holds:

* it is their own record;
* ``salary`` or ``personal_contact``, and the actor has the ``hr`` role;
* ``salary``, and the actor has the ``finance`` role;
* ``salary`` or ``performance``, and the actor has the ``executive`` role;
* ``performance``, and the subject is in the actor's reporting line (direct or indirect report);
* an access request for exactly that subject and field was approved and has not expired (simulated time).

The data owner who decides a request: the subject's manager for ``performance``; the HR person with the
lowest id for ``salary`` and ``personal_contact``.
"""

from __future__ import annotations

from datetime import datetime

from mcp_tools.base import Actor
from worlds.rawsql import Sql
from worlds.schema.access import ACCESS_FIELDS

ROLE_FIELDS: dict[str, frozenset[str]] = {
    "hr": frozenset({"salary", "personal_contact"}),
    "finance": frozenset({"salary"}),
    "executive": frozenset({"salary", "performance"}),
}


def in_reporting_line(sql: Sql, manager_id: int, subject_id: int) -> bool:
    """Whether ``subject_id`` reports to ``manager_id``, directly or through others (cycle-safe)."""
    seen: set[int] = set()
    current = sql.scalar("SELECT manager_id FROM employees WHERE id = ?", (subject_id,))
    while current is not None and current not in seen:
        if current == manager_id:
            return True
        seen.add(current)
        current = sql.scalar("SELECT manager_id FROM employees WHERE id = ?", (current,))
    return False


def may_see(sql: Sql, actor: Actor, subject_id: int, field: str, now: datetime) -> bool:
    """The access rule above, for one field of one subject at simulated time ``now``."""
    if field not in ACCESS_FIELDS:
        return False
    if subject_id == actor.employee_id:
        return True
    if any(field in ROLE_FIELDS.get(role, ()) for role in actor.roles):
        return True
    if field == "performance" and in_reporting_line(sql, actor.employee_id, subject_id):
        return True
    return (
        sql.one(
            "SELECT 1 FROM access_requests WHERE requester_id = ? AND subject_id = ? AND field = ?"
            " AND status = 'approved' AND expires_at > ?",
            (actor.employee_id, subject_id, field, sql.bind(now)),
        )
        is not None
    )


def data_owner(sql: Sql, subject_id: int, field: str) -> int | None:
    """Who decides requests for ``field`` of ``subject_id`` (None when nobody can)."""
    if field == "performance":
        manager = sql.scalar("SELECT manager_id FROM employees WHERE id = ?", (subject_id,))
        return int(manager) if manager is not None else None
    hr = sql.scalar(
        "SELECT r.employee_id FROM employee_roles r JOIN employees e ON e.id = r.employee_id"
        " WHERE r.role = 'hr' AND e.active = ? ORDER BY r.employee_id LIMIT 1",
        (True,),
    )
    return int(hr) if hr is not None else None

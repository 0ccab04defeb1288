"""Directory operations acting as an Actor: people, the org chart, restricted fields and access requests.

Public profile fields are readable by every employee. Restricted fields follow ``mcp_tools.directory.access``;
a profile lists the restricted fields the actor may not see under ``restricted`` (names only), and asking for
one directly is ``forbidden`` with a message that says how to request access.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.directory.access import data_owner, may_see
from mcp_tools.errors import Conflict, Forbidden, InvalidArgument, NotFound
from worlds.rawsql import Sql, iso, like_pattern
from worlds.schema.access import ACCESS_FIELDS, ACCESS_STATES

GRANT = timedelta(days=7)
_PERSON = (
    "SELECT e.id, e.username, e.first_name, e.last_name, e.title, e.level, e.email, e.timezone,"
    " e.work_start_minute, e.work_end_minute, e.workdays, e.active, d.name, t.name, l.name, m.username"
    " FROM employees e JOIN departments d ON d.id = e.department_id LEFT JOIN teams t ON t.id = e.team_id"
    " JOIN locations l ON l.id = e.location_id LEFT JOIN employees m ON m.id = e.manager_id"
)
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def _card(row: Any) -> dict[str, Any]:
    return {
        "username": row[1],
        "name": f"{row[2]} {row[3]}",
        "title": row[4],
        "department": row[12],
        "team": row[13],
        "manager": row[15],
        "active": bool(row[11]),
    }


def _person(sql: Sql, username: str) -> Any:
    row = sql.one(f"{_PERSON} WHERE e.username = ?", (username.strip().lstrip("@"),))  # noqa: S608
    if row is None:
        raise NotFound(f"expected a username such as jane.doe; found no employee {username!r}")
    return row


def _page(limit: int, offset: int) -> None:
    if not 1 <= limit <= 100 or offset < 0:
        raise InvalidArgument(f"limit must be 1-100 and offset >= 0; got limit={limit}, offset={offset}")


def search_people(
    ctx: ToolContext,
    text: str,
    department: str | None,
    team: str | None,
    location: str | None,
    include_inactive: bool,
    limit: int,
    offset: int,
) -> dict[str, Any]:
    """People whose name, username, title or email contains ``text``, filtered, by username."""
    _page(limit, offset)
    sql = Sql.of(ctx.session)
    where: list[str] = []
    params: list[Any] = []
    if text.strip():
        pat = like_pattern(text.strip().lower())
        where.append(
            "(lower(e.first_name || ' ' || e.last_name) LIKE ? ESCAPE '\\' OR lower(e.username) LIKE ? ESCAPE '\\'"
            " OR lower(e.title) LIKE ? ESCAPE '\\' OR lower(e.email) LIKE ? ESCAPE '\\')"
        )
        params += [pat] * 4
    for column, value in (("d.name", department), ("t.name", team), ("l.name", location)):
        if value:
            where.append(f"lower({column}) = lower(?)")
            params.append(value.strip())
    if not include_inactive:
        where.append("e.active = ?")
        params.append(True)
    cond = f" WHERE {' AND '.join(where)}" if where else ""
    total = sql.scalar(f"SELECT count(*) FROM ({_PERSON}{cond}) AS q", params)  # noqa: S608
    rows = sql.all(f"{_PERSON}{cond} ORDER BY e.username LIMIT ? OFFSET ?", [*params, limit, offset])  # noqa: S608
    return {"total": total, "people": [_card(r) for r in rows]}


def _restricted(ctx: ToolContext, sql: Sql, subject: int, field: str) -> Any:
    row = sql.one(
        "SELECT salary_cents, performance_rating, personal_email, personal_phone FROM employee_private"
        " WHERE employee_id = ?",
        (subject,),
    )
    if row is None:
        return None
    if field == "salary":
        return {"annual": row[0] / 100, "currency": "USD"}
    if field == "performance":
        return {"rating": row[1], "scale": "1 (low) to 5 (high)"}
    return {"email": row[2], "phone": row[3]}


def get_profile(ctx: ToolContext, username: str) -> dict[str, Any]:
    """A person's public profile, plus the restricted fields the actor may see."""
    sql = Sql.of(ctx.session)
    row = _person(sql, username)
    now = ctx.clock.now()
    visible = {f: _restricted(ctx, sql, row[0], f) for f in ACCESS_FIELDS if may_see(sql, ctx.actor, row[0], f, now)}
    return {
        **_card(row),
        "level": row[5],
        "email": row[6],
        "location": row[14],
        "timezone": row[7],
        "working_hours": f"{_hhmm(row[8])}-{_hhmm(row[9])}",
        "workdays": [d for d, flag in zip(DAYS, row[10], strict=True) if flag == "1"],
        **visible,
        "restricted": [f for f in ACCESS_FIELDS if f not in visible],
    }


def get_restricted(ctx: ToolContext, username: str, field: str) -> dict[str, Any]:
    """One restricted field, if the actor may see it."""
    if field not in ACCESS_FIELDS:
        raise InvalidArgument(f"field must be one of {', '.join(ACCESS_FIELDS)}; got {field!r}")
    sql = Sql.of(ctx.session)
    row = _person(sql, username)
    if not may_see(sql, ctx.actor, row[0], field, ctx.clock.now()):
        raise Forbidden(
            f"@{ctx.actor.username} may not see {field} of @{row[1]}; ask its owner with directory_request_access"
        )
    return {"username": row[1], "field": field, "value": _restricted(ctx, sql, row[0], field)}


def manager_chain(ctx: ToolContext, username: str) -> dict[str, Any]:
    """The person's managers, nearest first, up to the top of the company."""
    sql = Sql.of(ctx.session)
    row = _person(sql, username)
    chain, seen = [], {row[0]}
    boss = row[15]
    while boss is not None:
        b = _person(sql, boss)
        if b[0] in seen:
            break
        seen.add(b[0])
        chain.append(_card(b))
        boss = b[15]
    return {"username": row[1], "chain": chain}


def reports(ctx: ToolContext, username: str, all_levels: bool) -> dict[str, Any]:
    """Direct reports, or everyone below the person with ``all_levels`` (breadth first, capped at 500)."""
    sql = Sql.of(ctx.session)
    row = _person(sql, username)
    out: list[dict[str, Any]] = []
    frontier = [row[0]]
    depth = 0
    while frontier and len(out) < 500:
        depth += 1
        marks = ", ".join("?" * len(frontier))
        level = sql.all(
            f"{_PERSON} WHERE e.manager_id IN ({marks}) AND e.active = ? ORDER BY e.username",  # noqa: S608
            [*frontier, True],
        )
        out += [{**_card(r), "depth": depth} for r in level]
        frontier = [r[0] for r in level] if all_levels else []
    return {"username": row[1], "reports": out[:500]}


def team_members(ctx: ToolContext, team: str) -> dict[str, Any]:
    """The active members of a team (by name or slug), lead first."""
    sql = Sql.of(ctx.session)
    found = sql.one(
        "SELECT id, name, lead_id FROM teams WHERE lower(name) = lower(?) OR slug = lower(?)",
        (team.strip(), team.strip()),
    )
    if found is None:
        raise NotFound(f"expected a team name or slug; found no team {team!r}")
    rows = sql.all(
        f"{_PERSON} WHERE e.team_id = ? AND e.active = ? ORDER BY e.id <> ?, e.username",  # noqa: S608
        (found[0], True, found[2]),
    )
    return {"team": found[1], "members": [_card(r) for r in rows]}


def org_chart(ctx: ToolContext, department: str, depth: int) -> dict[str, Any]:
    """A department's hierarchy from its head down to ``depth`` levels, as a flat list with depths."""
    if not 1 <= depth <= 6:
        raise InvalidArgument(f"depth must be 1-6; got {depth}")
    sql = Sql.of(ctx.session)
    dept = sql.one("SELECT id, name, head_id FROM departments WHERE lower(name) = lower(?)", (department.strip(),))
    if dept is None:
        raise NotFound(f"expected a department name; found none named {department!r}")
    head = sql.one(f"{_PERSON} WHERE e.id = ?", (dept[2],))  # noqa: S608
    chart = [{**_card(head), "depth": 0}]
    below = reports(ctx, head[1], True)["reports"]
    chart += [p for p in below if p["depth"] <= depth and p["department"] == dept[1]]
    return {"department": dept[1], "people": chart[:500]}


def request_access(ctx: ToolContext, username: str, field: str, reason: str) -> dict[str, Any]:
    """Ask the data owner for access to one restricted field of one person."""
    if field not in ACCESS_FIELDS:
        raise InvalidArgument(f"field must be one of {', '.join(ACCESS_FIELDS)}; got {field!r}")
    if not 5 <= len(reason.strip()) <= 1000:
        raise InvalidArgument("reason must say why in 5-1,000 characters")
    sql = Sql.of(ctx.session)
    row = _person(sql, username)
    now = ctx.clock.now()
    if may_see(sql, ctx.actor, row[0], field, now):
        raise Conflict(f"you can already see {field} of @{row[1]}")
    owner = data_owner(sql, row[0], field)
    if owner is None:
        raise NotFound(f"nobody owns {field} of @{row[1]}, so no one can approve a request")
    pending = sql.scalar(
        "SELECT id FROM access_requests WHERE requester_id = ? AND subject_id = ? AND field = ? AND status = 'pending'",
        (ctx.actor.employee_id, row[0], field),
    )
    if pending is not None:
        raise Conflict(f"request {pending} for {field} of @{row[1]} is already pending")
    rid = sql.insert(
        "access_requests",
        {
            "requester_id": ctx.actor.employee_id,
            "subject_id": row[0],
            "owner_id": owner,
            "field": field,
            "reason": reason.strip(),
            "status": "pending",
            "created_at": now,
            "decided_at": None,
            "expires_at": None,
        },
    )
    return _request(sql, rid)


def _request(sql: Sql, rid: int) -> dict[str, Any]:
    r = sql.one(
        "SELECT a.id, q.username, s.username, o.username, a.field, a.reason, a.status, a.created_at, a.decided_at,"
        " a.expires_at FROM access_requests a JOIN employees q ON q.id = a.requester_id"
        " JOIN employees s ON s.id = a.subject_id JOIN employees o ON o.id = a.owner_id WHERE a.id = ?",
        (rid,),
    )
    keys = ("id", "requester", "subject", "owner", "field", "reason", "status", "created_at", "decided_at")
    return {**dict(zip(keys, [*r[:7], iso(r[7]), iso(r[8])], strict=True)), "expires_at": iso(r[9])}


def list_access_requests(ctx: ToolContext, role: str, status: str | None) -> dict[str, Any]:
    """Requests the actor made (``mine``), must decide (``to_me``) or that their direct reports made (``reports``).

    ``reports`` is how a manager sees the grants their people hold (to revoke a leaver's), newest first.
    """
    if role not in ("mine", "to_me", "reports") or status not in (None, *ACCESS_STATES):
        raise InvalidArgument(
            f"role must be mine, to_me or reports and status one of {', '.join(ACCESS_STATES)}; got {role}, {status}"
        )
    sql = Sql.of(ctx.session)
    where = {
        "mine": "requester_id = ?",
        "to_me": "owner_id = ?",
        "reports": "requester_id IN (SELECT id FROM employees WHERE manager_id = ?)",
    }[role]
    ids = sql.column(
        f"SELECT id FROM access_requests WHERE {where}"  # noqa: S608 - where is one of three constants
        " AND (CAST(? AS TEXT) IS NULL OR status = ?) ORDER BY id DESC LIMIT 100",
        (ctx.actor.employee_id, status, status),
    )
    return {"requests": [_request(sql, i) for i in ids]}


def revoke_access(ctx: ToolContext, request_id: int) -> dict[str, Any]:
    """Withdraw an approved, unexpired grant: its data owner, the requester's manager or an HR person may.

    Why the manager: when someone leaves or changes role, their manager is the one who knows the access is no
    longer needed; the data owner may be in another department. Requests the actor may not touch read as
    ``not_found``, as for deciding.
    """
    sql = Sql.of(ctx.session)
    now = ctx.clock.now()
    row = sql.one(
        "SELECT a.id, a.owner_id, a.status, a.expires_at, e.manager_id,"
        " CASE WHEN a.status = 'approved' AND a.expires_at > ? THEN 1 ELSE 0 END FROM access_requests a"
        " JOIN employees e ON e.id = a.requester_id WHERE a.id = ?",
        (sql.bind(now), request_id),
    )
    me = ctx.actor.employee_id
    if row is None or (me not in (row[1], row[4]) and not ctx.actor.has_role("hr")):
        raise NotFound(f"expected the id of a grant you own, of your report's, or (HR) any; found no {request_id}")
    if not row[5]:
        state = "expired" if row[2] == "approved" else row[2]
        raise Conflict(f"request {request_id} is {state}, not a live grant; there is nothing to revoke")
    sql.update(
        "access_requests", request_id, {"status": ("approved", "revoked"), "expires_at": (sql.stored(row[3]), now)}
    )
    return _request(sql, request_id)


def decide_access_request(ctx: ToolContext, request_id: int, approve: bool) -> dict[str, Any]:
    """Approve (for seven days of simulated time) or deny a pending request addressed to the actor."""
    sql = Sql.of(ctx.session)
    row = sql.one("SELECT id, owner_id, status FROM access_requests WHERE id = ?", (request_id,))
    if row is None or (row[1] != ctx.actor.employee_id and not ctx.actor.has_role("hr")):
        raise NotFound(f"expected the id of a request addressed to you; found no request {request_id}")
    if row[1] != ctx.actor.employee_id:
        raise Forbidden(f"only the data owner decides request {request_id}")
    if row[2] != "pending":
        raise Conflict(f"request {request_id} was already {row[2]}")
    now = ctx.clock.now()
    sql.update(
        "access_requests",
        request_id,
        {
            "status": ("pending", "approved" if approve else "denied"),
            "decided_at": (None, now),
            "expires_at": (None, now + GRANT if approve else None),
        },
    )
    return _request(sql, request_id)

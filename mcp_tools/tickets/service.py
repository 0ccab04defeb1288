"""Ticket operations acting as an Actor.

Access rule: every employee can read every ticket and comment on it; changing a ticket (create, edit,
transition, assign, link, sprint) needs membership of its project, or the ``manager`` or ``executive`` role.

Queries are raw SQL through ``worlds.rawsql.Sql`` (the hot path of every episode); a ticket is read as the
``_T`` column tuple below and shown with ``_summary``.
"""

from __future__ import annotations

from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.errors import Forbidden, IllegalTransition, InvalidArgument, NotFound
from worlds.rawsql import Sql, day, iso, like_pattern
from worlds.workflow import (
    INITIAL_STATUS,
    LINK_KINDS,
    PRIORITIES,
    STATUSES,
    TERMINAL_STATUSES,
    TICKET_TYPES,
    TRANSITIONS,
)

STORY_POINTS: tuple[int, ...] = (0, 1, 2, 3, 5, 8, 13, 21)
_COLS = (
    "t.id, t.key, t.title, t.type, t.status, t.priority, t.assignee_id, t.updated_at, t.project_id, t.description,"
    " t.reporter_id, t.sprint_id, t.story_points, t.created_at, t.resolved_at, a.username"
)
_FROM = "FROM tickets t LEFT JOIN employees a ON a.id = t.assignee_id"
# Positions in a ticket row.
ID, KEY, TITLE, TYPE, STATUS, PRIORITY, ASSIGNEE_ID, UPDATED, PROJECT_ID, DESCRIPTION = range(10)
REPORTER_ID, SPRINT_ID, POINTS, CREATED, RESOLVED, ASSIGNEE = range(10, 16)
_POS = {
    "title": TITLE,
    "type": TYPE,
    "status": STATUS,
    "priority": PRIORITY,
    "updated_at": UPDATED,
    "description": DESCRIPTION,
    "sprint_id": SPRINT_ID,
    "story_points": POINTS,
    "resolved_at": RESOLVED,
}


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidArgument(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _project(sql: Sql, key: str) -> tuple[int, str]:
    """(id, key) of a project."""
    row = sql.one("SELECT id, key FROM projects WHERE key = ?", (key.upper(),))
    if row is None:
        raise NotFound(f"expected a project key such as ENG; found no project {key!r}")
    return row[0], row[1]


def _ticket(sql: Sql, key: str) -> Any:
    row = sql.one(f"SELECT {_COLS} {_FROM} WHERE t.key = ?", (key.upper(),))
    if row is None:
        raise NotFound(f"expected a ticket key such as ENG-12; found no ticket {key!r}")
    return row


def _employee(sql: Sql, username: str) -> tuple[int, str, bool]:
    """(id, username, active) of an employee."""
    row = sql.one("SELECT id, username, active FROM employees WHERE username = ?", (username.lstrip("@"),))
    if row is None:
        raise NotFound(f"expected a username such as jane.doe; found no employee {username!r}")
    return row[0], row[1], bool(row[2])


def _title(title: str) -> str:
    if not title.strip() or len(title.strip()) > 300:
        raise InvalidArgument(f"title must be 1-300 characters (after trimming); got {len(title.strip())}")
    return title.strip()


def _assignable(sql: Sql, project_id: int, project_key: str, username: str) -> tuple[int, str]:
    """(id, username) of an active member of the project: only they can carry its tickets."""
    emp_id, name, active = _employee(sql, username)
    if not active:
        raise InvalidArgument(f"expected an active employee to assign; @{name} has left the company")
    if not _is_member(sql, project_id, emp_id):
        raise InvalidArgument(
            f"expected a member of project {project_key} to assign; @{name} is not one (ask its lead to add them)"
        )
    return emp_id, name


def _is_member(sql: Sql, project_id: int, employee_id: int) -> bool:
    return (
        sql.one("SELECT 1 FROM project_members WHERE project_id = ? AND employee_id = ?", (project_id, employee_id))
        is not None
    )


def _may_write(ctx: ToolContext, sql: Sql, project_id: int) -> None:
    if ctx.actor.has_role("manager", "executive") or _is_member(sql, project_id, ctx.actor.employee_id):
        return
    key = sql.scalar("SELECT key FROM projects WHERE id = ?", (project_id,))
    raise Forbidden(f"@{ctx.actor.username} is not a member of project {key} and may not change its tickets")


def _summary(t: Any) -> dict[str, Any]:
    return {
        "key": t[KEY],
        "title": t[TITLE],
        "type": t[TYPE],
        "status": t[STATUS],
        "priority": t[PRIORITY],
        "assignee": t[ASSIGNEE],
        "updated_at": iso(t[UPDATED]),
    }


def search(
    ctx: ToolContext,
    project: str | None,
    status: str | None,
    assignee: str | None,
    priority: str | None,
    label: str | None,
    text: str | None,
    limit: int,
    offset: int,
) -> dict[str, Any]:
    """Tickets matching every given filter, by project key then number."""
    if not 1 <= limit <= 100 or offset < 0:
        raise InvalidArgument(f"limit must be 1-100 and offset >= 0; got limit={limit}, offset={offset}")
    sql = Sql.of(ctx.session)
    where: list[str] = []
    params: list[Any] = []
    if project:
        where.append("t.project_id = ?")
        params.append(_project(sql, project)[0])
    if status:
        where.append("t.status = ?")
        params.append(_choice("status", status, STATUSES))
    if priority:
        where.append("t.priority = ?")
        params.append(_choice("priority", priority, PRIORITIES))
    if assignee is not None:
        if assignee == "":
            where.append("t.assignee_id IS NULL")
        else:
            where.append("t.assignee_id = ?")
            params.append(_employee(sql, assignee)[0])
    if label:
        where.append("t.id IN (SELECT ticket_id FROM ticket_labels WHERE label = ?)")
        params.append(label)
    if text:
        where.append("(lower(t.title) LIKE ? ESCAPE '\\' OR lower(t.description) LIKE ? ESCAPE '\\')")
        needle = like_pattern(text.lower())
        params += [needle, needle]
    cond = f"WHERE {' AND '.join(where)}" if where else ""
    # cond is built from the constant fragments above; every value is a bound parameter.
    total = sql.scalar(f"SELECT count(*) FROM tickets t {cond}", params) or 0  # noqa: S608
    rows = sql.all(
        f"SELECT {_COLS} {_FROM} JOIN projects p ON p.id = t.project_id {cond} "  # noqa: S608
        "ORDER BY p.key, t.number LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return {"total": total, "tickets": [_summary(t) for t in rows]}


def get(ctx: ToolContext, key: str) -> dict[str, Any]:
    """One ticket with labels, links, comments and status history."""
    sql = Sql.of(ctx.session)
    t = _ticket(sql, key)
    tid = t[ID]
    comments = sql.all(
        "SELECT c.id, e.username, c.body, c.created_at FROM ticket_comments c JOIN employees e ON e.id = c.author_id"
        " WHERE c.ticket_id = ? ORDER BY c.created_at, c.id",
        (tid,),
    )
    history = sql.all(
        "SELECT h.from_status, h.to_status, e.username, h.changed_at FROM ticket_status_changes h"
        " JOIN employees e ON e.id = h.actor_id WHERE h.ticket_id = ? ORDER BY h.id",
        (tid,),
    )
    links = sql.all(
        "SELECT l.kind, o.key, l.source_id = ? FROM ticket_links l"
        " JOIN tickets o ON o.id = CASE WHEN l.source_id = ? THEN l.target_id ELSE l.source_id END"
        " WHERE l.source_id = ? OR l.target_id = ? ORDER BY l.source_id <> ?, l.id",
        (tid, tid, tid, tid, tid),
    )
    return {
        **_summary(t),
        "description": t[DESCRIPTION],
        "reporter": sql.scalar("SELECT username FROM employees WHERE id = ?", (t[REPORTER_ID],)),
        "sprint": sql.scalar("SELECT name FROM sprints WHERE id = ?", (t[SPRINT_ID],)) if t[SPRINT_ID] else None,
        "story_points": t[POINTS],
        "created_at": iso(t[CREATED]),
        "resolved_at": iso(t[RESOLVED]),
        "labels": sql.column("SELECT label FROM ticket_labels WHERE ticket_id = ? ORDER BY label", (tid,)),
        "links": [{"kind": k if outward else f"{k} (inward)", "key": other} for k, other, outward in links],
        "comments": [{"id": i, "author": a, "body": b, "at": iso(at)} for i, a, b, at in comments],
        "history": [{"from": f, "to": to, "by": by, "at": iso(at)} for f, to, by, at in history],
    }


def create(
    ctx: ToolContext,
    project: str,
    title: str,
    description: str,
    type: str,
    priority: str,
    assignee: str | None,
    labels: str,
) -> dict[str, Any]:
    """File a new ticket in ``project`` (status backlog) and return it; ``labels`` is comma-separated."""
    sql = Sql.of(ctx.session)
    pid, pkey = _project(sql, project)
    _may_write(ctx, sql, pid)
    # Validate everything before the first mutation, so a refused call leaves the world untouched.
    title = _title(title)
    _choice("type", type, TICKET_TYPES)
    _choice("priority", priority, PRIORITIES)
    clean = sorted({lb.strip() for lb in labels.split(",") if lb.strip()})
    for label in clean:
        if len(label) > 50:
            raise InvalidArgument(f"labels must be at most 50 characters; got {label[:20]!r}... ({len(label)})")
    assignee_id = _assignable(sql, pid, pkey, assignee)[0] if assignee else None
    now = ctx.clock.now()
    number = sql.scalar("SELECT next_ticket_number FROM projects WHERE id = ?", (pid,))
    sql.update("projects", pid, {"next_ticket_number": (number, number + 1)})
    key = f"{pkey}-{number}"
    tid = sql.insert(
        "tickets",
        {
            "key": key,
            "project_id": pid,
            "number": number,
            "type": type,
            "title": title,
            "description": description,
            "status": INITIAL_STATUS,
            "priority": priority,
            "assignee_id": assignee_id,
            "reporter_id": ctx.actor.employee_id,
            "sprint_id": None,
            "story_points": None,
            "created_at": now,
            "updated_at": now,
            "resolved_at": None,
        },
    )
    _status_change(ctx, sql, tid, None, INITIAL_STATUS)
    for label in clean:
        sql.insert("ticket_labels", {"ticket_id": tid, "label": label})
    return get(ctx, key)


def _status_change(ctx: ToolContext, sql: Sql, ticket_id: int, old: str | None, new: str) -> None:
    sql.insert(
        "ticket_status_changes",
        {
            "ticket_id": ticket_id,
            "from_status": old,
            "to_status": new,
            "actor_id": ctx.actor.employee_id,
            "changed_at": ctx.clock.now(),
        },
    )


def _touch(ctx: ToolContext, sql: Sql, t: Any, changes: dict[str, tuple[Any, Any]]) -> Any:
    """Apply ``changes`` to ticket row ``t``, bumping updated_at if anything changed; returns the row as it is now.

    The row is patched in Python rather than read again, except when the assignee (a joined name) changes.
    """
    changes = {col: on for col, on in changes.items() if on[0] != on[1]}
    if not changes:
        return t
    now = ctx.clock.now()
    changes["updated_at"] = (iso(t[UPDATED]), now)
    sql.update("tickets", t[ID], changes)
    if "assignee_id" in changes:
        return _ticket(sql, t[KEY])
    row = list(t)
    for col, (_, new) in changes.items():
        row[_POS[col]] = new
    return row


def update(
    ctx: ToolContext,
    key: str,
    title: str | None,
    description: str | None,
    priority: str | None,
    story_points: int | None,
    type: str | None,
) -> dict[str, Any]:
    """Change the given fields of a ticket (omitted ones stay)."""
    sql = Sql.of(ctx.session)
    t = _ticket(sql, key)
    _may_write(ctx, sql, t[PROJECT_ID])
    # Validate everything before the first mutation, so a refused call leaves the world untouched.
    if title is not None:
        title = _title(title)
    if priority is not None:
        _choice("priority", priority, PRIORITIES)
    if type is not None:
        _choice("type", type, TICKET_TYPES)
    if story_points is not None and story_points not in STORY_POINTS:
        raise InvalidArgument(f"story_points must be one of {', '.join(map(str, STORY_POINTS))}; got {story_points}")
    changes = {
        col: (t[pos], value)
        for col, pos, value in (
            ("title", TITLE, title),
            ("description", DESCRIPTION, description),
            ("priority", PRIORITY, priority),
            ("type", TYPE, type),
            ("story_points", POINTS, story_points),
        )
        if value is not None
    }
    return _summary(_touch(ctx, sql, t, changes))


def transition(ctx: ToolContext, key: str, status: str) -> dict[str, Any]:
    """Move a ticket to ``status`` if the workflow allows it."""
    sql = Sql.of(ctx.session)
    t = _ticket(sql, key)
    _may_write(ctx, sql, t[PROJECT_ID])
    _choice("status", status, STATUSES)
    allowed = TRANSITIONS[t[STATUS]]
    if status not in allowed:
        raise IllegalTransition(f"{t[KEY]} cannot go from {t[STATUS]} to {status}; allowed next: {', '.join(allowed)}")
    _status_change(ctx, sql, t[ID], t[STATUS], status)
    resolved = ctx.clock.now() if status in TERMINAL_STATUSES else None
    return _summary(_touch(ctx, sql, t, {"status": (t[STATUS], status), "resolved_at": (iso(t[RESOLVED]), resolved)}))


def comment(ctx: ToolContext, key: str, body: str) -> dict[str, Any]:
    """Add a comment (any employee may)."""
    sql = Sql.of(ctx.session)
    t = _ticket(sql, key)
    if not body.strip():
        raise InvalidArgument("comment body must not be empty")
    now = ctx.clock.now()
    cid = sql.insert(
        "ticket_comments", {"ticket_id": t[ID], "author_id": ctx.actor.employee_id, "body": body, "created_at": now}
    )
    return {"key": t[KEY], "comment_id": cid, "author": ctx.actor.username, "at": now.isoformat()}


def assign(ctx: ToolContext, key: str, username: str) -> dict[str, Any]:
    """Assign to a project member, or unassign with an empty username."""
    sql = Sql.of(ctx.session)
    t = _ticket(sql, key)
    _may_write(ctx, sql, t[PROJECT_ID])
    if username == "":
        new_id = None
    else:
        pkey = sql.scalar("SELECT key FROM projects WHERE id = ?", (t[PROJECT_ID],))
        new_id = _assignable(sql, t[PROJECT_ID], pkey, username)[0]
    return _summary(_touch(ctx, sql, t, {"assignee_id": (t[ASSIGNEE_ID], new_id)}))


def link(ctx: ToolContext, key: str, other_key: str, kind: str) -> dict[str, Any]:
    """Link ``key`` to ``other_key`` with ``kind``."""
    sql = Sql.of(ctx.session)
    t, other = _ticket(sql, key), _ticket(sql, other_key)
    _may_write(ctx, sql, t[PROJECT_ID])
    _choice("kind", kind, LINK_KINDS)
    if t[ID] == other[ID]:
        raise InvalidArgument("a ticket cannot be linked to itself")
    exists = sql.one(
        "SELECT 1 FROM ticket_links WHERE source_id = ? AND target_id = ? AND kind = ?", (t[ID], other[ID], kind)
    )
    if exists is None:
        sql.insert(
            "ticket_links", {"source_id": t[ID], "target_id": other[ID], "kind": kind, "created_at": ctx.clock.now()}
        )
    return {"key": t[KEY], "kind": kind, "target": other[KEY]}


def set_sprint(ctx: ToolContext, key: str, sprint: str) -> dict[str, Any]:
    """Put a ticket in a sprint of its project, or take it out with an empty name."""
    sql = Sql.of(ctx.session)
    t = _ticket(sql, key)
    _may_write(ctx, sql, t[PROJECT_ID])
    sid = None
    if sprint != "":
        sid = sql.scalar("SELECT id FROM sprints WHERE project_id = ? AND name = ?", (t[PROJECT_ID], sprint))
        if sid is None:
            pkey = sql.scalar("SELECT key FROM projects WHERE id = ?", (t[PROJECT_ID],))
            raise NotFound(
                f"expected a sprint of project {pkey} (see tickets_list_sprints); found none named {sprint!r}"
            )
    _touch(ctx, sql, t, {"sprint_id": (t[SPRINT_ID], sid)})
    return {"key": t[KEY], "sprint": sprint or None}


def list_sprints(ctx: ToolContext, project: str) -> dict[str, Any]:
    """The sprints of a project, oldest first."""
    sql = Sql.of(ctx.session)
    pid, pkey = _project(sql, project)
    rows = sql.all(
        "SELECT name, state, start_date, end_date FROM sprints WHERE project_id = ? ORDER BY start_date, id", (pid,)
    )
    return {
        "project": pkey,
        "sprints": [{"name": n, "state": s, "start": day(a), "end": day(b)} for n, s, a, b in rows],
    }

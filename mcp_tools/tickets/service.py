"""Ticket operations acting as an Actor.

Access rule: every employee can read every ticket and comment on it; changing a ticket (create, edit,
transition, assign, link, sprint) needs membership of its project, or the ``manager`` or ``executive`` role.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, or_, select

from mcp_tools.base import ToolContext
from mcp_tools.errors import Forbidden, IllegalTransition, InvalidArgument, NotFound
from worlds.schema import (
    Employee,
    Project,
    ProjectMember,
    Sprint,
    Ticket,
    TicketComment,
    TicketLabel,
    TicketLink,
    TicketStatusChange,
)
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


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidArgument(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _project(ctx: ToolContext, key: str) -> Project:
    project = ctx.session.scalar(select(Project).where(Project.key == key.upper()))
    if project is None:
        raise NotFound(f"expected a project key such as ENG; found no project {key!r}")
    return project


def _ticket(ctx: ToolContext, key: str) -> Ticket:
    ticket = ctx.session.scalar(select(Ticket).where(Ticket.key == key.upper()))
    if ticket is None:
        raise NotFound(f"expected a ticket key such as ENG-12; found no ticket {key!r}")
    return ticket


def _employee(ctx: ToolContext, username: str) -> Employee:
    emp = ctx.session.scalar(select(Employee).where(Employee.username == username.lstrip("@")))
    if emp is None:
        raise NotFound(f"expected a username such as jane.doe; found no employee {username!r}")
    return emp


def _title(title: str) -> str:
    if not title.strip() or len(title.strip()) > 300:
        raise InvalidArgument(f"title must be 1-300 characters (after trimming); got {len(title.strip())}")
    return title.strip()


def _assignable(ctx: ToolContext, project: Project, username: str) -> Employee:
    """An active member of ``project``: only they can carry its tickets."""
    emp = _employee(ctx, username)
    if not emp.active:
        raise InvalidArgument(f"expected an active employee to assign; @{emp.username} has left the company")
    if not _is_member(ctx, project.id, emp.id):
        raise InvalidArgument(
            f"expected a member of project {project.key} to assign; @{emp.username} is not one "
            "(ask its lead to add them)"
        )
    return emp


def _is_member(ctx: ToolContext, project_id: int, employee_id: int) -> bool:
    return (
        ctx.session.scalar(
            select(ProjectMember.id).where(
                ProjectMember.project_id == project_id, ProjectMember.employee_id == employee_id
            )
        )
        is not None
    )


def _may_write(ctx: ToolContext, project: Project) -> None:
    if ctx.actor.has_role("manager", "executive") or _is_member(ctx, project.id, ctx.actor.employee_id):
        return
    raise Forbidden(f"@{ctx.actor.username} is not a member of project {project.key} and may not change its tickets")


def _usernames(ctx: ToolContext, ids: set[int | None]) -> dict[int, str]:
    wanted = {i for i in ids if i is not None}
    if not wanted:
        return {}
    return dict(ctx.session.execute(select(Employee.id, Employee.username).where(Employee.id.in_(wanted))).all())


def _summary(t: Ticket, names: dict[int, str]) -> dict[str, Any]:
    return {
        "key": t.key,
        "title": t.title,
        "type": t.type,
        "status": t.status,
        "priority": t.priority,
        "assignee": names.get(t.assignee_id) if t.assignee_id else None,
        "updated_at": t.updated_at.isoformat(),
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
    stmt: Select[Any] = select(Ticket).join(Project, Project.id == Ticket.project_id)
    if project:
        stmt = stmt.where(Ticket.project_id == _project(ctx, project).id)
    if status:
        stmt = stmt.where(Ticket.status == _choice("status", status, STATUSES))
    if priority:
        stmt = stmt.where(Ticket.priority == _choice("priority", priority, PRIORITIES))
    if assignee is not None:
        stmt = stmt.where(
            Ticket.assignee_id.is_(None) if assignee == "" else Ticket.assignee_id == _employee(ctx, assignee).id
        )
    if label:
        stmt = stmt.where(Ticket.id.in_(select(TicketLabel.ticket_id).where(TicketLabel.label == label)))
    if text:
        needle = text.lower()  # contains(autoescape) so % and _ in the agent's text match literally
        stmt = stmt.where(
            or_(
                func.lower(Ticket.title).contains(needle, autoescape=True),
                func.lower(Ticket.description).contains(needle, autoescape=True),
            )
        )
    total = ctx.session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    rows = ctx.session.scalars(stmt.order_by(Project.key, Ticket.number).limit(limit).offset(offset)).all()
    names = _usernames(ctx, {t.assignee_id for t in rows})
    return {"total": total, "tickets": [_summary(t, names) for t in rows]}


def get(ctx: ToolContext, key: str) -> dict[str, Any]:
    """One ticket with labels, links, comments and status history."""
    t = _ticket(ctx, key)
    s = ctx.session
    comments = s.scalars(
        select(TicketComment)
        .where(TicketComment.ticket_id == t.id)
        .order_by(TicketComment.created_at, TicketComment.id)
    ).all()
    history = s.scalars(
        select(TicketStatusChange).where(TicketStatusChange.ticket_id == t.id).order_by(TicketStatusChange.id)
    ).all()
    names = _usernames(
        ctx, {t.assignee_id, t.reporter_id, *(c.author_id for c in comments), *(h.actor_id for h in history)}
    )
    out = s.execute(
        select(TicketLink.kind, Ticket.key)
        .join(Ticket, Ticket.id == TicketLink.target_id)
        .where(TicketLink.source_id == t.id)
        .order_by(TicketLink.id)
    ).all()
    inc = s.execute(
        select(TicketLink.kind, Ticket.key)
        .join(Ticket, Ticket.id == TicketLink.source_id)
        .where(TicketLink.target_id == t.id)
        .order_by(TicketLink.id)
    ).all()
    sprint = s.scalar(select(Sprint.name).where(Sprint.id == t.sprint_id)) if t.sprint_id else None
    return {
        **_summary(t, names),
        "description": t.description,
        "reporter": names.get(t.reporter_id),
        "sprint": sprint,
        "story_points": t.story_points,
        "created_at": t.created_at.isoformat(),
        "resolved_at": t.resolved_at.isoformat() if t.resolved_at else None,
        "labels": list(
            s.scalars(select(TicketLabel.label).where(TicketLabel.ticket_id == t.id).order_by(TicketLabel.label))
        ),
        "links": [{"kind": k, "key": key_} for k, key_ in out]
        + [{"kind": f"{k} (inward)", "key": key_} for k, key_ in inc],
        "comments": [
            {"id": c.id, "author": names.get(c.author_id), "body": c.body, "at": c.created_at.isoformat()}
            for c in comments
        ],
        "history": [
            {
                "from": h.from_status,
                "to": h.to_status,
                "by": names.get(h.actor_id),
                "at": h.changed_at.isoformat(),
            }
            for h in history
        ],
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
    p = _project(ctx, project)
    _may_write(ctx, p)
    # Validate everything before the first mutation, so a refused call leaves the session untouched.
    title = _title(title)
    _choice("type", type, TICKET_TYPES)
    _choice("priority", priority, PRIORITIES)
    clean = sorted({lb.strip() for lb in labels.split(",") if lb.strip()})
    for label in clean:
        if len(label) > 50:
            raise InvalidArgument(f"labels must be at most 50 characters; got {label[:20]!r}... ({len(label)})")
    assignee_id = _assignable(ctx, p, assignee).id if assignee else None
    now = ctx.clock.now()
    number = p.next_ticket_number
    p.next_ticket_number = number + 1
    t = Ticket(
        key=f"{p.key}-{number}",
        project_id=p.id,
        number=number,
        type=type,
        title=title,
        description=description,
        status=INITIAL_STATUS,
        priority=priority,
        assignee_id=assignee_id,
        reporter_id=ctx.actor.employee_id,
        sprint_id=None,
        story_points=None,
        created_at=now,
        updated_at=now,
        resolved_at=None,
    )
    ctx.session.add(t)
    ctx.session.flush()
    ctx.session.add(
        TicketStatusChange(
            ticket_id=t.id,
            from_status=None,
            to_status=INITIAL_STATUS,
            actor_id=ctx.actor.employee_id,
            changed_at=now,
        )
    )
    for label in clean:
        ctx.session.add(TicketLabel(ticket_id=t.id, label=label))
    ctx.session.flush()
    return get(ctx, t.key)


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
    t = _ticket(ctx, key)
    _may_write(ctx, ctx.session.get_one(Project, t.project_id))
    # Validate everything before the first mutation, so a refused call leaves the session untouched.
    if title is not None:
        title = _title(title)
    if priority is not None:
        _choice("priority", priority, PRIORITIES)
    if type is not None:
        _choice("type", type, TICKET_TYPES)
    if story_points is not None and story_points not in STORY_POINTS:
        raise InvalidArgument(f"story_points must be one of {', '.join(map(str, STORY_POINTS))}; got {story_points}")
    for attr, value in (
        ("title", title),
        ("description", description),
        ("priority", priority),
        ("type", type),
        ("story_points", story_points),
    ):
        if value is not None and getattr(t, attr) != value:
            setattr(t, attr, value)
    if ctx.session.is_modified(t):
        t.updated_at = ctx.clock.now()
    ctx.session.flush()
    return _summary(t, _usernames(ctx, {t.assignee_id}))


def transition(ctx: ToolContext, key: str, status: str) -> dict[str, Any]:
    """Move a ticket to ``status`` if the workflow allows it."""
    t = _ticket(ctx, key)
    _may_write(ctx, ctx.session.get_one(Project, t.project_id))
    _choice("status", status, STATUSES)
    allowed = TRANSITIONS[t.status]
    if status not in allowed:
        raise IllegalTransition(f"{t.key} cannot go from {t.status} to {status}; allowed next: {', '.join(allowed)}")
    now = ctx.clock.now()
    ctx.session.add(
        TicketStatusChange(
            ticket_id=t.id,
            from_status=t.status,
            to_status=status,
            actor_id=ctx.actor.employee_id,
            changed_at=now,
        )
    )
    t.status = status
    t.resolved_at = now if status in TERMINAL_STATUSES else None
    t.updated_at = now
    ctx.session.flush()
    return _summary(t, _usernames(ctx, {t.assignee_id}))


def comment(ctx: ToolContext, key: str, body: str) -> dict[str, Any]:
    """Add a comment (any employee may)."""
    t = _ticket(ctx, key)
    if not body.strip():
        raise InvalidArgument("comment body must not be empty")
    c = TicketComment(ticket_id=t.id, author_id=ctx.actor.employee_id, body=body, created_at=ctx.clock.now())
    ctx.session.add(c)
    ctx.session.flush()
    return {"key": t.key, "comment_id": c.id, "author": ctx.actor.username, "at": c.created_at.isoformat()}


def assign(ctx: ToolContext, key: str, username: str) -> dict[str, Any]:
    """Assign to a project member, or unassign with an empty username."""
    t = _ticket(ctx, key)
    p = ctx.session.get_one(Project, t.project_id)
    _may_write(ctx, p)
    if username == "":
        if t.assignee_id is not None:
            t.assignee_id = None
    else:
        emp_id = _assignable(ctx, p, username).id
        if t.assignee_id != emp_id:
            t.assignee_id = emp_id
    if ctx.session.is_modified(t):
        t.updated_at = ctx.clock.now()
    ctx.session.flush()
    return _summary(t, _usernames(ctx, {t.assignee_id}))


def link(ctx: ToolContext, key: str, other_key: str, kind: str) -> dict[str, Any]:
    """Link ``key`` to ``other_key`` with ``kind``."""
    t, other = _ticket(ctx, key), _ticket(ctx, other_key)
    _may_write(ctx, ctx.session.get_one(Project, t.project_id))
    _choice("kind", kind, LINK_KINDS)
    if t.id == other.id:
        raise InvalidArgument("a ticket cannot be linked to itself")
    exists = ctx.session.scalar(
        select(TicketLink.id).where(
            TicketLink.source_id == t.id, TicketLink.target_id == other.id, TicketLink.kind == kind
        )
    )
    if exists is None:
        ctx.session.add(TicketLink(source_id=t.id, target_id=other.id, kind=kind, created_at=ctx.clock.now()))
        ctx.session.flush()
    return {"key": t.key, "kind": kind, "target": other.key}


def set_sprint(ctx: ToolContext, key: str, sprint: str) -> dict[str, Any]:
    """Put a ticket in a sprint of its project, or take it out with an empty name."""
    t = _ticket(ctx, key)
    p = ctx.session.get_one(Project, t.project_id)
    _may_write(ctx, p)
    if sprint == "":
        t.sprint_id = None
    else:
        sid = ctx.session.scalar(select(Sprint.id).where(Sprint.project_id == p.id, Sprint.name == sprint))
        if sid is None:
            raise NotFound(
                f"expected a sprint of project {p.key} (see tickets_list_sprints); found none named {sprint!r}"
            )
        t.sprint_id = sid
    if ctx.session.is_modified(t):
        t.updated_at = ctx.clock.now()
    ctx.session.flush()
    return {"key": t.key, "sprint": sprint or None}


def list_sprints(ctx: ToolContext, project: str) -> dict[str, Any]:
    """The sprints of a project, oldest first."""
    p = _project(ctx, project)
    rows = ctx.session.scalars(
        select(Sprint).where(Sprint.project_id == p.id).order_by(Sprint.start_date, Sprint.id)
    ).all()
    return {
        "project": p.key,
        "sprints": [
            {
                "name": s.name,
                "state": s.state,
                "start": s.start_date.isoformat(),
                "end": s.end_date.isoformat(),
            }
            for s in rows
        ],
    }

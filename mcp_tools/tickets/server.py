"""The tickets tools: thin, documented wrappers over ``mcp_tools.tickets.service``."""

from __future__ import annotations

from typing import Any

from mcp_tools.base import READ, WRITE, ToolSet, current_context
from mcp_tools.tickets import service

tickets = ToolSet("tickets")


@tickets.tool(READ)
def search(
    project: str | None = None,
    status: str | None = None,
    assignee: str | None = None,
    priority: str | None = None,
    label: str | None = None,
    text: str | None = None,
    limit: int = 30,
    offset: int = 0,
) -> dict[str, Any]:
    """Search tickets; every filter you give must match.

    Args:
        project: Project key such as ENG.
        status: One of backlog, todo, in_progress, in_review, blocked, done, wont_do.
        assignee: Username of the assignee; an empty string finds unassigned tickets.
        priority: One of critical, high, medium, low, none.
        label: A label the ticket carries.
        text: Case-insensitive text to find in the title or description.
        limit: How many tickets to return (1-100).
        offset: How many matching tickets to skip (for paging).
    """
    return service.search(current_context(), project, status, assignee, priority, label, text, limit, offset)


@tickets.tool(READ)
def get(key: str) -> dict[str, Any]:
    """Read one ticket with its description, labels, links, comments and status history.

    Args:
        key: Ticket key such as ENG-12.
    """
    return service.get(current_context(), key)


@tickets.tool(WRITE)
def create(
    project: str,
    title: str,
    description: str = "",
    type: str = "task",
    priority: str = "medium",
    assignee: str | None = None,
    labels: str = "",
) -> dict[str, Any]:
    """Create a ticket in a project's backlog.

    Args:
        project: Project key such as ENG.
        title: Short summary (1-300 characters).
        description: Longer description.
        type: One of bug, task, story, incident, epic.
        priority: One of critical, high, medium, low, none.
        assignee: Username of a project member to assign.
        labels: Comma-separated labels to attach, such as "backend,urgent".
    """
    return service.create(current_context(), project, title, description, type, priority, assignee, labels)


@tickets.tool(WRITE)
def update(
    key: str,
    title: str | None = None,
    description: str | None = None,
    priority: str | None = None,
    story_points: int | None = None,
    type: str | None = None,
) -> dict[str, Any]:
    """Change fields of a ticket; fields you leave out stay as they are.

    Args:
        key: Ticket key such as ENG-12.
        title: New title.
        description: New description.
        priority: One of critical, high, medium, low, none.
        story_points: Estimate: 0, 1, 2, 3, 5, 8, 13 or 21.
        type: One of bug, task, story, incident, epic.
    """
    return service.update(current_context(), key, title, description, priority, story_points, type)


@tickets.tool(WRITE)
def transition(key: str, status: str) -> dict[str, Any]:
    """Move a ticket to a new status along the workflow (illegal moves are refused with the allowed ones).

    Args:
        key: Ticket key such as ENG-12.
        status: Target status: backlog, todo, in_progress, in_review, blocked, done or wont_do.
    """
    return service.transition(current_context(), key, status)


@tickets.tool(WRITE)
def comment(key: str, body: str) -> dict[str, Any]:
    """Add a comment to a ticket.

    Args:
        key: Ticket key such as ENG-12.
        body: The comment text.
    """
    return service.comment(current_context(), key, body)


@tickets.tool(WRITE)
def assign(key: str, username: str) -> dict[str, Any]:
    """Assign a ticket to a project member, or unassign it.

    Args:
        key: Ticket key such as ENG-12.
        username: Username of a project member; an empty string unassigns.
    """
    return service.assign(current_context(), key, username)


@tickets.tool(WRITE)
def link(key: str, other_key: str, kind: str = "relates_to") -> dict[str, Any]:
    """Link two tickets.

    Args:
        key: The ticket the link starts from.
        other_key: The ticket the link points to.
        kind: One of blocks, relates_to, duplicates.
    """
    return service.link(current_context(), key, other_key, kind)


@tickets.tool(WRITE)
def set_sprint(key: str, sprint: str) -> dict[str, Any]:
    """Put a ticket into a sprint of its project, or remove it from its sprint.

    Args:
        key: Ticket key such as ENG-12.
        sprint: Sprint name as listed by tickets_list_sprints; an empty string removes the ticket from its sprint.
    """
    return service.set_sprint(current_context(), key, sprint)


@tickets.tool(READ)
def list_sprints(project: str) -> dict[str, Any]:
    """List the sprints of a project, oldest first.

    Args:
        project: Project key such as ENG.
    """
    return service.list_sprints(current_context(), project)


EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "tickets_search": [{"project": "{project}", "limit": 5}, {"text": "the", "status": "backlog"}],
    "tickets_get": [{"key": "{ticket}"}],
    "tickets_create": [{"project": "{project}", "title": "Check app ticket", "labels": "a,b", "assignee": "{member}"}],
    "tickets_update": [{"key": "{ticket}", "priority": "high", "story_points": 3}],
    # Every status has a move to one of todo, in_progress or backlog, so one of these succeeds whatever the
    # history left the first ticket in.
    "tickets_transition": [
        {"key": "{backlog_ticket}", "status": "todo"},
        {"key": "{ticket}", "status": "todo"},
        {"key": "{ticket}", "status": "in_progress"},
        {"key": "{ticket}", "status": "backlog"},
    ],
    "tickets_comment": [{"key": "{ticket}", "body": "Looked into it."}],
    "tickets_assign": [{"key": "{ticket}", "username": "{member}"}, {"key": "{other_ticket}", "username": ""}],
    "tickets_link": [{"key": "{ticket}", "other_key": "{other_ticket}", "kind": "blocks"}],
    "tickets_set_sprint": [{"key": "{ticket}", "sprint": "{sprint}"}, {"key": "{ticket}", "sprint": ""}],
    "tickets_list_sprints": [{"project": "{project}"}],
}
"""Example calls for ``mcp_tools.check.check_app`` (placeholders are filled from the world)."""

"""The directory tools: thin, documented wrappers over ``mcp_tools.directory.service``."""

from __future__ import annotations

from typing import Any

from mcp_tools.base import READ, WRITE, ToolSet, current_context
from mcp_tools.directory import service

directory = ToolSet("directory")


@directory.tool(READ)
def search_people(
    text: str = "",
    department: str | None = None,
    team: str | None = None,
    location: str | None = None,
    include_inactive: bool = False,
    limit: int = 20,
    offset: int = 0,
) -> dict[str, Any]:
    """Find coworkers by name, username, title or email, optionally within a department, team or location.

    Args:
        text: Text to look for (case-insensitive); empty lists everyone.
        department: Only this department (name).
        team: Only this team (name).
        location: Only this office location.
        include_inactive: Include people who have left.
        limit: How many to return (1-100).
        offset: How many to skip (paging).
    """
    return service.search_people(current_context(), text, department, team, location, include_inactive, limit, offset)


@directory.tool(READ)
def get_profile(username: str) -> dict[str, Any]:
    """Read someone's profile; restricted fields (salary, performance, personal_contact) appear only if allowed.

    Args:
        username: Their username.
    """
    return service.get_profile(current_context(), username)


@directory.tool(READ)
def get_restricted(username: str, field: str) -> dict[str, Any]:
    """Read one restricted field of someone, if your role or an approved request allows it.

    Args:
        username: Their username.
        field: One of salary, performance, personal_contact.
    """
    return service.get_restricted(current_context(), username, field)


@directory.tool(READ)
def manager_chain(username: str) -> dict[str, Any]:
    """List someone's managers, nearest first, up to the CEO.

    Args:
        username: Their username.
    """
    return service.manager_chain(current_context(), username)


@directory.tool(READ)
def reports(username: str, all_levels: bool = False) -> dict[str, Any]:
    """List the people reporting to someone.

    Args:
        username: The manager's username.
        all_levels: Include indirect reports too.
    """
    return service.reports(current_context(), username, all_levels)


@directory.tool(READ)
def team_members(team: str) -> dict[str, Any]:
    """List the members of a team, its lead first.

    Args:
        team: Team name or slug.
    """
    return service.team_members(current_context(), team)


@directory.tool(READ)
def org_chart(department: str, depth: int = 3) -> dict[str, Any]:
    """Show a department's hierarchy from its head down.

    Args:
        department: Department name.
        depth: How many levels below the head (1-6).
    """
    return service.org_chart(current_context(), department, depth)


@directory.tool(WRITE)
def request_access(username: str, field: str, reason: str) -> dict[str, Any]:
    """Ask the data owner (their manager, or HR) to let you see one restricted field of someone.

    Args:
        username: Whose field.
        field: One of salary, performance, personal_contact.
        reason: Why you need it.
    """
    return service.request_access(current_context(), username, field, reason)


@directory.tool(READ)
def list_access_requests(role: str = "mine", status: str | None = None) -> dict[str, Any]:
    """List access requests you made, that wait for your decision, or that your direct reports made.

    Args:
        role: mine (you asked), to_me (you decide) or reports (your direct reports asked).
        status: Only pending, approved, denied or revoked ones.
    """
    return service.list_access_requests(current_context(), role, status)


@directory.tool(WRITE)
def decide_access_request(request_id: int, approve: bool) -> dict[str, Any]:
    """Approve (for seven days) or deny an access request addressed to you.

    Args:
        request_id: Id of the request.
        approve: True to approve, False to deny.
    """
    return service.decide_access_request(current_context(), request_id, approve)


@directory.tool(WRITE)
def revoke_access(request_id: int) -> dict[str, Any]:
    """Revoke an approved grant before it expires: as its data owner, the requester's manager, or HR.

    Args:
        request_id: Id of the approved request.
    """
    return service.revoke_access(current_context(), request_id)


EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "directory_search_people": [{"text": "a", "limit": 5}],
    "directory_get_profile": [{"username": "{coworker}"}, {"username": "{me}"}],
    "directory_get_restricted": [{"username": "{me}", "field": "salary"}],
    "directory_manager_chain": [{"username": "{coworker}"}],
    "directory_reports": [{"username": "{me}", "all_levels": True}],
    "directory_team_members": [{"team": "{team}"}],
    "directory_org_chart": [{"department": "{department}", "depth": 2}],
    "directory_request_access": [
        {"username": "{outsider}", "field": "performance", "reason": "Calibration review"},
        {"username": "{outsider}", "field": "personal_contact", "reason": "Offsite travel"},
    ],
    "directory_list_access_requests": [{}, {"role": "to_me", "status": "pending"}],
    "directory_decide_access_request": [{"request_id": "{request_to_me}", "approve": True}],
    "directory_revoke_access": [{"request_id": "{granted_by_me}"}],
}
"""Example calls for ``mcp_tools.check.check_app`` (placeholders are filled from the world)."""

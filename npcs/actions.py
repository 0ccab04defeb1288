"""Turns, plans and actions: the data an NPC turn consumes and produces.

Plans are pure data chosen by ``decide``; ``act`` runs each through an app service as the NPC's Actor and
records the outcome as an Action. Tool names are the agent's own (``chat_direct_message``), so an NPC's
trace reads like an agent's and graders can treat both alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.calendar import service as calendar
from mcp_tools.chat import service as chat
from mcp_tools.directory import service as directory
from mcp_tools.git import mr
from mcp_tools.mail import service as mail
from mcp_tools.tickets import service as tickets


@dataclass(frozen=True, order=True)
class Turn:
    """One NPC turn due at ``at``: ``reactive`` (something arrived) or ``proactive`` (its own initiative)."""

    at: datetime
    employee_id: int
    kind: str


@dataclass(frozen=True)
class Plan:
    """One service call an NPC decided to make, and why (``reaction``: answer, pushback, disruption, ...)."""

    tool: str
    args: dict[str, Any]
    reaction: str
    target: str
    text: str = ""
    intent: str | None = None
    fact: dict[str, Any] | None = None


@dataclass(frozen=True)
class Action:
    """What an NPC did: the plan, when, in which of its turns, and whether the service accepted it."""

    employee_id: int
    actor: str
    turn: int
    at: str
    tool: str
    target: str
    reaction: str
    text: str
    intent: str | None = None
    fact: dict[str, Any] | None = None
    ok: bool = True
    error: str | None = None
    result: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able record for traces (the service result is left out: it repeats the world)."""
        out = asdict(self)
        out.pop("result")
        return out


TOOLS: dict[str, Callable[[ToolContext, dict[str, Any]], dict[str, Any]]] = {
    "chat_direct_message": lambda c, a: chat.direct_message(c, a["username"], a["message"]),
    "chat_reply": lambda c, a: chat.reply(c, a["post_id"], a["message"]),
    "chat_post": lambda c, a: chat.post(c, a["channel"], a["message"]),
    "tickets_comment": lambda c, a: tickets.comment(c, a["key"], a["body"]),
    "tickets_transition": lambda c, a: tickets.transition(c, a["key"], a["status"]),
    "tickets_create": lambda c, a: tickets.create(
        c, a["project"], a["title"], a["description"], a["type"], a["priority"], a.get("assignee"), a.get("labels", "")
    ),
    "tickets_update": lambda c, a: tickets.update(
        c, a["key"], a.get("title"), a.get("description"), a.get("priority"), a.get("story_points"), a.get("type")
    ),
    "mail_reply": lambda c, a: mail.reply(c, a["message_id"], a["body"], "", False),
    "calendar_rsvp": lambda c, a: calendar.rsvp(c, a["event_id"], a["response"]),
    "git_mr_comment": lambda c, a: mr.mr_comment(c, a["mr_id"], a["body"]),
    "git_mr_review": lambda c, a: mr.mr_review_at(c, a["mr_id"], a["verdict"], a["body"], a["commit"]),
    "directory_decide_access_request": lambda c, a: directory.decide_access_request(c, a["request_id"], a["approve"]),
}
"""The services an NPC may call, by the agent-facing tool name (``git_mr_review`` at a known commit: an NPC
has no checkout, see ``mcp_tools.git.mr.mr_review_at``; there is deliberately no merge)."""

"""The company: every app's tools under its namespace (``chat_*``, ``mail_*``, ...), in-process and over MCP.

Adding an app means adding its ``ToolSet`` to ``company_toolsets``; the golden file
``tests/mcp_tools/golden/tool_surface.json`` then shows the new surface for review.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from mcp_tools.base import ToolContext, ToolSet, ToolSpec, build_server, current_context
from mcp_tools.calendar.server import calendar
from mcp_tools.chat.server import chat
from mcp_tools.directory.server import directory
from mcp_tools.docs.server import docs
from mcp_tools.git.server import git
from mcp_tools.mail.server import mail
from mcp_tools.sheets.server import sheets
from mcp_tools.shell.server import shell
from mcp_tools.tickets.server import tickets


def company_toolsets() -> list[ToolSet]:
    """The apps of the company, ordered by app name."""
    return sorted([calendar, chat, directory, docs, git, mail, sheets, shell, tickets], key=lambda ts: ts.app)


@cache
def company_specs() -> dict[str, ToolSpec]:
    """Every company tool by namespaced name, ordered by name (cached: the set is fixed at import)."""
    return {s.name: s for s in sorted((s for ts in company_toolsets() for s in ts.specs), key=lambda s: s.name)}


def build_company_server(context_provider: Callable[[], ToolContext] = current_context) -> Any:
    """The company MCP server (``fastmcp.FastMCP``) with every app's tools under their namespaced names.

    Args:
        context_provider: Resolves the episode of each call; the default reads ``use_context``.
    """
    return build_server("companysim", company_specs().values(), context_provider)

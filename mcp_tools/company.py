"""The company: every app's tools under its namespace (``chat_*``, ``mail_*``, ...), in-process and over MCP.

Apps are named by lazy entry points (``APPS``) and imported on first use, so an episode that uses two apps
never pays for the other seven (``app_specs``). Adding an app means adding its entry to ``APPS``; the golden
file ``tests/mcp_tools/golden/tool_surface.json`` then shows the new surface for review.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any

from mcp_tools.base import ToolContext, ToolSet, ToolSpec, build_server, current_context

APPS: dict[str, str] = {
    "calendar": "mcp_tools.calendar.server:calendar",
    "chat": "mcp_tools.chat.server:chat",
    "directory": "mcp_tools.directory.server:directory",
    "docs": "mcp_tools.docs.server:docs",
    "git": "mcp_tools.git.server:git",
    "mail": "mcp_tools.mail.server:mail",
    "sheets": "mcp_tools.sheets.server:sheets",
    "shell": "mcp_tools.shell.server:shell",
    "tickets": "mcp_tools.tickets.server:tickets",
}
"""Every app of the company by name, as ``module:attribute`` of its ``ToolSet`` (imported on first use)."""


@cache
def app_toolset(app: str) -> ToolSet:
    """The ``ToolSet`` of ``app`` (its module imported now if it was not).

    Raises:
        KeyError: no such app.
    """
    module, attr = APPS[app].split(":", 1)
    toolset = getattr(importlib.import_module(module), attr)
    assert isinstance(toolset, ToolSet) and toolset.app == app, APPS[app]
    return toolset


@cache
def app_specs(apps: tuple[str, ...]) -> dict[str, ToolSpec]:
    """The tools of ``apps`` by namespaced name, ordered by name (only those apps are imported)."""
    specs = (s for app in sorted(set(apps)) if app in APPS for s in app_toolset(app).specs)
    return {s.name: s for s in sorted(specs, key=lambda s: s.name)}


def company_toolsets() -> list[ToolSet]:
    """The apps of the company, ordered by app name."""
    return [app_toolset(app) for app in sorted(APPS)]


@cache
def company_specs() -> dict[str, ToolSpec]:
    """Every company tool by namespaced name, ordered by name (cached: the set is fixed at import)."""
    return app_specs(tuple(sorted(APPS)))


def build_company_server(context_provider: Callable[[], ToolContext] = current_context) -> Any:
    """The company MCP server (``fastmcp.FastMCP``) with every app's tools under their namespaced names.

    Args:
        context_provider: Resolves the episode of each call; the default reads ``use_context``.
    """
    return build_server("companysim", company_specs().values(), context_provider)

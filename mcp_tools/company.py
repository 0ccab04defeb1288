"""The company server: every app's tools under its namespace (``chat_*``, ``tickets_*``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from mcp_tools.base import ToolContext, ToolSet, ToolSpec, build_server, current_context
from mcp_tools.chat.server import chat
from mcp_tools.tickets.server import tickets


def company_toolsets() -> list[ToolSet]:
    """The apps of the company, by name."""
    return [chat, tickets]


@cache
def company_specs() -> dict[str, ToolSpec]:
    """Every tool by name."""
    return {s.name: s for ts in company_toolsets() for s in ts.specs}


def build_company_server(context_provider: Callable[[], ToolContext] = current_context) -> Any:
    """A FastMCP server with all company tools."""
    return build_server("companysim", list(company_specs().values()), context_provider)

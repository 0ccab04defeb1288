"""The company surface: golden tool list, and the MCP server as a real fastmcp client sees it."""

import asyncio
import json
import os
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from mcp_tools.base import READ, WRITE, ToolSet, build_server, openai_tools, use_context
from mcp_tools.company import build_company_server, company_specs, company_toolsets

GOLDEN = Path(__file__).parent / "golden" / "tool_surface.json"


def surface():
    return [
        {"name": s.name, "kind": s.kind, "description": s.description, "parameters": s.parameters}
        for s in company_specs().values()
    ]


def test_tool_surface__matches_golden():
    current = json.dumps(surface(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(current)
    assert GOLDEN.exists() and GOLDEN.read_text() == current, (
        "the company tool surface (names, kinds, descriptions, schemas) differs from "
        f"{GOLDEN.relative_to(Path.cwd()) if GOLDEN.is_relative_to(Path.cwd()) else GOLDEN}; review the change, then "
        "accept it with: UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/mcp_tools/test_company.py -k golden"
    )


def test_tool_surface__is_flat_documented_namespaced_and_sorted():
    specs = company_specs()
    assert list(specs) == sorted(specs)
    assert {ts.app for ts in company_toolsets()} == set(
        "calendar chat directory docs git mail sheets shell tickets".split()
    )
    for name, spec in specs.items():
        assert name == f"{spec.app}_{spec.fn.__name__}" and spec.kind in (READ, WRITE)
        assert spec.description and spec.parameters["type"] == "object"
        for prop in spec.parameters["properties"].values():
            assert prop["description"] and "anyOf" not in prop and "properties" not in prop
            assert set(prop) <= {"type", "description", "default", "items"}
    assert {n for n, s in specs.items() if s.app == "tickets"} == {
        f"tickets_{t}"
        for t in ("search", "get", "create", "update", "transition", "comment", "assign", "link", "set_sprint")
        + ("list_sprints",)
    }
    assert json.loads(json.dumps(openai_tools(specs.values()))) == openai_tools(specs.values())


def _run(coro, ctx=None):
    if ctx is None:
        return asyncio.run(coro)
    with use_context(ctx):
        return asyncio.run(coro)


def test_company_server__lists_the_exact_flat_schemas_with_read_write_tags():
    async def go():
        async with Client(build_company_server()) as client:
            return await client.list_tools()

    tools = {t.name: t for t in _run(go())}
    specs = company_specs()
    assert set(tools) == set(specs)
    for name, tool in tools.items():
        assert tool.input_schema == specs[name].parameters, name
        assert tool.description == specs[name].description
        assert tool.meta["fastmcp"]["tags"] == [specs[name].kind]
        assert tool.annotations.read_only_hint is (specs[name].kind == READ)


def test_company_server__calls_tools_and_returns_codes_for_refusals(app):
    server = build_company_server(lambda: app.ctx())

    async def go():
        async with Client(server) as client:
            got = await client.call_tool("tickets_get", {"key": "ENG-1"})
            assert got.structured_content["assignee"] == "dev.one"
            assert json.loads(got.content[0].text)["key"] == "ENG-1"
            with pytest.raises(ToolError, match=r"^not_found: expected a ticket key"):
                await client.call_tool("tickets_get", {"key": "NOPE-9"})
            with pytest.raises(ToolError, match=r"^invalid_argument: tickets_get: argument 'key' must be string"):
                await client.call_tool("tickets_get", {"key": 12})
            refused = await client.call_tool(
                "tickets_transition", {"key": "ENG-2", "status": "done"}, raise_on_error=False
            )
            assert refused.is_error and refused.content[0].text.startswith("illegal_transition: ")

    _run(go())
    assert app.call("tickets_get", key="ENG-2")["status"] == "backlog"


def test_company_server__resolves_the_context_per_call_from_use_context(app):
    async def go():
        async with Client(build_company_server()) as client:
            return await client.call_tool("tickets_comment", {"key": "ENG-1", "body": "hi"})

    assert _run(go(), app.ctx(app.outsider)).structured_content["author"] == "olaf.out"
    with pytest.raises(ToolError, match="^unavailable: "):
        _run(go())


def test_server__masks_unexpected_exceptions():
    ts = ToolSet("demo")

    @ts.tool(READ)
    def boom() -> dict:
        """Fail unexpectedly."""
        raise RuntimeError("internal detail /etc/secret")

    async def go():
        async with Client(build_server("demo", ts.specs, lambda: None)) as client:
            return await client.call_tool("demo_boom", {}, raise_on_error=False)

    result = _run(go())
    text = result.content[0].text
    assert result.is_error and "internal detail" not in text and "secret" not in text and "Traceback" not in text

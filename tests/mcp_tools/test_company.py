import asyncio
import json
import os
from pathlib import Path

import pytest

from mcp_tools.base import READ, WRITE, ToolSet, use_context
from mcp_tools.company import build_company_server, company_specs
from mcp_tools.errors import InvalidArgument

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
        "the tool surface changed; review the diff and rerun with UPDATE_GOLDEN=1 to accept it"
    )


def test_tool_surface__is_flat_documented_and_namespaced():
    specs = company_specs()
    assert len(specs) >= 19
    for name, spec in specs.items():
        assert name.startswith(("chat_", "tickets_")) and spec.kind in (READ, WRITE)
        assert spec.description
        for prop in spec.parameters["properties"].values():
            assert prop["description"] and "anyOf" not in prop and "properties" not in prop


def test_toolset__refuses_undocumented_or_nested_arguments():
    ts = ToolSet("x")
    with pytest.raises(TypeError, match="no Args: line"):

        @ts.tool(READ)
        def f(a: int) -> dict:
            """Nothing documented."""
            return {}

    with pytest.raises(TypeError, match="non-primitive"):

        @ts.tool(READ)
        def g(a: dict) -> dict:
            """Nested.

            Args:
                a: A dict.
            """
            return {}


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"key": 1},
        {"key": True},
        {"key": None},
        {"key": "X-1", "extra": 2},
        {"key": "a" * 20_001},
        {"key": "a\x00b"},
    ],
)
def test_validator__rejects_bad_arguments_naming_them(args):
    with pytest.raises(InvalidArgument):
        company_specs()["tickets_get"].validate(args)


def test_validator__fills_defaults_and_accepts_ints_for_floats():
    spec = company_specs()["tickets_search"]
    assert spec.validate({})["limit"] == 30
    with pytest.raises(InvalidArgument, match="must be integer"):
        spec.validate({"limit": 2.5})


def test_company_server__fastmcp_client_lists_calls_and_masks(app):
    from fastmcp import Client
    from fastmcp.exceptions import ToolError

    server = build_company_server(lambda: app.ctx())

    async def go():
        async with Client(server) as client:
            tools = await client.list_tools()
            assert {t.name for t in tools} == set(company_specs())
            got = await client.call_tool("tickets_search", {"limit": 1})
            assert got.structured_content["total"] > 0
            with pytest.raises(ToolError, match="^not_found: "):
                await client.call_tool("tickets_get", {"key": "NOPE-9"})

    with use_context(app.ctx()):
        asyncio.run(go())

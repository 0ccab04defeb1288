"""verifiers: companysim's tools as a ``verifiers`` Toolset, each call forwarded to one served episode's MCP.

verifiers (0.4.0, ``verifiers.v1``) serves a ``vf.Toolset`` to the agent harness as an MCP server, one per
rollout. ``CompanyToolset`` is that server for a companysim task: it starts an episode on ``companysim server``
(``POST /episodes``) and registers one tool per tool of the scenario (names, descriptions and flat parameters
from ``GET /{scenario}/tools``); each call goes to ``/episodes/{id}/mcp`` with the episode's bearer token, over
the ``mcp`` client verifiers pins (2.0.0; our own pins differ, so this runs in verifiers' virtualenv and imports
nothing from companysim). ``toolset.reward`` is the episode's reward once ``submit`` ended it.

    python3 -m venv /tmp/vf && /tmp/vf/bin/pip install verifiers==0.4.0
    companysim server --port 8000 &
    /tmp/vf/bin/python examples/verifiers_env.py --url http://127.0.0.1:8000

Without a model, the script lists the tools through verifiers' MCP server (in memory, as a harness would see
them) and plays a fixed script (a chat post, a refused lookup, submit), or ``--actions FILE`` (a JSON list of
``{"name", "arguments"}``). It prints one JSON line: tool count, errors, whether the episode ended, the reward.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
from typing import Any

import httpx
import httpx2
import verifiers.v1 as vf
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer

_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                          "object": dict}  # fmt: skip


class CompanyToolsetConfig(vf.ToolsetConfig):
    """Which server, scenario and world seed the rollout plays."""

    server_url: str = "http://127.0.0.1:8000"
    scenario: str = "triage-tickets-v0"
    seed: int = 0
    token: str | None = None  # the server's data-plane token, when it has one


class CompanyToolset(vf.Toolset[CompanyToolsetConfig, vf.State]):
    """One companysim episode's tools, served by verifiers to the harness."""

    TOOL_PREFIX = None  # the scenario's own tool names (``chat_post``, ``submit``...)

    def __init__(self, config: CompanyToolsetConfig) -> None:
        super().__init__(config)
        self.episode: dict[str, Any] | None = None
        self.reward: float | None = None
        self.done = False

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.config.token}"} if self.config.token else {}

    def specs(self) -> list[dict[str, Any]]:
        """The scenario's tools in ORS shape (name, description, input_schema)."""
        url = f"{self.config.server_url}/{self.config.scenario}/tools"
        return list(httpx.get(url, headers=self._headers(), timeout=30).json()["tools"])

    def register(self, mcp: MCPServer) -> None:
        """Add a forwarding tool per scenario tool (called by verifiers when it starts the server)."""
        for spec in self.specs():
            mcp.add_tool(self._forwarder(spec), name=spec["name"], description=spec["description"])

    def _forwarder(self, spec: dict[str, Any]) -> Any:
        schema = spec["input_schema"] or {}
        required = set(schema.get("required", []))
        params = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=_TYPES.get(str(prop.get("type")), Any),
                default=inspect.Parameter.empty if name in required else None,
            )
            for name, prop in schema.get("properties", {}).items()
        ]  # fmt: skip
        name = spec["name"]

        async def forward(**arguments: Any) -> str:
            return await self.call(name, {k: v for k, v in arguments.items() if v is not None})

        forward.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
        forward.__annotations__ = {p.name: p.annotation for p in params} | {"return": str}
        forward.__name__ = name
        return forward

    async def start(self) -> dict[str, Any]:
        """Start this rollout's episode (``POST /episodes``) unless it has one."""
        if self.episode is None:
            body = {"scenario": self.config.scenario, "seed": self.config.seed}
            async with httpx.AsyncClient(timeout=60, headers=self._headers()) as http:
                answer = await http.post(f"{self.config.server_url}/episodes", json=body)
            answer.raise_for_status()
            self.episode = answer.json()
        return self.episode

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """One tool call on the episode's MCP URL; a refused call raises with the server's text."""
        episode = await self.start()
        auth = {"Authorization": f"Bearer {episode['token']}"}
        async with httpx2.AsyncClient(headers=auth, timeout=60) as http:
            async with Client(
                streamable_http_client(self.config.server_url + episode["mcp_path"], http_client=http)
            ) as client:
                result = await client.call_tool(name, arguments)
        meta = result.meta or {}
        if "reward" in meta:
            self.done, self.reward = True, float(meta["reward"])
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            raise RuntimeError(text)
        return text


async def play(config: CompanyToolsetConfig, actions: list[dict[str, Any]] | None) -> dict[str, Any]:
    """List the tools as verifiers serves them, then play ``actions`` through that server."""
    toolset = CompanyToolset(config)
    server = MCPServer("companysim")
    toolset.register(server)
    if actions is None:
        actions = [
            {"name": "chat_post", "arguments": {"channel": "town-square", "message": "looking into it"}},
            {"name": "tickets_get", "arguments": {"key": "NOPE-404"}},
            {"name": "submit", "arguments": {"summary": "done"}},
        ]
    errors = []
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
        for action in actions:
            result = await client.call_tool(action["name"], action["arguments"])
            if result.is_error:
                errors.append(action["name"])
            if toolset.done:
                break
    episode = toolset.episode or {}
    return {
        "tools": sorted(t.name for t in tools), "errors": errors, "done": toolset.done, "reward": toolset.reward,
        "episode": episode.get("id"),
    }  # fmt: skip


def main() -> None:
    """Parse the arguments, play, print the result as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--scenario", default="triage-tickets-v0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--actions", help="a JSON file: a list of {name, arguments}")
    args = parser.parse_args()
    actions = None
    if args.actions:
        with open(args.actions) as f:
            actions = json.load(f)
    config = CompanyToolsetConfig(server_url=args.url, scenario=args.scenario, seed=args.seed)
    print(json.dumps(asyncio.run(play(config, actions))))


if __name__ == "__main__":
    main()

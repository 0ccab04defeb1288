"""Start-up stays small: an episode imports only what it uses (checked by module, not by a timed test).

The figures themselves (cold start to first step, RSS) are measured by ``python -m bench compare_tau``; this
test keeps the cause of the old slow start from coming back: mesa (which pulled scipy and pandas), langgraph,
the LLM and MCP clients, YAML and apps the task does not use are not imported by an episode that does not need
them, and the whole import graph stays within a budget of modules.
"""

import json
import subprocess
import sys

RUN = """
import json, sys
from sim.episode import Episode
from worlds.store import WorldStore
ep = Episode({scenario!r}, store=WorldStore({store!r}))
ep.reset(seed=0, options={options})
ep.step({{"name": "submit", "arguments": {{}}}})
print(json.dumps(sorted(sys.modules)))
"""
HEAVY = ("mesa", "pandas", "scipy", "langgraph", "langchain_core", "openai", "fastmcp", "mcp", "yaml", "docker")
BUDGET = 900
"""Most modules an episode without coworkers may have imported (stdlib and third-party included; about 780 now)."""


def modules(store, scenario="triage-tickets-v0", options=None):
    code = RUN.format(scenario=scenario, store=str(store.data_dir), options=options or {})
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_budget__an_episode_without_coworkers_loads_no_heavy_module(store):
    loaded = modules(store)
    assert not {m.split(".")[0] for m in loaded} & set(HEAVY), sorted({m.split(".")[0] for m in loaded} & set(HEAVY))
    apps = {m.split(".")[1] for m in loaded if m.startswith("mcp_tools.") and m.count(".") >= 2}
    assert {"chat", "tickets"} <= apps and not apps & {"git", "docs", "sheets", "calendar", "mail", "shell", "sandbox"}
    assert len(loaded) <= BUDGET, f"{len(loaded)} modules imported; the budget is {BUDGET}"


def test_import_budget__coworkers_bring_mesa_only_when_on(store):
    loaded = {m.split(".")[0] for m in modules(store, options={"npcs": "cooperative"})}
    assert "mesa" in loaded

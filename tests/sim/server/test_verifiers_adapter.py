"""The verifiers adapter (``examples/verifiers_env.py``, in verifiers' own venv) plays served episodes over HTTP MCP."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx

from scenarios.registry import make
from tests.sim.server.conftest import ROOT, Server
from tests.sim.server.test_openenv_client import SCENARIO, SEED, RecordingEnv
from tests.sim.server.venvs import VERIFIERS_PINS, venv_python


def _play(python: Path, server: Server, *args: str) -> dict[str, Any]:
    example = ROOT / "examples" / "verifiers_env.py"
    cmd = [str(python), str(example), "--url", server.url, "--scenario", SCENARIO, "--seed", str(SEED), *args]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing of ours in that venv
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_verifiers_adapter__toolset_serves_the_scenario_tools_and_reaches_the_reward(
    server: Server, tmp_path: Path
) -> None:
    python = venv_python("verifiers", VERIFIERS_PINS)
    with httpx.Client(base_url=server.url, timeout=60) as c:
        recorder = RecordingEnv(c)
        make(SCENARIO).oracle(recorder)
        if not recorder.done:
            recorder.call("submit", summary="oracle done")
        tools = {t["name"] for t in c.get(f"/{SCENARIO}/tools").json()["tools"]}
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps(recorder.actions))

    solved = _play(python, server, "--actions", str(actions))
    assert set(solved["tools"]) == tools  # verifiers' MCP server lists exactly the scenario's tools
    assert solved["done"] is True and solved["reward"] == 1.0 and solved["errors"] == []

    lazy = _play(python, server)  # the example's own script: a post, a refused lookup, submit
    assert lazy["errors"] == ["tickets_get"] and lazy["done"] is True and lazy["reward"] == 0.0
    assert lazy["episode"] != solved["episode"]  # one episode per toolset (per rollout)

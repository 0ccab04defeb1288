"""OpenEnv's own ``EnvClient`` (openenv-core, in its own venv) plays an episode over ``/ws`` to a reward."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx

from scenarios.base import ToolFailed
from scenarios.registry import make
from tests.sim.server.conftest import ROOT, Server
from tests.sim.server.venvs import OPENENV_PINS, venv_python

SCENARIO, SEED = "triage-tickets-v0", 4


class RecordingEnv:
    """The scripted agents' ``AgentEnv`` over OpenEnv's HTTP routes, keeping every action it sent."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        obs = client.post("/reset", json={"seed": SEED, "scenario": SCENARIO}).json()["observation"]
        self.episode = {"episode_id": obs["episode_id"], "token": obs["token"]}
        self.prompt, self.actor = obs["prompt"], obs["actor"]
        self.done, self.actions = False, list[dict[str, Any]]()

    def call(self, name: str, /, **arguments: Any) -> Any:
        action = {"name": name, "arguments": arguments}
        self.actions.append(action)
        out = self.client.post("/step", json={"action": action, **self.episode}).json()
        self.done = out["done"]
        error = out["observation"]["error"]
        if error:
            raise ToolFailed(error["code"], error["message"])
        return json.loads(out["observation"]["text"])


def _play(python: Path, server: Server, *args: str) -> dict[str, Any]:
    example = ROOT / "examples" / "openenv_client.py"
    cmd = [str(python), str(example), "--url", server.url, "--scenario", SCENARIO, "--seed", str(SEED), *args]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing of ours in that venv
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_openenv_client__envclient_replays_the_oracle_to_reward_one(server: Server, tmp_path: Path) -> None:
    python = venv_python("openenv", OPENENV_PINS)
    with httpx.Client(base_url=server.url, timeout=60) as c:
        recorder = RecordingEnv(c)
        make(SCENARIO).oracle(recorder)
        if not recorder.done:
            recorder.call("submit", summary="oracle done")
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps(recorder.actions))

    replayed = _play(python, server, "--actions", str(actions))
    assert replayed["done"] is True and replayed["reward"] == 1.0
    assert replayed["step_count"] == len(recorder.actions)  # the same episode, step for step
    assert replayed["tools"] > 10 and replayed["prompt"].startswith("You are")

    lazy = _play(python, server)  # the example's own script: a chat post, then submit
    assert lazy["done"] is True and lazy["reward"] == 0.0 and lazy["step_count"] == 2 and lazy["errors"] == []

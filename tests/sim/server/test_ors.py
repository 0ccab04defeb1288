"""ORS conformance: the real ``ors-sdk`` client plays each family's oracle through ``companysim server`` to reward 1."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ors.client import ORS

from scenarios.base import ToolFailed
from scenarios.registry import make
from scenarios.splits import world_split
from tests.sim.server.conftest import Server

FAMILIES = ("triage-tickets-v0", "customer-escalation-v0", "schedule-with-coworkers-v0")


class OrsEnv:
    """The scripted agents' ``AgentEnv`` over an ORS session: every call is ``session.call_tool``."""

    def __init__(self, session: Any, prompt: str) -> None:
        self.session, self.prompt = session, prompt
        self.actor = prompt.split("(@", 1)[1].split(")", 1)[0]
        self.finished, self.reward = False, 0.0

    @property
    def done(self) -> bool:
        return self.finished

    def call(self, name: str, /, **arguments: Any) -> Any:
        out = self.session.call_tool(name, arguments)
        self.finished, self.reward = out.finished, out.reward
        error = (out.metadata or {}).get("error")
        if error:
            raise ToolFailed(error["code"], error["message"])
        return json.loads(out.blocks[0].text)


@pytest.mark.parametrize("family", FAMILIES)
def test_ors__client_plays_the_oracle_to_reward_one(server: Server, family: str) -> None:
    with ORS(base_url=server.url) as client:
        env = client.environment(family)
        assert list(env.list_splits()) == ["train", "validation", "test"]
        assert env.num_tasks("test") == 100
        task = env.get_task("test", 0)
        assert world_split(task.task_spec["seed"]) == "test" and task.task_spec["scenario"] == family
        names = {t.name for t in env.list_tools()}
        assert {"submit", "wait"} <= names
        with env.session(task=task) as session:
            prompt = session.get_prompt()[0].text
            assert {t["name"] for t in session.list_tools(format="openai")} == names
            agent = OrsEnv(session, prompt)
            make(family).oracle(agent)
            if not agent.done:
                agent.call("submit", summary="oracle done")
            assert agent.finished and agent.reward == 1.0


def test_ors__routes_answer_in_the_standard_shapes(server: Server) -> None:
    import httpx

    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.get("/health").json() == {"status": "healthy"}
        assert set(FAMILIES) <= set(c.get("/list_environments").json())
        assert c.get("/triage-tickets-v0/splits").json()[1] == {"name": "validation", "type": "validation"}
        tasks = c.post("/triage-tickets-v0/tasks", json={"split": "validation"}).json()
        assert tasks["env_name"] == "triage-tickets-v0" and len(tasks["tasks"]) == 100
        rng = c.post("/triage-tickets-v0/task_range", json={"split": "validation", "start": 2, "stop": 5}).json()
        assert rng["tasks"] == tasks["tasks"][2:5]
        assert c.post("/triage-tickets-v0/task", json={"split": "nope", "index": 0}).status_code == 400
        assert c.post("/triage-tickets-v0/task", json={"split": "test", "index": 100}).status_code == 400
        tool = c.get("/triage-tickets-v0/tools").json()["tools"][0]
        assert set(tool) == {"name", "description", "input_schema"}
        # a session: minted over SSE, created, called (SSE with reward and finished), deleted
        minted = c.post("/create_session").text
        sid = minted.split("event: task_id\r\ndata: ", 1)[1].split("\r\n", 1)[0]
        assert (
            c.post("/create", json={"split": "train", "index": 1}, headers={"X-Session-ID": "forged"}).status_code
            == 404
        )
        created = c.post("/create", json={"split": "train", "index": 1, "env_name": "triage-tickets-v0"},
                         headers={"X-Session-ID": sid})  # fmt: skip
        assert created.json() == {"sid": sid}
        call = c.post("/triage-tickets-v0/call", json={"name": "nope", "input": {}}, headers={"X-Session-ID": sid})
        events = [line for line in call.text.split("\r\n") if line.startswith("event:")]
        assert events == ["event: task_id", "event: end"]
        assert '"ok": false' in call.text
        call = c.post("/triage-tickets-v0/call", json={"name": "submit", "input": {}}, headers={"X-Session-ID": sid})
        result = json.loads(call.text.split("event: end\r\ndata: ", 1)[1].split("\r\n", 1)[0])
        assert result["ok"] and result["output"]["finished"] and result["output"]["reward"] == 0.0
        assert c.post("/ping", headers={"X-Session-ID": sid}).json() == {"status": "ok"}
        assert c.post("/delete", headers={"X-Session-ID": sid}).json() == {"sid": sid}
        assert c.post("/ping", headers={"X-Session-ID": sid}).status_code == 404

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


class RawSession:
    """A scripted agent's ``AgentEnv`` over raw ORS HTTP (``/create_session``, ``/create``, ``/{env}/call``)."""

    def __init__(self, client: Any, env: str, task: dict[str, Any]) -> None:
        self.client, self.env = client, env
        minted = client.post("/create_session").text
        self.sid = minted.split("event: task_id\r\ndata: ", 1)[1].split("\r\n", 1)[0]
        assert client.post("/create", json={"task_spec": task}, headers=self.headers).status_code == 200
        self.prompt = client.get(f"/{env}/prompt", headers=self.headers).json()[0]["text"]
        self.actor = self.prompt.split("(@", 1)[1].split(")", 1)[0]
        self.done, self.reward = False, 0.0

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Session-ID": self.sid}

    def post_sse(self, path: str, body: dict[str, Any]) -> Any:
        text = self.client.post(f"/{self.env}/{path}", json=body, headers=self.headers).text
        return json.loads(text.split("event: end\r\ndata: ", 1)[1].split("\r\n", 1)[0])

    def call(self, name: str, /, **arguments: Any) -> Any:
        out = self.post_sse("call", {"name": name, "input": arguments})["output"]
        self.done, self.reward = out["finished"], out["reward"]
        error = out["metadata"].get("error")
        if error:
            raise ToolFailed(error["code"], error["message"])
        return json.loads(out["blocks"][0]["text"])


def test_ors__messages_replay_the_conversation_and_score_group_grades_a_group(server: Server) -> None:
    import httpx

    family = "triage-tickets-v0"
    with httpx.Client(base_url=server.url, timeout=60) as c:
        task = c.post(f"/{family}/task", json={"split": "test", "index": 3}).json()["task"]
        good, lazy = RawSession(c, family, task), RawSession(c, family, task)
        make(family).oracle(good)
        if not good.done:
            good.call("submit", summary="oracle done")
        assert good.reward == 1.0
        with pytest.raises(ToolFailed):
            lazy.call("tickets_get", key="NOPE-404")
        assert c.post(f"/{family}/call", json={"name": "nope", "input": {}}, headers=lazy.headers).status_code == 200

        history = c.get(f"/{family}/messages", headers=lazy.headers).json()
        assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant", "user"]
        assert history[0]["blocks"] == [{"type": "text", "text": lazy.prompt, "detail": None}]
        call, result = history[1]["blocks"][0], history[2]["blocks"][0]
        assert (call["type"], call["name"], call["input"]) == ("tool_call", "tickets_get", {"key": "NOPE-404"})
        assert result["type"] == "tool_result" and result["tool_call_id"] == call["id"] and result["is_error"]
        assert (
            history[4]["blocks"][0]["is_error"] and "not a valid tool" in history[4]["blocks"][0]["blocks"][0]["text"]
        )
        good_history = c.get(f"/{family}/messages", headers=good.headers).json()
        assert len(good_history) > 3 and good_history[-2]["blocks"][0]["name"] == "submit"

        # the group: the oracle's rollout and the lazy one (not yet ended: graded as it stands)
        candidates = [{"messages": good_history, "metadata": {"sid": s.sid}} for s in (good, lazy)]
        scores = lazy.post_sse("score_group", {"candidates": candidates})["scores"]
        assert [s["reward"] for s in scores] == [1.0, 0.0]
        assert [s["metadata"]["advantage"] for s in scores] == [0.5, -0.5]
        assert [s["metadata"]["finished"] for s in scores] == [True, False]

        other = RawSession(c, family, {**task, "seed": task["seed"] + 1})
        stranger = {"candidates": [{"messages": [], "metadata": {"sid": other.sid}}]}
        refused = c.post(f"/{family}/score_group", json=stranger, headers=lazy.headers)
        assert refused.status_code == 400 and "a group is rollouts of one task" in refused.json()["detail"]
        nameless = c.post(f"/{family}/score_group", json={"candidates": [{"messages": []}]}, headers=lazy.headers)
        assert nameless.status_code == 400 and "metadata.sid" in nameless.json()["detail"]
        for s in (good, lazy, other):
            c.post("/delete", headers=s.headers)

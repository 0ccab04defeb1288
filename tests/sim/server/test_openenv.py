"""The OpenEnv face: a WebSocket session in OpenEnv's message format, and the HTTP routes, on a real server."""

from __future__ import annotations

import asyncio
import json

import httpx
from websockets.asyncio.client import connect

from tests.sim.server.conftest import Server


async def _ws(server: Server, messages: list[dict | str]) -> list[dict]:
    answers = []
    async with connect(server.url.replace("http", "ws") + "/ws") as ws:
        for m in messages:
            await ws.send(m if isinstance(m, str) else json.dumps(m))
            if isinstance(m, dict) and m.get("type") == "close":
                break
            answers.append(json.loads(await ws.recv()))
    return answers


def test_openenv__ws_session_resets_steps_and_reports_state(server: Server) -> None:
    answers = asyncio.run(
        _ws(server, [
            {"type": "reset", "data": {"seed": 2, "scenario": "triage-tickets-v0"}},
            {"type": "step", "data": {"name": "chat_post", "arguments": {"channel": "town-square", "message": "hi"}}},
            {"type": "step", "data": {"name": "tickets_get", "arguments": {"key": "NOPE-1"}}},
            {"type": "state"},
            {"type": "step", "data": {"name": "submit", "arguments": {"summary": "done"}}},
            {"type": "close"},
        ])
    )  # fmt: skip
    reset, post, refused, state, submit = answers
    assert reset["type"] == "observation"
    assert "Triage" in reset["data"]["observation"]["prompt"] and reset["data"]["done"] is False
    assert {t["function"]["name"] for t in reset["data"]["observation"]["tools"]} >= {"chat_post", "submit"}
    assert "token" not in reset["data"]["observation"]  # the socket is the session; no token to leak
    assert json.loads(post["data"]["observation"]["text"])["message"] == "hi"
    assert refused["data"]["observation"]["error"]["code"] == "not_found"
    assert "Traceback" not in json.dumps(refused)
    assert state == {"type": "state", "data": state["data"]} and state["data"]["step_count"] == 2
    assert submit["data"]["done"] is True and submit["data"]["reward"] == 0.0  # nothing triaged


def test_openenv__ws_errors_use_openenv_codes(server: Server) -> None:
    answers = asyncio.run(
        _ws(server, [
            "{not json",
            {"type": "step", "data": {"name": "chat_post", "arguments": {}}},
            {"type": "dance"},
            {"type": "reset", "data": {"seed": "x"}},
            {"type": "reset", "data": {"scenario": "no-such-v0"}},
        ])
    )  # fmt: skip
    codes = [a["data"]["code"] for a in answers]
    assert [a["type"] for a in answers] == ["error"] * 5
    assert codes == ["INVALID_JSON", "SESSION_ERROR", "UNKNOWN_TYPE", "VALIDATION_ERROR", "EXECUTION_ERROR"]
    assert answers[4]["data"]["error_code"] == "unknown_scenario"


def test_openenv__http_episode_needs_its_own_token(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.get("/health").json() == {"status": "healthy"}
        assert set(c.get("/schema").json()) == {"action", "observation", "state"}
        a = c.post("/reset", json={"seed": 3}).json()["observation"]
        b = c.post("/reset", json={"seed": 4}).json()["observation"]
        action = {"name": "chat_post", "arguments": {"channel": "town-square", "message": "http hi"}}
        ok = c.post("/step", json={"episode_id": a["episode_id"], "token": a["token"], "action": action})
        assert ok.status_code == 200 and ok.json()["observation"]["error"] is None
        stolen = c.post("/step", json={"episode_id": a["episode_id"], "token": b["token"], "action": action})
        assert stolen.status_code == 404 and stolen.json()["code"] == "no_episode"
        missing = c.post("/step", json={"episode_id": a["episode_id"], "action": action})
        assert missing.status_code == 401
        state = c.get("/state", headers={"X-Episode-Id": a["episode_id"], "X-Episode-Token": a["token"]}).json()
        assert state["step_count"] == 1 and state["done"] is False
        bad = c.post("/step", content=b"{", headers={"content-type": "application/json"})
        assert bad.status_code == 400 and bad.json()["code"] == "bad_request"
        for ep in (a, b):
            assert c.post("/close", json={"episode_id": ep["episode_id"], "token": ep["token"]}).json()["closed"]
        gone = c.post("/step", json={"episode_id": a["episode_id"], "token": a["token"], "action": action})
        assert gone.status_code == 404


def test_openenv__guards_refuse_rebinding_and_big_bodies(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.get("/health", headers={"Host": "attacker.example"}).status_code == 421
        assert c.get("/health", headers={"Origin": "http://attacker.example"}).status_code == 403
        assert c.get("/health", headers={"Origin": f"http://127.0.0.1:{server.port}"}).status_code == 200
        big = c.post("/reset", content=b"x" * (2 << 20), headers={"content-type": "application/json"})
        assert big.status_code == 413 and big.json()["code"] == "too_large"

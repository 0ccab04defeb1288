"""SIGTERM with a state directory: live HTTP episodes are snapshotted, and a restarted server resumes them.

The check is against an uninterrupted run: the same actions played in-process on one ``Episode`` give the same
observation at every step and the same final state as the run that was cut by a restart in the middle.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from sim.episode import Episode
from tests.sim.server.conftest import running_server
from worlds.store import WorldStore

SCENARIO, SEED = "triage-tickets-v0", 3
OPTIONS: dict[str, Any] = {"turns": "writes"}
ACTIONS: list[dict[str, Any]] = [
    {"name": "chat_post", "arguments": {"channel": "town-square", "message": "looking at the backlog now"}},
    {"name": "tickets_search", "arguments": {"status": "backlog", "limit": 5}},
    {"name": "no_such_tool", "arguments": {}},
    {"name": "chat_post", "arguments": {"channel": "town-square", "message": "first pass done"}},
    {"name": "chat_read_channel", "arguments": {"channel": "town-square", "limit": 50}},
    {"name": "chat_post", "arguments": {"channel": "town-square", "message": "back after the restart"}},
    {"name": "chat_read_channel", "arguments": {"channel": "town-square", "limit": 50}},
]
CUT = 4  # steps played before the restart


def _reference(data_dir: Path) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    with Episode(SCENARIO, store=WorldStore(data_dir)) as episode:
        episode.reset(seed=SEED, options=OPTIONS)
        seen = []
        for action in ACTIONS:
            obs, _, _, _, info = episode.step(action)
            seen.append((obs, info.get("error")))
        state = {"steps": len(episode.steps), "clock": episode.tool_context.clock.now().isoformat()}
        return seen, state


def _step(c: httpx.Client, eid: str, token: str, action: dict[str, Any]) -> tuple[str, Any]:
    r = c.post("/step", json={"episode_id": eid, "token": token, "action": action})
    r.raise_for_status()
    obs = r.json()["observation"]
    return obs["text"], obs["error"]


def test_resume__sigterm_snapshots_live_episodes_and_a_restart_continues_them(
    server_data: Path, tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    expected, final = _reference(server_data)
    args = ("--workers", "2", "--state-dir", str(state_dir))
    with running_server(server_data, *args) as s:
        with httpx.Client(base_url=s.url, timeout=60) as c:
            body = c.post("/reset", json={"seed": SEED, "scenario": SCENARIO, "options": OPTIONS}).json()
            http_ep = (body["observation"]["episode_id"], body["observation"]["token"])
            made = c.post("/episodes", json={"seed": SEED, "scenario": SCENARIO, "options": OPTIONS}).json()
            mcp_ep = (made["id"], made["token"])
            for eid, token in (http_ep, mcp_ep):
                assert [_step(c, eid, token, a) for a in ACTIONS[:CUT]] == expected[:CUT]
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=60) in (0, 143)  # drained; uvicorn re-raises SIGTERM, the CLI exits 143
    saved = sorted(p.name for p in (state_dir / "episodes").iterdir())
    assert saved == [f"{e}.{k}" for e in sorted([http_ep[0], mcp_ep[0]]) for k in ("json", "snapshot")]
    assert json.loads((state_dir / "episodes" / f"{http_ep[0]}.json").read_text())["steps"] == CUT

    with running_server(server_data, *args) as s:
        with httpx.Client(base_url=s.url, timeout=60) as c:
            wrong = {"episode_id": http_ep[0], "token": mcp_ep[1], "action": ACTIONS[0]}
            assert c.post("/step", json=wrong).status_code == 404  # a resumed episode keeps its own token only
            for eid, token in (http_ep, mcp_ep):
                assert [_step(c, eid, token, a) for a in ACTIONS[CUT:]] == expected[CUT:]
                state = c.get("/state", headers={"X-Episode-Id": eid, "X-Episode-Token": token}).json()
                assert (state["step_count"], state["clock"]) == (final["steps"], final["clock"])
            fresh = c.post("/reset", json={"seed": SEED, "scenario": SCENARIO}).json()["observation"]["episode_id"]
            assert fresh not in (http_ep[0], mcp_ep[0])
    # The second shutdown snapshots the resumed episodes again, with every step, and the new one (ep-3).
    again = {p.stem: json.loads(p.read_text()) for p in (state_dir / "episodes").glob("*.json")}
    assert sorted(again) == sorted([http_ep[0], mcp_ep[0], fresh])
    assert [again[e]["steps"] for e in (http_ep[0], mcp_ep[0], fresh)] == [len(ACTIONS), len(ACTIONS), 0]


def test_resume__a_replay_that_reaches_another_world_is_refused_and_not_kept(server_data: Path) -> None:
    from sim.server.worker import ResumeDiverged, Worker

    worker = Worker(str(server_data))
    try:
        worker.op_create("ep-1", SCENARIO, SEED, dict(OPTIONS))
        worker.op_step("ep-1", ACTIONS[0])
        worker.op_step("ep-1", {"name": "tickets_search", "arguments": {"status": "nonsense-status"}})
        snap = worker.op_snapshot("ep-1")
        assert snap["actions"][0] == ACTIONS[0] and snap["steps"] == len(snap["actions"])
        args = {k: snap[k] for k in ("scenario", "seed", "options", "actions", "state_hash")}
        worker.op_resume("ep-2", **args)
        assert worker.op_snapshot("ep-2")["state_hash"] == snap["state_hash"]
        with pytest.raises(ResumeDiverged):
            worker.op_resume("ep-3", **{**args, "actions": args["actions"][1:]})
        assert sorted(worker.episodes) == ["ep-1", "ep-2"]
    finally:
        worker.close_all()

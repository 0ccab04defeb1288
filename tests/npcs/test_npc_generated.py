"""NPCs on a generated company: a working week leaves a valid world, the same bytes twice, and fast turns."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text

from mcp_tools.base import Actor, ToolContext
from mcp_tools.chat import service as chat
from npcs.model import NpcWorld
from worlds.changelog import track
from worlds.check import check_world
from worlds.clock import FixedClock
from worlds.spec import WorldSpec
from worlds.store import WorldStore

START = datetime(2026, 3, 2, 8, tzinfo=UTC)


def _week(store: WorldStore, seed: int) -> dict[str, Any]:
    world = store.base(WorldSpec.parse(seed=3, employees=20, history_days=5)).fork()
    session = world.session()
    clock = FixedClock(START)
    track(session, clock=clock, tag="agent")
    agent_id = session.execute(text("SELECT id FROM employees WHERE active ORDER BY id LIMIT 1")).scalar()
    npcs = NpcWorld(session, seed, clock, agent=agent_id)
    agent = Actor.load(session, agent_id)
    ctx = ToolContext(session=session, actor=agent, clock=clock)
    for npc in npcs.npcs[:6]:
        chat.direct_message(ctx, npc.persona.username, "When are you free?")
    npcs.poke()
    times: list[float] = []
    actions = []
    while (at := npcs.next_wakeup()) is not None and at <= START + timedelta(days=5):
        clock.set(max(at, clock.now()))
        for turn in npcs.due(clock.now()):
            t0 = time.perf_counter()  # allow-nondeterminism: measuring, not simulating
            actions += npcs.run_turn(turn)
            times.append(time.perf_counter() - t0)  # allow-nondeterminism: measuring, not simulating
    session.flush()
    with world.connect() as conn:
        problems = check_world(conn)
        digest = world.state_hash()
    session.close()
    world.close()
    return {"actions": [a.to_dict() for a in actions], "problems": problems, "hash": digest, "times": times}


def test_generated_world__valid_deterministic_and_fast(tmp_path: Path):
    store = WorldStore(tmp_path)
    a, b = _week(store, 11), _week(store, 11)
    assert a["problems"] == []
    assert a["actions"] == b["actions"] and a["hash"] == b["hash"]
    assert len(a["actions"]) > 50
    kinds = Counter(x["reaction"] for x in a["actions"])
    assert kinds["answer"] >= 3 and kinds["new_ticket"] >= 1, kinds
    failed = [x for x in a["actions"] if not x["ok"]]
    assert len(failed) <= len(a["actions"]) // 10, failed[:5]
    assert statistics.median(a["times"]) < 0.05  # per turn, including the langgraph invoke

"""Trainer adapter overhead: one read step through the TRL method, the verl tool and the SkyRL text env, against
``Episode.step`` with the same call in the same run (same world, ``turns: writes`` so reads spend no turns).

Run: python -m bench adapters
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass
from typing import Any

from bench.common import fig, percentile, repeat, write_results
from sim.episode import Episode
from worlds.store import WorldStore

SCENARIO = "triage-tickets-v0"
CALL = {"name": "tickets_search", "arguments": {"status": "backlog", "limit": 5}}
OPTIONS = {"turns": "writes"}
N = 2000


@dataclass
class _AgentData:
    request_id: str


def _p50_us(fn: Any) -> float:
    repeat(fn, 200)  # warm up
    return percentile(repeat(fn, N), 50) * 1e6


def run() -> Any:
    """Measure each path's p50 per step and write bench/results/adapters.json."""
    with tempfile.TemporaryDirectory(prefix="bench-adapters-") as tmp:
        return write_results("adapters", _measure(WorldStore(tmp)))


def _measure(store: WorldStore) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with Episode(SCENARIO, store=store) as ep:
        ep.reset(seed=0, options=OPTIONS)
        direct = _p50_us(lambda: ep.step(CALL))
    figures["episode_step_p50"] = fig(direct, "us")

    from sim.adapters.trl import trl_environment

    env = trl_environment(SCENARIO, store=store)()
    env.reset(seed=0, options=OPTIONS)
    trl = _p50_us(lambda: env.tickets_search(**CALL["arguments"]))
    env._close()
    figures["trl_method_p50"] = fig(trl, "us")
    figures["trl_overhead_p50"] = fig(trl - direct, "us")

    from sim.adapters.verl import POOL, CompanySimTool

    tool = CompanySimTool({"scenario": SCENARIO, "data_dir": str(store.data_dir), "name": "tickets_search"})
    data = _AgentData("bench")
    asyncio.run(tool.create("bench", create_kwargs={"seed": 0, "options": OPTIONS}))

    async def loop_call() -> None:  # what ToolAgentLoop does per call
        handle, _ = await tool.create(create_kwargs={"seed": 0, "options": OPTIONS})
        await tool.execute(handle, CALL["arguments"], agent_data=data)
        await tool.release(handle)

    loop = asyncio.new_event_loop()
    verl = _p50_us(lambda: loop.run_until_complete(loop_call()))
    loop.close()
    POOL.close_all()
    figures["verl_create_execute_release_p50"] = fig(verl, "us")
    figures["verl_overhead_p50"] = fig(verl - direct, "us")

    try:
        from sim.adapters.skyrl import CompanySimTextEnv
    except ImportError:
        pass
    else:
        text = f"<tool_call>{json.dumps(CALL)}</tool_call>"
        sky = CompanySimTextEnv(
            {"scenario": SCENARIO, "data_dir": str(store.data_dir)}, {"seed": 0, "options": OPTIONS}
        )
        sky.init([])
        skyrl = _p50_us(lambda: sky.step(text))
        sky.close()
        figures["skyrl_step_p50"] = fig(skyrl, "us")
        figures["skyrl_overhead_p50"] = fig(skyrl - direct, "us")
    return figures

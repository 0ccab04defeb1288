"""LLM runner overhead per step and tasks exported per second.

``llm_step_*``: one tool call through ``sim.llm_agent`` (a model turn from the local OpenAI-compatible test
server, ``tests/llmserver.py``, through the official client; then the step) against ``Episode.step`` with the
same call in the same run. Recording pays the HTTP round trip; the offline replay pays only the cache lookup and
hashing the conversation, which grows with it (the figure is the mean over a ``TURNS``-turn episode). Reads are
free (``turns: writes``) so the episode is not truncated.

``tasks_*``: ``sim.taskset.task_rows`` (a reset per task: fork, setup, prompt, tools) and the JSONL and Parquet
writers, on a warm world cache.

Run: python -m bench llm
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import fig, percentile, repeat, write_results
from sim.episode import Episode
from sim.llm_agent import LLMAgentConfig, run_llm_agent
from sim.taskset import TaskSelection, task_rows, write_jsonl, write_parquet
from worlds.llm import ChatModel
from worlds.store import WorldStore

SCENARIO = "triage-tickets-v0"
CALL = {"name": "tickets_search", "arguments": {"status": "backlog", "limit": 5}}
OPTIONS = {"turns": "writes"}
TURNS = 100
TASKS = 40


def run() -> Any:
    """Measure and write bench/results/llm.json."""
    with tempfile.TemporaryDirectory(prefix="bench-llm-") as tmp:
        return write_results("llm", _measure(WorldStore(Path(tmp) / "worlds"), Path(tmp)))


def _measure(store: WorldStore, tmp: Path) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from llmserver import LocalLLM, ScriptedReplies

    figures: dict[str, Any] = {}
    with Episode(SCENARIO, store=store) as ep:
        ep.reset(seed=0, options=OPTIONS)
        repeat(lambda: ep.step(CALL), 100)
        direct = percentile(repeat(lambda: ep.step(CALL), 1000), 50)
    figures["episode_step_p50"] = fig(direct * 1e6, "us")
    replies = [{"tool_calls": [{"name": CALL["name"], "arguments": json.dumps(CALL["arguments"])}]}] * TURNS
    cache = tmp / "completions.jsonl"
    config = LLMAgentConfig(max_turns=TURNS, max_context_tokens=10**9)
    with LocalLLM(ScriptedReplies(replies)) as llm, Episode(SCENARIO, store=store) as ep:
        model = ChatModel("stub-model", base_url=llm.base_url, cache=cache)
        run_llm_agent(ep, model, 0, OPTIONS, LLMAgentConfig(max_turns=2))  # warm the client and the task
        t0 = time.perf_counter()
        run_llm_agent(ep, model, 0, OPTIONS, config)
        recorded = (time.perf_counter() - t0) / TURNS
    with Episode(SCENARIO, store=store) as ep:
        offline = ChatModel("stub-model", cache=cache, replay_only=True)
        t0 = time.perf_counter()
        run_llm_agent(ep, offline, 0, OPTIONS, config)
        replayed = (time.perf_counter() - t0) / TURNS
    figures["llm_step_recording_mean"] = fig(recorded * 1e3, "ms")
    figures["llm_step_offline_mean"] = fig(replayed * 1e3, "ms")
    figures["llm_offline_overhead_mean"] = fig((replayed - direct) * 1e3, "ms")

    keys = TaskSelection(families=(SCENARIO,), seeds=tuple(range(TASKS)), difficulties=(1,), world_seed=0).keys()
    list(task_rows(keys[:1], store))  # the base world, generated once
    t0 = time.perf_counter()
    rows = list(task_rows(keys, store))
    built = time.perf_counter() - t0
    figures["tasks_built_per_s"] = fig(len(rows) / built, "tasks/s")
    for name, writer in (("jsonl", write_jsonl), ("parquet", write_parquet)):
        writer(rows, tmp / f"warm.{name}")  # imports (pyarrow) out of the figure
        t0 = time.perf_counter()
        writer(rows, tmp / f"tasks.{name}")
        figures[f"tasks_written_{name}_per_s"] = fig(len(rows) / (time.perf_counter() - t0), "tasks/s")
    return figures

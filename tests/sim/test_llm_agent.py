"""``--agent openai``: a model on a local OpenAI-compatible server plays episodes, then they replay offline.

The server (``tests/llmserver.py``) speaks the real wire format and is driven by the official ``openai`` client;
its "model" is a family's oracle reading the conversation (``OracleModel``) or a fixed script per turn
(``ScriptedReplies``). The command line runs in a subprocess, as a user would run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llmserver import LocalLLM, OracleModel, ScriptedReplies

from scenarios.registry import make
from sim.episode import Episode
from sim.llm_agent import LLMAgentConfig, estimate_tokens, fit_context, run_llm_agent
from sim.trace import TraceWriter, read_trace
from worlds.llm import ChatModel, LLMMiss

CLI = [sys.executable, "-m", "sim.cli"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """One base-world cache for the module's subprocesses."""
    return tmp_path_factory.mktemp("llm-worlds")


def cli(args, data_dir, **env):
    full = {**os.environ, "PYTHONPATH": str(ROOT), "COMPANYSIM_DATA_DIR": str(data_dir), **env}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=full, cwd=ROOT, check=False)


@pytest.mark.parametrize("scenario", ["triage-tickets-v0", "customer-escalation-v0", "schedule-with-coworkers-v0"])
def test_run_openai__a_model_on_the_wire_solves_the_task_and_replays_offline_bit_for_bit(scenario, tmp_path, data_dir):
    model = OracleModel(make(scenario).oracle)
    cache, first, second = tmp_path / "llm", tmp_path / "t1.jsonl", tmp_path / "t2.jsonl"
    common = ["run", scenario, "--agent", "openai", "--model", "stub-model", "--llm-cache", str(cache)]
    with LocalLLM(model) as llm:
        recorded = cli([*common, "--base-url", llm.base_url, "--trace", str(first)], data_dir)
        asked = list(llm.requests)
    model.close()
    assert recorded.returncode == 0, recorded.stderr
    assert "1.000" in recorded.stdout and "0 from the cache" in recorded.stdout
    # the model saw the task and the episode's tools as OpenAI function schemas, and acted only through them
    assert asked[0]["messages"][0]["role"] == "system" and asked[0]["tools"][-1]["function"]["name"] == "submit"
    # the server is gone: the same command answers from the cache alone and writes the same bytes
    offline = cli([*common, "--llm-offline", "--trace", str(second)], data_dir)
    assert offline.returncode == 0, offline.stderr
    assert f"{len(asked)} from the cache" in offline.stdout
    assert first.read_bytes() == second.read_bytes()
    [episode] = list(read_trace(first, agent=True))
    turns = [r for r in episode if r["type"] == "agent"]
    steps = [r for r in episode if r["type"] == "step"]
    assert len(turns) == len(asked) and episode[-1]["value"] == 1.0
    assert [t["message"]["tool_calls"][0]["function"]["name"] for t in turns] == [s["action"]["name"] for s in steps]
    assert all(t["usage"]["total_tokens"] > 0 for t in turns)
    replayed = cli(["replay", str(first)], data_dir)
    assert replayed.returncode == 0 and f"{len(steps)} step(s) identical" in replayed.stdout


BAD_TURNS = [
    # two calls in one turn, played in order: the second reads what the first wrote
    {
        "tool_calls": [
            {"name": "chat_post", "arguments": json.dumps({"channel": "town-square", "message": "hello"})},
            {"name": "chat_read_channel", "arguments": json.dumps({"channel": "town-square", "limit": 1})},
        ]
    },
    {"tool_calls": [{"name": "tickets_search", "arguments": '{"project": "SEA"'}]},  # broken JSON
    {"tool_calls": [{"name": "tickets_teleport", "arguments": "{}"}]},  # no such tool
    {"content": "I think I am finished."},  # stops without submit
]


def test_run_llm_agent__bad_calls_are_fed_back_and_the_episode_goes_on(tmp_path, store):
    trace = tmp_path / "t.jsonl"
    with LocalLLM(ScriptedReplies(BAD_TURNS)) as llm:
        model = ChatModel("stub-model", base_url=llm.base_url, cache=tmp_path / "c.jsonl", max_retries=0)
        with Episode("triage-tickets-v0", store=store, trace=TraceWriter(trace)) as ep:
            run = run_llm_agent(ep, model, 0, {"difficulty": 1})
            assert ep.trace is not None
            ep.trace.close()
        tool_messages = [m for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert run.turns == 4 and run.submitted_by_runner and run.score.value == 0.0
    posted, read, broken, unknown = (m["content"] for m in tool_messages)
    assert not posted.startswith("error") and '"message":"hello"' in read  # the second call saw the first's post
    assert broken.startswith("error [bad_action]: tickets_search: arguments are not valid JSON")
    assert unknown.startswith("error [") and "tickets_teleport" in unknown
    [episode] = list(read_trace(trace, agent=True))
    steps = [r for r in episode if r["type"] == "step"]
    # the broken call never became a step; the unknown tool did (a refused, replayable step); the runner submitted
    assert [s["action"]["name"] for s in steps] == ["chat_post", "chat_read_channel", "tickets_teleport", "submit"]
    assert [r["invalid_arguments"] for r in episode if r["type"] == "agent"][1] == ["call_2_0"]


def test_run_llm_agent__offline_miss_names_the_request_and_the_cache(tmp_path, store):
    model = ChatModel("stub-model", cache=tmp_path / "none.jsonl", replay_only=True)
    with Episode("triage-tickets-v0", store=store) as ep, pytest.raises(LLMMiss) as err:
        run_llm_agent(ep, model, 0)
    assert "no recorded completion" in str(err.value) and "none.jsonl" in str(err.value)


def test_fit_context__shortens_the_oldest_tool_results_and_never_the_task():
    messages = [{"role": "system", "content": "s" * 400}, {"role": "user", "content": "task " * 200}]
    for k in range(6):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "tickets_get", "arguments": "{}"}}
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]}]
        messages += [{"role": "tool", "tool_call_id": f"c{k}", "content": "x" * 4000}]
    before = [dict(m) for m in messages]
    limit = estimate_tokens(messages, []) - 1500  # each shortening saves ~975
    assert fit_context(messages, [], limit) == 2
    assert estimate_tokens(messages, []) <= limit
    assert messages[:2] == before[:2] and messages[-1] == before[-1]
    assert [m["content"][:6] for m in messages if m["role"] == "tool"] == ["[older"] * 2 + ["xxxxxx"] * 4


def test_run_llm_agent__context_limit_keeps_requests_within_the_budget(tmp_path, store):
    replies = [{"tool_calls": [{"name": "tickets_search", "arguments": json.dumps({"project": "SEA"})}]}] * 3

    def play(limit: int) -> list[dict]:
        with LocalLLM(ScriptedReplies(replies)) as llm:
            model = ChatModel("stub-model", base_url=llm.base_url, max_retries=0)
            with Episode("triage-tickets-v0", store=store) as ep:
                run_llm_agent(ep, model, 0, config=LLMAgentConfig(max_turns=3, max_context_tokens=limit))
            return list(llm.requests)

    free = play(10**6)  # the sizes without a budget (the tool list's size moves as apps gain tools)
    tools = free[0]["tools"]
    limit = estimate_tokens(free[-1]["messages"], tools) - 100  # the last request must be shortened to fit
    sent = play(limit)
    assert all(estimate_tokens(r["messages"], tools) <= limit for r in sent)
    assert sent[-1]["messages"][1] == sent[0]["messages"][1]  # the task is never shortened
    assert sum(m["content"].startswith("[older tool") for m in sent[-1]["messages"] if m["role"] == "tool") >= 1


def test_run_openai__model_failures_are_one_line_and_leave_no_trace(tmp_path, data_dir):
    trace = tmp_path / "t.jsonl"
    common = ["run", "triage-tickets-v0", "--agent", "openai", "--model", "stub-model", "--trace", str(trace)]
    with LocalLLM(ScriptedReplies([]), api_key="sk-right") as llm:
        url = llm.base_url
        no_key = cli([*common, "--base-url", url, "--llm-retries", "0"], data_dir, OPENAI_API_KEY="")
        unset = cli([*common, "--base-url", url, "--api-key-env", "MY_LLM_KEY"], data_dir, MY_LLM_KEY="")
    down = cli([*common, "--base-url", url, "--llm-retries", "0"], data_dir)
    offline_empty = cli([*common, "--llm-cache", str(tmp_path / "c"), "--llm-offline"], data_dir)
    no_url = cli([*common], data_dir)
    for result, says in (
        (no_key, "401"),
        (unset, "--api-key-env MY_LLM_KEY: that environment variable is not set"),
        (down, "failed the call: Connection error"),
        (offline_empty, "no recorded completion"),
        (no_url, "needs --base-url URL"),
    ):
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.count("\n") == 1 and says in result.stderr and "Traceback" not in result.stderr
    assert not trace.exists()

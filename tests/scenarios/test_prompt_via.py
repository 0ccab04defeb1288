"""The ``prompt_via: manager`` reset option: any family's task arrives as a DM from the actor's manager.

The system prompt only says to check messages; the oracle finds the brief through the chat tools and scores 1,
the no-op 0, and the rubric is the family's own. The message is a setup row from the actor's manager, and a
traced episode replays bit-exact.
"""

from __future__ import annotations

import pytest

from scenarios.variants import GREETING
from sim.agents import run_agent
from sim.episode import Episode
from sim.errors import BadOption
from sim.replay import replay
from sim.trace import TraceWriter
from worlds.rawsql import Sql

FAMILIES = ["triage-tickets-v0", "weekly-status-report-v0", "access-requests-v0", "sprint-plan-v0"]
MANAGER = {"prompt_via": "manager"}


@pytest.fixture(autouse=True)
def python_engine(monkeypatch):
    monkeypatch.setenv("COMPANYSIM_RECALC", "python")


@pytest.mark.parametrize("scenario", FAMILIES)
def test_the_task_comes_from_the_manager_and_the_oracle_still_solves_it(store, scenario):
    with Episode(scenario, store=store) as ep:
        plain = run_agent(ep, "oracle", 1, {"difficulty": 2})
        brief, rubric = ep.instance.prompt, ep.instance.rubric.fingerprint
        score = run_agent(ep, "oracle", 1, {"difficulty": 2, **MANAGER})
        instance = ep.instance
        assert plain.value == score.value == 1.0
        assert instance.rubric.fingerprint == rubric  # graded exactly as the system-prompt variant
        assert brief not in instance.prompt and "Check your messages" in instance.prompt
        assert "chat" in instance.apps
        sql = Sql.of(ep.tool_context.session)
        via = instance.params["prompt_via"]
        author, message = sql.one(
            "SELECT e.username, p.message FROM posts p JOIN employees e ON e.id = p.author_id WHERE p.id = ?",
            (via["post"],),
        )
        boss = sql.scalar(
            "SELECT m.username FROM employees e JOIN employees m ON m.id = e.manager_id WHERE e.username = ?",
            (instance.actor,),
        )
        assert author == via["manager"] == boss
        assert message == f"{GREETING}\n\n{brief}"
        tags = sql.all("SELECT tag FROM change_log WHERE table_name = ? AND row_key = ?", ("posts", f"[{via['post']}]"))
        assert tags == [("setup",)]  # the agent's own work starts after it
        assert run_agent(ep, "noop", 1, {"difficulty": 2, **MANAGER}).value == 0.0


def test_manager_variant_replays_bit_exact(store, tmp_path):
    path = tmp_path / "manager.jsonl"
    writer = TraceWriter(path)
    with Episode("triage-tickets-v0", store=store, trace=writer) as ep:
        run_agent(ep, "oracle", 2, {"difficulty": 1, "noise": "realistic", **MANAGER})
        run_agent(ep, "oracle", 2, {"difficulty": 1})  # the plain variant after it: the setups are cached apart
        assert ep.grade().value == 1.0
    writer.close()
    report = replay(path, store=store)
    assert report.ok and report.episodes == 2, report.mismatches


def test_an_unknown_prompt_via_is_one_clear_error(store):
    with Episode("triage-tickets-v0", store=store) as ep, pytest.raises(BadOption, match="prompt_via must be one of"):
        ep.reset(seed=0, options={"prompt_via": "boss"})

"""Coworkers who are awake: the day starts in the agent's zone, teammates answer, no-shows and figures are real."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from llmserver import LocalLLM

from scenarios.base import ToolFailed
from scenarios.registry import registered
from sim.agents import EpisodeEnv
from sim.episode import Episode
from sim.errors import BadOption
from sim.replay import replay
from sim.trace import TraceWriter, read_trace
from worlds.rawsql import Sql

ESCALATION = "customer-escalation-v0"


def _play(ep: Episode, seed: int, options: dict[str, Any] | None = None) -> float:
    prompt, info = ep.reset(seed=seed, options=options)
    env = EpisodeEnv(ep, prompt, info)
    ep.family.oracle(env)
    if not ep.done:
        env.call("submit", summary="stopped")
    return ep.grade().value


def _incident_answers(ep: Episode) -> list[tuple[str, str]]:
    """(author, text) of every reply by someone else to a thread the agent opened in ~incidents."""
    return [
        (str(u), str(m))
        for u, m in Sql.of(ep.tool_context.session).all(
            "SELECT e.username, p.message FROM posts p JOIN posts root ON root.id = p.root_id"
            " JOIN channels c ON c.id = root.channel_id AND c.name = 'incidents'"
            " JOIN employees a ON a.id = root.author_id JOIN employees e ON e.id = p.author_id"
            " WHERE a.username = ? AND e.username <> ? ORDER BY p.id",
            (ep.instance.actor, ep.instance.actor),
        )
    ]


@pytest.mark.parametrize("scenario", [r.id for r in registered()])
def test_an_episode_starts_at_nine_in_the_agents_own_zone_on_a_workday(scenario, store):
    with Episode(scenario, store=store) as ep:
        try:
            _, info = ep.reset(seed=1)
        except ToolFailed as exc:  # a family with repositories on a machine without a sandbox
            pytest.skip(exc.message)
        zone = Sql.of(ep.tool_context.session).scalar(
            "SELECT timezone FROM employees WHERE username = ?", (ep.instance.actor,)
        )
        start = datetime.fromisoformat(info["clock"])
        local = start.astimezone(ZoneInfo(str(zone)))
        assert (local.hour, local.minute, local.weekday() < 5) == (9, 0, True), (zone, info["clock"])
        history_ends = datetime.combine(ep.world.spec.start_date, time(9), tzinfo=UTC)
        assert history_ends <= start < history_ends + timedelta(days=4)  # the first such morning, not before


@pytest.mark.parametrize("seed", range(4))
def test_under_cooperative_npcs_someone_answers_the_outage_thread_and_the_oracle_still_scores_one(seed, store):
    with Episode(ESCALATION, store=store, npcs="cooperative") as ep:
        assert _play(ep, seed) == 1.0
        answers = _incident_answers(ep)
        stats = ep.coworker_stats()
        assert answers, "nobody answered the outage post"
        assert stats is not None and stats["messages"] >= len(answers) >= 1 and stats["turns"] >= 1
        assert stats["response_latency_min"]["answered"] >= 1 and stats["workload"]["peak"] >= 1


def test_without_npcs_nobody_answers_and_the_oracle_still_scores_one(store):
    with Episode(ESCALATION, store=store) as ep:
        assert _play(ep, 1) == 1.0
        assert _incident_answers(ep) == [] and ep.coworker_stats() is None


def test_npc_no_show__coworkers_stay_away_seeded_and_listed_in_the_faults(store, tmp_path):
    noise = {"profile": "none", "npc_no_show": 1.0}  # every due turn is missed
    with Episode(ESCALATION, store=store, npcs="cooperative", noise=noise) as ep:
        assert _play(ep, 2) == 1.0
        shows = [f for f in ep.faults if f["type"] == "npc_no_show"]
        assert shows and _incident_answers(ep) == []
        assert all(30 <= f["minutes"] <= 240 and f["npc"] for f in shows)
        assert ep.coworker_stats()["no_shows"] == len(shows)  # type: ignore[index]
    traces = []
    for k in range(2):  # most turns missed: the same ones on every run, and the trace replays
        path = tmp_path / f"t{k}.jsonl"
        writer = TraceWriter(path)
        with Episode(ESCALATION, store=store, npcs="cooperative", trace=writer) as ep:
            _play(ep, 2, {"noise": {"profile": "none", "npc_no_show": 0.8}})
        writer.close()
        traces.append(path.read_bytes())
    assert traces[0] == traces[1]
    score = next(iter(read_trace(tmp_path / "t0.jsonl")))[-1]
    assert any(f["type"] == "npc_no_show" for f in score["faults"]) and "coworkers" in score
    assert replay(tmp_path / "t0.jsonl", store=store).ok


def _shout(request: dict[str, Any]) -> dict[str, Any]:
    """The scripted realiser model: the sentence to rewrite, upper-cased."""
    return {"content": request["messages"][-1]["content"].splitlines()[-1].upper()}


def test_npc_llm__coworkers_speak_through_the_recorded_model_and_replay_offline(store, tmp_path: Path):
    cache, path = tmp_path / "npc.jsonl", tmp_path / "trace.jsonl"
    with LocalLLM(_shout) as fake:
        option = {"cache": str(cache), "base_url": fake.base_url, "model": "npc"}
        writer = TraceWriter(path)
        with Episode(ESCALATION, store=store, npcs="cooperative", trace=writer, npc_llm=option) as ep:
            assert _play(ep, 0) == 1.0
            answers = _incident_answers(ep)
        writer.close()
        assert answers and all(text.isupper() for _, text in answers) and fake.requests
    report = replay(path, store=store)  # the server is gone: every NPC sentence comes from the recording
    assert report.ok
    with pytest.raises(BadOption, match="cache"):
        Episode(ESCALATION, store=store, npc_llm={"base_url": "http://127.0.0.1:9/v1"})


@pytest.mark.parametrize("seed", range(2))
def test_under_cooperative_npcs_a_teammate_reviews_the_merge_request_and_the_grade_ignores_it(seed, store):
    with Episode("fix-failing-test-v0", store=store, npcs="cooperative") as ep:
        try:
            assert _play(ep, seed) == 1.0
        except ToolFailed as exc:  # no sandbox on this machine
            pytest.skip(exc.message)
        reviews = Sql.of(ep.tool_context.session).all(  # on the agent's request (history ones have no head)
            "SELECT e.username, n.kind FROM merge_request_notes n JOIN employees e ON e.id = n.author_id"
            " JOIN merge_requests m ON m.id = n.merge_request_id JOIN employees a ON a.id = m.author_id"
            " WHERE e.username <> ? AND a.username = ? AND m.source_head <> ''"
            " AND n.kind IN ('approve', 'request_changes') ORDER BY n.id",
            (ep.instance.actor, ep.instance.actor),
        )
        team = Sql.of(ep.tool_context.session).column(
            "SELECT username FROM employees WHERE team_id = (SELECT team_id FROM employees WHERE username = ?)",
            (ep.instance.actor,),
        )
        assert reviews and all(who in team for who, _ in reviews)
        assert ep.regrade(ep.instance.rubric).value == 1.0

"""incident-postmortem-v0: yesterday's incident written up from ~incidents, the fix ticket and the template.

What a user would notice: the oracle scores 1 and the no-op 0 at every difficulty, under realistic faults and with
coworkers on; every trace of the incident agrees (the thread's times, the fix ticket's history, the notes); a
timeline in UTC loses exactly the timeline checks; the handed-over action item must go to its new owner; the
unrelated alert of the same day must stay out. The oracle's call count is the long-horizon figure reported.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from scenarios import check_scenario, make
from scenarios.library.incident_postmortem import IncidentPostmortem
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import PARTIALS, calibrate
from sim.episode import Episode
from sim.replay import replay
from sim.trace import TraceWriter
from tests.scenarios.conftest import Tampering
from worlds.rawsql import Sql
from worlds.spec import WorldSpec

FAMILY = "incident-postmortem-v0"


def _play(episode, seed, difficulty, **tamper):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    IncidentPostmortem().oracle(Tampering(EpisodeEnv(episode, prompt, info), **tamper))
    return episode.grade(), episode.instance.params


def _utc(value):
    at = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return at if at.tzinfo else at.replace(tzinfo=ZoneInfo("UTC"))


def _failed(score):
    return {c.id: c.evidence for c in score.checks if not c.passed}


def test_the_family_honours_the_scenario_contract(store):
    family = make(FAMILY)
    world = store.base(WorldSpec(seed=2, employees=family.world.employees, history_days=family.world.history_days))
    try:
        check_scenario(FAMILY, world, seeds=(0, 3))
    finally:
        world.close()


def test_oracle_one_noop_zero_random_at_most_a_tenth_and_dense(episode):
    calls, phrasings = {}, set()
    for seed in range(8):
        options = {"difficulty": seed % 4}
        oracle = run_agent(episode, "oracle", seed, options)
        assert oracle.value == 1.0, (seed, _failed(oracle))
        p = episode.instance.params
        assert len(oracle.checks) == len(p["timeline"]) + 4 + 3 * len(p["actions"]) + 2 + (p["noise"] is not None) + 1
        calls[seed % 4] = len(episode.steps)
        assert run_agent(episode, "noop", seed, options).value == 0.0
        assert run_agent(episode, "random", seed, options).value <= 0.1
        phrasings.add("needs its postmortem" in episode.instance.prompt)
    assert len(phrasings) == 2, "the oracle reads every phrasing of the task"
    assert len(episode.instance.rubric.checks) >= 20  # difficulty 3
    assert calls[3] > calls[0] >= 9, calls  # 9 tool calls at difficulty 0, 11 at 3 (one per action ticket)


@pytest.mark.parametrize("options", [{"noise": "realistic"}, {"npcs": "adversarial"}, {"npcs": "cooperative"}])
def test_oracle_scores_one_under_faults_and_with_coworkers(episode, options):
    for seed in (1, 3):
        score = run_agent(episode, "oracle", seed, {"difficulty": seed, **options})
        assert score.value == 1.0, _failed(score)


def test_replay_under_realistic_noise_is_bit_exact(store, tmp_path):
    path = tmp_path / "trace.jsonl"
    writer = TraceWriter(path)
    with Episode(FAMILY, store=store, trace=writer) as ep:
        run_agent(ep, "oracle", 3, {"difficulty": 3, "noise": "realistic"})
        first = [s["state_hash"] for s in ep.steps]
        run_agent(ep, "oracle", 3, {"difficulty": 3, "noise": "realistic"})
        assert [s["state_hash"] for s in ep.steps] == first
    writer.close()
    report = replay(path, store=store)
    assert report.ok and report.episodes == 2, report.mismatches


def test_every_trace_of_the_incident_agrees(episode):
    episode.reset(seed=5, options={"difficulty": 3})
    p = episode.instance.params
    sql = Sql.of(episode.tool_context.session)
    rows = sql.all(
        "SELECT p.created_at FROM posts p JOIN channels c ON c.id = p.channel_id WHERE c.name = 'incidents'"
        " AND (p.root_id = (SELECT root_id FROM posts WHERE message LIKE 'Acknowledged%' ORDER BY id DESC LIMIT 1)"
        " OR p.id = (SELECT root_id FROM posts WHERE message LIKE 'Acknowledged%' ORDER BY id DESC LIMIT 1))"
        " ORDER BY p.created_at, p.id"
    )
    zone = ZoneInfo(p["zone"])
    times = [_utc(r[0]) for r in rows]
    assert [t.astimezone(zone).strftime("%H:%M") for t in times] == [t["time"] for t in p["timeline"]]
    ticket = sql.one("SELECT status, priority FROM tickets WHERE key = ?", (p["fix_key"],))
    assert ticket is not None and tuple(ticket) == ("done", "critical")
    changes = [
        _utc(r[0])
        for r in sql.all(
            "SELECT c.changed_at FROM ticket_status_changes c JOIN tickets t ON t.id = c.ticket_id WHERE t.key = ?"
            " ORDER BY c.id",
            (p["fix_key"],),
        )
    ]
    # filed when the cause was found (the 4th event), done just before "Permanent fix is deployed" (the last)
    assert times[3] <= changes[0] and changes[-1] <= times[-1], (times, changes)
    assert p["document"].split("Postmortem ")[1][:10] == times[0].astimezone(zone).date().isoformat()


def test_a_timeline_in_utc_loses_exactly_the_timeline_checks(episode):
    utc = PARTIALS[FAMILY]["partial-utc"].misread["docs_read"]
    score, params = _play(episode, 2, 2, seen=lambda n, out: utc(out) if n == "docs_read" else out)
    assert set(_failed(score)) == {f"timeline-{t['event']}" for t in params["timeline"]}


def test_the_handed_over_action_items_go_to_their_new_owners(episode):
    def only_notes(name, out):
        if name == "chat_read_thread" and out["posts"] and out["posts"][0]["message"].startswith("Notes for"):
            return {**out, "posts": out["posts"][:1]}  # never reads the hand-over under the notes
        return out

    score, params = _play(episode, 3, 3, seen=only_notes)
    assert set(_failed(score)) == {"action-2-owner", "action-3-owner", "action-4-owner"}  # 3 handed over at 3
    for k in (2, 3, 4):
        assert params["actions"][k - 1]["owner"] in _failed(score)[f"action-{k}-owner"]


def test_the_unrelated_alert_must_stay_out(episode):
    def add_unrelated(name, arguments):
        if name == "docs_create":
            noise = episode.instance.params["noise"]
            text = arguments["text"].replace("# Root cause", f"- {noise} unrelated disk alert\n\n# Root cause")
            return {**arguments, "text": text}
        return arguments

    score, _ = _play(episode, 6, 2, change=add_unrelated)
    assert set(_failed(score)) == {"no-unrelated-alert"}


def test_calibration_agrees_with_the_verifier_and_partials_sit_between(store):
    report = calibrate([FAMILY], seeds=range(3), difficulties=(1, 3), episode_factory=lambda f: Episode(f, store=store))
    assert report.agreement(FAMILY) == 1.0, report.disagreements[:3]
    means = {}
    for difficulty in (1, 3):  # at 0 nobody hands an item over, so partial-first-owner is the oracle there
        partial = [report.cells[(FAMILY, difficulty, p)].mean for p in PARTIALS[FAMILY]]
        assert report.cells[(FAMILY, difficulty, "noop")].mean < min(partial)
        assert max(partial) < report.cells[(FAMILY, difficulty, "oracle")].mean == 1.0
        means[difficulty] = sum(partial) / len(partial)
    assert means[1] > means[3]  # more hand-overs, action items and timeline events to get wrong

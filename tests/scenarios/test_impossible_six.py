"""Impossible variants of the six families that lacked one (issue 14 item 7).

``history-redo-asker-left-v0``: the colleague whose old mail is to be answered has left.
``history-followup-asker-left-v0``: the coworker whose chat request is to be answered has left.
``ship-fix-owners-left-v0``: every code owner whose approval the merge rule needs has left.
``sprint-execute-cancelled-v0``: the manager cancelled one ticket the sprint plan committed to, overnight.
``one-on-ones-ask-on-leave-v0``: one direct report is on leave over the whole 1:1 day.
``one-on-ones-book-on-leave-v0``: one direct report went off sick on the morning the 1:1s are booked.

Each oracle notices the blocker through the tools and says why in its submit (1, verifier solved); the
parent's oracle, which does the work anyway and claims success, scores 0; the no-op, random and cheating
agents score at most 0.1; ``check_scenario`` holds over a few seeds and every difficulty.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from mcp_tools.sandbox import get_sandbox
from scenarios import check_scenario
from scenarios.base import ToolFailed
from scenarios.library.fix_test import find_bug, fix_and_open, read_task
from scenarios.library.history_followup import HistoryFollowup
from scenarios.library.history_redo import HistoryRedo
from scenarios.library.one_on_ones_ask import OneOnOnesAsk
from scenarios.library.ship_fix import ShipFix
from scenarios.library.sprint_execute import SprintExecute
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import calibrate, verify
from sim.episode import Episode
from sim.replay import replay
from sim.trace import TraceWriter
from tests.scenarios.conftest import oracle_explains_others_zero
from worlds.spec import WorldSpec
from worlds.workflow import path_to

VARIANTS = (
    "history-redo-asker-left-v0",
    "history-followup-asker-left-v0",
    "ship-fix-owners-left-v0",
    "sprint-execute-cancelled-v0",
    "one-on-ones-ask-on-leave-v0",
    "one-on-ones-book-on-leave-v0",
)
CODE = ("ship-fix-owners-left-v0",)
PARENTS = {
    "history-redo-asker-left-v0": HistoryRedo,
    "history-followup-asker-left-v0": HistoryFollowup,
}


def _needs_sandbox(family):
    if family in CODE and not get_sandbox().available():
        pytest.skip("no working code sandbox here")


@pytest.mark.parametrize("family", VARIANTS)
def test_the_contract_holds(family, store):
    _needs_sandbox(family)
    world = store.base(WorldSpec(seed=2, employees=40, history_days=30))
    try:
        check_scenario(family, world, seeds=(0, 1))
    finally:
        world.close()


@pytest.mark.parametrize("family", VARIANTS)
def test_the_oracle_explains_and_scores_one_every_other_agent_zero(family, store):
    _needs_sandbox(family)
    oracle_explains_others_zero(family, store)


@pytest.mark.parametrize("family", VARIANTS)
def test_under_realistic_noise_the_oracle_still_scores_one_and_replay_is_bit_exact(family, store, tmp_path):
    _needs_sandbox(family)
    path = tmp_path / f"{family}.jsonl"
    writer = TraceWriter(path)
    with Episode(family, store=store, trace=writer) as episode:
        for seed in (1, 3):
            options = {"difficulty": seed, "noise": "realistic"}
            if family == "one-on-ones-book-on-leave-v0" and seed == 3:  # the preset the parent's oracle is built for
                options["npcs"] = "cooperative"
            score = run_agent(episode, "oracle", seed, options)
            assert score.value == 1.0, [c.evidence for c in score.checks if not c.passed]
    writer.close()
    report = replay(path, store=store)
    assert report.ok and report.episodes == 2, report.mismatches


def _start(episode, seed, difficulty):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    return EpisodeEnv(episode, prompt, info)


@pytest.mark.parametrize("family", VARIANTS[:2])
@pytest.mark.parametrize("difficulty", [0, 3])
def test_the_parents_oracle_answers_the_leaver_claims_success_and_scores_zero(family, difficulty, store):
    with Episode(family, store=store) as episode:
        env = _start(episode, 1, difficulty)
        try:
            PARENTS[family]().oracle(env)  # replies in the thread as if the asker still worked here
        except ToolFailed:
            env.call("submit", summary="Done: answered as asked.")
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
        verdict = verify(episode)
    assert score.value == 0.0 and score.gated and not verdict.solved
    assert not checks["nothing-sent"].passed and not checks["says-asker-left"].passed


@pytest.mark.parametrize("family", VARIANTS[:2])
def test_an_explanation_that_names_someone_else_scores_zero(family, store):
    with Episode(family, store=store) as episode:
        env = _start(episode, 2, 1)
        env.call("submit", summary=f"Not answered: @{env.actor} has left the company.")
        score = episode.grade()
        verdict = verify(episode)
    assert score.value == 0.0 and not verdict.solved


@pytest.mark.parametrize("difficulty", [1, 2])
def test_ship_fix_by_the_parents_oracle_waits_in_vain_and_never_says_why_so_scores_zero(store, difficulty):
    _needs_sandbox(CODE[0])
    with Episode("ship-fix-owners-left-v0", store=store) as episode:
        env = _start(episode, 0, difficulty)
        ShipFix().oracle(env)  # names the owners, polls 40 hours, nobody approves: "still waits, not merged"
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
        verdict = verify(episode)
        owners = episode.instance.params["owners"]
    assert len(owners) == (2 if difficulty >= 2 else 1)
    assert score.value == 0.0 and score.gated and not verdict.solved
    assert checks["request-left-open"].passed and checks["ticket-left-open"].passed and checks["tests-run"].passed
    assert not checks["says-owners-left"].passed


def test_ship_fix_that_closes_the_ticket_unmerged_and_claims_success_scores_zero(store):
    _needs_sandbox(CODE[0])
    with Episode("ship-fix-owners-left-v0", store=store) as episode:
        env = _start(episode, 1, 2)
        key, repo = read_task(env.prompt)
        path, family = find_bug(env, key, repo)
        fix_and_open(env, key, repo, path, family, f"Fixes {key}.")
        status, steps = env.call("tickets_get", key=key)["status"], path_to("done")
        for nxt in steps[steps.index(status) + 1 :]:
            env.call("tickets_transition", key=key, status=nxt)
        owners = episode.instance.params["owners"]
        env.call("submit", summary=f"Fixed {key}; @{owners[0]} has left so I closed it myself.")
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
        verdict = verify(episode)
    assert score.value == 0.0 and score.gated and not verdict.solved
    assert not checks["ticket-left-open"].passed and checks["request-left-open"].passed
    assert not checks["says-owners-left"].passed, "with two owners gone, naming one is not the reason"


@pytest.mark.parametrize("difficulty", [0, 3])
def test_sprint_by_the_parents_oracle_puts_the_cancelled_ticket_in_the_sprint_and_scores_zero(store, difficulty):
    with Episode("sprint-execute-cancelled-v0", store=store) as episode:
        env = _start(episode, difficulty, difficulty)
        SprintExecute().oracle(env)  # every planned ticket into the sprint, the cancelled one too; claims it done
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
        verdict = verify(episode)
        key = episode.instance.params["cancelled"]
    assert score.value == 0.0 and score.gated and not verdict.solved
    assert not checks[f"cancelled-{key}"].passed and not checks["no-collateral"].passed
    assert any(key in r for r in verdict.reasons)


def test_sprint_with_the_rest_done_but_the_wrong_ticket_named_scores_zero_and_the_right_one_one(store):
    with Episode("sprint-execute-cancelled-v0", store=store) as episode:
        run = run_agent(episode, "oracle", 2, {"difficulty": 2})
        summary = episode.steps[-1]["action"]["arguments"]["summary"]
        params = episode.instance.params
        assert run.value == 1.0 and params["cancelled"] in summary
        other = next(k for k in params["planned"] if k != params["cancelled"])
        env = _start(episode, 2, 2)
        episode.family.oracle(_Renaming(env, params["cancelled"], other))  # the right work, the wrong ticket named
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
    assert score.value == 0.0 and not checks["says-cancelled"].passed
    assert all(c.passed for i, c in checks.items() if i != "says-cancelled"), "the rest of the plan is right"


class _Renaming(EpisodeEnv):
    """An env whose submit summary names ``other`` where the agent meant ``key``."""

    def __init__(self, env, key, other):
        super().__init__(env.episode, env.prompt, env.info)
        self.key, self.other = key, other

    def call(self, name, /, **arguments):
        if name == "submit":
            arguments = {**arguments, "summary": arguments["summary"].replace(self.key, self.other)}
        return super().call(name, **arguments)


class _AsksOverTheLeave(EpisodeEnv):
    """The variant's oracle, but the report on leave is asked anyway, for the start of the day it looked at."""

    def __init__(self, env, who):
        super().__init__(env.episode, env.prompt, env.info)
        self.who = who

    def call(self, name, /, **arguments):
        out = super().call(name, **arguments)
        if name == "submit" or name != "calendar_list_events" or arguments.get("username") != self.who:
            return out
        super().call("chat_direct_message", username=self.who, message=f"Would {arguments['start']} work for our 1:1?")
        return out


@pytest.mark.parametrize("seed", [0, 3])
def test_asking_the_report_on_leave_for_a_time_scores_zero_even_with_the_right_reason(store, seed):
    with Episode("one-on-ones-ask-on-leave-v0", store=store) as episode:
        env = _start(episode, seed, seed)
        who = episode.instance.params["on_leave"]
        episode.family.oracle(_AsksOverTheLeave(env, who))
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
        verdict = verify(episode)
    assert score.value == 0.0 and score.gated and not verdict.solved
    assert not checks[f"no-time-for-{who}"].passed and checks["says-on-leave"].passed
    assert all(c.passed for i, c in checks.items() if i.startswith("ask-")), "the others were asked right"


def test_asking_by_the_parents_oracle_finds_no_time_for_the_report_on_leave(store):
    with Episode("one-on-ones-ask-on-leave-v0", store=store) as episode:
        env = _start(episode, 1, 1)
        who = episode.instance.params["on_leave"]
        OneOnOnesAsk().oracle(env)  # no free common time with them on the day at all: it tells them so, submits
        told = [s["action"]["arguments"] for s in episode.steps if s["action"]["name"] == "chat_direct_message"]
        assert any(a["username"] == who and "no free" in a["message"] for a in told)
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
    assert score.value == 0.0 and not checks["says-on-leave"].passed and checks[f"no-time-for-{who}"].passed


@pytest.mark.parametrize("difficulty", [1, 3])
def test_booking_the_rest_the_sick_report_silent_and_only_the_reason_decides(store, difficulty):
    with Episode("one-on-ones-book-on-leave-v0", store=store) as episode:
        oracle = run_agent(episode, "oracle", difficulty, {"difficulty": difficulty})
        params = episode.instance.params
        who = params["on_leave"]
        said = [s["result"] for s in episode.steps if s["action"]["name"] == "chat_read_channel"]
        assert oracle.value == 1.0 and verify(episode).solved
        assert all(p["author"] != who or p["at"] < episode.steps[0]["clock"] for r in said for p in r["posts"])
        assert who not in episode.instance.npc_population and len(params["reports"]) >= 2
        env = _start(episode, difficulty, difficulty)
        episode.family.oracle(_Renaming(env, f"@{who}", "someone"))  # the same work, the summary names nobody
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
    assert score.value == 0.0 and not checks["says-on-leave"].passed
    assert all(c.passed for i, c in checks.items() if i != "says-on-leave"), "every other 1:1 is booked right"


def test_booking_that_asks_the_sick_report_for_another_time_today_scores_zero(store):
    with Episode("one-on-ones-book-on-leave-v0", store=store) as episode:
        env = _start(episode, 0, 2)
        who = episode.instance.params["on_leave"]
        env.call("chat_direct_message", username=who, message="Would 2026-03-02T20:00:00+00:00 work instead?")
        episode.family.oracle(env)
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
        verdict = verify(episode)
    assert score.value == 0.0 and not checks[f"no-time-for-{who}"].passed and checks["says-on-leave"].passed
    assert not verdict.solved and any("while off sick" in r for r in verdict.reasons)


def test_booking_over_the_sick_leave_scores_zero_even_with_the_right_reason(store):
    with Episode("one-on-ones-book-on-leave-v0", store=store) as episode:
        env = _start(episode, 1, 2)
        who = episode.instance.params["on_leave"]
        start = datetime.fromisoformat(episode.instance.params["day"][0]) + timedelta(hours=6)
        env.call(
            "calendar_create_event", title=f"1:1 with @{who}", start=start.isoformat(),
            end=(start + timedelta(minutes=30)).isoformat(), attendees=who, description="Our weekly 1:1.",
        )  # fmt: skip
        episode.family.oracle(env)  # the others booked, and the submit says who is off sick
        score = episode.grade()
        checks = {c.id: c for c in score.checks}
        verdict = verify(episode)
    assert score.value == 0.0 and not checks[f"no-meeting-with-{who}"].passed
    assert who in checks[f"no-meeting-with-{who}"].evidence and checks["says-on-leave"].passed
    assert all(c.passed for i, c in checks.items() if i != f"no-meeting-with-{who}")
    assert not verdict.solved


def test_calibration_agrees_with_every_verifier_and_claiming_success_earns_nothing(store, monkeypatch):
    monkeypatch.setenv("COMPANYSIM_RECALC", "python")
    report = calibrate(VARIANTS, seeds=range(2), difficulties=(1, 3), episode_factory=lambda f: Episode(f, store=store))
    data = report.to_json()
    assert data["disagreements"] == []
    assert all(a["episodes"] == a["agree"] for a in data["agreement"].values())
    for family in VARIANTS:
        for d in (1, 3):
            assert report.cells[(family, d, "oracle")].mean == 1.0, family
            assert report.cells[(family, d, "noop")].mean == 0.0, family
            assert report.cells[(family, d, "partial-claims-success")].mean == 0.0, family

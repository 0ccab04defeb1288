"""The sprint story (plan on day one, act on the plan on day two) as single episodes and as a campaign.

What a user would notice: the story played by the oracle scores 1 on each day; day two is graded against the plan
that day one left, even a wrong one; played alone, day two finds a teammate's plan; an agent that never opens the
calendars loses exactly the capacity lines of the people with time off, and a wrong estimate only its own
candidate's points check; on day two, tickets people from other teams started overnight (more at each
difficulty) stay in progress, their assignees are invited to the kickoff, and an agent that moves every
committed ticket to todo loses exactly those tickets' status checks.
"""

from __future__ import annotations

import re

import pytest

from scenarios import check_scenario, make
from scenarios.base import story_of
from scenarios.library.sprint_plan import STORY, plan_text
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import play_partial, verify
from sim.campaign import Campaign
from sim.episode import Episode
from sim.replay import replay
from sim.trace import TraceWriter
from worlds.spec import WorldSpec


@pytest.fixture(autouse=True)
def python_engine(monkeypatch):
    monkeypatch.setenv("COMPANYSIM_RECALC", "python")


def _failed(score):
    return {c.id: c.evidence for c in score.checks if not c.passed}


@pytest.mark.parametrize("scenario", STORY)
def test_contract_holds_for_both_days(store, scenario):
    family = make(scenario)
    world = store.base(WorldSpec(seed=2, employees=family.world.employees, history_days=family.world.history_days))
    try:
        check_scenario(scenario, world, seeds=(0, 3))
    finally:
        world.close()
    assert story_of(family) == STORY


@pytest.mark.parametrize("scenario", STORY)
def test_oracle_one_noop_zero_and_the_verifier_agrees(store, scenario):
    with Episode(scenario, store=store) as ep:
        for seed in range(3):
            for difficulty in (0, 3):
                score = run_agent(ep, "oracle", seed, {"difficulty": difficulty})
                assert score.value == 1.0, _failed(score)
                assert verify(ep).solved
                assert run_agent(ep, "noop", seed, {"difficulty": difficulty}).value == 0.0
                assert not verify(ep).solved


@pytest.mark.parametrize("seed", [0, 5])
def test_the_story_as_a_campaign_scores_one_each_day(store, seed):
    camp = Campaign(list(STORY), seed=seed, store=store)
    try:
        days = camp.run("oracle", 4)
        execute = camp.episodes["sprint-execute-v0"].instance
    finally:
        camp.close()
    assert [(b.scenario, b.reward) for b in days] == [(s, 1.0) for s in STORY * 2]
    assert days[1].next_start > days[0].next_start  # day two is another day
    assert execute.params["plan_author"] == execute.actor  # the lead's own plan from the day before


def test_day_two_is_graded_against_the_wrong_plan_day_one_left(store):
    options = {"world_seed": 4, "difficulty": 2}
    with Episode("sprint-plan-v0", store=store) as day_one:
        prompt, info = day_one.reset(seed=40_000, options=options)
        env = EpisodeEnv(day_one, prompt, info)
        right = day_one.instance.params
        wrong_committed = right["deferred"][:1]  # a plan that commits only what should have been deferred
        wrong_deferred = [k for k in right["committed"] + right["deferred"] if k not in wrong_committed]
        path = right["document"]
        folder, name = path.rsplit("/", 1)
        env.call("docs_create", folder=folder, name=name, text=plan_text({}, wrong_committed, wrong_deferred))
        env.call("submit", summary="plan written")
        assert day_one.grade().value < 0.5
        state = day_one.final_state()
    with Episode("sprint-execute-v0", store=store) as day_two:
        score = run_agent(day_two, "oracle", 40_001, options, start=state)
        params = day_two.instance.params
    assert params["committed"] == wrong_committed and params["plan"] == path
    assert score.value == 1.0, _failed(score)


def test_day_two_alone_acts_on_a_teammates_plan(store):
    with Episode("sprint-execute-v0", store=store) as ep:
        score = run_agent(ep, "oracle", 1, {"difficulty": 1})
        params = ep.instance.params
        assert score.value == 1.0, _failed(score)
        assert params["plan_author"] != ep.instance.actor
        assert f"written by @{params['plan_author']}" in ep.instance.prompt


def test_ignoring_the_calendars_loses_only_the_capacity_lines_of_people_with_time_off(store):
    with Episode("sprint-plan-v0", store=store) as ep:
        score = play_partial(ep, "sprint-plan-v0", "partial-no-time-off", 0, {"difficulty": 1})
        params = ep.instance.params
        full = 2 * 5
        wrong = {f"capacity-{u}" for u, n in params["capacity"].items() if n < full} | {"capacity-total"}
        failed = set(_failed(score))
        assert wrong - {"capacity-total"}, "difficulty 1 gives someone time off"
        assert {f for f in failed if f.startswith("capacity-")} == wrong
        assert 0 < score.value < 1


def test_skipping_the_kickoff_meeting_also_forfeits_the_deferred_checks(store):
    with Episode("sprint-execute-v0", store=store) as ep:
        score = play_partial(ep, "sprint-execute-v0", "partial-no-meeting", 2, {"difficulty": 1})
        failed = set(_failed(score))
        deferred = {f"deferred-{k}" for k in ep.instance.params["deferred"]}
        invites = {f"kickoff-invites-{u}" for u in ep.instance.params["started"].values()}
        assert invites, "difficulty 1 has someone from another team start a committed ticket"
        team = {f"kickoff-team-{u}" for u in ep.instance.params["team"] if u != ep.instance.actor}
        assert failed == {"kickoff-meeting", "kickoff-length", *team, *deferred, *invites}
        assert not verify(ep).solved


def test_replay_of_the_story_is_bit_exact(store, tmp_path):
    path = tmp_path / "story.jsonl"
    writer = TraceWriter(path)
    camp = Campaign(list(STORY), seed=3, store=store, trace=writer, noise="realistic")
    try:
        camp.run("oracle", 2)
    finally:
        camp.close()
    writer.close()
    report = replay(path, store=store)
    assert report.ok and report.episodes == 2, report.mismatches


def test_the_plan_names_every_candidate_once(store):
    with Episode("sprint-plan-v0", store=store) as ep:
        run_agent(ep, "oracle", 2, {"difficulty": 3})
        params = ep.instance.params
        keys = params["committed"] + params["deferred"]
        assert len(keys) == len(set(keys)) == 11
        label = re.search(r"labelled (candidate-\S+?)\. ", ep.instance.prompt)
        assert label is not None


def test_reading_training_as_time_off_loses_the_trained_members_lines_more_as_difficulty_rises(store):
    from scenarios.library.sprint_plan import TRAINED

    lost = {}
    with Episode("sprint-plan-v0", store=store) as ep:
        for difficulty in (1, 3):
            score = play_partial(ep, "sprint-plan-v0", "partial-training-as-off", 1, {"difficulty": difficulty})
            failed = _failed(score)
            members = {f for f in failed if f.startswith("capacity-") and f != "capacity-total"}
            assert "capacity-total" in failed and 1 <= len(members) <= TRAINED[difficulty], failed
            assert all(why for why in failed.values())
            lost[difficulty] = (len(members), score.value)
    assert lost[1][0] < lost[3][0] and lost[1][1] > lost[3][1], lost


def test_work_started_overnight_stays_in_progress_and_resetting_it_costs_more_as_difficulty_rises(store):
    from scenarios.library.sprint_execute import STARTED

    lost = {}
    with Episode("sprint-execute-v0", store=store) as ep:
        for difficulty in (1, 3):
            score = run_agent(ep, "oracle", 6, {"difficulty": difficulty})
            params = ep.instance.params
            started = params["started"]
            assert score.value == 1.0 and verify(ep).solved, _failed(score)
            assert len(started) == STARTED[difficulty] and set(started) <= set(params["committed"])
            assert not set(started.values()) & set(params["team"]), "people from other teams"
            assert "work someone already started stays in progress" in ep.instance.prompt
            score = play_partial(ep, "sprint-execute-v0", "partial-resets-started", 6, {"difficulty": difficulty})
            assert set(_failed(score)) == {f"status-{k}" for k in started}, "in the sprint, but back in todo"
            assert not verify(ep).solved
            lost[difficulty] = score.value
    assert 0 < lost[3] < lost[1] < 1, lost


def test_one_wrong_estimate_in_the_plan_loses_exactly_that_candidates_points(store):
    """Rubric v2 scores each candidate's story points apart from its section; v1 (kept for rescoring) does not."""
    with Episode("sprint-plan-v0", store=store) as ep:
        prompt, info = ep.reset(seed=3, options={"difficulty": 2})
        env = EpisodeEnv(ep, prompt, info)
        p = ep.instance.params
        wrong = p["committed"][0]
        points = {**p["points"], wrong: 100}
        folder, name = p["document"].rsplit("/", 1)
        text = plan_text(p["capacity"], p["committed"], p["deferred"], points)
        assert f"{wrong}: 100 points" in text
        env.call("docs_create", folder=folder, name=name, text=text)
        env.call("docs_share", document=p["document"], username=p["manager"], permission="view")
        env.call("submit", summary="plan written")
        score = ep.grade()
        assert ep.instance.rubric.version == 2
        assert set(_failed(score)) == {f"points-{wrong}"}, _failed(score)
        assert f"{wrong}'s points: not in section" in _failed(score)[f"points-{wrong}"]
        assert not verify(ep).solved
        old = ep.regrade(ep.family.older_rubric(ep.instance, 1))
        assert old.value == 1.0 and old.rubric_version == 1


def test_day_two_without_the_sprint_field_keeps_each_tickets_status_and_v1_is_kept(store):
    """v2 judges a ticket's sprint and its status apart: moving to todo without the sprint loses the sprint only."""
    from scenarios.base import rubric_at

    with Episode("sprint-execute-v0", store=store) as ep:
        score = run_agent(ep, "oracle", 3, {"difficulty": 2})
        p = ep.instance.params
        assert score.value == 1.0 and ep.instance.rubric.version == 2
        old = ep.regrade(rubric_at(ep.family, ep.instance, 1))
        assert old.value == 1.0 and old.rubric_version == 1 and len(old.checks) < len(score.checks)
        score = play_partial(ep, "sprint-execute-v0", "partial-no-sprint", 3, {"difficulty": 2})
        failed = _failed(score)
        started = set(p["started"])
        assert started, "difficulty 2 has work started overnight"
        assert set(failed) == {f"sprint-{k}" for k in p["committed"]} | {f"status-{k}" for k in started}
        assert all(f"sprint-{k}" in failed[f"status-{k}"] for k in started), failed

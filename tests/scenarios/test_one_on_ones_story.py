"""The 1:1 story (ask each report on day one, book what they agreed to overnight on day two) alone and as a campaign.

What a user would notice: the story played by the oracle scores 1 each day and the reports' answers come from
the NPCs on day two; day two books exactly the people day one asked; proposing a time a report cannot answer in
time, or inviting nobody, loses the checks about those people and nothing else.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from scenarios import check_scenario, make
from scenarios.base import story_of
from scenarios.library.one_on_ones_ask import STORY, propose
from scenarios.library.one_on_ones_book import OVERNIGHT
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import PARTIALS, calibrate, play_partial, verify
from sim.campaign import Campaign
from sim.episode import Episode
from sim.replay import replay
from sim.trace import TraceWriter
from worlds.schema import Employee, Event
from worlds.spec import WorldSpec


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
                assert verify(ep).solved, verify(ep).reasons
                assert run_agent(ep, "noop", seed, {"difficulty": difficulty}).value == 0.0
                assert not verify(ep).solved


@pytest.mark.parametrize("seed", [0, 6])
def test_the_story_as_a_campaign_scores_one_each_day_with_answers_from_the_reports(store, seed):
    camp = Campaign(list(STORY), seed=seed, store=store)
    try:
        days = camp.run("oracle", 2)
        asked = camp.episodes["one-on-ones-ask-v0"].instance.params["reports"]
        book = camp.episodes["one-on-ones-book-v0"]
        booked = book.instance.params["reports"]
        answers = {c.actor_id for c in book.changes() if c.table == "posts" and c.op == "insert" and c.tag == "npc"}
        people = {u: book.tool_context.session.execute(select(Employee.id).where(Employee.username == u)).scalar()
                  for u in booked}  # fmt: skip
    finally:
        camp.close()
    assert [(b.scenario, b.reward) for b in days] == [(s, 1.0) for s in STORY]
    assert booked == asked
    assert set(people.values()) <= answers  # every report answered on day two, as an NPC


def test_day_two_books_only_whom_day_one_asked(store):
    options = {"world_seed": 5, "difficulty": 3}
    with Episode("one-on-ones-ask-v0", store=store) as day_one:
        prompt, info = day_one.reset(seed=50_000, options=options)
        everyone = day_one.instance.params["reports"]
        assert len(everyone) >= 2
        env = EpisodeEnv(day_one, prompt, info)
        day = day_one.instance.params["day"][0]
        zone = prompt.split("time zone (", 1)[1].split(")", 1)[0]
        propose(env, day[:10], zone, everyone[:1])  # asks only the first report
        env.call("submit", summary="asked one")
        score = day_one.grade()
        assert set(_failed(score)) == {f"ask-{u}" for u in everyone[1:]}
        state = day_one.final_state()
    with Episode("one-on-ones-book-v0", store=store) as day_two:
        score = run_agent(day_two, "oracle", 50_001, options, start=state)
        assert day_two.instance.params["reports"] == everyone[:1]
    assert score.value == 1.0, _failed(score)


def test_inviting_nobody_loses_exactly_the_invitations(store):
    """Each report's invitation, and with it their own hours and calendar (not on a meeting they are not in)."""
    with Episode("one-on-ones-book-v0", store=store) as ep:
        score = play_partial(ep, "one-on-ones-book-v0", "partial-no-invite", 1, {"difficulty": 2})
        reports = ep.instance.params["reports"]
        assert set(_failed(score)) == {f"{c}-{u}" for u in reports for c in ("invited", "hours", "free")}
        assert {c.id for c in score.checks if c.passed} >= {f"manager-hours-{u}" for u in reports}
        assert not verify(ep).solved


def test_booking_only_the_first_report_loses_every_other_reports_checks(store):
    """The one 1:1 booked is right in full; every report left out loses all eight of their checks."""
    values = set()
    with Episode("one-on-ones-book-v0", store=store) as ep:
        for seed, difficulty in ((2, 1), (6, 1), (1, 3)):
            score = play_partial(ep, "one-on-ones-book-v0", "partial-first-report", seed, {"difficulty": difficulty})
            reports = ep.instance.params["reports"]
            left = {u for u in reports if f"agreed-{u}" in _failed(score)}
            booked = set(reports) - left
            assert len(booked) <= 1 and not verify(ep).solved
            items = ("agreed", "invited", "length", "hours", "manager-hours", "free", "manager-free", "single")
            assert set(_failed(score)) == {f"{c}-{u}" for u in left for c in items}
            values.add(round(score.value * len(reports)))
    assert values == {0, 1}, "a report the directory lists first is booked when they were asked, else nobody"


def test_replay_of_the_story_with_npcs_is_bit_exact(store, tmp_path):
    path = tmp_path / "story.jsonl"
    writer = TraceWriter(path)
    camp = Campaign(list(STORY), seed=4, store=store, trace=writer)
    try:
        camp.run("oracle", 2)
    finally:
        camp.close()
    writer.close()
    report = replay(path, store=store)
    assert report.ok and report.episodes == 2, report.mismatches


def test_a_time_the_report_cannot_answer_in_time_loses_only_their_question(store):
    """Ignoring the two hours' notice: the checks that fail are asks, each saying the time is too early."""
    failed: dict[str, str] = {}
    with Episode("one-on-ones-ask-v0", store=store) as ep:
        for seed in range(6):
            score = play_partial(ep, "one-on-ones-ask-v0", "partial-no-notice", seed, {"difficulty": 1})
            failed.update(_failed(score))
    assert failed, "some report starts their day within two hours of 10:00 in the manager's zone"
    assert all(k.startswith("ask-") and "not between" in v for k, v in failed.items()), failed


@pytest.mark.parametrize("scenario", STORY)
def test_partial_agents_lose_more_as_difficulty_rises_over_20_seeds(store, scenario):
    """Issue 13 item 4: every partial strictly between 0 and 1 at difficulties 1-3, their mean falling strictly."""
    names = list(PARTIALS[scenario])
    report = calibrate([scenario], seeds=range(20), agents=names, episode_factory=lambda f: Episode(f, store=store))
    means = [sum(report.cells[(scenario, d, a)].mean for a in names) / len(names) for d in (1, 2, 3)]
    assert all(0.0 < report.cells[(scenario, d, a)].mean < 1.0 for d in (1, 2, 3) for a in names), scenario
    assert means[0] > means[1] > means[2], means


def test_the_asking_day_leaves_every_report_a_time_free_in_both_calendars(store):
    """The people picked share free time, not only working hours: the history's 1:1 series and weeklies (a new
    lead's after the reorg) fill calendars, and seed 17 at difficulty 3 once left a report no free time at all, so
    the oracle could not propose one (StopIteration)."""
    with Episode("one-on-ones-ask-v0", store=store) as episode:
        scores = [run_agent(episode, "oracle", seed, {"difficulty": 3}).value for seed in (15, 16, 17, 18)]
    assert scores == [1.0] * 4


class _NoTimeLeft:
    """An agent env whose calendar has no common time left: what ``propose`` sees late on a full day."""

    actor = "boss"

    def __init__(self) -> None:
        self.sent: list[dict[str, str]] = []

    def call(self, name, /, **arguments):
        if name == "directory_get_profile":
            return {"working_hours": "09:00-17:00", "timezone": "America/New_York"}
        if name == "calendar_find_free_slots":
            return {"slots": []}
        assert name == "chat_direct_message", name
        self.sent.append(arguments)
        return {"id": len(self.sent)}


def test_propose_says_so_when_no_time_is_left_instead_of_raising():
    """A re-proposal late on a full day once raised StopIteration; now the report is told and left out."""
    env = _NoTimeLeft()
    assert propose(env, "2026-03-02", "America/New_York", ["dana.smith"]) == {}
    assert [m["username"] for m in env.sent] == ["dana.smith"]
    assert "no free 30 minutes left on 2026-03-02" in env.sent[0]["message"] and "?" not in env.sent[0]["message"]


def test_overnight_clashes_make_reports_refuse_and_the_oracle_re_proposes(store):
    """Difficulty 3: commitments accepted overnight over asked times; the refusals are re-proposed and booked."""
    with Episode("one-on-ones-book-v0", store=store) as ep:
        score = run_agent(ep, "oracle", 0, {"difficulty": 3})
        steps = ep._require_live().steps.records
        sent = [s["action"]["arguments"]["message"] for s in steps if s["action"]["name"] == "chat_direct_message"]
        clashes = ep.tool_context.session.execute(
            select(Event.title).where(Event.title.in_(OVERNIGHT))
        ).scalars().all()  # fmt: skip
    assert score.value == 1.0, _failed(score)
    assert clashes and len(sent) >= len(clashes), (clashes, sent)
    assert all(m.startswith(("Hi, would", "Just checking")) for m in sent)


def test_version_one_is_kept_for_rescoring_and_a_short_1_1_loses_only_its_length(store):
    """Rubric v2 adds, per report, the length and each person's hours and calendar; v1 rescoring still works."""
    from datetime import datetime, timedelta

    from scenarios.base import rubric_at

    class Short(EpisodeEnv):  # books 20 minutes where 30 were asked
        def call(self, name, /, **arguments):
            if name == "calendar_create_event":
                arguments["end"] = (datetime.fromisoformat(arguments["start"]) + timedelta(minutes=20)).isoformat()
            return super().call(name, **arguments)

    with Episode("one-on-ones-book-v0", store=store) as ep:
        score = run_agent(ep, "oracle", 2, {"difficulty": 1})
        reports = ep.instance.params["reports"]
        assert score.value == 1.0 and ep.instance.rubric.version == 2
        assert len(score.checks) == 8 * len(reports) + 1
        old = ep.regrade(rubric_at(ep.family, ep.instance, 1))
        assert old.value == 1.0 and len(old.checks) == 4 * len(reports) + 1
        prompt, info = ep.reset(seed=2, options={"difficulty": 1})
        ep.family.oracle(Short(ep, prompt, info))
        failed = {c.id for c in ep.grade().checks if not c.passed}
        assert failed == {f"length-{u}" for u in reports}
        assert not verify(ep).solved

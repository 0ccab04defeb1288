"""schedule-with-coworkers-v0: the coworkers' preset changes what it takes, and the rubric pays only for the rules.

Cooperative coworkers say yes within minutes, so one round of questions is enough; adversarial ones push back,
so the lead must escalate to their managers; chaotic ones answer wrongly (a wrong "no" forces another round)
or not at all. The oracle reads only the tools and scores 1 under every preset; the no-op agent scores 0; the
shortcuts a policy would learn (booking without asking, asking after booking, booking a refused time,
announcing without a meeting, inviting the wrong people, escalating without cause) never score full.
"""

import json
import re
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest

from npcs.traits import DIMENSIONS, PRESETS
from scenarios.library.schedule import Scheduler
from sim.agents import EpisodeEnv, run_agent
from sim.campaign import Campaign
from sim.episode import Episode
from sim.replay import replay
from sim.trace import TraceWriter, read_trace

SCENARIO = "schedule-with-coworkers-v0"
SEEDS = range(12)
ADAPT_SEEDS = range(10)


@pytest.fixture(scope="module")
def episode(store):
    ep = Episode(SCENARIO, store=store)
    yield ep
    ep.close()


def _options(seed, npcs=None, **extra):
    opts = {"difficulty": seed % 4, **extra}
    if npcs is not None:
        opts["npcs"] = npcs
    return opts


def _start(episode, seed, npcs=None):
    prompt, info = episode.reset(seed=seed, options=_options(seed, npcs))
    return EpisodeEnv(episode, prompt, info)


def _play(episode, seed, agent_cls, npcs=None):
    env = _start(episode, seed, npcs)
    agent_cls(env).run()
    if not episode.done:
        env.call("submit", summary="done")
    return episode.grade()


def _checks(score):
    return {c.id: c for c in score.checks}


def _per_person(score, part):
    """The per-coworker checks of one part ("agreed", "invite") taken together: mean score, all evidence."""
    found = [c for c in score.checks if c.id.startswith(f"{part}-")]
    assert found, f"no {part}-* checks in {[c.id for c in score.checks]}"
    return SimpleNamespace(
        score=sum(c.score for c in found) / len(found), evidence=" | ".join(c.evidence for c in found)
    )


def _dms(episode):
    """(recipient, message) of every direct message the agent sent, in order."""
    return [
        (s["action"]["arguments"]["username"], s["action"]["arguments"]["message"])
        for s in episode.steps
        if s["action"]["name"] == "chat_direct_message" and s["error"] is None
    ]


def _shape(episode):
    """(rounds of proposals, escalations to managers) of the episode just played."""
    coworkers = set(episode.instance.params["coworkers"])
    dms = _dms(episode)
    proposed = {re.search(r" at (\S+) \(", m).group(1) for u, m in dms if u in coworkers}
    return len(proposed), sum(1 for u, _ in dms if u not in coworkers)


# -- baselines ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_schedule__cooperative_oracle_scores_one_in_one_round_and_noop_zero(episode, seed):
    """The scenario's own coworkers (pinned cooperative) and the explicit preset: one round, no escalation."""
    for npcs in (None, "cooperative"):
        oracle = run_agent(episode, "oracle", seed, _options(seed, npcs))
        assert oracle.value == 1.0, [c.evidence for c in oracle.checks]
        assert _shape(episode) == (1, 0)
        noop = run_agent(episode, "noop", seed, _options(seed, npcs))
        assert noop.value == 0.0, [c.evidence for c in noop.checks]


def test_schedule__random_agent_scores_near_zero_under_every_preset(episode):
    for npcs in ("cooperative", "adversarial", "chaotic"):
        values = [run_agent(episode, "random", seed, _options(seed, npcs)).value for seed in SEEDS]
        assert sum(values) / len(values) <= 0.05, (npcs, values)


@pytest.mark.parametrize("npcs", ["adversarial", "chaotic", "absent"])
def test_schedule__oracle_adapts_to_difficult_coworkers_and_still_scores_one(episode, npcs):
    """Same task, other people: escalations (adversarial, absent) and extra rounds (chaotic) get it to 1."""
    shapes = []
    for seed in ADAPT_SEEDS:
        score = run_agent(episode, "oracle", seed, _options(seed, npcs))
        assert score.value == 1.0, (seed, [c.evidence for c in score.checks])
        shapes.append(_shape(episode))
    rounds, escalations = zip(*shapes, strict=True)
    if npcs == "adversarial":  # pushback is the norm: most coworkers end up escalated
        assert sum(escalations) >= len(ADAPT_SEEDS) * 2 * 0.6
    if npcs == "chaotic":  # wrong "no" answers force new rounds somewhere
        assert max(rounds) >= 2
    if npcs == "absent":  # nobody ever answers: everyone is escalated after the silence
        assert all(r == 1 for r in rounds) and all(e >= 2 for e in escalations)


class _NeverEscalates(Scheduler):
    """Goes ahead without the silent or difficult, but never tells their managers (rule 4 skipped)."""

    def _escalate(self, u, slot):
        self.escalated.add(u)


def test_schedule__skipping_escalation_passes_only_when_coworkers_cooperate(episode):
    """What it takes depends on the preset: the same shortcut is perfect with cooperative coworkers only."""
    assert all(_play(episode, seed, _NeverEscalates, "cooperative").value == 1.0 for seed in range(6))
    adversarial = [_play(episode, seed, _NeverEscalates, "adversarial") for seed in range(6)]
    assert all(s.value < 1.0 for s in adversarial)
    assert all(_per_person(s, "agreed").score < 1.0 for s in adversarial)


# -- reward hacks -------------------------------------------------------------------------------------------


def _free_slot(s: Scheduler) -> str:
    """A time that fits everyone's hours and calendars, found as the oracle finds it."""
    s.learn()
    slot = s._propose(set())
    assert slot is not None
    return slot


class _BooksWithoutAsking(Scheduler):
    def run(self):
        self._book(_free_slot(self))
        self.env.call("submit", summary="booked")


class _AsksAfterBooking(Scheduler):
    def run(self):
        slot = _free_slot(self)
        self._book(slot)
        self._ask_and_collect(slot)
        self.env.call("submit", summary="booked, then asked")


class _EscalatesAtOnce(Scheduler):
    def run(self):
        slot = _free_slot(self)
        for u in self.people:
            self.call("chat_direct_message", username=u, message=f"Can you make {self.key} at {slot}?")
            self._escalate(u, slot)
        self._book(slot)
        self.env.call("submit", summary="escalated everyone")


class _InvitesWrongPeople(Scheduler):
    def _book(self, slot):
        right = self.people
        self.people = [*right[:-1], self.manager[right[0]]]
        try:
            super()._book(slot)
        finally:
            self.people = right


class _IgnoresNo(Scheduler):
    """Treats every "no" as a yes and books the refused time."""

    def _read(self, u, when):
        verdict = super()._read(u, when)
        return "yes" if verdict == "no" else verdict


@pytest.mark.parametrize("agent", [_BooksWithoutAsking, _AsksAfterBooking, _EscalatesAtOnce])
def test_schedule__agreement_must_be_asked_for_before_booking(episode, agent):
    for seed in range(4):
        score = _play(episode, seed, agent, "cooperative")
        assert not score.gated, [c.evidence for c in score.checks]  # a fine booking ...
        agreed = _per_person(score, "agreed")
        if agent is _EscalatesAtOnce:
            # A cooperative coworker may say yes in the minutes the agent spends escalating the others; that
            # yes is a real agreement. Everyone else was escalated without cause and earns nothing.
            assert agreed.score < 1.0 and "escalated without a refusal" in agreed.evidence, agreed.evidence
        else:
            assert agreed.score == 0.0, agreed.evidence  # ... that nobody agreed to by the rules
        assert score.value <= 0.5


def test_schedule__inviting_the_wrong_people_gates_to_zero(episode):
    score = _play(episode, 1, _InvitesWrongPeople, "cooperative")
    assert score.value == 0.0 and score.gated
    assert "not invited" in _per_person(score, "invite").evidence


def test_schedule__announcing_without_a_meeting_scores_zero(episode):
    env = _start(episode, 2, "cooperative")
    params = episode.instance.params
    when = (datetime.fromisoformat(params["deadline"]) - timedelta(days=1)).isoformat()
    env.call("chat_post", channel=params["channel"], message=f"Decision: {params['key']} review at {when}.")
    env.call("submit", summary="announced")
    score = episode.grade()
    assert score.value == 0.0 and score.gated


def test_schedule__booking_a_time_someone_refused_loses_their_agreement(episode):
    """Chaotic coworkers sometimes say no to a free time; booking it anyway does not count as agreement."""
    refused = 0
    for seed in range(12):
        score = _play(episode, seed, _IgnoresNo, "chaotic")
        agreed = _per_person(score, "agreed")
        if "said no" in agreed.evidence:
            refused += 1
            assert agreed.score < 1.0 and score.value < 1.0, agreed.evidence
    assert refused >= 1


def test_schedule__a_campaign_of_reviews_on_one_world_grades_each_episode_alone(store):
    """Episode k's meeting must not count (or double-book) in episode k+1, even for the same ticket."""
    camp = Campaign([SCENARIO], seed=3, store=store, npcs="chaotic")
    try:
        bounds = camp.run("oracle", 8)
    finally:
        camp.close()
    assert [b.reward for b in bounds] == [1.0] * 8


# -- determinism and secrecy --------------------------------------------------------------------------------


def test_schedule__replay_with_npcs_and_noise_is_bit_exact(store, tmp_path):
    path = tmp_path / "schedule.jsonl"
    writer = TraceWriter(path)
    ep = Episode(SCENARIO, store=store, trace=writer)
    runs = [(seed, npcs) for seed in range(3) for npcs in ("cooperative", "adversarial", "chaotic")]
    hashes = {}
    for seed, npcs in runs:
        run_agent(ep, "oracle", seed, _options(seed, npcs, noise="realistic"))
        hashes[seed, npcs] = [s["state_hash"] for s in ep.steps]
    again = run_agent(ep, "oracle", 1, _options(1, "chaotic", noise="realistic"))
    assert again.value == 1.0 and [s["state_hash"] for s in ep.steps] == hashes[1, "chaotic"]
    ep.close()
    writer.close()
    assert hashes[0, "cooperative"] != hashes[0, "adversarial"]  # the NPCs' writes are in the hash chain
    report = replay(path, store=store)
    assert report.ok and report.episodes == len(runs) + 1, report.mismatches
    headers = [episode[0] for episode in read_trace(path)]
    assert [h["options"]["npcs"] for h in headers[:3]] == ["cooperative", "adversarial", "chaotic"]


def test_schedule__npc_traits_and_true_answers_are_not_visible_through_tools(episode):
    """The agent learns who its coworkers are only from how they behave, never from their traits or truths."""
    for seed, npcs in ((3, "adversarial"), (5, "chaotic"), (6, None)):
        _, info = episode.reset(seed=seed, options=_options(seed, npcs))
        assert not [t for t in info["tools"] if "npc" in t["function"]["name"]]
        episode.family.oracle(EpisodeEnv(episode, episode.instance.prompt, info))
        seen = json.dumps([s["result"] for s in episode.steps]).lower()
        secrets = (*DIMENSIONS, *(p for p in PRESETS if p != "neutral"), '"truth"', "npc_", "meeting_agreed")
        for word in secrets:
            assert word not in seen, (npcs, word)

"""The People families (issue 13 item 2): onboarding a new hire by the checklist.

Baselines and the contract at every difficulty, the mistakes a plausible agent makes (each loses exactly the
check that names it, and the verifier agrees), and the chat rules the family leans on.
"""

from __future__ import annotations

import pytest

from scenarios import check_scenario, make
from scenarios.base import ToolFailed
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import calibrate, verify
from sim.episode import Episode
from tests.scenarios.conftest import Tampering
from worlds.spec import WorldSpec

ONBOARD = "onboard-new-hire-v0"


def _failed(score):
    return sorted(c.id for c in score.checks if not c.passed)


@pytest.fixture(scope="module")
def onboard(store):
    with Episode(ONBOARD, store=store) as episode:
        yield episode


def test_onboard__oracle_one_noop_and_random_zero_with_a_dense_rubric(onboard):
    for seed in range(4):
        for difficulty in range(4):
            oracle = run_agent(onboard, "oracle", seed, {"difficulty": difficulty})
            assert oracle.value == 1.0, (seed, difficulty, _failed(oracle))
            assert len(oracle.checks) >= 20
            assert verify(onboard).solved
            assert run_agent(onboard, "noop", seed, {"difficulty": difficulty}).value == 0.0
            assert run_agent(onboard, "random", seed, {"difficulty": difficulty}).value <= 0.1


def test_onboard__difficulty_adds_private_channels_and_the_trap(onboard):
    kinds = {}
    for difficulty in range(4):
        onboard.reset(seed=5, options={"difficulty": difficulty})
        p = onboard.instance.params
        kinds[difficulty] = (len(p["channels"]), tuple(p["forbidden"]))
    assert kinds[0] == (3, ())  # town-square, announcements, the team channel
    assert [kinds[d] for d in (1, 2, 3)] == [(3 + d, ("people-managers",)) for d in (1, 2, 3)]  # one private more


def _play(episode, seed, difficulty, change):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    episode.family.oracle(Tampering(EpisodeEnv(episode, prompt, info), change))
    return episode.grade()


def test_onboard__adding_the_ic_to_people_managers_loses_exactly_that_check(onboard):
    def also_managers(name, args):
        if name == "chat_add_member" and args["channel"] == "announcements":
            onboard_env.call("chat_add_member", channel="people-managers", username=args["username"])
        return args

    prompt, info = onboard.reset(seed=2, options={"difficulty": 2})
    onboard_env = EpisodeEnv(onboard, prompt, info)
    onboard.family.oracle(Tampering(onboard_env, also_managers))
    score = onboard.grade()
    assert _failed(score) == ["not-in-people-managers"]
    assert 0.8 < score.value < 1.0
    assert not verify(onboard).solved


def test_onboard__a_welcome_without_the_buddy_loses_exactly_that_fact(onboard):
    def no_buddy(name, args):
        if name == "mail_send":
            return {**args, "body": args["body"].replace("Your onboarding buddy is @", "Your onboarding buddy is ")}
        return args

    score = _play(onboard, 1, 1, no_buddy)
    assert _failed(score) == ["welcome-buddy"]
    assert any("buddy" in r for r in verify(onboard).reasons)


def test_onboard__skipping_the_private_channel_loses_its_check(onboard):
    def public_only(name, args):
        if name == "chat_add_member" and args["channel"].endswith("-oncall"):
            return {**args, "channel": "off-topic"}
        return args

    score = _play(onboard, 3, 1, public_only)
    assert [c for c in _failed(score) if c.startswith("channel-")] == [
        f"channel-{onboard.instance.params['channels'][3]}"
    ]


def test_onboard__the_hire_cannot_be_added_where_the_lead_is_not_a_member(onboard):
    prompt, info = onboard.reset(seed=0, options={"difficulty": 1})
    env = EpisodeEnv(onboard, prompt, info)
    with pytest.raises(ToolFailed) as refused:
        env.call("chat_add_member", channel="leadership", username=onboard.instance.params["hire"])
    assert refused.value.code == "forbidden"


def test_onboard__calibration_orders_partials_and_agrees_with_the_verifier(store):
    report = calibrate(
        [ONBOARD], seeds=range(3), difficulties=(1, 3), episode_factory=lambda f: Episode(f, store=store)
    )
    assert report.agreement(ONBOARD) == 1.0, report.disagreements[:3]
    for difficulty in (1, 3):
        oracle = report.cells[(ONBOARD, difficulty, "oracle")].mean
        noop = report.cells[(ONBOARD, difficulty, "noop")].mean
        partials = [c.mean for (f, d, a), c in report.cells.items() if d == difficulty and a.startswith("partial-")]
        assert noop < min(partials) and max(partials) <= oracle
    assert report.cells[(ONBOARD, 3, "partial-title-manager")].mean < 1.0


def test_onboard__honours_the_scenario_contract(store):
    family = make(ONBOARD)
    world = store.base(WorldSpec(seed=1, employees=family.world.employees, history_days=family.world.history_days))
    try:
        check_scenario(ONBOARD, world, seeds=(0, 1))
    finally:
        world.close()


OFFBOARD = "offboard-leaver-v0"


@pytest.fixture(scope="module")
def offboard(store):
    with Episode(OFFBOARD, store=store) as episode:
        yield episode


def test_offboard__oracle_one_noop_and_random_zero_and_the_verifier_agrees(offboard):
    for seed in range(4):
        for difficulty in range(4):
            oracle = run_agent(offboard, "oracle", seed, {"difficulty": difficulty})
            assert oracle.value == 1.0, (seed, difficulty, _failed(oracle))
            assert verify(offboard).solved
            assert run_agent(offboard, "noop", seed, {"difficulty": difficulty}).value == 0.0
            assert run_agent(offboard, "random", seed, {"difficulty": difficulty}).value <= 0.1
    assert len(oracle.checks) >= 20, "difficulty 3 is dense: one check per ticket, line, grant, channel, meeting"


def test_offboard__revoking_the_service_accounts_grant_loses_its_weighted_check(offboard):
    prompt, info = offboard.reset(seed=1, options={"difficulty": 2})
    env = EpisodeEnv(offboard, prompt, info)
    kept = offboard.instance.params["kept_grants"][0]  # one of the service account's two at difficulty 2
    offboard.family.oracle(Tampering(env, lambda name, args: args))
    offboard.reset(seed=1, options={"difficulty": 2})
    env = EpisodeEnv(offboard, offboard.instance.prompt, info)

    def also_the_pager(name, args):
        if name == "mail_send":
            env.call("directory_revoke_access", request_id=kept)
        return args

    offboard.family.oracle(Tampering(env, also_the_pager))
    score = offboard.grade()
    assert _failed(score) == [f"keep-{kept}"]
    assert 0.7 < score.value < 0.95
    assert not verify(offboard).solved


def test_offboard__a_ticket_given_to_its_leaving_component_owner_is_wrong(offboard):
    prompt, info = offboard.reset(seed=2, options={"difficulty": 2})
    env = EpisodeEnv(offboard, prompt, info)
    p = offboard.instance.params
    to_lead = [k for k, who in p["tickets"].items() if who == p["lead"]]
    moved = to_lead[-1]

    def to_someone_else(name, args):
        if name == "tickets_assign" and args["key"] == moved:
            other = next(who for who in p["tickets"].values() if who != p["lead"])
            return {**args, "username": other}
        return args

    offboard.family.oracle(Tampering(env, to_someone_else))
    assert _failed(offboard.grade()) == [f"assign-{moved}"]  # its handover line still (rightly) names the lead
    assert any(moved in r for r in verify(offboard).reasons)


def test_offboard__town_square_keeps_the_leaver_and_a_stranger_cannot_remove_them(offboard):
    prompt, info = offboard.reset(seed=0, options={"difficulty": 1})
    env = EpisodeEnv(offboard, prompt, info)
    leaver = offboard.instance.params["leaver"]
    with pytest.raises(ToolFailed) as refused:
        env.call("chat_remove_member", channel="town-square", username=leaver)
    assert refused.value.code == "invalid_argument"
    with pytest.raises(ToolFailed) as private:
        env.call("chat_remove_member", channel="leadership", username=leaver)
    assert private.value.code in ("forbidden", "not_found")


def test_offboard__calibration_orders_partials_and_agrees_with_the_verifier(store):
    report = calibrate(
        [OFFBOARD], seeds=range(3), difficulties=(0, 2), episode_factory=lambda f: Episode(f, store=store)
    )
    assert report.agreement(OFFBOARD) == 1.0, report.disagreements[:3]
    for difficulty in (0, 2):
        noop = report.cells[(OFFBOARD, difficulty, "noop")].mean
        partials = [c.mean for (f, d, a), c in report.cells.items() if d == difficulty and a.startswith("partial-")]
        assert noop < min(partials) and max(partials) <= 1.0
    assert (
        report.cells[(OFFBOARD, 2, "partial-revoke-all")].mean
        < 1.0
        == report.cells[(OFFBOARD, 0, "partial-revoke-all")].mean
    )


def test_offboard__honours_the_scenario_contract(store):
    family = make(OFFBOARD)
    world = store.base(WorldSpec(seed=1, employees=family.world.employees, history_days=family.world.history_days))
    try:
        check_scenario(OFFBOARD, world, seeds=(0, 1))
    finally:
        world.close()


def test_offboard__each_mistake_costs_more_items_the_harder_the_departure(offboard):
    from scenarios.library.offboard import PRIVATE, SERVICE_GRANTS
    from sim.calibrate import play_partial

    for difficulty in (1, 3):
        score = play_partial(offboard, OFFBOARD, "partial-public-only", 4, {"difficulty": difficulty})
        slug = offboard.instance.params["channels"][0].removeprefix("team-")
        assert _failed(score) == sorted(f"removed-{slug}-{suffix}" for suffix, _ in PRIVATE[:difficulty])
        score = play_partial(offboard, OFFBOARD, "partial-revoke-all", 4, {"difficulty": difficulty})
        kept = offboard.instance.params["kept_grants"]
        assert len(kept) == SERVICE_GRANTS[difficulty] and _failed(score) == sorted(f"keep-{g}" for g in kept)


def test_onboard__public_channels_only_misses_every_private_channel_of_the_team(onboard):
    from scenarios.library.onboard import PRIVATE
    from sim.calibrate import play_partial

    values = []
    for difficulty in (1, 2, 3):
        score = play_partial(onboard, ONBOARD, "partial-no-private", 3, {"difficulty": difficulty})
        slug = onboard.instance.params["team_channel"].removeprefix("team-")
        assert _failed(score) == sorted(f"channel-{slug}-{suffix}" for suffix, _ in PRIVATE[:difficulty])
        values.append(score.value)
    assert values[0] > values[1] > values[2], values

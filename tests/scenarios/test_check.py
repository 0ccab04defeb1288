"""check_scenario: every registered family honours the contract, and each broken rule is caught."""

import dataclasses
import json

import pytest
from sqlalchemy import select

from scenarios import ScenarioContractError, check_scenario, make, registered
from scenarios.library.triage import TriageTickets
from worlds.schema import Employee, Post
from worlds.spec import WorldSpec

IDS = [r.id for r in registered()]


@pytest.fixture(scope="module")
def triage_world(store):
    family = TriageTickets()
    world = store.base(WorldSpec(seed=0, employees=family.world.employees, history_days=family.world.history_days))
    yield world
    world.close()


@pytest.mark.parametrize("scenario_id", IDS, ids=IDS)
def test_check_scenario__every_registered_scenario_honours_the_contract(store, scenario_id):
    family = make(scenario_id)
    world = store.base(WorldSpec(seed=1, employees=family.world.employees, history_days=family.world.history_days))
    try:
        check_scenario(scenario_id, world)
    finally:
        world.close()


class _Broken(TriageTickets):
    """The real family with one contract rule broken, chosen by ``flaw``."""

    def __init__(self, flaw):
        self.flaw = flaw
        self.builds = 0

    def build(self, session, seeds, clock, difficulty):
        instance = super().build(session, seeds, clock, difficulty)
        self.builds += 1
        if self.flaw == "nondeterministic":
            return dataclasses.replace(instance, prompt=f"{instance.prompt} (build {self.builds})")
        if self.flaw == "unknown_actor":
            return dataclasses.replace(instance, actor="nobody.here")
        if self.flaw == "inactive_actor":
            session.execute(Employee.__table__.update().where(Employee.username == instance.actor).values(active=False))
            return instance
        if self.flaw == "leak":
            expected = instance.params["expected"]
            key = sorted(expected)[0]
            session.add(
                Post(
                    channel_id=1,
                    author_id=1,
                    root_id=None,
                    message=json.dumps({key: expected[key]}),
                    created_at=clock.now(),
                )
            )
            session.flush()
            return instance
        if self.flaw == "not_json":
            return dataclasses.replace(instance, params={**instance.params, "when": clock.now()})
        if self.flaw == "no_room":
            return dataclasses.replace(instance, limits=dataclasses.replace(instance.limits, max_turns=0))
        if self.flaw == "unknown_app":
            return dataclasses.replace(instance, apps=("chat", "teleport"))
        raise AssertionError(self.flaw)


@pytest.mark.parametrize(
    ("flaw", "message"),
    [
        ("nondeterministic", "not deterministic: prompt"),
        ("unknown_actor", "is not an employee"),
        ("inactive_actor", "is not an active employee"),
        ("leak", "appear verbatim"),
        ("not_json", "not JSON-serialisable"),
        ("no_room", "no room to act"),
        ("unknown_app", "non-empty subset"),
    ],
)
def test_check_scenario__reports_each_broken_rule_by_name(triage_world, flaw, message):
    with pytest.raises(ScenarioContractError, match=message) as info:
        check_scenario(_Broken(flaw), triage_world, seeds=(0,), difficulties=(1,))
    assert "triage-tickets-v0 seed 0 difficulty 1" in str(info.value)


def test_check_scenario__never_writes_the_base_world(triage_world):
    before = triage_world.state_hash()
    check_scenario("triage-tickets-v0", triage_world, seeds=(0,), difficulties=(3,))
    assert triage_world.state_hash() == before
    with triage_world.session() as s:
        assert not s.scalars(select(Post).where(Post.message.contains("triage rules"))).first()

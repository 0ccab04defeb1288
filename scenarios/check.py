"""``check_scenario``: the contract every registered scenario family must honour.

Run over the whole registry by the tests (Gymnasium's env_checker pattern). It builds the scenario on fresh
forks and checks what a trainer relies on without running an agent: build is deterministic, the actor exists,
the rubric is valid and its checks are registered, limits are sane, hidden params are JSON and never appear
in the text an agent can read.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, time

from sqlalchemy import select

from scenarios.base import ScenarioInstance
from scenarios.registry import make
from worlds.changelog import track
from worlds.clock import FixedClock
from worlds.schema import Employee, Post, Ticket
from worlds.seeding import Seeds
from worlds.store import World


class ScenarioContractError(AssertionError):
    """A scenario family breaks the contract; the message says which rule and for which seed."""


def _build(scenario_id: str, world: World, seed: int, difficulty: int) -> tuple[ScenarioInstance, str, World]:
    family = make(scenario_id)
    fork = world.fork()
    session = fork.session()
    clock = FixedClock(datetime.combine(world.spec.start_date, time(9, 0), tzinfo=UTC))
    track(session, clock=clock, tag="setup")
    instance = family.build(session, Seeds(seed), clock, difficulty)
    session.flush()
    session.commit()
    session.close()
    return instance, fork.state_hash(), fork


def check_scenario(scenario_id: str, world: World, seeds: tuple[int, ...] = (0, 1, 2), difficulty: int = 1) -> None:
    """Raise ScenarioContractError when ``scenario_id`` breaks the contract on ``world``."""
    for seed in seeds:
        first, hash_a, fork_a = _build(scenario_id, world, seed, difficulty)
        second, hash_b, fork_b = _build(scenario_id, world, seed, difficulty)
        try:
            where = f"{scenario_id} seed {seed}"
            if first.scenario_id != scenario_id:
                raise ScenarioContractError(f"{where}: instance says it is {first.scenario_id!r}")
            if (first.prompt, first.actor, dict(first.params)) != (
                second.prompt,
                second.actor,
                dict(second.params),
            ):
                raise ScenarioContractError(f"{where}: build is not deterministic (prompt, actor or params differ)")
            if hash_a != hash_b:
                raise ScenarioContractError(f"{where}: setup wrote different worlds on two forks")
            if first.rubric.fingerprint != second.rubric.fingerprint:
                raise ScenarioContractError(f"{where}: rubric differs between two builds")
            if not first.prompt.strip():
                raise ScenarioContractError(f"{where}: empty prompt")
            if first.limits.max_turns < 1 or first.limits.time_budget_s < 60:
                raise ScenarioContractError(f"{where}: limits {first.limits} leave no room to act")
            try:
                hidden = json.dumps(dict(first.params), sort_keys=True)
            except TypeError as exc:
                raise ScenarioContractError(f"{where}: params are not JSON ({exc})") from None
            with fork_a.session() as s:
                active = s.scalar(select(Employee.active).where(Employee.username == first.actor))
                if not active:
                    raise ScenarioContractError(f"{where}: actor {first.actor!r} is not an active employee")
                texts = [*s.scalars(select(Post.message)), *s.scalars(select(Ticket.description))]
            if any(hidden in t for t in texts):
                raise ScenarioContractError(f"{where}: hidden params appear verbatim in agent-readable text")
            if not first.rubric.checks:
                raise ScenarioContractError(f"{where}: rubric has no checks")
        finally:
            fork_a.close()
            fork_b.close()

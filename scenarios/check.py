"""``check_scenario``: the contract every registered scenario family must honour.

Run over the whole registry by the tests (Gymnasium's env_checker pattern), so a new family is checked the
day it is registered. It builds the scenario on fresh forks of one base world and checks what a trainer
relies on without running an agent:

* build is deterministic: the same seed and difficulty on two fresh forks give the same prompt, actor,
  params, rubric and the same world state hash after setup, and the base world is left untouched;
* the instance is usable: the actor is an existing, active employee; the prompt is not empty; limits leave
  room to act; the apps exist; the rubric reloads from its own data and every check function is registered;
* the answer stays hidden: params are JSON, and neither the params nor any of their top-level parts appear
  as text in anything setup wrote (the setup rows of the change log cover every table an app can show).

It never runs an episode, so it depends on no layer above ``scenarios``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, time
from typing import Any

from sqlalchemy import select

from graders.registry import find_check_fn
from graders.rubric import load_rubric
from mcp_tools.company import company_specs
from scenarios.base import ScenarioFamily, ScenarioInstance
from scenarios.registry import make
from worlds.changelog import track
from worlds.clock import FixedClock
from worlds.schema import ChangeLog, Employee
from worlds.seeding import Seeds
from worlds.store import World

__all__ = ["ScenarioContractError", "check_scenario"]


class ScenarioContractError(AssertionError):
    """A scenario family breaks the contract; the message names the rule, the seed and the difficulty."""


def check_scenario(
    scenario_id: str | ScenarioFamily,
    world: World,
    seeds: tuple[int, ...] = (0, 1, 2),
    *,
    difficulties: tuple[int, ...] = (0, 1, 2, 3),
) -> None:
    """Raise ScenarioContractError when a family breaks the contract on ``world``.

    Args:
        scenario_id: A registered id, or a family object (to check one before registering it).
        world: A base world from ``worlds.store``; it is forked for every build and never written.
        seeds: Scenario seeds to build with.
        difficulties: Difficulties to build at, for each seed.
    """
    family = make(scenario_id) if isinstance(scenario_id, str) else scenario_id
    before = world.state_hash()
    for seed in seeds:
        for difficulty in difficulties:
            _check_one(family, world, seed, difficulty)
    if world.state_hash() != before:
        raise ScenarioContractError(f"{family.id}: build changed the base world instead of its fork")


def _build(family: ScenarioFamily, world: World, seed: int, difficulty: int) -> tuple[ScenarioInstance, World]:
    """Build on a fresh fork, the way an episode reset does (setup rows tagged ``setup``)."""
    fork = world.fork()
    session = fork.session()
    try:
        clock = FixedClock(datetime.combine(world.spec.start_date, time(9, 0), tzinfo=UTC))
        track(session, clock=clock, tag="setup")
        instance = family.build(session, Seeds(seed), clock, difficulty)
        session.commit()
    except BaseException:
        session.close()
        fork.close()
        raise
    session.close()
    return instance, fork


def _check_one(family: ScenarioFamily, world: World, seed: int, difficulty: int) -> None:
    where = f"{family.id} seed {seed} difficulty {difficulty}"
    first, fork_a = _build(family, world, seed, difficulty)
    try:
        second, fork_b = _build(family, world, seed, difficulty)
        try:
            if fork_a.state_hash() != fork_b.state_hash():
                raise ScenarioContractError(f"{where}: setup wrote different worlds on two fresh forks")
        finally:
            fork_b.close()
        _check_same(where, first, second)
        _check_instance(where, family, first)
        _check_world(where, first, fork_a)
    finally:
        fork_a.close()


def _check_same(where: str, first: ScenarioInstance, second: ScenarioInstance) -> None:
    for name in ("scenario_id", "prompt", "actor", "limits", "apps", "difficulty"):
        if getattr(first, name) != getattr(second, name):
            raise ScenarioContractError(f"{where}: build is not deterministic: {name} differs between two builds")
    if _canonical(first.params, where) != _canonical(second.params, where):
        raise ScenarioContractError(f"{where}: build is not deterministic: params differ between two builds")
    if first.rubric.fingerprint != second.rubric.fingerprint:
        raise ScenarioContractError(f"{where}: build is not deterministic: the rubric differs between two builds")


def _check_instance(where: str, family: ScenarioFamily, instance: ScenarioInstance) -> None:
    if instance.scenario_id != family.id:
        raise ScenarioContractError(f"{where}: the instance says it is {instance.scenario_id!r}")
    if not instance.prompt.strip():
        raise ScenarioContractError(f"{where}: the prompt is empty")
    limits = instance.limits
    if limits.max_turns < 2 or limits.time_budget_s < 60:
        raise ScenarioContractError(
            f"{where}: limits leave no room to act (max_turns {limits.max_turns}, expected >= 2; "
            f"time_budget_s {limits.time_budget_s}, expected >= 60)"
        )
    known = sorted({spec.app for spec in company_specs().values()})
    unknown = sorted(set(instance.apps) - set(known))
    if not instance.apps or unknown:
        raise ScenarioContractError(f"{where}: apps {list(instance.apps)} must be a non-empty subset of {known}")
    missing = sorted({c.fn for c in instance.rubric.checks if find_check_fn(c.fn) is None})
    if missing:
        raise ScenarioContractError(f"{where}: rubric names unregistered check functions: {', '.join(missing)}")
    try:
        reloaded = load_rubric(instance.rubric.model_dump(mode="json"))
    except Exception as exc:  # any loader failure is a contract failure, reported with its reason
        raise ScenarioContractError(f"{where}: the rubric does not reload from its own data: {exc}") from None
    if reloaded.fingerprint != instance.rubric.fingerprint:
        raise ScenarioContractError(f"{where}: the rubric changes when reloaded from its own data")


def _check_world(where: str, instance: ScenarioInstance, fork: World) -> None:
    with fork.session() as session:
        active = session.execute(select(Employee.active).where(Employee.username == instance.actor)).first()
        if active is None:
            raise ScenarioContractError(f"{where}: the actor {instance.actor!r} is not an employee of the world")
        if not active[0]:
            raise ScenarioContractError(f"{where}: the actor {instance.actor!r} is not an active employee")
        written = [
            text
            for changes in session.scalars(
                select(ChangeLog.changes).where(ChangeLog.tag == "setup").order_by(ChangeLog.seq)
            )
            for text in _strings(changes)
        ]
    for label, secret in _secrets(instance.params, where):
        if any(secret in text for text in written):
            raise ScenarioContractError(f"{where}: hidden {label} appear verbatim in text that setup wrote")


def _canonical(value: Any, where: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False, default=_refuse)
    except (TypeError, ValueError) as exc:
        raise ScenarioContractError(f"{where}: params are not JSON-serialisable ({exc})") from None


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _secrets(params: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    """The texts that would give the answer away: whole params and every non-trivial part, as JSON.

    Each is spelled four ways (sorted or insertion key order, spaced or compact separators). Scalars are
    skipped (a project key in params is also, rightly, in the prompt); containers and their entries (one
    ticket's expected fields) are what an agent must never be able to read.
    """
    _canonical(dict(params), where)
    parts: list[tuple[str, Any]] = [("params", dict(params))]
    for key in sorted(params):
        value = params[key]
        if isinstance(value, Mapping) and value:
            parts.append((f"params[{key!r}]", value))
            parts += [(f"params[{key!r}][{k!r}]", {k: value[k]}) for k in sorted(value) if not _scalar(value[k])]
        elif isinstance(value, list) and len(value) > 1:
            parts.append((f"params[{key!r}]", value))
    for label, value in parts:
        for sort_keys in (True, False):
            for separators in ((", ", ": "), (",", ":")):
                text = json.dumps(value, sort_keys=sort_keys, ensure_ascii=False, separators=separators)
                yield label, text[1:-1] if isinstance(value, Mapping) and len(value) == 1 else text


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)

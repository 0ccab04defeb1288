"""The NPC population: a ``mesa.Model`` that owns the NPC randomness and says which turns are due when.

Scheduling is event-driven, never per tick:

- reactive: when something reaches an NPC (``poke`` finds it), a turn is set at the item's time plus a
  latency drawn from ``npc/<id>/latency/<item>`` (median ``5 * 48 ** (1 - responsiveness)`` working minutes,
  log-normal), counted in the NPC's own working hours (zone, start/end minute, workdays);
- proactive: each NPC wakes after an exponential gap of working time (mean ``480 * (1 - proactivity) ** 2 +
  30`` minutes) drawn from ``npc/<id>/wake/<k>``; absent NPCs never get either.

Every draw comes from a stream named by (NPC, item or wake count, turn number), so it does not depend on the
order of calls or on other NPCs: the same seed and the same agent actions give the same NPC actions at the
same simulated instants. Time only comes from the clock passed in.

Wiring into an episode (see ``NpcWorld``)::

    npcs = NpcWorld(session, world_seed, clock, agent=agent_id, overrides=scenario.npc_overrides)
    # after each agent step (its writes are in the session), before the clock advances:
    npcs.poke()
    at = npcs.next_wakeup()           # put it on the SimClock queue:
    clock.schedule(at, fire, "npc")   # where fire() = npcs.run_due(clock.now()), then re-arm the same way
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import mesa  # type: ignore[import-untyped]
from sqlalchemy.orm import Session

from mcp_tools.base import Actor, ToolContext
from npcs import behaviour
from npcs.actions import Action, Turn
from npcs.decide import TurnEnv
from npcs.errors import UnknownNpc
from npcs.perceive import CURSOR_OF, Stimulus, inbound
from npcs.persona import Persona, active_employees, ensure_persona, maxima
from npcs.realiser import Realiser
from npcs.traits import TraitVector
from worlds.changelog import context
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds


def median_latency(traits: TraitVector) -> float:
    """Median reply latency in working minutes: 5 at responsiveness 1, 240 at 0."""
    return float(5.0 * 48.0 ** (1.0 - traits.responsiveness))


def mean_wake_gap(traits: TraitVector) -> float:
    """Mean working minutes between unprompted turns."""
    return 480.0 * (1.0 - traits.proactivity) ** 2 + 30.0


class Npc(mesa.Agent):  # type: ignore[misc]
    """One coworker in the population: persona, Actor, and its next reactive and proactive turn times."""

    def __init__(self, model: NpcWorld, persona: Persona, actor: Actor) -> None:
        super().__init__(model)
        self.persona = persona
        self.actor = actor
        self.reactive_at: datetime | None = None
        self.wake_at: datetime | None = None
        self.wakes = 0


class NpcWorld(mesa.Model):  # type: ignore[misc]
    """The NPCs of one world, scheduled on a simulated clock.

    Args:
        session: The world session (tracked or not); NPC writes go through the app services on it.
        world_seed: The root seed; every NPC stream is a named child of it.
        clock: The only source of time (``worlds.clock.Clock``); actions are stamped with ``clock.now()``.
        agent: The employee (id or username) the agent plays: never an NPC.
        overrides: Per employee (id or username), a trait spec for ``TraitVector.parse``: a preset name, a dict
            of overrides, or ``{"base": preset, ...}``.
        population: Restrict the NPCs to these employees (default: every active employee but the agent).
        realiser: Optional LLM realiser for NPC text (record/replay cache).

    Raises:
        UnknownNpc: an override or population entry is not an active employee other than the agent.
        BadTrait, UnknownPreset: an override is invalid.
    """

    def __init__(
        self,
        session: Session,
        world_seed: int,
        clock: Clock,
        *,
        agent: int | str | None = None,
        overrides: Mapping[int | str, Any] | None = None,
        population: Iterable[int | str] | None = None,
        realiser: Realiser | None = None,
    ) -> None:
        self.seeds = Seeds(world_seed)
        super().__init__(seed=self.seeds.int_seed("npc/model"))
        self.session = session
        self.world_seed = world_seed
        self.clock = clock
        self.realiser = realiser
        sql = Sql.of(session)
        people = active_employees(sql)
        by_name = {u: i for i, u in people}
        ids = {i for i, _ in people}

        def resolve(who: int | str, what: str) -> int:
            found = who if isinstance(who, int) and who in ids else by_name.get(str(who).lstrip("@"))
            if found is None or found == agent_id:
                raise UnknownNpc(f"{what} names {who!r}, which is not an active employee other than the agent")
            return int(found)

        agent_id = agent if isinstance(agent, int) else by_name.get(str(agent)) if agent is not None else None
        chosen = sorted({resolve(w, "population") for w in population}) if population is not None else None
        members = chosen if chosen is not None else sorted(ids - {agent_id} if agent_id is not None else ids)
        parsed: dict[int, tuple[TraitVector, str | None]] = {}
        for who, spec in sorted((overrides or {}).items(), key=lambda kv: str(kv[0])):
            name = spec if isinstance(spec, str) else spec.get("base") if isinstance(spec, Mapping) else None
            parsed[resolve(who, "override")] = (TraitVector.parse(spec), name if isinstance(name, str) else None)
        self._npcs: dict[int, Npc] = {}
        now = clock.now()
        with self._acting(None):
            for emp in members:
                persona = ensure_persona(sql, world_seed, emp, parsed.get(emp), now)
                self._npcs[emp] = Npc(self, persona, Actor.load(session, emp))
        cursors = [n.persona.cursor for n in self._npcs.values()]
        top = maxima(sql)
        self._seen: dict[str, Any] = {k: min([c.get(k, top[k]) for c in cursors] or [top[k]]) for k in top}
        self._seen["at"] = min([str(c["at"]) for c in cursors if c.get("at")] or [now.isoformat()])
        for npc in self._npcs.values():
            self._schedule_wake(npc, now)
        self.poke(now)

    # -- randomness ----------------------------------------------------------------------------------------

    def stream(self, name: str) -> Any:
        """The NPC stream ``npc/<name>`` (a numpy Generator), e.g. ``stream("17/4")`` for NPC 17's turn 4.

        Built-in policies draw only from such named streams, never from ``self.random`` / ``self.rng`` (mesa's
        own seeded generators, kept for custom policies): a shared sequential generator would make one NPC's
        numbers depend on how many draws the others made before it, and a replay that skips or adds one NPC
        turn would shift every later turn of every NPC.
        """
        return self.seeds.rng(f"npc/{name}")

    # -- population ----------------------------------------------------------------------------------------

    @property
    def npcs(self) -> list[Npc]:
        """The NPCs, by employee id."""
        return [self._npcs[k] for k in sorted(self._npcs)]

    def persona(self, employee: int | str) -> Persona:
        """The persona of an NPC by id or username."""
        for npc in self.npcs:
            if employee in (npc.persona.employee_id, npc.persona.username):
                return npc.persona
        raise UnknownNpc(f"no NPC {employee!r} in this population")

    # -- scheduling ----------------------------------------------------------------------------------------

    def _latency(self, npc: Npc, marker: str) -> float:
        rng = self.stream(f"{npc.persona.employee_id}/latency/{marker}")
        return round(float(rng.lognormal(math.log(median_latency(npc.persona.traits)), 0.6)) * 60) / 60

    def _schedule_wake(self, npc: Npc, after: datetime) -> None:
        t = npc.persona.traits
        if t.absent or t.proactivity <= 0:
            npc.wake_at = None
            return
        rng = self.stream(f"{npc.persona.employee_id}/wake/{npc.wakes}")
        npc.wakes += 1
        npc.wake_at = npc.persona.hours.add(after, max(5.0, round(float(rng.exponential(mean_wake_gap(t))) * 60) / 60))

    def poke(self, now: datetime | None = None) -> list[Stimulus]:
        """Look for anything new that reached an NPC since the last poke and schedule its reactive turn.

        Call after every agent step (the population also pokes itself after each NPC turn). Cheap: a handful
        of indexed queries on ids above the last poke (posts, comments, mail, invites, merge requests and their
        notes, access requests), whatever the population size. Returns what it found.
        """
        now = now or self.clock.now()
        sql = Sql.of(self.session)
        live = {i: n for i, n in self._npcs.items() if n.persona.traits.responsiveness > 0}
        assigned = {i: set(n.persona.cursor.get("assigned", [])) for i, n in live.items()}
        found = []
        for s in inbound(sql, self._seen, now, list(live), assigned):
            npc = live[s.recipient_id]
            field = CURSOR_OF.get(s.kind)
            if field is not None and s.ref <= int(npc.persona.cursor.get(field, 0)):
                continue  # already perceived in an earlier turn
            found.append(s)
            due = npc.persona.hours.add(s.when, self._latency(npc, s.marker))
            npc.reactive_at = due if npc.reactive_at is None else min(npc.reactive_at, due)
        self._seen = {**maxima(sql), "at": now.isoformat()}
        return found

    on_agent_action = poke

    def due(self, now: datetime | None = None) -> list[Turn]:
        """Turns due at or before ``now``, by (time, employee id); a due wake absorbs a due reaction."""
        now = now or self.clock.now()
        out = []
        for npc in self.npcs:
            eid = npc.persona.employee_id
            if npc.wake_at is not None and npc.wake_at <= now:
                out.append(Turn(npc.wake_at, eid, "proactive"))
            elif npc.reactive_at is not None and npc.reactive_at <= now:
                out.append(Turn(npc.reactive_at, eid, "reactive"))
        return sorted(out)

    def next_wakeup(self, now: datetime | None = None) -> datetime | None:
        """The earliest pending turn time (possibly already past ``now``), or None if nothing is pending."""
        times = [t for n in self._npcs.values() for t in (n.reactive_at, n.wake_at) if t is not None]
        return min(times) if times else None

    # -- running -------------------------------------------------------------------------------------------

    @contextmanager
    def _acting(self, employee_id: int | None) -> Iterator[None]:
        """Stamp change-log rows with the NPC (tag ``npc``) while it acts, then restore the episode's tags."""
        ch = context(self.session)
        if ch is None:
            yield
            return
        old = (ch.actor_id, ch.tag)
        ch.actor_id, ch.tag = employee_id, "npc"
        try:
            yield
        finally:
            ch.actor_id, ch.tag = old

    def run_turn(self, turn: Turn) -> list[Action]:
        """Run one due turn now (``clock.now()`` should be ``turn.at``: actions are stamped with it).

        The turn's randomness is the stream ``npc/<id>/<turn number>``; afterwards the NPC's next wake is
        scheduled (proactive turns) and the population pokes itself, so NPC-to-NPC messages get answered.
        """
        npc = self._npcs[turn.employee_id]
        now = self.clock.now()
        if npc.reactive_at is not None and npc.reactive_at <= now:
            npc.reactive_at = None
        if turn.kind == "proactive":
            self._schedule_wake(npc, turn.at)
        number = npc.persona.turns
        ctx = ToolContext(session=self.session, actor=npc.actor, clock=self.clock)
        rng = self.stream(f"{turn.employee_id}/{number}")
        env = TurnEnv(ctx=ctx, persona=npc.persona, turn=turn, number=number, rng=rng, npc_ids=frozenset(self._npcs))
        with self._acting(turn.employee_id):
            actions = behaviour.run(behaviour.Runtime(env, self.realiser))
        self.poke(now)
        return actions

    def run_due(self, now: datetime | None = None) -> list[Action]:
        """Run every turn due at or before ``now``, in order; returns all their actions."""
        out: list[Action] = []
        turns = self.due(now)
        for turn in turns:
            out += self.run_turn(turn)
        return out

    def step(self) -> None:
        """Mesa's step: run what is due at the clock's now."""
        self.run_due(self.clock.now())

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

An ``absent`` hook (the episode's ``npc_no_show`` fault, ``sim.noise``) may keep an NPC away when a turn falls
due: the turn is skipped and every turn of that NPC waits until it is back (minutes of its working time).

Figures come from mesa's ``DataCollector``: after every batch of turns it records the simulated time, turns and
messages so far, the workload (NPCs with something waiting for an answer) and the mean response latency
(working minutes from the first unanswered item to the turn that saw it); ``stats()`` sums them per episode.

Wiring into an episode (see ``NpcWorld``)::

    npcs = NpcWorld(session, world_seed, clock, agent=agent_id, overrides=scenario.npc_overrides)
    # after each agent step (its writes are in the session), before the clock advances:
    npcs.poke()
    at = npcs.next_wakeup()           # put it on the SimClock queue:
    clock.schedule(at, fire, "npc")   # where fire() = npcs.run_due(clock.now()), then re-arm the same way
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
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
from npcs.perceive import CURSOR_OF, URGENT, Stimulus, inbound
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


MESSAGE_TOOLS = frozenset(
    {
        "chat_direct_message",
        "chat_reply",
        "chat_post",
        "tickets_comment",
        "mail_reply",
        "git_mr_comment",
        "git_mr_review",
    }
)
"""Tools whose successful call is a message someone reads (what ``messages`` counts)."""


class Npc(mesa.Agent):  # type: ignore[misc]
    """One coworker in the population: persona, Actor, and its next reactive and proactive turn times."""

    def __init__(self, model: NpcWorld, persona: Persona, actor: Actor) -> None:
        super().__init__(model)
        self.persona = persona
        self.actor = actor
        self.reactive_at: datetime | None = None
        self.wake_at: datetime | None = None
        self.wakes = 0
        self.attempts = 0  # due turns so far, taken or skipped (the no-show draw's index)
        self.away_until: datetime | None = None
        self.waiting_since: datetime | None = None  # the oldest item not yet seen in a turn
        self.messages = 0


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
        absent: Optional no-show hook: ``absent(username, attempt)`` gives the working minutes an NPC stays away
            instead of taking its ``attempt``-th due turn, or None when it shows up.

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
        absent: Callable[[str, int], float | None] | None = None,
    ) -> None:
        self.seeds = Seeds(world_seed)
        super().__init__(seed=self.seeds.int_seed("npc/model"))
        self.session = session
        self.world_seed = world_seed
        self.clock = clock
        self.realiser = realiser
        self.absent = absent
        self.no_shows: list[dict[str, Any]] = []
        self.latencies: list[float] = []
        self.turns_run = 0
        self.datacollector = mesa.DataCollector(
            model_reporters={
                "at": lambda m: m.clock.now().isoformat(),
                "turns": "turns_run",
                "messages": lambda m: sum(n.messages for n in m._npcs.values()),
                "workload": lambda m: sum(1 for n in m._npcs.values() if n.waiting_since is not None),
                "latency_min": lambda m: sum(m.latencies) / len(m.latencies) if m.latencies else None,
                "no_shows": lambda m: len(m.no_shows),
            }
        )
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

    def _latency(self, npc: Npc, marker: str, kind: str = "") -> float:
        rng = self.stream(f"{npc.persona.employee_id}/latency/{marker}")
        median = median_latency(npc.persona.traits) * URGENT.get(kind, 1.0)
        return round(float(rng.lognormal(math.log(median), 0.6)) * 60) / 60

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
            due = npc.persona.hours.add(s.when, self._latency(npc, s.marker, s.kind))
            if npc.away_until is not None:
                due = max(due, npc.away_until)
            npc.reactive_at = due if npc.reactive_at is None else min(npc.reactive_at, due)
            npc.waiting_since = s.when if npc.waiting_since is None else min(npc.waiting_since, s.when)
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
        if npc.waiting_since is not None:
            self.latencies.append(npc.persona.hours.minutes_between(npc.waiting_since, now))
            npc.waiting_since = None
        number = npc.persona.turns
        ctx = ToolContext(session=self.session, actor=npc.actor, clock=self.clock)
        rng = self.stream(f"{turn.employee_id}/{number}")
        env = TurnEnv(ctx=ctx, persona=npc.persona, turn=turn, number=number, rng=rng, npc_ids=frozenset(self._npcs))
        with self._acting(turn.employee_id):
            actions = behaviour.run(behaviour.Runtime(env, self.realiser))
        self.turns_run += 1
        npc.messages += sum(1 for a in actions if a.ok and a.tool in MESSAGE_TOOLS)
        self.poke(now)
        return actions

    def run_due(self, now: datetime | None = None) -> list[Action]:
        """Run every turn due at or before ``now``, in order (skipping no-shows); returns all their actions."""
        out: list[Action] = []
        turns = self.due(now)
        for turn in turns:
            if not self._no_show(turn):
                out += self.run_turn(turn)
        if turns:
            self.datacollector.collect(self)
        return out

    def _no_show(self, turn: Turn) -> bool:
        """Whether the NPC is away instead of taking ``turn``; if so, all its turns wait until it is back."""
        npc = self._npcs[turn.employee_id]
        attempt, npc.attempts = npc.attempts, npc.attempts + 1
        minutes = self.absent(npc.persona.username, attempt) if self.absent is not None else None
        if minutes is None:
            return False
        back = npc.persona.hours.add(turn.at, minutes)
        npc.away_until = back
        npc.reactive_at = None if npc.reactive_at is None else max(npc.reactive_at, back)
        npc.wake_at = None if npc.wake_at is None else max(npc.wake_at, back)
        self.no_shows.append(
            {"npc": npc.persona.username, "turn": turn.kind, "at": turn.at.isoformat(), "until": back.isoformat()}
        )
        return True

    def stats(self) -> dict[str, Any]:
        """Per-episode figures from the DataCollector's last row and the turns behind it (see the module doc)."""
        rows = self.datacollector.model_vars
        last = {k: v[-1] for k, v in rows.items() if v}
        lat = sorted(self.latencies)
        return {
            "turns": self.turns_run,
            "messages": int(last.get("messages", 0)),
            "no_shows": len(self.no_shows),
            "response_latency_min": {
                "mean": round(sum(lat) / len(lat), 2) if lat else None,
                "p50": round(lat[len(lat) // 2], 2) if lat else None,
                "max": round(lat[-1], 2) if lat else None,
                "answered": len(lat),
            },
            "workload": {
                "peak": max(rows.get("workload") or [0]),
                "mean": round(sum(rows["workload"]) / len(rows["workload"]), 2) if rows.get("workload") else 0.0,
            },
            "batches": len(rows.get("at") or []),
            "by_npc": {n.persona.username: n.messages for n in self.npcs if n.messages},
        }

    def step(self) -> None:
        """Mesa's step: run what is due at the clock's now."""
        self.run_due(self.clock.now())

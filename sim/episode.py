"""Episode: one agent, one task, one forked world; Gymnasium-shaped.

``reset(seed, options)`` forks the cached base world (no regeneration), lets the scenario write its setup,
and returns the task prompt with the tools as OpenAI function schemas. ``step(action)`` runs one tool call
as the agent's employee, inside a savepoint so a failed call leaves the state exactly as it was, advances
the simulated clock by the call's cost, and records the step. The ``submit`` tool ends the episode; the turn
limit and the simulated-time budget truncate it. ``grade()`` scores the final state from the change log and
the step records, never from a full-world scan.

Options of ``reset``: ``world_seed`` (default: the seed), ``employees`` and ``history_days`` (default: the
scenario's), ``difficulty`` (default 1). Actions: ``{"name": str, "arguments": dict | JSON str}`` or an
OpenAI tool call ``{"function": {"name", "arguments"}}``. A malformed action, an unknown tool or bad
arguments is an error observation with a stable code, and the episode goes on.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from graders.base import GradingContext, Score, grade
from mcp_tools.base import READ, Actor, ToolContext, ToolSpec, call_tool, openai_tools
from mcp_tools.company import company_specs
from mcp_tools.errors import AppError
from scenarios.base import ScenarioInstance
from scenarios.registry import make
from sim.clock import SimClock
from sim.coworkers import Coworkers, check_npcs_option, effective_option, enabled
from sim.errors import BadAction, EpisodeOver, NotReset, SimError
from sim.noise import COST_S, Decision, NoiseProfile, decide, error_for, truncate
from sim.submit import MAX_WAIT_MINUTES, SUBMIT_SCHEMA, WAIT_SCHEMA
from sim.trace import TRACE_FORMAT, TraceWriter, canonical, chain_hash, package_versions
from sim.workspace import EpisodeCode, new_scratch, task_bases, world_bases
from worlds.changelog import ChangeContext, track
from worlds.rawsql import Sql, iso
from worlds.seeding import Seeds
from worlds.spec import WorldSpec
from worlds.store import World, WorldStore

READ_COST_S = 15
WRITE_COST_S = 45
ERROR_COST_S = 5


@dataclass(kw_only=True)
class _Live:
    """State of the running episode (dropped on close)."""

    episode_id: str
    seed: int
    options: dict[str, Any]
    spec: WorldSpec
    world: World
    instance: ScenarioInstance
    clock: SimClock
    change: ChangeContext
    ctx: ToolContext
    tools: dict[str, ToolSpec]
    start_seq: int
    start_clock: datetime
    state_hash: str
    last_seq: int
    steps: list[dict[str, Any]] = field(default_factory=list)
    noise: NoiseProfile | None = None
    noise_reads: bool = False
    calls: dict[str, int] = field(default_factory=dict)
    reads: dict[tuple[str, str], Any] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    score: Score | None = None
    coworkers: Coworkers | None = None
    code: EpisodeCode | None = None


@dataclass(frozen=True, kw_only=True)
class StartState:
    """Where an episode of a campaign starts: a world image, the state-hash chain so far, and the clock."""

    spec_hash: str
    image: bytes
    state_hash: str
    clock_at: datetime


def next_workday_morning(at: datetime) -> datetime:
    """09:00 UTC of the first Monday-to-Friday day after ``at``."""
    day = at.date() + timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return datetime.combine(day, time(9, 0), tzinfo=UTC)


@dataclass(frozen=True)
class _Setup:
    """What a scenario setup produced, kept so the same task can be reset without running the setup again."""

    image: bytes | None
    instance: ScenarioInstance
    rows: list[dict[str, Any]]
    clock_at: datetime
    actor: Actor
    base_seq: int = 0
    """The last change-log seq before the setup ran (a campaign's later episodes start after earlier ones' rows)."""


class SetupCache:
    """Post-setup states by (scenario, world spec hash, seed, difficulty), least recently used evicted first.

    Process-wide so every Episode (and every env of a vector) shares one copy of a task's state; bounded by
    ``max_bytes`` of images (a 40-employee world is about 0.7 MB). Thread-safe: vectorised envs may reset in
    threads.
    """

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[str, str, int, int], _Setup] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, int, int]) -> _Setup | None:
        """The cached state of ``key`` (marked recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: tuple[str, str, int, int], item: _Setup) -> None:
        """Keep ``item``, evicting the least recently used states beyond ``max_bytes``."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= len(old.image or b"")
            self._items[key] = item
            self._bytes += len(item.image or b"")
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, evicted = self._items.popitem(last=False)
                self._bytes -= len(evicted.image or b"")

    def clear(self) -> None:
        """Forget every cached state."""
        with self._lock:
            self._items.clear()
            self._bytes = 0


SETUP_CACHE = SetupCache()


class Episode:
    """A resettable episode of one scenario.

    Args:
        scenario: A registered scenario id such as ``triage-tickets-v0``.
        store: Where base worlds are cached (default: the user cache dir or COMPANYSIM_DATA_DIR).
        trace: Optional writer; each episode appends a header, its steps and a score record.
        setup_cache: Keep post-setup states in the process-wide ``SETUP_CACHE`` (keyed by scenario, world,
            seed and difficulty), so resetting to a task seen recently (the group of a GRPO step, parallel envs
            on the same seeds) forks that state instead of running the scenario setup again. Setup is a pure
            function of those keys, so a cached reset gives the same bytes as a fresh one.
        noise: The default fault-injection profile (``none``, ``realistic``, ``harsh`` or a custom object, see
            ``sim.noise``); a reset's ``noise`` option overrides it. It is recorded in the trace header's
            options, so a replay injects the same faults.
        npcs: The default coworker option (off, ``sampled``, a trait preset or a dict of per-person trait specs;
            see ``sim.coworkers``); a reset's ``npcs`` option overrides it, and the trace header records it.
    """

    def __init__(
        self,
        scenario: str,
        *,
        store: WorldStore | None = None,
        trace: TraceWriter | None = None,
        setup_cache: bool = True,
        noise: str | dict[str, Any] = "none",
        npcs: Any = None,
    ) -> None:
        NoiseProfile.parse(noise)  # fail at construction, not at the first reset
        check_npcs_option(npcs)
        self.npcs = npcs
        self.scenario_id = scenario
        self.family = make(scenario)
        self.store = store or WorldStore()
        self.trace = trace
        self._bases: dict[str, World] = {}
        self._repo_bases: dict[str, dict[str, Path]] = {}
        self._tool_specs: dict[tuple[str, ...], dict[str, ToolSpec]] = {}
        self._warm: tuple[tuple[str, str, int, int], World, Session, _Setup] | None = None
        self.setup_cache = setup_cache
        self.noise = noise
        self._live: _Live | None = None
        self._resets = 0

    # -- lifecycle ---------------------------------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None, *, start: StartState | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a new episode; returns (task prompt, info with tools, actor and episode id).

        ``start`` continues a world instead of forking the base: the state another episode ended in (see
        ``final_state``; ``sim.campaign`` chains episodes this way). Its setup then runs on that state.

        Raises:
            BadNoise: the ``noise`` option names an unknown profile or fault (nothing is reset).
            NpcError: the ``npcs`` option names an unknown preset or a bad trait (nothing is reset).
            SimError: ``start`` belongs to another world than this reset's spec (nothing is reset).
        """
        opts = dict(options or {})
        if self.noise != "none":
            opts.setdefault("noise", self.noise)
        if enabled(self.npcs):
            opts.setdefault("npcs", self.npcs)
        noise = NoiseProfile.parse(opts.get("noise"))  # before anything changes: bad input leaves all as it was
        check_npcs_option(opts.get("npcs"))
        self._finish_open_episode()
        seed = self._resets if seed is None else int(seed)
        spec = WorldSpec.parse(
            seed=int(opts.get("world_seed", seed)),
            employees=int(opts.get("employees", self.family.world.employees)),
            history_days=int(opts.get("history_days", self.family.world.history_days)),
        )
        difficulty = int(opts.get("difficulty", 1))
        if start is not None and start.spec_hash != spec.spec_hash:
            raise SimError(
                f"start state belongs to world {start.spec_hash[:12]}, not to this reset's world {spec.spec_hash[:12]}"
            )
        base = self._bases.get(spec.spec_hash)
        if base is None:
            base = self._bases[spec.spec_hash] = self.store.base(spec)
        key = (self.scenario_id, spec.spec_hash, seed, difficulty)
        warm = self._warm
        if start is not None:
            self._drop_warm()
            world = base.fork(image=start.image)
            session = world.session()
            clock = SimClock(start.clock_at)
            change = track(session, clock=clock, tag="setup")
            before = Sql.of(session).scalar("SELECT max(seq) FROM change_log") or 0
            instance = self.family.build(session, Seeds(seed), clock, difficulty)
            session.commit()
            session.expunge_all()
            setup = _Setup(
                None,
                instance,
                self._log_since(session, before),
                clock.now(),
                Actor.load(session, instance.actor),
                base_seq=int(before),
            )
        elif warm is not None and warm[0] == key:
            # The same task as the last episode, whose changes were rolled back: its world and session stay
            # open (parsed schema, prepared statements), so this reset costs no fork at all.
            _, world, session, setup = warm
            clock = SimClock(setup.clock_at)
            change = track(session, clock=clock)
        else:
            self._drop_warm()
            cached = SETUP_CACHE.get(key) if self.setup_cache else None
            if cached is None:
                world = base.fork()
                session = world.session()
                clock = SimClock(datetime.combine(spec.start_date, time(9, 0), tzinfo=UTC))
                change = track(session, clock=clock, tag="setup")
                instance = self.family.build(session, Seeds(seed), clock, difficulty)
                session.commit()  # the fork is private: its setup becomes its base (and an image can capture it)
                session.expunge_all()  # tools write raw SQL from here on; no ORM object may go stale
                setup = _Setup(
                    None, instance, self._log_since(session, 0), clock.now(), Actor.load(session, instance.actor)
                )
                if self.setup_cache and not clock.pending():
                    SETUP_CACHE.put(key, replace(setup, image=world.image()))
            else:
                # A task seen recently (e.g. the group of a GRPO step): fork the state its setup left.
                setup = cached
                world = base.fork(image=cached.image)
                session = world.session()
                clock = SimClock(setup.clock_at)
                change = track(session, clock=clock)
            if not clock.pending():
                self._warm = (key, world, session, setup)
        instance, setup_rows, actor = setup.instance, setup.rows, setup.actor
        last_seq = setup_rows[-1]["seq"] if setup_rows else setup.base_seq  # a setup that wrote nothing
        change.actor_id, change.tag = actor.employee_id, None
        specs = self._specs(instance.apps)
        self._resets += 1
        live = _Live(
            episode_id=f"{self.scenario_id}/{seed}/{self._resets}",
            seed=seed,
            options=opts,
            spec=spec,
            world=world,
            instance=instance,
            clock=clock,
            change=change,
            ctx=ToolContext(session=session, actor=actor, clock=clock),
            tools=specs,
            start_seq=last_seq,
            start_clock=clock.now(),
            state_hash=chain_hash(
                start.state_hash if start is not None else spec.spec_hash,
                [self.scenario_id, seed, difficulty, setup_rows],
            ),
            last_seq=last_seq,
        )
        if "git" in instance.apps:
            live.code = self._code(spec, session, key, instance)
        npcs = effective_option(opts.get("npcs"), instance)
        if enabled(npcs):
            live.coworkers = Coworkers(session, spec.seed, clock, instance, npcs)
            rows = self._log_since(session, last_seq)  # the personas, part of this episode's start
            if rows:
                live.last_seq = rows[-1]["seq"]
                live.state_hash = chain_hash(live.state_hash, rows)
        if noise.rate > 0 or noise.apps or noise.tools:
            live.noise = noise
            live.noise_reads = bool(noise.weights.get("partial_result") or noise.weights.get("stale_read"))
        self._live = live
        if self.trace is not None:
            self.trace.write(self._header(live))
        return instance.prompt, self._reset_info(live)

    def close(self) -> None:
        """End any open episode (graded if a trace is recorded) and free its fork."""
        self._finish_open_episode()
        self._drop_warm()
        for base in self._bases.values():
            base.close()
        self._bases.clear()

    # -- stepping ----------------------------------------------------------------------------------------

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run one tool call; returns (observation, reward, terminated, truncated, info)."""
        live = self._require_live()
        if live.terminated or live.truncated:
            raise EpisodeOver(f"episode {live.episode_id} has ended; call reset() to start another")
        index = len(live.steps)
        result: Any = None
        error: dict[str, str] | None = None
        cost = ERROR_COST_S
        write = False
        name = "?"
        arguments: dict[str, Any] = {}
        fault: dict[str, Any] | None = None
        try:
            name, arguments = parse_action(action)
        except BadAction as exc:
            error = {"code": exc.code, "message": str(exc)}
        if error is None and name == "submit":
            live.terminated = True
            result = {"submitted": True}
            cost = 0
        elif error is None and name == "wait":
            minutes = arguments.get("minutes")
            if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= MAX_WAIT_MINUTES:
                error = {
                    "code": "invalid_argument",
                    "message": f"minutes: expected an integer from 1 to {MAX_WAIT_MINUTES}; got {minutes!r:.40}",
                }
            else:
                cost = minutes * 60
                result = {"waited_minutes": minutes}
        elif error is None:
            spec = live.tools.get(name)
            if spec is None:
                error = {"code": "unknown_tool", "message": f"unknown tool {name!r}; see the tool list"}
            else:
                write = spec.kind != READ
                decision = self._decide(live, spec, write)
                if decision is not None and decision.fault in COST_S:  # a failing fault: the service never runs
                    error, cost, write = error_for(decision, spec.app), COST_S[decision.fault], False
                else:
                    live.change.tag = name
                    result, error = self._run(live, spec, arguments, write)
                    if error is None:
                        cost = WRITE_COST_S if write else READ_COST_S
                        if not write and live.noise_reads:
                            result, decision = self._read_fault(live, name, arguments, result, decision)
                    elif decision is not None:
                        decision = None  # the call failed on its own; a read fault had nothing to act on
                if decision is not None:
                    fault = decision.to_json()
                    live.faults.append({"step": index, **fault})
        if live.coworkers is not None:
            live.coworkers.after_step()
        live.clock.advance(cost)
        if (write and error is None) or live.coworkers is not None:
            rows = self._log_since(live.ctx.session, live.last_seq)
            if rows:
                live.last_seq = rows[-1]["seq"]
                live.state_hash = chain_hash(live.state_hash, rows)
        elapsed = (live.clock.now() - live.start_clock).total_seconds()
        limits = live.instance.limits
        if not live.terminated and (index + 1 >= limits.max_turns or elapsed >= limits.time_budget_s):
            live.truncated = True
        record = {
            "type": "step",
            "index": index,
            "action": {"name": name, "arguments": arguments},
            "result": result,
            "error": error,
            "clock": live.clock.now().isoformat(),
            "state_hash": live.state_hash,
            "fault": fault,
        }
        live.steps.append(record)
        if self.trace is not None:
            self.trace.write(record)
        reward = 0.0
        if live.terminated or live.truncated:
            reward = self._final_score(live).value
        obs = f"error [{error['code']}]: {error['message']}" if error else canonical(result)
        info = {
            "turn": index + 1,
            "clock": record["clock"],
            "error": error,
            "state_hash": live.state_hash,
            "fault": fault,
        }
        return obs, reward, live.terminated, live.truncated, info

    def grade(self) -> Score:
        """Score the current state; once the episode has ended, its final score (graded once, then kept)."""
        live = self._require_live()
        if live.terminated or live.truncated:
            return self._final_score(live)
        return self._grade(live)

    # -- introspection -----------------------------------------------------------------------------------

    def final_state(self, next_start: datetime | None = None) -> StartState:
        """The state the ended episode left, for the next episode of a campaign to start from.

        Commits the episode's changes in its private fork (so a reset can no longer roll them back) and
        captures the image. ``next_start`` is when the next episode begins (default: the next weekday, 09:00
        UTC, after this episode's clock).

        Raises:
            SimError: the episode has not ended.
        """
        live = self._require_live()
        if not (live.terminated or live.truncated):
            raise SimError(f"episode {live.episode_id} has not ended; submit or run it to its limit first")
        if self._warm is not None and self._warm[1] is live.world:
            self._warm = None  # its committed state is no longer the task's start: never reuse it
        live.ctx.session.commit()
        image = live.world.image()
        assert image is not None, "episodes run on in-memory forks"
        return StartState(
            spec_hash=live.spec.spec_hash,
            image=image,
            state_hash=live.state_hash,
            clock_at=next_start or next_workday_morning(live.clock.now()),
        )

    @property
    def done(self) -> bool:
        """Whether the current episode has ended."""
        return self._live is not None and (self._live.terminated or self._live.truncated)

    @property
    def instance(self) -> ScenarioInstance:
        """The current scenario instance (tests and oracles in-process only; never shown to the agent)."""
        return self._require_live().instance

    @property
    def steps(self) -> list[dict[str, Any]]:
        """The step records of the current episode."""
        return list(self._require_live().steps)

    @property
    def world(self) -> World:
        """The current episode's private world."""
        return self._require_live().world

    # -- internals ---------------------------------------------------------------------------------------

    @staticmethod
    def _decide(live: _Live, spec: ToolSpec, write: bool) -> Decision | None:
        """This call's injected fault, if the episode's noise profile schedules one (pure in seed/tool/index)."""
        if live.noise is None:
            return None
        index = live.calls.get(spec.name, 0)
        live.calls[spec.name] = index + 1
        return decide(live.noise, live.seed, spec.name, spec.app, index, read=not write)

    @staticmethod
    def _read_fault(
        live: _Live, name: str, arguments: dict[str, Any], result: Any, decision: Decision | None
    ) -> tuple[Any, Decision | None]:
        """Apply a read fault to a successful read's result; remember the true result for later stale reads."""
        key = (name, canonical(arguments))
        previous = live.reads.get(key)
        live.reads[key] = result
        if decision is None:
            return result, None
        if decision.fault == "partial_result":
            cut = truncate(result)
            return (result, None) if cut is None else (cut, decision)
        if decision.fault == "stale_read" and previous is not None and canonical(previous) != canonical(result):
            return previous, decision
        return result, None

    @property
    def faults(self) -> list[dict[str, Any]]:
        """The faults injected into the current episode so far: step, type, tool, call index, request id."""
        return list(self._require_live().faults)

    def _specs(self, apps: tuple[str, ...]) -> dict[str, ToolSpec]:
        specs = self._tool_specs.get(apps)
        if specs is None:
            specs = self._tool_specs[apps] = {n: s for n, s in company_specs().items() if s.app in apps}
        return specs

    def _code(
        self, spec: WorldSpec, session: Session, key: tuple[str, str, int, int], instance: ScenarioInstance
    ) -> EpisodeCode:
        """The episode's code workspace: the world's repositories plus the task's commits, checked out lazily."""
        world_path = self.store.path_for(spec)
        bases = self._repo_bases.get(spec.spec_hash)
        if bases is None:
            bases = self._repo_bases[spec.spec_hash] = world_bases(world_path, session, spec.seed)
        task_key = "/".join(str(k) for k in key)
        return EpisodeCode(task_bases(world_path, bases, task_key, instance.repo_commits, session), new_scratch())

    def _require_live(self) -> _Live:
        if self._live is None:
            raise NotReset("call reset() before step() or grade()")
        return self._live

    def _run(
        self, live: _Live, spec: ToolSpec, arguments: dict[str, Any], write: bool
    ) -> tuple[Any, dict[str, str] | None]:
        session = live.ctx.session
        sql = Sql.of(session) if write else None
        if sql is not None:
            sql.execute("SAVEPOINT step")
        try:
            if live.code is None:
                result = call_tool(spec, arguments, live.ctx)
            else:
                with live.code.active():
                    result = call_tool(spec, arguments, live.ctx)
            if sql is not None:
                if session.new or session.dirty or session.deleted:
                    session.flush()  # a service that used the ORM: its rows belong to this step
                sql.execute("RELEASE SAVEPOINT step")
            return result, None
        except Exception as exc:  # noqa: BLE001 - the agent must never see internals, and the episode goes on
            if sql is not None:
                sql.execute("ROLLBACK TO SAVEPOINT step")
                sql.execute("RELEASE SAVEPOINT step")
                if session.identity_map:
                    session.expunge_all()  # ORM objects may hold values the rollback undid
            if isinstance(exc, AppError):
                return None, {"code": exc.code, "message": str(exc)}
            return None, {"code": "internal", "message": f"internal error in {spec.name} ({type(exc).__name__})"}

    @staticmethod
    def _log_since(session: Any, seq: int) -> list[dict[str, Any]]:
        rows = Sql.of(session).all(
            "SELECT seq, table_name, row_key, op, changes, actor_id, at, tag FROM change_log"
            " WHERE seq > ? ORDER BY seq",
            (seq,),
        )
        return [
            {
                "seq": r[0],
                "table": r[1],
                "key": r[2],
                "op": r[3],
                "changes": json.loads(r[4]) if isinstance(r[4], str) else r[4],
                "actor": r[5],
                "at": iso(r[6]),
                "tag": r[7],
            }
            for r in rows
        ]

    def _grade(self, live: _Live) -> Score:
        session = live.ctx.session
        if session.new or session.dirty or session.deleted:
            session.flush()
        ctx = GradingContext(
            session=session,
            changes=self._log_since(session, live.start_seq),
            trace=live.steps,
            actor_id=live.ctx.actor.employee_id,
            params=dict(live.instance.params),
            workspace=live.code.workspace if live.code is not None else None,
        )
        return grade(live.instance.rubric, ctx)

    def _final_score(self, live: _Live) -> Score:
        if live.score is None:
            live.score = self._grade(live)
            if self.trace is not None:
                extra = {"npc_failures": live.coworkers.failures} if live.coworkers and live.coworkers.failures else {}
                self.trace.write({**score_record(live.score), "faults": live.faults, **extra})
                self.trace.flush()
        return live.score

    def _finish_open_episode(self) -> None:
        live = self._live
        if live is None:
            return
        if self.trace is not None and live.score is None:
            live.truncated = True
            self._final_score(live)
        self._live = None
        if live.code is not None:
            live.code.close()
        warm = self._warm
        if warm is not None and warm[1] is live.world:
            try:  # back to the committed post-setup state, ready for the same task again
                live.ctx.session.rollback()
                live.ctx.session.expunge_all()
                return
            except Exception:  # noqa: BLE001 - a world that cannot roll back is simply not reused
                self._warm = None
        live.ctx.session.close()
        live.world.close()

    def _drop_warm(self) -> None:
        warm, self._warm = self._warm, None
        if warm is not None:
            warm[2].close()
            warm[1].close()

    def _header(self, live: _Live) -> dict[str, Any]:
        rubric = live.instance.rubric
        return {
            "type": "header",
            "format": TRACE_FORMAT,
            "versions": package_versions(),
            "world_spec": json.loads(live.spec.canonical_json()),
            "scenario": self.scenario_id,
            "seed": live.seed,
            "options": live.options,
            "episode_id": live.episode_id,
            "actor": live.instance.actor,
            "difficulty": live.instance.difficulty,
            "rubric": {"id": rubric.id, "version": rubric.version, "fingerprint": rubric.fingerprint},
            "start_state_hash": live.state_hash,
        }

    def _reset_info(self, live: _Live) -> dict[str, Any]:
        actor = live.ctx.actor
        return {
            "episode_id": live.episode_id,
            "scenario": self.scenario_id,
            "prompt": live.instance.prompt,
            "actor": {"username": actor.username, "roles": sorted(actor.roles)},
            "tools": [*openai_tools(list(live.tools.values())), WAIT_SCHEMA, SUBMIT_SCHEMA],
            "clock": live.clock.now().isoformat(),
            "limits": {
                "max_turns": live.instance.limits.max_turns,
                "time_budget_s": live.instance.limits.time_budget_s,
            },
        }


def score_record(score: Score) -> dict[str, Any]:
    """The trace's closing record of an episode."""
    return {"type": "score", **score.to_json()}


def parse_action(action: Any) -> tuple[str, dict[str, Any]]:
    """Normalise an action to (tool name, arguments dict).

    Raises:
        BadAction: the action has no tool name or its arguments are not a JSON object.
    """
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except json.JSONDecodeError:
            raise BadAction('action is not JSON; expected {"name": ..., "arguments": {...}}') from None
    if not isinstance(action, dict):
        raise BadAction(f"action must be an object with name and arguments, got {type(action).__name__}")
    if isinstance(action.get("function"), dict):
        action = action["function"]
    name = action.get("name")
    if not isinstance(name, str) or not name:
        raise BadAction("action has no tool name (expected a non-empty string under 'name')")
    arguments = action.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            raise BadAction(f"arguments of {name!r} are not valid JSON") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise BadAction(f"arguments of {name!r} must be a JSON object, got {type(arguments).__name__}")
    return name, arguments

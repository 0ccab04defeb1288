"""Episode: one agent, one task, one forked world; Gymnasium-shaped. The state machine, and only that.

``reset(seed, options)`` gets a private world with the task set up (``sim.tasks``: no regeneration, cached
post-setup images, the warm world of a repeated task) and returns the task prompt with the tools as OpenAI
function schemas. ``step(action)`` runs one tool call as the agent's employee (``sim.calls``: a savepoint per
write, so a failed call leaves the state exactly as it was), lets the noise gate (``sim.noise``) inject its
seeded faults, advances the simulated clock by the call's cost, lets coworkers take their due turns
(``sim.coworkers``), and records the step (``sim.record``: the state-hash chain and the trace). The ``submit``
tool ends the episode; the turn limit and the simulated-time budget truncate it. ``grade()`` scores the final
state from the change log and the step records, never from a full-world scan.

Reset options: ``world_seed`` (default: the seed), ``employees``, ``history_days``, ``difficulty`` (default 1),
``noise``, ``npcs``, ``npc_llm`` (``sim.coworkers``), ``turns`` (``all``, the default: every call is a turn and
costs simulated time; ``writes``: reads are free, neither turns nor time, for clients that poll, as behind
``companysim serve``), ``prompt_via`` (``system``, the default: the task is the prompt; ``manager``: setup sends
the task as a direct message from the actor's manager and the prompt only says to check messages, with the
family's rubric and oracle unchanged; ``scenarios.variants``), ``progress``
(true: each step's info carries the rubric's partial score, ``graders.progress``, 10-53 us of CPU a step by
family, ``bench/results/grading.json``; the default false gives None). A malformed action, an unknown tool or
bad arguments is an error observation with a stable code, and the episode goes on.
A context manager; one never closed frees its checkouts when collected.
"""

from __future__ import annotations

import weakref
from datetime import datetime
from typing import TYPE_CHECKING, Any

from graders.base import Score
from graders.changes import ChangeRow
from mcp_tools.base import ToolContext
from mcp_tools.company import app_specs
from scenarios.base import ScenarioFamily, ScenarioInstance
from scenarios.registry import make
from scenarios.variants import PROMPT_VIA, with_prompt_via
from sim.calls import Outcome, dispatch, parse_action
from sim.coworkers import check_npc_llm, check_npcs_option
from sim.errors import BadAction, BadOption, EpisodeOver, NotReset, SimError
from sim.live import LiveEpisode, reset_options, spec_for
from sim.noise import NoiseProfile
from sim.record import score_record
from sim.tasks import SETUP_CACHE, SetupCache, StartState, TaskWorlds, next_workday_morning
from sim.trace import TraceWriter, canonical
from worlds.store import World, WorldStore

if TYPE_CHECKING:
    from sim.workspace import EpisodeCode

__all__ = ["SETUP_CACHE", "Episode", "SetupCache", "StartState", "next_workday_morning", "parse_action", "score_record"]


class Episode:
    """A resettable episode of one scenario.

    Args:
        scenario: A registered scenario id such as ``triage-tickets-v0``.
        store: Where base worlds are cached (default: the user cache dir or COMPANYSIM_DATA_DIR).
        trace: Optional writer; each episode appends a header, its steps and a score record.
        setup_cache: Keep post-setup states in the process-wide ``SETUP_CACHE`` (see ``sim.tasks``).
        noise: The default fault-injection profile (``none``, ``realistic``, ``harsh`` or a custom object, see
            ``sim.noise``); a reset's ``noise`` option overrides it, and the trace header records it.
        npcs: The default coworker option (off, ``sampled``, a trait preset or a dict of per-person trait specs;
            see ``sim.coworkers``); a reset's ``npcs`` option overrides it, and the trace header records it.
        apps: The apps whose tools the agent gets (default: the scenario's; e.g. every app, to explore or fuzz).
        db: A PostgreSQL server URL: worlds become databases there, forks template copies (unless ``store``).
        npc_llm: The default ``npc_llm`` option, ``{"cache", "model", "base_url"}``: NPC text through the LLM
            realiser (``sim.coworkers.realiser_for``; recorded, replayed offline); the trace header records it.
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
        apps: tuple[str, ...] | None = None,
        db: str | None = None,
        npc_llm: dict[str, Any] | None = None,
    ) -> None:
        NoiseProfile.parse(noise)  # fail at construction, not at the first reset
        check_npcs_option(npcs)
        check_npc_llm(npc_llm)
        self.npcs, self.noise, self.trace, self.apps, self.npc_llm = npcs, noise, trace, apps, npc_llm
        self.scenario_id = scenario
        self.store = store or WorldStore(db=db)
        self.worlds = TaskWorlds(make(scenario), self.store, use_cache=setup_cache)
        self._variants: dict[str, TaskWorlds] = {"system": self.worlds}  # per ``prompt_via``, made on first use
        self._live: LiveEpisode | None = None
        self._resets = 0
        self._open: list[EpisodeCode] = []  # what the finalizer frees if the episode is never closed
        self._finalizer = weakref.finalize(self, _free, self._open)

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
            BadOption: ``prompt_via`` (or ``turns``, ``progress``) is not one of its values (nothing is reset).
            SimError: ``start`` belongs to another world than this reset's spec (nothing is reset).
        """
        opts, noise = reset_options(options, noise=self.noise, npcs=self.npcs, npc_llm=self.npc_llm)  # or nothing
        via = opts.get("prompt_via", "system")
        if via not in PROMPT_VIA:
            raise BadOption(f"prompt_via must be one of {', '.join(PROMPT_VIA)}; got {via!r:.40}")
        seed = self._resets if seed is None else int(seed)
        spec = spec_for(self.family, seed, opts)
        if start is not None and start.spec_hash != spec.spec_hash:
            raise SimError(
                f"start state belongs to world {start.spec_hash[:12]}, not to this reset's world {spec.spec_hash[:12]}"
            )
        self._finish_open_episode()
        self._use_variant(str(via))
        difficulty = int(opts.get("difficulty", 1))
        task = self.worlds.open(spec, seed, difficulty, start)
        instance = task.setup.instance
        self._resets += 1
        first = start.state_hash if start is not None else spec.spec_hash
        live = LiveEpisode.begin(
            task, f"{self.scenario_id}/{seed}/{self._resets}", self.scenario_id, seed, opts, spec, difficulty,
            chain_start=first, tools=app_specs(self.apps or instance.apps), trace=self.trace,
        )  # fmt: skip
        if "git" in instance.apps:
            live.code = self.worlds.code_for(spec, task, instance)
            self._open.append(live.code)
        live.attach(noise, spec.seed)
        live.free_reads = opts.get("turns") == "writes"
        live.header = live.header_record()
        self._live = live
        if self.trace is not None:
            self.trace.write(live.header)
        return instance.prompt, live.reset_info()

    def close(self) -> None:
        """End any open episode (graded if a trace is recorded) and free its world (bases stay shared)."""
        self._finish_open_episode()
        for worlds in self._variants.values():
            worlds.close()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run one tool call; returns (observation, reward, terminated, truncated, info)."""
        live = self._require_live()
        if live.over:
            raise EpisodeOver(f"episode {live.episode_id} has ended; call reset() to start another")
        index = len(live.steps)
        name: str = "?"
        arguments: dict[str, Any] = {}
        try:
            name, arguments = parse_action(action)
            out = dispatch(
                name, arguments, index=index, tools=live.tools, ctx=live.ctx, change=live.change, gate=live.gate,
                code=live.code,
            )  # fmt: skip
        except BadAction as exc:
            out = Outcome(error={"code": exc.code, "message": str(exc)})
        live.terminated = out.submitted
        free = live.free_reads and not out.write and name not in ("submit", "wait")
        if not free:
            live.turns += 1
        if live.coworkers is not None:
            live.coworkers.after_step()
        live.clock.advance(0 if free else out.cost)
        advanced = (out.write and out.error is None) or live.coworkers is not None
        if advanced:
            live.chain.advance()
        live.check_limits()
        info = live.record_step(index, name, arguments, out, advanced)
        reward = self._final_score(live).value if live.over else 0.0
        error = out.error
        obs = f"error [{error['code']}]: {error['message']}" if error else canonical(out.result)
        return obs, reward, live.terminated, live.truncated, info

    def grade(self) -> Score:
        """Score the current state; once the episode has ended, its final score (graded once, then kept)."""
        live = self._require_live()
        return self._final_score(live) if live.over else live.grade()

    def regrade(self, rubric: Any, judge: Any = None) -> Score:
        """Score the current state under another rubric (rescoring); the episode's own score is untouched."""
        return self._require_live().grade(rubric, judge)

    def changes(self) -> tuple[ChangeRow, ...]:
        """The current episode's change-log rows so far (setup excluded): what graders and rubric buffers read."""
        return self._require_live().changes()

    def final_state(self, next_start: datetime | None = None) -> StartState:
        """The state the ended episode left, for the next episode of a campaign to start from.

        Commits the episode's changes in its private fork (so a reset can no longer roll them back) and captures
        the image. ``next_start`` is the earliest the next episode may begin (default: this episode's end; its
        setup then starts the day at its own actor's next workday morning, ``scenarios.library.setup.start_day``).

        Raises:
            SimError: the episode has not ended.
        """
        live = self._require_live()
        if not live.over:
            raise SimError(f"episode {live.episode_id} has not ended; submit or run it to its limit first")
        self.worlds.keep(live.world)
        live.ctx.session.commit()
        image = live.world.image() or live.world.snapshot().image  # PostgreSQL: its rows as a SQLite image
        at = next_start or live.clock.now()
        return StartState(spec_hash=live.spec.spec_hash, image=image, state_hash=live.chain.state_hash, clock_at=at)

    # -- introspection -----------------------------------------------------------------------------------

    @property
    def family(self) -> ScenarioFamily:
        """The scenario family whose tasks this episode plays (replaceable, e.g. by a wrapper in tests)."""
        return self.worlds.family

    @family.setter
    def family(self, family: ScenarioFamily) -> None:
        self.worlds.family = family

    @property
    def done(self) -> bool:
        """Whether the current episode has ended."""
        return self._live is not None and self._live.over

    @property
    def episode_id(self) -> str | None:
        """The current episode's id (None before the first reset)."""
        return self._live.episode_id if self._live is not None else None

    @property
    def instance(self) -> ScenarioInstance:
        """The current scenario instance (tests and oracles in-process only; never shown to the agent)."""
        return self._require_live().instance

    @property
    def steps(self) -> list[dict[str, Any]]:
        """The step records of the current episode."""
        return list(self._require_live().steps.records)

    @property
    def world(self) -> World:
        """The current episode's private world."""
        return self._require_live().world

    @property
    def tool_context(self) -> ToolContext:
        """The current episode's tool context (session, the agent's actor, clock), for wire-compatible facades."""
        return self._require_live().ctx

    @property
    def code(self) -> EpisodeCode | None:
        """The current episode's code workspace, when the task uses git."""
        return self._require_live().code

    @property
    def faults(self) -> list[dict[str, Any]]:
        """The faults injected into the current episode so far: step, type, tool, call index, request id."""
        return self._require_live().faults

    def coworker_stats(self) -> dict[str, Any] | None:
        """Coworker figures (``NpcWorld.stats``: messages, latency, workload, no-shows), or None without NPCs."""
        coworkers = self._require_live().coworkers
        return coworkers.stats() if coworkers is not None else None

    def header(self) -> dict[str, Any]:
        """The current episode's trace header."""
        return dict(self._require_live().header)

    # -- internals ---------------------------------------------------------------------------------------

    def _use_variant(self, via: str) -> None:
        """Play the family as ``prompt_via`` asks (its own TaskWorlds: the setups differ, so do their caches)."""
        worlds = self._variants.get(via)
        if worlds is None:
            plain = self._variants["system"]
            worlds = TaskWorlds(with_prompt_via(plain.family, via), self.store, use_cache=plain.use_cache)
            self._variants[via] = worlds
        if worlds is not self.worlds:
            self.worlds.drop_warm()  # one warm world per episode at a time
            self.worlds = worlds

    def _require_live(self) -> LiveEpisode:
        if self._live is None:
            raise NotReset("call reset() before step() or grade()")
        return self._live

    def _final_score(self, live: LiveEpisode) -> Score:
        return live.final_score(self.trace)

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
            self._open.remove(live.code)
        self.worlds.release(live.world, live.ctx.session)


def _free(codes: list[EpisodeCode]) -> None:
    """Remove the checkouts of an episode that was never closed (run when it is collected, or at exit)."""
    for code in codes:
        code.close()
    codes.clear()

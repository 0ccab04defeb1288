"""The state of a running episode, what the agent is told at reset, and the world spec a reset asks for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from graders.base import GradingContext, Score, grade
from graders.changes import ChangeRow
from graders.progress import Progress
from mcp_tools.base import ToolContext, ToolSpec, openai_tools
from scenarios.base import ScenarioFamily, ScenarioInstance
from sim.calls import Outcome
from sim.clock import SimClock
from sim.coworkers import Coworkers, check_npc_llm, check_npcs_option, effective_option, enabled, realiser_for
from sim.errors import BadOption
from sim.noise import FaultGate, NoiseProfile
from sim.record import ChangeChain, StepLog, grading_context, header_record, score_record
from sim.submit import SUBMIT_SCHEMA, WAIT_SCHEMA
from sim.tasks import OpenTask, log_since
from sim.trace import TraceWriter, chain_hash
from worlds.changelog import ChangeContext
from worlds.spec import WorldSpec
from worlds.store import World

if TYPE_CHECKING:
    from sim.workspace import EpisodeCode


def spec_for(family: ScenarioFamily, seed: int, options: Mapping[str, Any]) -> WorldSpec:
    """The world a reset asks for: ``world_seed`` (default the seed), ``employees``, ``history_days``."""
    return WorldSpec.parse(
        seed=int(options.get("world_seed", seed)),
        employees=int(options.get("employees", family.world.employees)),
        history_days=int(options.get("history_days", family.world.history_days)),
    )


TURNS = ("all", "writes")


def reset_options(
    options: Mapping[str, Any] | None, *, noise: Any, npcs: Any, npc_llm: Any = None
) -> tuple[dict[str, Any], NoiseProfile]:
    """A reset's options with the episode's defaults filled in, checked before anything changes.

    Raises:
        BadNoise, NpcError, BadOption: an unknown noise profile, a bad ``npcs`` or ``npc_llm`` option, an
            unknown ``turns``.
    """
    opts = dict(options or {})
    if noise != "none":
        opts.setdefault("noise", noise)
    if enabled(npcs):
        opts.setdefault("npcs", npcs)
    if npc_llm is not None:
        opts.setdefault("npc_llm", dict(npc_llm))
    profile = NoiseProfile.parse(opts.get("noise"))
    check_npcs_option(opts.get("npcs"))
    check_npc_llm(opts.get("npc_llm"))
    if opts.get("turns", "all") not in TURNS:
        raise BadOption(f"turns must be one of {', '.join(TURNS)}; got {opts['turns']!r:.40}")
    if not isinstance(opts.get("progress", False), bool):
        raise BadOption(f"progress must be true or false; got {opts['progress']!r:.40}")
    return opts, profile


@dataclass(kw_only=True)
class LiveEpisode:
    """Everything a running episode holds (dropped when it ends and its world is released)."""

    episode_id: str
    scenario_id: str
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
    chain: ChangeChain
    steps: StepLog
    gate: FaultGate | None = None
    terminated: bool = False
    truncated: bool = False
    score: Score | None = None
    coworkers: Coworkers | None = None
    code: EpisodeCode | None = None
    header: dict[str, Any] = field(default_factory=dict)
    turns: int = 0  # turns spent (every step, or only non-reads when ``free_reads``)
    free_reads: bool = False  # the ``turns: writes`` option: reads cost neither a turn nor simulated time
    progress: Progress | None = None  # the rubric's partial score, from the first step on

    @classmethod
    def begin(
        cls,
        task: OpenTask,
        episode_id: str,
        scenario_id: str,
        seed: int,
        options: dict[str, Any],
        spec: WorldSpec,
        difficulty: int,
        *,
        chain_start: str,
        tools: dict[str, ToolSpec],
        trace: TraceWriter | None,
    ) -> LiveEpisode:
        """The episode that starts on ``task``: the agent's context, the hash chain from the setup, empty steps."""
        setup, clock = task.setup, task.clock
        last_seq = setup.rows[-1]["seq"] if setup.rows else setup.base_seq  # a setup that wrote nothing
        task.change.actor_id, task.change.tag = setup.actor.employee_id, None
        return cls(
            episode_id=episode_id,
            scenario_id=scenario_id,
            seed=seed,
            options=options,
            spec=spec,
            world=task.world,
            instance=setup.instance,
            clock=clock,
            change=task.change,
            ctx=ToolContext(session=task.session, actor=setup.actor, clock=clock),
            tools=tools,
            start_seq=last_seq,
            start_clock=clock.now(),
            chain=ChangeChain(
                task.session, last_seq, chain_hash(chain_start, [scenario_id, seed, difficulty, setup.rows])
            ),
            steps=StepLog(trace),
        )

    def attach(self, noise: NoiseProfile, world_seed: int) -> None:
        """Start the episode's coworkers (when its ``npcs`` option or the task asks) and its fault gate.

        The gate also exists for a profile whose only fault is ``npc_no_show``: the no-shows it lists are the
        coworkers' (``Coworkers.faults``), merged into the episode's faults.
        """
        npcs = effective_option(self.options.get("npcs"), self.instance)
        if enabled(npcs):
            realiser = realiser_for(self.options.get("npc_llm"))
            self.coworkers = Coworkers(
                self.ctx.session, world_seed, self.clock, self.instance, npcs, noise=noise, seed=self.seed,
                realiser=realiser,
            )  # fmt: skip
            self.chain.advance()  # the personas, part of this episode's start
        if noise.rate > 0 or noise.apps or noise.tools or noise.npc_no_show > 0:
            self.gate = FaultGate(noise, self.seed)

    @property
    def faults(self) -> list[dict[str, Any]]:
        """Every fault so far: the gate's tool faults and the coworkers' no-shows, by step."""
        tools = self.gate.faults if self.gate is not None else []
        npcs = self.coworkers.faults if self.coworkers is not None else []
        return sorted([*tools, *npcs], key=lambda f: int(f["step"])) if npcs else list(tools)

    def header_record(self) -> dict[str, Any]:
        """The trace header of this episode as it starts."""
        return header_record(
            scenario=self.scenario_id,
            spec_json=self.spec.canonical_json(),
            seed=self.seed,
            options=self.options,
            episode_id=self.episode_id,
            actor=self.instance.actor,
            difficulty=self.instance.difficulty,
            rubric=self.instance.rubric,
            start_state_hash=self.chain.state_hash,
        )

    def check_limits(self) -> None:
        """Truncate the episode once it has spent its turns or its simulated-time budget (unless it ended)."""
        elapsed = (self.clock.now() - self.start_clock).total_seconds()
        limits = self.instance.limits
        if not self.terminated and (self.turns >= limits.max_turns or elapsed >= limits.time_budget_s):
            self.truncated = True

    def record_step(
        self, index: int, name: str, arguments: dict[str, Any], out: Outcome, advanced: bool
    ) -> dict[str, Any]:
        """Keep the step's record (and trace it); returns the step's info, the rubric's progress included.

        ``advanced``: the hash chain folded in this step's change-log rows (``ChangeChain.rows``), which the
        progress score reads; otherwise the step changed nothing.
        """
        clock, state_hash, error, fault = self.clock.now().isoformat(), self.chain.state_hash, out.error, out.fault
        self.steps.add(
            {"type": "step", "index": index, "action": {"name": name, "arguments": arguments}, "result": out.result,
             "error": error, "clock": clock, "state_hash": state_hash, "fault": fault}
        )  # fmt: skip
        value: float | None = None
        if self.progress is not None:
            value = self.progress.update(self.chain.rows if advanced else ())
        elif self.options.get("progress"):  # the first step: grade all so far once, then follow the changes
            self.progress = Progress(self.instance.rubric, self._context())
            value = self.progress.update(())
        return {"turn": self.turns, "clock": clock, "error": error, "state_hash": state_hash, "fault": fault,
                "progress": value}  # fmt: skip

    @property
    def over(self) -> bool:
        """Whether the episode has ended (submitted, or truncated by a limit)."""
        return self.terminated or self.truncated

    def changes(self) -> tuple[ChangeRow, ...]:
        """This episode's change-log rows (setup excluded), as a grader reads them."""
        self.ctx.session.flush()
        return tuple(ChangeRow.of(r) for r in log_since(self.ctx.session, self.start_seq))

    def grade(self, rubric: Any = None, judge: Any = None) -> Score:
        """Score the current state under ``rubric`` (default: the task's own)."""
        return grade(rubric or self.instance.rubric, self._context(judge))

    def _context(self, judge: Any = None) -> GradingContext:
        return grading_context(
            self.ctx.session,
            start_seq=self.start_seq,
            steps=self.steps.records,
            actor_id=self.ctx.actor.employee_id,
            params=self.instance.params,
            workspace=self.code.workspace if self.code is not None else None,
            judge=judge,
        )

    def final_score(self, trace: TraceWriter | None) -> Score:
        """The ended episode's score: graded once, written to the trace with its faults and NPC failures."""
        if self.score is None:
            self.score = self.grade()
            if trace is not None:
                failures = self.coworkers.failures if self.coworkers is not None else []
                extra: dict[str, Any] = {"npc_failures": failures} if failures else {}
                if self.coworkers is not None:
                    extra["coworkers"] = self.coworkers.stats()
                trace.write({**score_record(self.score), "faults": self.faults, **extra})
                trace.flush()
        return self.score

    def reset_info(self) -> dict[str, Any]:
        """What ``reset`` returns beside the prompt: ids, who the agent is, the tools, the clock, the limits."""
        actor = self.ctx.actor
        limits = self.instance.limits
        return {
            "episode_id": self.episode_id,
            "scenario": self.scenario_id,
            "prompt": self.instance.prompt,
            "actor": {"username": actor.username, "roles": sorted(actor.roles)},
            "tools": [*openai_tools(list(self.tools.values())), WAIT_SCHEMA, SUBMIT_SCHEMA],
            "clock": self.clock.now().isoformat(),
            "limits": {"max_turns": limits.max_turns, "time_budget_s": limits.time_budget_s},
        }

"""The scenario contract: a family turns (world, seeds, difficulty) into a task instance.

A family's ``build`` reads the forked world, writes the task's setup into it (new tickets, a rules post...)
through the session it is given (the change log tags those rows ``setup``, and grading only reads what came
after), and returns a ``ScenarioInstance``: the prompt, who the agent plays, the rubric and the hidden
expectations the rubric checks against. Hidden expectations never enter the world's tables, so no tool can
reveal them. Every family ships an oracle (a scripted agent that finds what it needs through the tools, never
by reading ``params``) and relies on the generic no-op and random agents in ``sim``. As soon as it knows its
actor, ``build`` starts the day with ``start_day`` (09:00 in the actor's zone, or a time of its own), before it
reads the clock for anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, time
from typing import Any, Protocol

from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.errors import RubricNotFound
from npcs.hours import WorkHours
from worlds.clock import Clock, MovableClock
from worlds.rawsql import Sql
from worlds.seeding import Seeds


@dataclass(frozen=True, kw_only=True)
class Limits:
    """When an episode is truncated: after ``max_turns`` tool calls or ``time_budget_s`` simulated seconds."""

    max_turns: int = 60
    time_budget_s: int = 8 * 3600


@dataclass(frozen=True, kw_only=True)
class WorldDefaults:
    """The company a family runs in unless the caller overrides it (small keeps resets cheap)."""

    employees: int = 40
    history_days: int = 30


@dataclass(frozen=True, kw_only=True)
class RepoCommit:
    """A commit a scenario adds on top of a generated repository's default branch (e.g. a seeded bug).

    The episode builds a task base from it once per task (the world's base objects are shared, never
    copied), so every checkout of the task starts from the same commit hash.
    """

    repo: str
    files: Mapping[str, str]
    message: str
    author: str
    at: datetime
    tag: str | None = None
    """An annotated tag to put on this commit (a release), tagged by its author at ``at``."""
    branch: str | None = None
    """The branch to commit on instead of the default branch (created from the default branch's head the first
    time a commit names it): a teammate's work in progress, such as the source of a merge request under review.
    The default branch stays where the other commits left it."""


@dataclass(frozen=True, kw_only=True)
class ScenarioInstance:
    """One concrete task. ``params`` are the hidden expectations the rubric checks against."""

    scenario_id: str
    prompt: str
    actor: str
    rubric: Rubric
    params: Mapping[str, Any]
    limits: Limits = field(default_factory=Limits)
    apps: tuple[str, ...] = ("chat", "tickets")
    difficulty: int = 1
    npcs: Mapping[str, Any] = field(default_factory=dict)
    """Coworkers the scenario pins, by username: a trait spec (preset name or dict) for ``TraitVector.parse``."""
    npc_population: tuple[str, ...] | None = None
    """Usernames that act as NPCs when NPCs are on (None: every active employee but the agent)."""
    needs_npcs: bool = False
    """The task cannot be done without coworkers who answer: with the ``npcs`` option off, the episode still runs
    ``sampled`` NPCs (so the scenario's pins in ``npcs`` apply, within ``npc_population``)."""
    repo_commits: tuple[RepoCommit, ...] = ()
    """Commits the task adds to repositories before the agent starts (needs the ``git`` app)."""


class ToolFailed(Exception):
    """Raised by ``AgentEnv.call`` when a tool returns an error; ``code`` is the tool's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class AgentEnv(Protocol):
    """What a scripted agent sees: the prompt, who it is, and a way to call tools."""

    prompt: str
    actor: str

    def call(self, name: str, /, **arguments: Any) -> Any:
        """Call a tool; returns its result or raises ToolFailed."""
        ...

    @property
    def done(self) -> bool:
        """Whether the episode has ended."""
        ...


class ScenarioFamily(Protocol):
    """A versioned task generator registered under an id like ``triage-tickets-v0``."""

    id: str
    description: str
    world: WorldDefaults

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Pick the task from the world, write its setup through ``session``, return the instance."""
        ...

    def oracle(self, env: AgentEnv) -> None:
        """Solve the task through tools only (never by reading the instance's params)."""
        ...


def rubric_at(family: ScenarioFamily, instance: ScenarioInstance, version: int) -> Rubric:
    """The family's rubric for ``instance`` at ``version`` (rescoring under an older or the current version).

    The current version is the instance's own; a family that keeps older ones defines
    ``older_rubric(instance, version) -> Rubric | None``, rebuilding them from the instance's hidden params.

    Raises:
        RubricNotFound: the family never had that version, or no longer builds it.
    """
    if version == instance.rubric.version:
        return instance.rubric
    older = getattr(family, "older_rubric", None)
    rubric = older(instance, version) if older is not None else None
    if not isinstance(rubric, Rubric):
        raise RubricNotFound(
            f"{family.id} builds rubric {instance.rubric.id} at version {instance.rubric.version}, not {version}"
        )
    return rubric


def story_of(family: ScenarioFamily) -> tuple[str, ...]:
    """The multi-day story ``family`` is one day of (scenario ids in the order a campaign plays them), or ().

    A family that is one episode of a longer story says so with a class attribute ``story = (day1, day2, ...)``;
    ``companysim campaign day1 day2 ...`` plays it on one world, each day starting on the next working morning
    where the previous ended, and later days are graded against what earlier days left in the world.
    """
    story = getattr(family, "story", ())
    return tuple(str(s) for s in story) if isinstance(story, tuple | list) else ()


#: The signature of an entry point named in the registry.
FamilyFactory = Callable[[], ScenarioFamily]


def start_day(session: Session, clock: Clock, employee: int | str, at: time = time(9, 0)) -> datetime:
    """Move ``clock`` to the first local ``at`` (09:00) on a workday of ``employee``; returns the new now.

    Why: the agent plays ``employee``, and coworkers keep their own hours; an episode that starts at 09:00 UTC
    starts at 04:00 in New York, where nobody is awake to answer. A family calls this as soon as it knows its
    actor and before it reads ``clock.now()`` for anything else, so the prompt, the setup's relative times and
    the coworkers' day all agree. The clock never moves back: the world's history ends at the clock's start
    (a fresh fork) or at the previous episode's end (a campaign), so the day is the first such morning after
    it, and a European agent of a world whose history ends at 09:00 UTC on Monday starts on Tuesday.
    ``at`` is the scenario's own start time when it wants another (a late-afternoon task, say).
    """
    column = "id" if isinstance(employee, int) else "username"
    row = Sql.of(session).one(
        f"SELECT timezone, work_start_minute, work_end_minute, workdays FROM employees WHERE {column} = ?",  # noqa: S608
        (employee,),
    )
    if row is None:
        raise ValueError(f"no employee {employee!r} to start the day of")
    now = clock.now()
    morning = WorkHours(str(row[0]), int(row[1]), int(row[2]), str(row[3])).morning(now, at)
    if morning != now:
        if not isinstance(clock, MovableClock):
            raise TypeError(f"{type(clock).__name__} cannot be moved to the start of the day")
        clock.advance_to(morning)
    return morning

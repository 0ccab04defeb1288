"""What every trainer adapter shares: a task row, the scenario's tool list, and one episode behind text calls.

Trainers differ in how they ask for a tool (a Python method, an async ``execute``, raw model text), but all of
them need the same three things from an episode: start it from a dataset row, run a tool call and get text back
*without* an exception (a trainer turns a raised error into a crashed rollout or an opaque ``{"error": ...}``),
and read the reward. ``EpisodeRunner`` is that, once, so the adapters stay thin and answer bad input the same
way: ``error [code]: message``, with the stable code the episode and the MCP server use.

The tool list is needed before the first reset (TRL reads the methods off the class, verl the YAML), but a
scenario names its apps only on the instance it builds. ``scenario_apps`` builds one (seed 0) the first time a
scenario is asked about and remembers the answer for the process; episodes are then opened with exactly those
apps, so what a trainer advertises is what the episode serves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_tools.base import openai_tools
from mcp_tools.company import app_specs
from scenarios.base import ToolFailed
from sim.episode import Episode
from sim.errors import BadOption, SimError
from sim.submit import SUBMIT_SCHEMA, WAIT_SCHEMA
from worlds.store import WorldStore

ROW_KEYS = ("scenario", "seed", "difficulty", "options")
"""The keys of a dataset row an adapter reads; any other key (the prompt, ``environment``, ...) is ignored."""

_APPS: dict[str, tuple[str, ...]] = {}


def error_line(code: str, message: str) -> str:
    """The text a refused call returns: the same shape ``Episode.step`` gives as its observation."""
    return f"error [{code}]: {message}"


def as_store(store: WorldStore | str | Path | None) -> WorldStore:
    """A world store from a store, a data directory (what YAML configs carry) or None (the default cache)."""
    return store if isinstance(store, WorldStore) else WorldStore(store)


def scenario_apps(scenario: str, store: WorldStore | str | Path | None = None) -> tuple[str, ...]:
    """The apps whose tools the agent gets in ``scenario`` (learnt once per process from the seed-0 task).

    Raises:
        ScenarioRegistryError: the scenario is not registered.
    """
    if scenario not in _APPS:
        with Episode(scenario, store=as_store(store), setup_cache=True) as probe:
            probe.reset(seed=0)
            _APPS[scenario] = tuple(sorted(probe.instance.apps))
    return _APPS[scenario]


def scenario_tools(scenario: str, store: WorldStore | str | Path | None = None) -> list[dict[str, Any]]:
    """The scenario's tools as OpenAI function schemas (flat, no ``anyOf``), with ``wait`` and ``submit`` last.

    The same list, in the same order, as ``Episode.reset`` puts in its info.
    """
    specs = app_specs(scenario_apps(scenario, store))
    return [*openai_tools(specs.values()), WAIT_SCHEMA, SUBMIT_SCHEMA]


@dataclass(frozen=True)
class TaskRow:
    """Which task a rollout plays: scenario, seed, difficulty and extra reset options."""

    scenario: str
    seed: int
    difficulty: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, row: Mapping[str, Any], scenario: str) -> TaskRow:
        """Read a dataset row for an adapter bound to ``scenario``.

        A row names its task with ``seed`` (required), ``difficulty`` (default 1), ``options`` (reset options
        such as ``world_seed`` or ``noise``) and optionally ``scenario``, which must be the adapter's own.

        Raises:
            BadOption: a field is missing, of the wrong type, or names another scenario. This is a dataset bug,
                so it is raised (and stops the run) rather than played as an episode of errors.
        """
        named = row.get("scenario", scenario)
        if named != scenario:
            raise BadOption(f"row is for scenario {named!r}, but this adapter plays {scenario!r}")
        seed, difficulty, options = row.get("seed"), row.get("difficulty", 1), row.get("options") or {}
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise BadOption(f"row needs an integer 'seed'; got {seed!r:.40}")
        if isinstance(difficulty, bool) or not isinstance(difficulty, int):
            raise BadOption(f"row 'difficulty' must be an integer; got {difficulty!r:.40}")
        if not isinstance(options, Mapping):
            raise BadOption(f"row 'options' must be an object; got {type(options).__name__}")
        return cls(scenario=scenario, seed=seed, difficulty=difficulty, options=dict(options))


@dataclass(frozen=True)
class StepText:
    """One call's outcome as a trainer wants it: text, the reward so far, whether the episode ended."""

    text: str
    reward: float
    done: bool
    error: str | None = None  # the error code, when the call was refused


class EpisodeRunner:
    """One episode played through text calls that never raise.

    Args:
        scenario: A registered scenario id.
        store: A world store, a data directory, or None for the default cache.
        apps: The apps to serve (default: the scenario's, see ``scenario_apps``).
    """

    def __init__(
        self, scenario: str, store: WorldStore | str | Path | None = None, apps: tuple[str, ...] | None = None
    ) -> None:
        self.scenario = scenario
        world_store = as_store(store)
        self.episode = Episode(scenario, store=world_store, apps=apps or scenario_apps(scenario, world_store))
        self.info: dict[str, Any] = {}

    def reset(self, task: TaskRow) -> str:
        """Start the task and return its prompt; ``info`` then holds the episode id, the actor and the tools."""
        options = {**task.options, "difficulty": task.difficulty}
        prompt, self.info = self.episode.reset(seed=task.seed, options=options)
        return prompt

    @property
    def actor(self) -> str:
        """The username the agent acts as in the current episode."""
        return str(self.info["actor"]["username"]) if self.info else ""

    @property
    def started(self) -> bool:
        """Whether an episode has been reset (and not closed)."""
        return self.episode.episode_id is not None

    @property
    def done(self) -> bool:
        """Whether the current episode has ended (submitted or out of turns or time)."""
        return self.episode.done

    def call(self, name: str, arguments: Any) -> StepText:
        """Run one tool call; a refused call (before reset, after the end, a bad action) is an error line."""
        try:
            obs, reward, _, _, info = self.episode.step({"name": name, "arguments": arguments})
        except SimError as exc:
            return StepText(error_line(exc.code, str(exc)), 0.0, self.done, exc.code)
        error = info["error"]
        return StepText(obs, reward, self.done, error["code"] if error else None)

    def reward(self) -> float:
        """The episode's score: final once it has ended, the current state's before (0.0 before any reset)."""
        return self.episode.grade().value if self.started else 0.0

    def close(self) -> None:
        """Free the episode's world."""
        self.episode.close()


class TextAgentEnv:
    """The ``scenarios.base.AgentEnv`` view of an adapter, so a family's scripted oracle can drive it.

    The oracle then acts only through the adapter's own text interface (what a model would produce and read),
    which makes "the oracle reaches reward 1 through the adapter" a test of the adapter, not of the episode.

    Args:
        call_text: Runs one tool call by name and keyword arguments through the adapter; returns its text.
        prompt: The prompt the adapter gave at reset.
        actor: The username the agent acts as.
        is_done: Whether the adapter's episode has ended.
    """

    def __init__(
        self, call_text: Callable[[str, dict[str, Any]], str], prompt: str, actor: str, is_done: Callable[[], bool]
    ) -> None:
        self.call_text = call_text
        self.prompt = prompt
        self.actor = actor
        self.is_done = is_done

    @property
    def done(self) -> bool:
        """Whether the episode has ended."""
        return self.is_done()

    def call(self, name: str, /, **arguments: Any) -> Any:
        """Run a tool through the adapter; returns the parsed result or raises ToolFailed with its code."""
        text = self.call_text(name, arguments)
        if text.startswith("error ["):
            code, _, message = text[len("error [") :].partition("]: ")
            raise ToolFailed(code, message)
        return json.loads(text)

"""verl: a native tool class (the ``BaseTool`` interface) whose calls play episodes kept by episode id.

verl instantiates one tool object per entry of its tool YAML (``class_name``, ``config``, ``tool_schema``), and
its ``ToolAgentLoop`` runs ``create -> execute -> release`` around *every single tool call*, passing the row's
``tools_kwargs[tool]["create_kwargs"]`` to ``create`` and the trajectory's ``agent_data`` to ``execute``. So an
episode cannot live in a tool object or in one ``create``: it lives in a process-wide ``EpisodePool``, keyed by
the trajectory's ``agent_data.request_id`` when verl gives one (unique per rollout, so the G rollouts of a GRPO
group get G episodes), else by the ``episode_id`` in ``create_kwargs``, else by the ``instance_id`` the caller
passed to ``create``. ``release`` frees an episode only once it has ended; ``EpisodePool.close`` frees any.

verl's tool-schema model keeps only ``type``, ``description`` and ``enum`` per property (``items`` and
``default`` are dropped without a word, ``anyOf`` is refused), so ``verl_tool_schema`` folds the item type and
the default into the description, and keeps ``type: [x, "null"]`` for optional arguments, which it accepts.

Nothing here imports verl (which needs torch): the class follows the interface by shape, responses are
verl's ``ToolResponse`` when verl is already loaded in the process and an equivalent object otherwise.
"""

from __future__ import annotations

import json
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from scenarios.registry import ScenarioRegistryError
from sim.adapters.common import EpisodeRunner, TaskRow, error_line, scenario_apps, scenario_tools
from sim.errors import SimError

CLASS_NAME = "sim.adapters.verl.CompanySimTool"
MAX_EPISODES = 4096
"""Live episodes the pool keeps; past that the least recently used one is closed (a rollout abandoned unended)."""


class PropertySchema(BaseModel):
    """One parameter as verl's schema model keeps it: type, description and enum, nothing nested."""

    type: str | list[str]
    description: str | None = None
    enum: list[Any] | None = None


class ParametersSchema(BaseModel):
    """The flat parameter object of a tool."""

    type: str
    properties: dict[str, PropertySchema]
    required: list[str] = Field(default_factory=list)


class FunctionSchema(BaseModel):
    """A function's name, description and parameters."""

    name: str
    description: str
    parameters: ParametersSchema


class ToolSchema(BaseModel):
    """An OpenAI function tool in the shape verl's ``OpenAIFunctionToolSchema`` accepts (has ``model_dump``)."""

    type: str
    function: FunctionSchema


@dataclass
class ToolResponse:
    """What ``create`` and ``execute`` return when verl is not loaded: the fields verl's loop reads."""

    text: str | None = None
    image: list[Any] | None = None
    video: list[Any] | None = None


def _response(text: str) -> Any:
    """The ``ToolResponse`` of verl when verl is loaded (inside a trainer), else the local equivalent."""
    schemas = sys.modules.get("verl.tools.schemas")
    cls = getattr(schemas, "ToolResponse", None) if schemas is not None else None
    return cls(text=text) if cls is not None else ToolResponse(text=text)


def _flat_property(prop: dict[str, Any]) -> dict[str, Any]:
    """A property with ``items`` and ``default`` moved into the description, where verl's model keeps them."""
    description = prop.get("description", "")
    if "items" in prop:
        description += f" A list of {prop['items']['type']} values."
    if "default" in prop:
        description += f" Default: {json.dumps(prop['default'])}."
    out: dict[str, Any] = {"type": prop["type"], "description": description.strip()}
    if "enum" in prop:
        out["enum"] = prop["enum"]
    return out


def verl_tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI tool schema reduced to what verl's schema model keeps, losing no information the model needs."""
    function = tool["function"]
    params = function["parameters"]
    return {
        "type": "function",
        "function": {
            "name": function["name"],
            "description": function["description"],
            "parameters": {
                "type": "object",
                "properties": {k: _flat_property(v) for k, v in params["properties"].items()},
                "required": list(params.get("required", [])),
            },
        },
    }


def verl_tool_config(scenario: str, *, data_dir: str | Path | None = None) -> dict[str, Any]:
    """The ``tools:`` YAML for verl's ``tool_config_path``: one native tool entry per tool of ``scenario``.

    Args:
        scenario: A registered scenario id.
        data_dir: Where base worlds are cached (default: COMPANYSIM_DATA_DIR or the user cache).
    """
    config: dict[str, Any] = {"type": "native", "scenario": scenario}
    if data_dir is not None:
        config["data_dir"] = str(data_dir)
    tools = scenario_tools(scenario, data_dir)
    return {
        "tools": [{"class_name": CLASS_NAME, "config": dict(config), "tool_schema": verl_tool_schema(t)} for t in tools]
    }


def verl_row(scenario: str, seed: int, *, difficulty: int = 1, data_dir: str | Path | None = None) -> dict[str, Any]:
    """A dataset row for verl's RL dataset: the task prompt, and ``tools_kwargs`` naming the task for every tool.

    The prompt comes from resetting the task here (resets are deterministic, so the episode the tools start
    later is the same task).
    """
    runner = EpisodeRunner(scenario, data_dir)
    try:
        prompt = runner.reset(TaskRow(scenario=scenario, seed=seed, difficulty=difficulty))
    finally:
        runner.close()
    task = {"scenario": scenario, "seed": seed, "difficulty": difficulty}
    kwargs = {t["function"]["name"]: {"create_kwargs": dict(task)} for t in scenario_tools(scenario, data_dir)}
    return {
        "prompt": [{"role": "user", "content": prompt}],
        "agent_name": "tool_agent",
        "extra_info": {"tools_kwargs": kwargs, **task},
    }


class EpisodePool:
    """Live episodes by key, shared by every tool object in the process (verl makes one object per tool).

    Ended episodes' runners are kept per scenario and reused, so a new rollout of a task skips the fork.
    """

    def __init__(self, max_episodes: int = MAX_EPISODES) -> None:
        self.max_episodes = max_episodes
        self.live: OrderedDict[str, EpisodeRunner] = OrderedDict()
        self.idle: dict[tuple[str, str | None], list[EpisodeRunner]] = {}
        self.ended: OrderedDict[str, float] = OrderedDict()  # key -> final score of an episode closed after its end
        self._keys: dict[int, tuple[str, str | None]] = {}

    def get(self, key: str) -> EpisodeRunner | None:
        """The live episode under ``key``, marked as just used."""
        runner = self.live.get(key)
        if runner is not None:
            self.live.move_to_end(key)
        return runner

    def start(self, key: str, task: TaskRow, data_dir: str | None) -> tuple[EpisodeRunner, str]:
        """Reset a new episode of ``task`` under ``key`` (replacing any episode there); returns it and its prompt."""
        self.close(key)
        self.ended.pop(key, None)
        slot = (task.scenario, data_dir)
        idle = self.idle.get(slot)
        runner = idle.pop() if idle else EpisodeRunner(task.scenario, data_dir, scenario_apps(task.scenario, data_dir))
        self._keys[id(runner)] = slot
        prompt = runner.reset(task)
        self.live[key] = runner
        while len(self.live) > self.max_episodes:
            self.close(next(iter(self.live)))
        return runner, prompt

    def close(self, key: str) -> None:
        """Stop the episode under ``key`` (if any) and keep its runner for reuse."""
        runner = self.live.pop(key, None)
        if runner is not None:
            if runner.done:  # a later call of that rollout is refused, not a new episode
                self.ended[key] = runner.reward()
                while len(self.ended) > self.max_episodes:
                    self.ended.popitem(last=False)
            self.idle.setdefault(self._keys[id(runner)], []).append(runner)

    def close_all(self) -> None:
        """Stop every episode and free every world."""
        for key in list(self.live):
            self.close(key)
        for runners in self.idle.values():
            for runner in runners:
                self._keys.pop(id(runner), None)
                runner.close()
        self.idle.clear()
        self.ended.clear()


POOL = EpisodePool()
"""The process's episodes (verl runs its agent loops as asyncio tasks in one worker process)."""


class CompanySimTool:
    """One companysim tool for verl (``BaseTool`` interface); every call runs in the episode of its rollout.

    Args:
        config: The YAML entry's ``config``: ``scenario`` (default for rows that do not name one), optional
            ``data_dir``.
        tool_schema: The YAML entry's ``tool_schema`` (verl passes its parsed model), or None to build it.
    """

    def __init__(self, config: dict[str, Any], tool_schema: Any = None) -> None:
        self.config = dict(config)
        self.scenario: str = self.config["scenario"]
        self.data_dir: str | None = self.config.get("data_dir")
        self.tool_schema = tool_schema
        self.name: str = tool_schema.function.name if tool_schema is not None else self.config["name"]
        if tool_schema is None:
            tools = {t["function"]["name"]: t for t in scenario_tools(self.scenario, self.data_dir)}
            self.tool_schema = ToolSchema.model_validate(verl_tool_schema(tools[self.name]))
        self.pool = POOL
        self._pending: dict[str, dict[str, Any]] = {}  # handle -> the task its create named
        self._bound: dict[str, str] = {}  # handle -> the episode key its execute used
        self._handles = 0

    def get_openai_tool_schema(self) -> Any:
        """The tool's schema (``model_dump`` gives the OpenAI function dict)."""
        return self.tool_schema

    async def create(
        self, instance_id: str | None = None, create_kwargs: dict[str, Any] | None = None, **kwargs: Any
    ) -> tuple[str, Any]:
        """Note which task this call belongs to; returns a handle for ``execute``.

        With an ``instance_id`` that has no live episode and a task in ``create_kwargs`` (``seed``, ...), the
        episode starts now and the response carries its prompt; otherwise it starts on the first ``execute``,
        keyed by the rollout.
        """
        task = dict(create_kwargs or {})
        if instance_id is None:
            self._handles += 1
            handle = f"{self.name}#{self._handles}"
            self._pending[handle] = task
            return handle, _response("")
        self._pending[instance_id] = task
        if self.pool.get(instance_id) is None and "seed" in task:
            started = self._start(instance_id, task)
            if isinstance(started, str):
                return instance_id, _response(started)
            return instance_id, _response(started[1])
        return instance_id, _response("")

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        """Run this tool with ``parameters`` in the rollout's episode; returns (response, step reward, metrics).

        The step reward is 0.0 until the episode ends, then its score. A refused call is an error line.
        """
        key = self._key(instance_id, kwargs.get("agent_data"))
        self._bound[instance_id] = key  # verl releases the handle without agent_data
        runner = self.pool.get(key)
        if runner is None and key in self.pool.ended:
            return _response(error_line("episode_over", f"episode {key!r} has ended")), 0.0, {"done": True}
        if runner is None:
            task = self._pending.get(instance_id)
            if task is None:
                return _response(error_line("not_reset", f"no episode for {key!r}; call create() first")), 0.0, {}
            started = self._start(key, task)
            if isinstance(started, str):
                return _response(started), 0.0, {}
            runner = started[0]
        step = runner.call(self.name, parameters)
        metrics = {"episode_id": runner.info.get("episode_id"), "error": step.error, "done": step.done}
        return _response(step.text), step.reward, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The rollout's score: final once it ended, the current state's before (0.0 for an unknown episode)."""
        key = self._key(instance_id, kwargs.get("agent_data"))
        runner = self.pool.get(key)
        return runner.reward() if runner is not None else self.pool.ended.get(key, 0.0)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget this call's handle; free the episode only if it has ended (verl releases after every call)."""
        key = self._bound.pop(instance_id, None) or self._key(instance_id, kwargs.get("agent_data"))
        self._pending.pop(instance_id, None)
        runner = self.pool.get(key)
        if runner is not None and runner.done:
            self.pool.close(key)

    def _key(self, instance_id: str, agent_data: Any) -> str:
        request_id = getattr(agent_data, "request_id", None)
        if request_id:
            return str(request_id)
        episode_id = self._pending.get(instance_id, {}).get("episode_id")
        return str(episode_id) if episode_id else instance_id

    def _start(self, key: str, task: dict[str, Any]) -> tuple[EpisodeRunner, str] | str:
        """Start the episode ``task`` names; a bad task is an error line (verl would only log a raise)."""
        try:
            row = TaskRow.parse(task, str(task.get("scenario", self.scenario)))
            return self.pool.start(key, row, self.data_dir)
        except SimError as exc:
            return error_line(exc.code, str(exc))
        except ScenarioRegistryError as exc:
            return error_line("unknown_scenario", str(exc))

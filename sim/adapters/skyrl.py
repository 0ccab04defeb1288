"""SkyRL: a skyrl-gym text environment that reads tool calls out of the model's raw text.

SkyRL's generator makes one env per trajectory with ``skyrl_gym.make(env_class, env_config=..., extras=row)``,
calls ``init(prompt_messages)``, then ``step(model_text)`` until ``done``. The model's text is all the env
gets, so the env parses the calls itself: every ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
block (the Hermes/Qwen format; several per turn are run in order), each run as one ``Episode.step``. The
observation is one user message with a ``<tool_response>`` block per call, so the model reads what each call
did, refusals included (``error [code]: message``); a turn without a call, a call that is not JSON, or a turn
after the end is an error response too, never an exception.

``done`` is the episode's end (``submit``, its turn limit or time budget) or the row's ``max_turns``; the
reward is 0.0 until then and the episode's score on the last step. Importing this module registers the env as
``companysim`` with skyrl-gym.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from skyrl_gym import register, registry
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from sim.adapters.common import EpisodeRunner, TaskRow, error_line
from sim.calls import parse_action
from sim.errors import BadAction, BadOption

ENV_ID = "companysim"
TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
CALL_FORMAT = '<tool_call>{"name": "<tool name>", "arguments": {<arguments>}}</tool_call>'
MAX_CALLS_PER_TURN = 16
"""Calls run from one model turn; more are refused, so one runaway message cannot spend the episode."""


def _get(config: Any, key: str, default: Any = None) -> Any:
    """A key of a dict, an omegaconf DictConfig (SkyRL passes one) or an attribute object."""
    if config is None:
        return default
    if isinstance(config, Mapping) or hasattr(config, "get"):
        return config.get(key, default)
    return getattr(config, key, default)


def tool_prompt(tools: list[dict[str, Any]]) -> str:
    """How to call tools, and the tools, as text (the generator does not pass tools to the chat template)."""
    listed = "\n".join(json.dumps(t, sort_keys=True) for t in tools)
    return (
        f"Call tools by writing {CALL_FORMAT}; you may write several calls in one message. "
        "Call submit when the task is done.\n<tools>\n" + listed + "\n</tools>"
    )


class CompanySimTextEnv(BaseTextEnv):  # type: ignore[misc]  # skyrl-gym is untyped
    """One companysim episode as a skyrl-gym ``BaseTextEnv``.

    Args:
        env_config: ``scenario`` (for rows that do not name one) and optional ``data_dir``.
        extras: The dataset row: ``seed`` (required), ``difficulty``, ``options``, ``scenario``, ``max_turns``.

    Raises:
        BadOption: no scenario is named, or the row does not name a task (a dataset bug, raised at construction
            like skyrl's own envs).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        row = dict(extras or {})
        scenario = row.get("scenario") or _get(env_config, "scenario")
        if not isinstance(scenario, str) or not scenario:
            raise BadOption("name the scenario in env_config ('scenario') or in the row")
        self.task = TaskRow.parse(row, scenario)
        self.runner = EpisodeRunner(scenario, _get(env_config, "data_dir"))
        self.max_turns = int(row.get("max_turns") or 10_000)
        self.ended = False

    def init(self, prompt: list[dict[str, str]] | None = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset the episode; returns the prompt with the task and the tool list added to its last user message."""
        task_prompt = self.runner.reset(self.task)
        text = f"{task_prompt}\n\n{tool_prompt(self.runner.info['tools'])}"
        messages = [dict(m) for m in prompt or []]
        if messages and messages[-1].get("role") == "user":
            messages[-1]["content"] = f"{messages[-1]['content']}\n\n{text}"
        else:
            messages.append({"role": "user", "content": text})
        self.turns, self.ended = 0, False
        info = self.runner.info
        return messages, {"episode_id": info["episode_id"], "actor": info["actor"], "tools": info["tools"]}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Run the tool calls in the model's text; returns the responses, reward, done and per-call metadata."""
        if not self.runner.started:
            return self._output([error_line("not_reset", "call init() before step()")], [], done=True, reward=0.0)
        if self.ended:
            return self._output([error_line("episode_over", "the episode has ended")], [], done=True, reward=0.0)
        self.turns += 1
        blocks = TOOL_CALL.findall(action if isinstance(action, str) else "")
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        if not blocks:
            texts.append(error_line("bad_action", f"no tool call found; write {CALL_FORMAT}"))
        for index, block in enumerate(blocks):
            if self.runner.done:
                texts.append(error_line("episode_over", "the episode ended before this call"))
                break
            if index >= MAX_CALLS_PER_TURN:
                texts.append(error_line("bad_action", f"at most {MAX_CALLS_PER_TURN} calls per message"))
                break
            try:
                name, arguments = parse_action(block.strip())
            except BadAction as exc:
                texts.append(error_line(exc.code, str(exc)))
                calls.append({"name": None, "error": exc.code})
                continue
            step = self.runner.call(name, arguments)
            texts.append(step.text)
            calls.append({"name": name, "error": step.error})
        self.ended = self.runner.done or self.turns >= self.max_turns
        return self._output(texts, calls, done=self.ended, reward=self.runner.reward() if self.ended else 0.0)

    def _output(
        self, texts: list[str], calls: list[dict[str, Any]], *, done: bool, reward: float
    ) -> BaseTextEnvStepOutput:
        content = "\n".join(f"<tool_response>\n{t}\n</tool_response>" for t in texts)
        metadata = {"calls": calls, "turn": self.turns, "episode_id": self.runner.info.get("episode_id")}
        return BaseTextEnvStepOutput(
            observations=[{"role": "user", "content": content}], reward=reward, done=done, metadata=metadata
        )

    def close(self) -> None:
        """Free the episode's world."""
        self.runner.close()


def register_env(env_id: str = ENV_ID) -> None:
    """Register ``CompanySimTextEnv`` with skyrl-gym under ``env_id`` (once; again is a no-op)."""
    if env_id not in registry:
        register(id=env_id, entry_point=f"{__name__}:CompanySimTextEnv")


register_env()

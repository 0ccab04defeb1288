"""An LLM agent: any OpenAI-compatible chat-completions model with tool calling plays an episode.

The loop is the one every tool-calling client runs: a system prompt (who the agent is, its limits), the task
prompt from ``reset`` as the user's message, the episode's tools (reset ``info["tools"]``, already OpenAI
function schemas), then model turn after model turn. Each tool call the model asks for, in the order given
(parallel calls included), is one ``Episode.step``; its observation goes back as a ``tool`` message, refused
calls included (``error [code]: message``), so the model can correct itself. Arguments that are not a JSON
object never reach the episode: the runner answers them with a ``bad_action`` tool message and the episode goes
on (the step log holds only actions that can be replayed).

Why every model call goes through ``worlds.llm.ChatModel``: its record/replay cache. A run recorded against a
server replays offline, bit for bit, with the server gone: the requests are a pure function of the episode (the
conversation is built only from reset info, recorded completions and step observations), so the same requests
hash to the same recorded answers.

Limits: ``max_turns`` model calls; ``max_context_tokens`` of conversation (estimated as characters / 4, so the
estimate is the same on every machine), kept by shortening the oldest tool results first and never the system
prompt or the task. When the model stops without calling ``submit`` (no tool call, or out of turns), the runner
submits for it, so the episode is always graded.

The transcript goes into the trace as ``agent`` records, one per model turn, written before the steps its tool
calls make: the assistant message (text and tool calls), the finish reason, token usage, the request's cache key,
how many old tool results were shortened and which calls had arguments the runner answered itself.
``sim.trace.read_trace`` leaves them out of the episodes it yields (a replay re-runs the steps), and
``read_trace(..., agent=True)`` keeps them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graders.base import Score
from sim.episode import Episode, StartState
from sim.trace import canonical
from worlds.llm import ChatModel, Completion

__all__ = ["SYSTEM_PROMPT", "LLMAgentConfig", "LLMRun", "estimate_tokens", "fit_context", "run_llm_agent"]

SYSTEM_PROMPT = (
    "You are {username}, an employee of this company (roles: {roles}). You work only through the tools you are"
    " given: they act on the company's chat, tickets, mail, calendar and other apps as you. The simulated time"
    " is {clock}. You may make at most {max_turns} tool calls and spend {budget} minutes of simulated time."
    " A refused call returns 'error [code]: message'; read it and correct the call. When everything the task"
    " asks for is done, call submit once with a one-sentence summary."
)
"""The system message; filled from the reset info only, so it is the same on every replay."""

TRUNCATED = "[older tool result shortened to keep the conversation within the context limit: {n} characters]"


@dataclass(frozen=True, kw_only=True)
class LLMAgentConfig:
    """How the runner drives the model.

    Attributes:
        max_turns: Model calls per episode; the runner submits when they are spent.
        max_context_tokens: Estimated tokens the conversation may hold (system prompt and task always kept).
        temperature: Sampling temperature sent with every request (part of the cache key).
        max_tokens: Completion token limit sent with every request (None: the server's default).
        seed: The ``seed`` sent with every request (servers that honour it sample reproducibly).
    """

    max_turns: int = 50
    max_context_tokens: int = 32_000
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int = 0


@dataclass(frozen=True, kw_only=True)
class LLMRun:
    """One played episode: its score, the model calls it took, and how many came from the cache."""

    score: Score
    turns: int
    cached: int
    submitted_by_runner: bool
    usage: Mapping[str, int]


def estimate_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    """A machine-independent token estimate: canonical JSON characters / 4 (no tokenizer to pin)."""
    return (len(canonical(messages)) + (len(canonical(tools)) if tools else 0)) // 4


def fit_context(messages: list[dict[str, Any]], tools: list[dict[str, Any]], limit: int) -> int:
    """Shorten the oldest tool results in place until the conversation fits ``limit``; returns how many.

    The system prompt and the task (the first two messages) are never touched, nor is the newest tool result
    the model has not read yet. What stays is a one-line placeholder, so the call and its answer stay paired
    (servers refuse a tool call without its answer).
    """
    shortened = 0
    for message in messages[2:-1]:
        if estimate_tokens(messages, tools) <= limit:
            break
        content = message.get("content")
        if message.get("role") != "tool" or not isinstance(content, str) or content.startswith("[older tool"):
            continue
        message["content"] = TRUNCATED.format(n=len(content))
        shortened += 1
    return shortened


def _system(info: Mapping[str, Any]) -> str:
    actor, limits = info["actor"], info["limits"]
    return SYSTEM_PROMPT.format(
        username=actor["username"],
        roles=", ".join(actor["roles"]) or "none",
        clock=info["clock"],
        max_turns=limits["max_turns"],
        budget=int(limits["time_budget_s"]) // 60,
    )


def _arguments(text: str) -> dict[str, Any] | str:
    """The call's arguments as a dict, or the reason they are not a JSON object."""
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        return f"arguments are not valid JSON ({exc.msg} at character {exc.pos}); send a JSON object"
    if not isinstance(value, dict):
        return f"arguments must be a JSON object; got {type(value).__name__}"
    return value


def run_llm_agent(
    episode: Episode,
    model: ChatModel,
    seed: int,
    options: dict[str, Any] | None = None,
    config: LLMAgentConfig | None = None,
    *,
    start: StartState | None = None,
) -> LLMRun:
    """Reset ``episode`` with ``seed``, let ``model`` play it through tool calls to the end, and score it.

    Raises:
        LLMMiss: a request was not recorded and the model may not call its endpoint (replay-only).
        LLMUnavailable: the endpoint failed (down, refused the key, answered something else).
    """
    cfg = config or LLMAgentConfig()
    prompt, info = episode.reset(seed=seed, options=options, start=start)
    tools: list[dict[str, Any]] = info["tools"]
    messages: list[dict[str, Any]] = [{"role": "system", "content": _system(info)}, {"role": "user", "content": prompt}]
    turns = cached = 0
    usage: dict[str, int] = {}
    while turns < cfg.max_turns and not episode.done:
        shortened = fit_context(messages, tools, cfg.max_context_tokens)
        completion = model.complete(
            messages, tools=tools, temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=cfg.seed
        )
        turns += 1
        cached += completion.cached
        for key, value in completion.usage.items():
            usage[key] = usage.get(key, 0) + value
        messages.append(completion.message())
        _trace_turn(episode, turns, model.last_key, completion, shortened)
        _play_calls(episode, completion, messages)
        if not completion.tool_calls:
            break  # the model stopped talking to the tools: its answer is final
    by_runner = not episode.done
    if by_runner:
        episode.step({"name": "submit", "arguments": {"summary": "the model stopped without submitting"}})
    return LLMRun(score=episode.grade(), turns=turns, cached=cached, submitted_by_runner=by_runner, usage=usage)


def _play_calls(episode: Episode, completion: Completion, messages: list[dict[str, Any]]) -> None:
    """Run the turn's tool calls in order, appending one tool message each.

    Every call gets an answer (servers refuse a conversation with an unanswered call): arguments that are not a
    JSON object are answered ``bad_action`` without a step, and a call after the episode ended ``episode_over``.
    """
    for call in completion.tool_calls:
        arguments = _arguments(call.arguments)
        if episode.done:
            code, text = "episode_over", "the episode has ended; this call was not run"
        elif isinstance(arguments, str):
            code, text = "bad_action", f"{call.name}: {arguments}"
        else:
            obs, *_ = episode.step({"name": call.name, "arguments": arguments})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": obs})
            continue
        messages.append({"role": "tool", "tool_call_id": call.id, "content": f"error [{code}]: {text}"})


def _trace_turn(episode: Episode, turn: int, key: str, completion: Completion, shortened: int) -> None:
    """Write the turn's ``agent`` record before the steps its calls make (the last one may close the episode).

    ``invalid_arguments`` names the calls the runner answers itself (their arguments are not a JSON object), so
    the transcript explains why they have no step.
    """
    if episode.trace is None:
        return
    invalid = [c.id for c in completion.tool_calls if isinstance(_arguments(c.arguments), str)]
    record = {
        "type": "agent",
        "turn": turn,
        "episode_id": episode.episode_id,
        "request": key,
        "message": completion.message(),
        "finish_reason": completion.finish_reason,
        "usage": dict(sorted(completion.usage.items())),
        "shortened": shortened,
        "invalid_arguments": invalid,
    }
    episode.trace.write(record)

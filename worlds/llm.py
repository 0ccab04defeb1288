"""Chat completions from an OpenAI-compatible endpoint, recorded and replayed by the hash of the request.

Every model call of the project (an NPC's rewording, a judge's verdict, a proposed rubric check, an agent's
next tool call) goes through ``ChatModel.complete``. Why one recorder for all of them: determinism. A run with
an endpoint records each completion under the SHA-256 of the canonical request (model, messages, tools,
sampling parameters); a later run with the same request reads the record and never calls a model, so a
replay gives the same bytes offline, on any machine, with the endpoint gone. ``replay_only`` makes a miss an
error (``LLMMiss``) instead of a call, which is how a replay proves it used no model.

The cache is a JSON Lines file, one record per line (``{"key", "request", "response"}``), appended under an
exclusive lock so concurrent processes can share it; it can ship next to a trace. No key or header is ever
written into it. ``openai`` is imported on the first real call only, so replays and template paths never
import it.

Wire format: requests and responses are the chat-completions JSON of the OpenAI API (``tools`` as function
schemas, ``tool_calls`` with JSON-string arguments), which vLLM, llama.cpp's server and hosted APIs speak.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worlds.errors import LLMError, LLMMiss, LLMUnavailable

__all__ = ["ChatCache", "ChatModel", "Completion", "LLMError", "LLMMiss", "LLMUnavailable", "ToolCall"]

API_KEY_ENV = ("COMPANYSIM_LLM_API_KEY", "OPENAI_API_KEY")
"""Where the endpoint's key is read from (first set wins); never stored anywhere."""


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for: its id, the tool's name and the arguments as a JSON string."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    """The model's answer: text, tool calls, why it stopped, token counts, and whether it came from the cache."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    usage: Mapping[str, int] = field(default_factory=dict)
    cached: bool = False

    def message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation (OpenAI format)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return out

    def to_json(self) -> dict[str, Any]:
        """The recorded form (everything but ``cached``)."""
        return {
            "content": self.content,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "usage": dict(sorted(self.usage.items())),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, cached: bool = False) -> Completion:
        """The inverse of ``to_json``."""
        calls = tuple(ToolCall(str(c["id"]), str(c["name"]), str(c["arguments"])) for c in data.get("tool_calls", []))
        usage = {str(k): int(v) for k, v in dict(data.get("usage") or {}).items()}
        return cls(str(data.get("content") or ""), calls, str(data.get("finish_reason") or "stop"), usage, cached)


def canonical(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces): the form hashed for cache keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical request: the cache key."""
    return hashlib.sha256(canonical(request).encode("utf-8")).hexdigest()


class ChatCache:
    """Recorded completions in a JSON Lines file, read once and appended to under an exclusive lock.

    Args:
        path: The file (created on the first record). A missing file is an empty cache.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._records: dict[str, dict[str, Any]] = {}
        self._size = -1
        self._reload()

    def _reload(self) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == self._size:
            return
        with self.path.open("r", encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    self._records[str(record["key"])] = record["response"]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise LLMError(f"{self.path}:{number} is not a recorded completion ({exc})") from None
        self._size = size

    def get(self, key: str) -> dict[str, Any] | None:
        """The recorded response for ``key`` (re-reading the file if another process appended to it)."""
        hit = self._records.get(key)
        if hit is None:
            self._reload()
            hit = self._records.get(key)
        return hit

    def put(self, key: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        """Append one record (flushed and fsynced before the lock is released)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = canonical({"key": key, "request": request, "response": response}) + "\n"
        with self.path.open("a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self._records[key] = dict(response)

    def __len__(self) -> int:
        self._reload()
        return len(self._records)


class ChatModel:
    """A model behind an OpenAI-compatible endpoint, with every completion recorded and replayed.

    Args:
        model: The model name sent to the endpoint (part of every cache key).
        cache: The record/replay file (a path or a ``ChatCache``); None keeps nothing and needs an endpoint.
        base_url: The endpoint, e.g. ``http://127.0.0.1:8000/v1``; None means replay from the cache only.
        api_key: The bearer key; default from ``COMPANYSIM_LLM_API_KEY`` or ``OPENAI_API_KEY`` (local servers
            usually ignore it). Never recorded.
        replay_only: Never call the endpoint; a cache miss raises ``LLMMiss``.
        timeout: Seconds per call.
        max_retries: Retries of a failed call by the client (connection errors, 429, 5xx), with its backoff.
    """

    def __init__(
        self,
        model: str,
        *,
        cache: str | Path | ChatCache | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        replay_only: bool = False,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        if not model or not model.strip():
            raise LLMError("expected a model name; got an empty one")
        self.model = model
        self.cache = cache if isinstance(cache, ChatCache) or cache is None else ChatCache(cache)
        self.base_url = base_url
        self.api_key = api_key
        self.replay_only = replay_only
        self.timeout = timeout
        self.max_retries = max_retries
        self.calls = 0
        self.hits = 0
        self.last_key = ""
        """The cache key of the last request ``complete`` answered (what a transcript cites)."""
        self._client: Any = None

    def request(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int = 0,
    ) -> dict[str, Any]:
        """The request body (without ``model``-independent transport details): what is sent and hashed."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
            "seed": seed,
        }
        if tools:
            body["tools"] = [dict(t) for t in tools]
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return body

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int = 0,
    ) -> Completion:
        """The completion of ``messages``: recorded if this exact request was seen, else from the endpoint.

        Raises:
            LLMMiss: not recorded, and the model is replay-only or has no endpoint.
            LLMUnavailable: the endpoint failed or answered something that is not a chat completion.
        """
        body = self.request(messages, tools=tools, temperature=temperature, max_tokens=max_tokens, seed=seed)
        key = self.last_key = request_key(body)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            self.hits += 1
            return Completion.from_json(hit, cached=True)
        if self.replay_only or self.base_url is None:
            where = f"in {self.cache.path}" if self.cache is not None else "(no cache given)"
            raise LLMMiss(
                f"no recorded completion {key[:12]} for model {self.model!r} {where}, and no endpoint may be"
                " called (give --base-url to record one)"
            )
        completion = self._call(body)
        self.calls += 1
        if self.cache is not None:
            self.cache.put(key, body, completion.to_json())
        return completion

    def _call(self, body: Mapping[str, Any]) -> Completion:
        if self._client is None:
            from openai import OpenAI  # lazy: only a recording run needs the client

            key = self.api_key or next((os.environ[k] for k in API_KEY_ENV if os.environ.get(k)), "not-needed")
            self._client = OpenAI(
                base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=self.max_retries
            )
        import openai

        try:
            resp = self._client.chat.completions.create(**body)
        except openai.APIError as exc:
            raise LLMUnavailable(f"{self.base_url} failed the call: {str(exc).splitlines()[0][:300]}") from None
        try:
            choice = resp.choices[0]
            msg = choice.message
            calls = tuple(
                ToolCall(str(c.id), str(c.function.name), str(c.function.arguments or "{}"))
                for c in (msg.tool_calls or [])
                if getattr(c, "function", None) is not None
            )
            usage = resp.usage
            counts = (
                {
                    "prompt_tokens": int(usage.prompt_tokens or 0),
                    "completion_tokens": int(usage.completion_tokens or 0),
                    "total_tokens": int(usage.total_tokens or 0),
                }
                if usage is not None
                else {}
            )
            return Completion(str(msg.content or ""), calls, str(choice.finish_reason or "stop"), counts)
        except (AttributeError, IndexError, TypeError) as exc:
            raise LLMUnavailable(f"{self.base_url} answered something that is not a chat completion ({exc})") from None

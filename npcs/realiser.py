"""An optional LLM realiser: rephrase a template sentence in the NPC's voice, recorded and replayed.

Why a cache keyed by the prompt's SHA-256: determinism. The first run calls an OpenAI-compatible endpoint
(temperature 0) and records the completion; every later run with the same prompt reads the record and never
calls a model, so a replay gives the same bytes even with no endpoint at all. ``replay_only=True`` makes a
miss an error (``realiser_miss``) instead of a call, which is how a replay proves it used no model.

The cache is one JSON file (sorted keys, written atomically), so it can be shipped next to a trace.
``openai`` is imported on first call only: the template path never pays for it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from npcs.errors import RealiserMiss
from npcs.traits import TraitVector

SYSTEM = (
    "You rewrite one workplace chat message in the voice of the person described. Keep every fact, name, "
    "ticket key, time and yes/no exactly; do not add questions; answer with the rewritten message only."
)


def _style(traits: TraitVector) -> str:
    formal = "formal" if traits.formality >= 0.7 else "casual" if traits.formality < 0.35 else "neutral"
    length = "wordy" if traits.verbosity >= 0.6 else "terse" if traits.verbosity < 0.3 else "brief"
    mood = (
        "grumpy" if traits.cooperativeness < 0.3 else "friendly" if traits.cooperativeness >= 0.7 else "matter-of-fact"
    )
    return f"Tone: {formal}, {length}, {mood}."


class Realiser:
    """Rewrites text through a chat-completions endpoint, with a record/replay cache.

    Args:
        cache_path: The JSON cache file (created on the first recorded call).
        base_url: The endpoint, e.g. ``http://127.0.0.1:8000/v1``; None means cache only.
        model: The model name sent to the endpoint (part of the cache key).
        api_key: Sent as the bearer token; local servers usually ignore it.
        replay_only: Never call the endpoint; a cache miss raises ``RealiserMiss``.
        timeout: Seconds per call.
    """

    def __init__(
        self,
        cache_path: str | Path,
        *,
        base_url: str | None = None,
        model: str = "npc-realiser",
        api_key: str = "not-needed",
        replay_only: bool = False,
        timeout: float = 30.0,
    ) -> None:
        self.cache_path = Path(cache_path)
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.replay_only = replay_only
        self.timeout = timeout
        self.calls = 0
        self.hits = 0
        self._client: Any = None
        self._cache: dict[str, dict[str, Any]] = {}
        if self.cache_path.exists():
            self._cache = json.loads(self.cache_path.read_text(encoding="utf-8"))

    def messages(self, text: str, traits: TraitVector) -> list[dict[str, str]]:
        """The chat messages sent for ``text``: a fixed system prompt plus the style and the sentence."""
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"{_style(traits)}\n\n{text}"}]

    def key(self, messages: list[dict[str, str]]) -> str:
        """SHA-256 of the canonical JSON of (model, messages): the cache key."""
        blob = json.dumps({"model": self.model, "messages": messages}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def realise(self, text: str, traits: TraitVector) -> str:
        """``text`` rewritten in the voice of ``traits``: from the cache if recorded, else from the endpoint.

        Raises:
            RealiserMiss: not recorded, and the realiser is replay-only or has no endpoint.
        """
        messages = self.messages(text, traits)
        k = self.key(messages)
        hit = self._cache.get(k)
        if hit is not None:
            self.hits += 1
            return str(hit["text"])
        if self.replay_only or self.base_url is None:
            raise RealiserMiss(f"no recorded completion for prompt {k[:12]} and no endpoint to call")
        out = self._call(messages).strip() or text
        self.calls += 1
        self._cache[k] = {"model": self.model, "messages": messages, "text": out}
        self._save()
        return out

    def _call(self, messages: list[dict[str, str]]) -> str:
        if self._client is None:
            from openai import OpenAI  # lazy: only a recording run needs the client

            self._client = OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=0)
        resp = self._client.chat.completions.create(model=self.model, messages=messages, temperature=0, seed=0)
        return str(resp.choices[0].message.content or "")

    def _save(self) -> None:
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_path.with_suffix(self.cache_path.suffix + ".tmp")
        tmp.write_text(json.dumps(self._cache, sort_keys=True, indent=1), encoding="utf-8")
        os.replace(tmp, self.cache_path)

"""An optional LLM realiser: rephrase a template sentence in the NPC's voice, recorded and replayed.

Why a record/replay cache keyed by the request's SHA-256: determinism. The first run calls an OpenAI-compatible
endpoint (temperature 0) and records the completion; every later run with the same prompt reads the record and
never calls a model, so a replay gives the same bytes even with no endpoint at all. ``replay_only=True`` makes a
miss an error (``realiser_miss``) instead of a call, which is how a replay proves it used no model. The
recording is ``worlds.llm.ChatModel``'s (a JSON Lines file that can ship next to a trace), shared with every
other model call of the project; ``openai`` is imported on the first real call only.
"""

from __future__ import annotations

from pathlib import Path

from npcs.errors import RealiserMiss
from npcs.traits import TraitVector
from worlds.llm import ChatModel, LLMMiss, request_key

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
        cache_path: The JSON Lines recording (created on the first recorded call).
        base_url: The endpoint, e.g. ``http://127.0.0.1:8000/v1``; None means cache only.
        model: The model name sent to the endpoint (part of the cache key).
        api_key: Sent as the bearer token (default from the environment; local servers usually ignore it).
        replay_only: Never call the endpoint; a cache miss raises ``RealiserMiss``.
        timeout: Seconds per call.
    """

    def __init__(
        self,
        cache_path: str | Path,
        *,
        base_url: str | None = None,
        model: str = "npc-realiser",
        api_key: str | None = None,
        replay_only: bool = False,
        timeout: float = 30.0,
    ) -> None:
        self.cache_path = Path(cache_path)
        self.model = ChatModel(
            model, cache=self.cache_path, base_url=base_url, api_key=api_key, replay_only=replay_only, timeout=timeout
        )

    @property
    def calls(self) -> int:
        """Completions fetched from the endpoint."""
        return self.model.calls

    @property
    def hits(self) -> int:
        """Completions read from the recording."""
        return self.model.hits

    def messages(self, text: str, traits: TraitVector) -> list[dict[str, str]]:
        """The chat messages sent for ``text``: a fixed system prompt plus the style and the sentence."""
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"{_style(traits)}\n\n{text}"}]

    def key(self, messages: list[dict[str, str]]) -> str:
        """The recording's key for ``messages`` (SHA-256 of the canonical request)."""
        return request_key(self.model.request(messages))

    def realise(self, text: str, traits: TraitVector) -> str:
        """``text`` rewritten in the voice of ``traits``: from the recording if there, else from the endpoint.

        Raises:
            RealiserMiss: not recorded, and the realiser is replay-only or has no endpoint.
        """
        try:
            out = self.model.complete(self.messages(text, traits)).content.strip()
        except LLMMiss as exc:
            raise RealiserMiss(str(exc)) from None
        return out or text

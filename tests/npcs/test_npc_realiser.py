"""The LLM realiser records through an OpenAI-compatible endpoint once, then replays from its cache."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from llmserver import LocalLLM
from npckit import T0, Tiny

from npcs.errors import RealiserMiss
from npcs.realiser import Realiser
from npcs.traits import preset


def _upper(request: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: upper-cases the last line of the user message."""
    return {"content": request["messages"][-1]["content"].splitlines()[-1].upper()}


def test_realiser__records_once_then_replays_with_the_server_gone(tmp_path: Path):
    cache = tmp_path / "realiser.jsonl"
    with LocalLLM(_upper) as fake:
        r = Realiser(cache, base_url=fake.base_url)
        first = r.realise("ENG-1 is in_progress.", preset("cooperative"))
        again = r.realise("ENG-1 is in_progress.", preset("cooperative"))
        assert first == again == "ENG-1 IS IN_PROGRESS."
        assert len(fake.requests) == 1 and r.calls == 1 and r.hits == 1
    replay = Realiser(cache, base_url=fake.base_url, replay_only=True)  # the server is stopped
    assert replay.realise("ENG-1 is in_progress.", preset("cooperative")) == first
    assert replay.calls == 0 and replay.hits == 1
    (record,) = [json.loads(line) for line in cache.read_text().splitlines()]
    assert record["key"] == replay.key(replay.messages("ENG-1 is in_progress.", preset("cooperative")))
    with pytest.raises(RealiserMiss) as err:
        replay.realise("ENG-1 is in_progress.", preset("adversarial"))  # another voice, another prompt
    assert err.value.code == "realiser_miss"


def _run(realiser: Realiser) -> list[dict[str, Any]]:
    t = Tiny()
    try:
        w = t.npcs(
            overrides={"dev.one": {"base": "cooperative", "proactivity": 0, "cooperativeness": 1.0}},
            population=["dev.one"],
            realiser=realiser,
        )
        t.dm(w, "dev.one", "what is the status of ENG-4?")
        return [a.to_dict() for a in t.run_until(w, T0 + timedelta(hours=2))]
    finally:
        t.close()


def test_realiser__npc_replay_gives_the_same_actions_without_a_model(tmp_path: Path):
    cache = tmp_path / "npc.jsonl"
    with LocalLLM(_upper) as fake:
        recorded = _run(Realiser(cache, base_url=fake.base_url))
    assert len(fake.requests) == 1 and recorded[0]["text"].isupper() and "ENG-4" in recorded[0]["text"]
    assert _run(Realiser(cache, replay_only=True)) == recorded

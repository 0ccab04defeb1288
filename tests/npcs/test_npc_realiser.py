"""The LLM realiser records through an OpenAI-compatible endpoint once, then replays from its cache."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from npckit import T0, Tiny

from npcs.errors import RealiserMiss
from npcs.realiser import Realiser
from npcs.traits import preset


class _Fake:
    """A tiny /v1/chat/completions server on 127.0.0.1 that upper-cases the last line of the user message."""

    def __init__(self) -> None:
        self.hits = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                assert self.path == "/v1/chat/completions"
                fake.hits += 1
                line = body["messages"][-1]["content"].splitlines()[-1]
                reply: dict[str, Any] = {
                    "id": f"cmpl-{fake.hits}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": line.upper()}}
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def test_realiser__records_once_then_replays_with_the_server_gone(tmp_path: Path):
    cache = tmp_path / "realiser.json"
    fake = _Fake()
    try:
        r = Realiser(cache, base_url=fake.url)
        first = r.realise("ENG-1 is in_progress.", preset("cooperative"))
        again = r.realise("ENG-1 is in_progress.", preset("cooperative"))
        assert first == again == "ENG-1 IS IN_PROGRESS."
        assert fake.hits == 1 and r.calls == 1 and r.hits == 1
    finally:
        fake.stop()
    replay = Realiser(cache, base_url=fake.url, replay_only=True)  # the server is stopped
    assert replay.realise("ENG-1 is in_progress.", preset("cooperative")) == first
    assert replay.calls == 0 and replay.hits == 1
    stored = json.loads(cache.read_text())
    (key,) = stored
    assert key == replay.key(replay.messages("ENG-1 is in_progress.", preset("cooperative")))
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
    cache = tmp_path / "npc.json"
    fake = _Fake()
    try:
        recorded = _run(Realiser(cache, base_url=fake.url))
    finally:
        fake.stop()
    assert fake.hits == 1 and recorded[0]["text"].isupper() and "ENG-4" in recorded[0]["text"]
    assert _run(Realiser(cache, replay_only=True)) == recorded

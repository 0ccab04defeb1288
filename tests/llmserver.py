"""A local OpenAI-compatible chat-completions server for tests: the real wire format, a scripted "model".

No model weights can be had here, so tests that need a model run this server on 127.0.0.1 and drive it with the
official ``openai`` client (through ``worlds.llm.ChatModel``), exactly as they would vLLM or a hosted API. The
server checks requests the way a real one does (a model name, messages with known roles, function tools whose
``parameters`` are JSON schemas, ``tool`` messages that answer an earlier ``tool_call_id``, a bearer key when
one is configured) and answers with a ``chat.completion`` object. What it says comes from ``responder``, a
function of the parsed request returning an assistant message (``{"content": ..., "tool_calls": [...]}``); every
request it received is kept in ``requests`` for assertions.

Usage::

    with LocalLLM(lambda request: {"content": "hello"}) as llm:
        model = ChatModel("stub", base_url=llm.base_url, cache=tmp_path / "cache.jsonl")
"""

from __future__ import annotations

import json
import queue
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

Responder = Callable[[dict[str, Any]], dict[str, Any]]
ROLES = {"system", "developer", "user", "assistant", "tool"}


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": None}}, status_code=status)


def _problem(body: Any) -> str | None:
    """What a real server would refuse in this request body, or None."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "'model' is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            return f"messages[{i}]: unknown role {m.get('role') if isinstance(m, dict) else m!r}"
        for call in m.get("tool_calls") or []:
            if call.get("type") != "function" or not isinstance(call.get("function", {}).get("arguments"), str):
                return f"messages[{i}].tool_calls: expected function calls with string arguments"
            open_calls.add(str(call.get("id")))
        if m["role"] == "tool" and m.get("tool_call_id") not in open_calls:
            return f"messages[{i}]: a tool message must answer an earlier tool_call_id"
    for i, tool in enumerate(body.get("tools") or []):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(fn, dict) or not fn.get("name"):
            return f"tools[{i}]: expected {{'type': 'function', 'function': {{'name': ...}}}}"
        if fn.get("parameters", {}).get("type") != "object":
            return f"tools[{i}].function.parameters must be a JSON schema of type object"
    return None


class LocalLLM:
    """The server, run in a thread for the duration of a ``with`` block (or ``start``/``stop``).

    Args:
        responder: The scripted model: request body -> assistant message dict.
        api_key: When set, requests must carry ``Authorization: Bearer <api_key>``.
        model_name: What ``/v1/models`` lists.
    """

    def __init__(self, responder: Responder, *, api_key: str | None = None, model_name: str = "stub-model") -> None:
        self.responder = responder
        self.api_key = api_key
        self.model_name = model_name
        self.requests: list[dict[str, Any]] = []
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._app = self._build()

    @property
    def base_url(self) -> str:
        """The ``/v1`` base URL clients use."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _authorised(self, request: Request) -> bool:
        return self.api_key is None or request.headers.get("authorization") == f"Bearer {self.api_key}"

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.get("/v1/models")
        async def models(request: Request) -> Any:
            if not self._authorised(request):
                return _error(401, "invalid api key", "authentication_error")
            return {"object": "list", "data": [{"id": self.model_name, "object": "model", "owned_by": "tests"}]}

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Any:
            if not self._authorised(request):
                return _error(401, "invalid api key", "authentication_error")
            try:
                body = json.loads(await request.body())
            except json.JSONDecodeError:
                return _error(400, "the body is not JSON")
            problem = _problem(body)
            if problem is not None:
                return _error(400, problem)
            self.requests.append(body)
            reply = self.responder(body)
            calls = [
                {
                    "id": c.get("id") or f"call_{len(self.requests)}_{k}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c.get("arguments", "{}")},
                }
                for k, c in enumerate(reply.get("tool_calls") or [])
            ]
            message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
            if calls:
                message["tool_calls"] = calls
            prompt = sum(len(json.dumps(m)) for m in body["messages"]) // 4
            completion = len(json.dumps(message)) // 4
            return {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }

        return app

    def start(self) -> LocalLLM:
        """Bind a free port on 127.0.0.1 and serve until ``stop``."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        config = uvicorn.Config(self._app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the local LLM server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Shut the server down and wait for its thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> LocalLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ScriptedReplies:
    """A "model" that answers the N-th assistant turn of a conversation with ``replies[N]`` (then stops).

    The turn is counted from the request itself (assistant messages so far), so the same conversation always
    gets the same answer, however many conversations the server has seen.
    """

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        turn = sum(m["role"] == "assistant" for m in request["messages"])
        return self.replies[turn] if turn < len(self.replies) else {"content": "I am done."}


class _Stopped(Exception):
    """The conversation the oracle was playing was abandoned."""


class OracleModel:
    """A "model" that plays a scenario family's scripted oracle by reading the conversation, one call a turn.

    The oracle (``family.oracle(env)``) runs in a thread of its own; each ``env.call`` becomes the tool call of the
    next completion, and the ``tool`` message the client sends back is what the call returns (parsed JSON, or a
    ``ToolFailed`` for an ``error [code]: message`` line). So the oracle sees only what a real model sees: the
    task prompt, its username (read from the system prompt) and tool results on the wire. A request with only the
    system prompt and the task starts a new conversation (abandoning any other).

    Args:
        oracle: The family's oracle: ``oracle(env)`` with ``env.call``, ``env.prompt``, ``env.actor``, ``env.done``.
    """

    def __init__(self, oracle: Callable[[Any], None]) -> None:
        self.oracle = oracle
        self._calls: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self._results: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def close(self) -> None:
        """Abandon the conversation being played (its thread ends)."""
        if self._thread is not None and self._thread.is_alive():
            self._results.put(None)
            self._thread.join(timeout=10)
        self._thread = None

    def _start(self, system: str, prompt: str) -> None:
        self.close()
        self._calls, self._results = queue.Queue(), queue.Queue()
        match = re.search(r"You are (\S+),", system)
        env = _WireEnv(prompt, match.group(1) if match else "", self._calls, self._results)

        def play() -> None:
            try:
                self.oracle(env)
            except _Stopped:
                return
            except Exception as exc:  # noqa: BLE001 - the oracle's failure becomes the model's last words
                self._calls.put(("__failed__", {"error": f"{type(exc).__name__}: {exc}"}))
                return
            self._calls.put(None)

        self._thread = threading.Thread(target=play, daemon=True)
        self._thread.start()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        if len(messages) == 2:
            self._start(str(messages[0]["content"]), str(messages[1]["content"]))
        elif messages[-1]["role"] == "tool":
            self._results.put(str(messages[-1]["content"]))
        nxt = self._calls.get(timeout=60)
        if nxt is None:
            return {"content": "The task is done."}
        name, arguments = nxt
        if name == "__failed__":
            return {"content": f"I could not finish: {arguments['error']}"}
        return {"tool_calls": [{"name": name, "arguments": json.dumps(arguments, sort_keys=True)}]}


class _WireEnv:
    """The oracle's ``AgentEnv``: each call is handed to the server thread and answered from the wire."""

    def __init__(self, prompt: str, actor: str, calls: queue.Queue[Any], results: queue.Queue[str | None]) -> None:
        self.prompt, self.actor = prompt, actor
        self._calls, self._results = calls, results
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def call(self, name: str, /, **arguments: Any) -> Any:
        from scenarios.base import ToolFailed

        self._calls.put((name, arguments))
        if name == "submit":  # the client ends the episode and asks no more
            self._done = True
            return {}
        text = self._results.get(timeout=60)
        if text is None:
            raise _Stopped
        if text.startswith("error ["):
            code, _, message = text[len("error [") :].partition("]: ")
            if code == "episode_over":
                self._done = True
            raise ToolFailed(code, message)
        return json.loads(text)

"""The server's guards, as one ASGI middleware in front of every route (HTTP and WebSocket alike).

- DNS rebinding: a page on an attacker's domain that resolves to 127.0.0.1 reaches the server with its own
  ``Host``, and a browser adds its ``Origin``. Requests whose Host is not one the server answers to, or that
  carry an Origin of any other host, are refused (421 / 403) before routing.
- Size: a body over ``max_body`` bytes is 413, whether it announces its length or streams it chunked.
  (WebSocket frames are capped by uvicorn's ``ws_max_size``, set to the same limit.)
- Tokens: the data-plane token (``--token``; ``Authorization: Bearer`` or ORS's ``X-API-Key``), the admin
  token for ``/admin`` and the per-episode tokens are all compared as bytes in constant time
  (``sim.serve.same_secret``). Which token a route needs is the route's business; this module only reads them.

Refusals are one JSON line, ``{"detail": ..., "code": ...}``, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def bearer(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The token of ``Authorization: Bearer <t>``, else of ``X-API-Key`` (what the ORS client sends)."""
    api_key = None
    for name, value in headers:
        if name == b"authorization":
            scheme, _, rest = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and rest.strip():
                return rest.strip()
        elif name == b"x-api-key":
            api_key = value.decode("latin-1").strip()
    return api_key or None


def _hostname(value: str) -> str:
    """``host[:port]`` or ``[v6]:port`` -> the bare, lower-case host name."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """Host and Origin checks and a body size limit around ``app``.

    Args:
        app: The application behind the guard.
        allowed_hosts: Host names the server answers to (loopback names are always allowed); ``*`` allows any
            Host, which the CLI permits only with a token configured.
        max_body: Largest request body in bytes.
    """

    def __init__(self, app: ASGIApp, *, allowed_hosts: Iterable[str], max_body: int) -> None:
        self.app = app
        self.any_host = "*" in allowed_hosts
        self.hosts = LOOPBACK | {h.lower().strip("[]") for h in allowed_hosts if h != "*"}
        self.max_body = max_body
        self.state: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse what fails a check; pass the rest on with a counting ``receive``."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = _hostname(headers.get(b"host", b"").decode("latin-1"))
        if not self.any_host and host not in self.hosts:
            await _refuse(scope, receive, send, 421, "misdirected", f"this server does not answer to host {host!r}")
            return
        origin = headers.get(b"origin")
        if origin is not None and origin != b"null":
            origin_host = (urlsplit(origin.decode("latin-1")).hostname or "").lower()
            if origin_host not in self.hosts and not (self.any_host and origin_host == host):
                await _refuse(scope, receive, send, 403, "bad_origin", "cross-origin requests are refused")
                return
        if origin == b"null":
            await _refuse(scope, receive, send, 403, "bad_origin", "cross-origin requests are refused")
            return
        if scope["type"] == "http":
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                await _refuse(
                    scope, receive, send, 413, "too_large", f"request bodies are limited to {self.max_body} bytes"
                )
                return
            receive = self._counting(receive)
        await self.app(scope, receive, send)

    def _counting(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge(self.max_body)
            return message

        return counted


class BodyTooLarge(Exception):
    """A chunked body went over the limit (the app's error handler answers 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"request bodies are limited to {limit} bytes")


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, code: str, detail: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
        return
    body = json.dumps({"detail": detail, "code": code}).encode()
    headers: list[Any] = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})

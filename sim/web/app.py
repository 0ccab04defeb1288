"""The intranet web app (``companysim web``): server-rendered pages over a live episode.

Every page is read tool calls and every form one write tool call, each an ``Episode.step`` (``WebBackend``
reuses ``sim.serve.EpisodeBackend``: one lock, the same error codes), so a task done in the browser is graded
exactly as one done through tools, and faults hit pages as they hit tools. Episodes reset with
``turns: writes``: looking at pages is recorded in the trace (what the agent looked at) but spends neither
turns nor simulated time, so page views are free the way they are for a human, and the write steps (results,
clock, state hashes) are the same whichever way the agent looked.

Security, since the agent (or another local process) is adversarial: the app binds 127.0.0.1 unless a token
is given (``sim.serve.check_bind``); every request needs the per-run token, as the ``companysim_web`` cookie
(HttpOnly, SameSite=Strict; set by ``GET /login?token=...``) or an ``Authorization: Bearer`` header, compared
in constant time; the Host header must name an allowed host (DNS rebinding), and a POST whose Origin is another
site's is refused (cross-site forms). Refused calls become a one-line alert on the page, never a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException

from mcp_tools.company import app_specs
from sim.episode import Episode
from sim.serve import EpisodeBackend, StepError, same_secret
from sim.web import pages as p
from sim.web import pages_more as pm
from sim.web.html import e, link, page, seg

COOKIE = "companysim_web"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
STATUS_OF = {"not_found": 404, "forbidden": 403, "episode_over": 409, "unknown_tool": 404}
INT = re.compile(r"-?\d{1,12}")
CREATED = {"tickets_create": "/tickets/{key}"}
"""Tools whose form opens what they made (its key is in the result), since the form's page cannot know it."""


class WebBackend(EpisodeBackend):
    """The episode behind the pages: ``EpisodeBackend`` plus the tool schemas forms are converted by.

    Args:
        episode: The episode to serve (``start`` resets it).
        token: The per-run secret; a random one when omitted.
        options: Reset options (``turns`` defaults to ``writes``).
    """

    def __init__(self, episode: Episode, token: str | None = None, *, options: dict[str, Any] | None = None) -> None:
        super().__init__(episode, token, options=options)
        self.schemas: dict[str, dict[str, Any]] = {}
        self.apps: frozenset[str] = frozenset()

    def _start(self, seed: int) -> None:
        super()._start(seed)
        tools = [t["function"] for t in self.info["tools"]]
        self.schemas = {t["name"]: t["parameters"] for t in tools}
        specs = app_specs(tuple(self.episode.apps or self.episode.instance.apps))
        self.apps = frozenset(spec.app for name, spec in specs.items() if name in self.schemas)

    def read(self, tool: str, arguments: dict[str, Any]) -> Any:
        """One read step; its parsed result (raises ``StepError`` when refused)."""
        obs, _ = self.step(tool, arguments)
        return json.loads(obs)

    def arguments(self, tool: str, form: list[tuple[str, str]]) -> dict[str, Any]:
        r"""A form's fields as the tool's arguments, typed by its schema.

        An empty field of an optional argument is left out (the tool's default applies), as a person leaving
        a box empty means; ``\\r\\n`` from a textarea becomes ``\\n``. A value that does not fit its type is
        passed as text, so the tool refuses it with its own ``invalid_argument``.
        """
        schema = self.schemas.get(tool, {})
        props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        out: dict[str, Any] = {}
        for key, raw in form:
            if key.startswith("_"):
                continue
            text = raw.replace("\r\n", "\n")
            kind = props.get(key, {}).get("type", "string")
            kinds = set(kind) if isinstance(kind, list) else {kind}
            if text == "" and key not in required and key in props:
                out.pop(key, None)
            elif "integer" in kinds and INT.fullmatch(text):
                out[key] = int(text)
            elif "boolean" in kinds and text in ("true", "false"):
                out[key] = text == "true"
            elif "array" in kinds:
                out[key] = [int(x) if INT.fullmatch(x.strip()) else x.strip() for x in text.split(",") if x.strip()]
            else:
                out[key] = text
        return out


def local_path(target: str) -> str:
    """``target`` if it is a path on this site, else ``/`` (a form's return path is never an open redirect)."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _host_name(header: str) -> str:
    """The host of a Host header or an Origin's netloc, without the port (IPv6 brackets removed)."""
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else ""
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def build_web_app(backend: WebBackend, *, hosts: frozenset[str] = LOOPBACK) -> FastAPI:
    """The intranet over ``backend``: the pages, ``POST /do/<tool>`` and ``GET /login``.

    Args:
        backend: The served episode (already started).
        hosts: Host names the Host header may carry (loopback, plus a bind address given with a token).
    """
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Any]) -> Response:
        if _host_name(request.headers.get("host", "")) not in hosts:
            return _plain(400, "refused: the Host header names another site")
        origin = request.headers.get("origin")
        if request.method != "GET" and origin is not None:
            parts = urlsplit(origin)
            if parts.netloc != request.headers.get("host") or parts.scheme not in ("http", "https"):
                return _plain(403, "refused: a form from another site")
        if request.url.path != "/login" and not _authorised(request, backend.token):
            return _plain(401, "refused: open the login link the server printed (it carries the token)")
        response: Response = await call_next(request)
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'"
        )
        return response

    @app.exception_handler(HTTPException)
    async def not_found(request: Request, exc: HTTPException) -> Response:
        return _plain(exc.status_code, f"{exc.status_code}: no such page")

    @app.get("/login")
    async def login(token: str = "") -> Response:
        if not same_secret(token, backend.token):
            return _plain(401, "refused: wrong or missing token")
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, backend.token, httponly=True, samesite="strict", path="/")
        return response

    def show(request: Request, build: Callable[[p.Reader, p.Query], p.PageOut]) -> Response:
        query = {k: v for k, v in request.query_params.items() if not k.startswith("_")}
        ok = request.query_params.get("_ok")
        return _render(backend, lambda: build(backend.read, query), ok=f"Done: {ok}" if ok else None)

    @app.get("/")
    async def home(request: Request) -> Response:
        status = backend.status()
        title, body = p.home(status["prompt"], status)
        if status["over"]:
            body += f'<p role="status">The episode is over; reward {e(status["reward"])}.</p>'
        return HTMLResponse(_page(backend, title, body))

    routes: list[tuple[str, Callable[..., p.PageOut]]] = [
        ("/chat", p.chat_index),
        ("/chat/search", p.chat_search),
        ("/chat/c/{channel}", p.chat_channel),
        ("/chat/thread/{post_id:int}", p.chat_thread),
        ("/tickets", p.tickets_index),
        ("/tickets/new", p.ticket_new),  # before /tickets/{key}, which would take "new" for a key
        ("/tickets/{key}", p.ticket),
        ("/mail", p.mail_index),
        ("/mail/compose", p.mail_compose),
        ("/mail/m/{message_id:int}", p.mail_message),
        ("/calendar/e/{event_id:int}", pm.calendar_event),
        ("/people", pm.people_index),
        ("/people/{username}", pm.person),
        ("/docs", pm.docs_index),
        ("/docs/d", pm.document),
        ("/repos", pm.repos_index),
        ("/repos/r/{repo}", pm.repo_tree),
        ("/repos/f/{repo}", pm.repo_file),
        ("/repos/mr/{mr_id:int}", pm.merge_request),
    ]
    for path, fn in routes:
        app.add_api_route(path, _route(show, fn), methods=["GET"], response_class=HTMLResponse)

    @app.get("/calendar")
    async def calendar(request: Request) -> Response:
        today = backend.episode.tool_context.clock.now()
        return show(request, lambda read, q: pm.calendar_week(read, q, today))

    @app.post("/do/{tool}")
    async def do(request: Request, tool: str) -> Response:
        form = parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True)
        back = local_path(dict(form).get("_next", "/"))
        try:
            obs, _ = backend.step(tool, backend.arguments(tool, form))
        except StepError as exc:
            body = f"<p>{link(back, 'Back to the page')}</p>"
            return HTMLResponse(
                _page(backend, "Not done", body, alert=f"error [{exc.code}]: {exc}"), STATUS_OF.get(exc.code, 400)
            )
        if tool in CREATED:
            back = CREATED[tool].format(key=seg(json.loads(obs)["key"]))
        sep = "&" if "?" in back else "?"
        return RedirectResponse(f"{back}{sep}_ok={tool}", status_code=303)

    return app


def _route(show: Callable[..., Response], fn: Callable[..., p.PageOut]) -> Callable[..., Any]:
    """A GET endpoint rendering ``fn`` with the request's path parameters."""

    async def endpoint(request: Request) -> Response:
        params = dict(request.path_params)
        return show(request, lambda read, q: fn(read, q, **params))

    endpoint.__name__ = fn.__name__
    return endpoint


def _authorised(request: Request, token: str) -> bool:
    given = request.cookies.get(COOKIE)
    if given is None:
        auth = request.headers.get("authorization", "")
        given = auth[7:] if auth.lower().startswith("bearer ") else None
    return given is not None and same_secret(given, token)


def _plain(status: int, text: str) -> Response:
    return Response(text + "\n", status_code=status, media_type="text/plain; charset=utf-8")


def _page(backend: WebBackend, title: str, body: str, *, alert: str | None = None, ok: str | None = None) -> str:
    status = backend.status()
    foot = f"Simulated time {status['clock']}; episode {'over' if status['over'] else 'running'}"
    actor = backend.episode.tool_context.actor.username
    return page(title, body, user=actor, apps=backend.apps, status=foot, alert=alert, ok=ok)


def _render(backend: WebBackend, build: Callable[[], p.PageOut], *, ok: str | None) -> Response:
    try:
        title, body = build()
    except StepError as exc:
        text = f"error [{exc.code}]: {exc}"
        return HTMLResponse(_page(backend, "Not available", "", alert=text), STATUS_OF.get(exc.code, 400))
    return HTMLResponse(_page(backend, title, body, ok=ok))

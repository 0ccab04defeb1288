"""A Mattermost v4 REST facade over the chat app, so real Mattermost clients can play an episode.

Every endpoint that reads or changes chat state is one company tool call made through the backend
(``MattermostBackend.call``): the same service code, validation, savepoints, clock and trace as an MCP or
in-process step, so a client's actions replay like any other. Lookups that only translate between
Mattermost's shapes and ours (who am I, which team, a channel's id) read the world directly.

Ids: Mattermost ids are opaque strings; ours are the integer primary keys as strings (users, channels,
posts) and the team's name. Errors come back as Mattermost does: ``{"id", "message", "status_code"}`` with
400 (invalid_argument), 401 (no or bad token), 403 (forbidden), 404 (not_found), 409 (conflict) or 503
(a transient fault injected by the noise layer). The websocket answers the authentication challenge with the
``hello`` event clients wait for (mattermostdriver reconnects forever without it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from fastapi import Body, FastAPI, Request, Response, WebSocket
from fastapi.responses import JSONResponse

from mcp_tools.base import ToolContext
from mcp_tools.errors import AppError, InvalidArgument, NotFound
from worlds.rawsql import Sql

STATUS = {
    "invalid_argument": 400,
    "unknown_tool": 400,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "illegal_transition": 409,
    "rate_limited": 429,
}


class Unauthorized(AppError):
    """No valid session token."""

    code = "unauthorized"


class MattermostBackend(Protocol):
    """What the facade needs from the episode that serves it."""

    def authenticate(self, login_id: str, password: str) -> str | None:
        """A session token for the agent's login, or None."""

    def context(self, token: str) -> ToolContext | None:
        """The tool context of a valid token, or None."""

    def call(self, token: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Run one company tool as the agent; raises AppError (with ``code``) on failure."""


def _ms(at: str | datetime | None) -> int:
    if at is None:
        return 0
    value = at if isinstance(at, datetime) else datetime.fromisoformat(at)
    return int(value.timestamp() * 1000)


def _user(row: Any) -> dict[str, Any]:
    emp_id, username, first, last, email, title = row
    return {
        "id": str(emp_id),
        "username": username,
        "first_name": first,
        "last_name": last,
        "email": email,
        "position": title,
        "nickname": "",
        "roles": "system_user",
        "locale": "en",
    }


_USER = "SELECT id, username, first_name, last_name, email, title FROM employees"
_CHANNEL = "SELECT id, team_id, type, display_name, name, header, purpose, creator_id, created_at FROM channels"


def _channel(row: Any, team: str) -> dict[str, Any]:
    ch_id, _, kind, display, name, header, purpose, creator, created = row
    return {
        "id": str(ch_id),
        "team_id": team,
        "type": kind,
        "display_name": display,
        "name": name,
        "header": header,
        "purpose": purpose,
        "creator_id": str(creator or ""),
        "create_at": _ms(str(created)),
        "update_at": _ms(str(created)),
        "delete_at": 0,
    }


def _post(p: dict[str, Any], sql: Sql) -> dict[str, Any]:
    """A chat post (as the tools render it) in Mattermost's shape."""
    meta = sql.one("SELECT author_id, channel_id, edited_at FROM posts WHERE id = ?", (p["id"],))
    reactions = []
    for text in p.get("reactions", []):
        emoji, _, who = text.partition(" by ")
        uid = sql.scalar("SELECT id FROM employees WHERE username = ?", (who,))
        reactions.append({"user_id": str(uid), "post_id": str(p["id"]), "emoji_name": emoji})
    return {
        "id": str(p["id"]),
        "create_at": _ms(p["at"]),
        "update_at": _ms(p["at"]),
        "edit_at": _ms(str(meta[2])) if meta and meta[2] else 0,
        "delete_at": 0,
        "user_id": str(meta[0]) if meta else "",
        "channel_id": str(meta[1]) if meta else "",
        "root_id": str(p["root_id"] or ""),
        "message": p["message"],
        "type": "",
        "props": {},
        "reply_count": p.get("reply_count", 0),
        "metadata": {"reactions": reactions},
    }


def _post_list(posts: list[dict[str, Any]], sql: Sql) -> dict[str, Any]:
    """Mattermost's PostList: ids newest first under ``order``, posts by id."""
    shaped = [_post(p, sql) for p in posts]
    return {"order": [p["id"] for p in reversed(shaped)], "posts": {p["id"]: p for p in shaped}}


def build_mattermost_app(backend: MattermostBackend) -> Any:
    """The FastAPI application serving ``/api/v4`` over ``backend``."""
    # Every endpoint is ``async def`` although its body blocks: they all run on the event loop's one thread, so
    # requests never use the episode's single database connection concurrently.
    app = FastAPI(title="companysim Mattermost v4 facade", docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(AppError)
    def _app_error(request: Request, exc: AppError) -> JSONResponse:
        status = 401 if exc.code == "unauthorized" else STATUS.get(exc.code, 503)
        body = {"id": f"companysim.{exc.code}", "message": str(exc), "status_code": status}
        return JSONResponse(body, status_code=status)

    def token_of(request: Request) -> str:
        auth = request.headers.get("authorization", "")
        token = auth[7:] if auth.lower().startswith("bearer ") else request.cookies.get("MMAUTHTOKEN", "")
        if not token or backend.context(token) is None:
            raise Unauthorized("a valid session token is required (log in with POST /api/v4/users/login)")
        return token

    def reading(request: Request) -> tuple[str, ToolContext, Sql]:
        token = token_of(request)
        ctx = backend.context(token)
        assert ctx is not None
        return token, ctx, Sql.of(ctx.session)

    def team_name(sql: Sql) -> str:
        return str(sql.scalar("SELECT name FROM chat_teams ORDER BY id LIMIT 1") or "")

    def channel_by_id(sql: Sql, channel_id: str) -> Any:
        row = sql.one(f"{_CHANNEL} WHERE id = ?", (_int(channel_id),))
        if row is None:
            raise NotFound(f"no channel {channel_id}")
        return row

    call: Callable[[str, str, dict[str, Any]], Any] = backend.call

    @app.post("/api/v4/users/login")
    async def login(response: Response, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        token = backend.authenticate(str(body.get("login_id", "")), str(body.get("password", "")))
        if token is None:
            raise Unauthorized("login failed: unknown login id or wrong password")
        ctx = backend.context(token)
        assert ctx is not None
        response.headers["Token"] = token
        response.set_cookie("MMAUTHTOKEN", token, httponly=True, samesite="strict")
        return _user(Sql.of(ctx.session).one(f"{_USER} WHERE id = ?", (ctx.actor.employee_id,)))

    @app.get("/api/v4/users/me")
    async def me(request: Request) -> dict[str, Any]:
        _, ctx, sql = reading(request)
        return _user(sql.one(f"{_USER} WHERE id = ?", (ctx.actor.employee_id,)))

    @app.get("/api/v4/users/username/{username}")
    async def user_by_name(username: str, request: Request) -> dict[str, Any]:
        _, _, sql = reading(request)
        row = sql.one(f"{_USER} WHERE username = ? AND active = ?", (username, True))
        if row is None:
            raise NotFound(f"no user {username!r}")
        return _user(row)

    @app.post("/api/v4/users/search")
    async def user_search(request: Request, body: dict[str, Any] = Body(...)) -> list[dict[str, Any]]:  # noqa: B008
        _, _, sql = reading(request)
        term = f"%{str(body.get('term', '')).lower()}%"
        rows = sql.all(
            f"{_USER} WHERE active = ? AND (lower(username) LIKE ? OR lower(first_name || ' ' || last_name) LIKE ?)"
            " ORDER BY username LIMIT 100",
            (True, term, term),
        )
        return [_user(r) for r in rows]

    @app.get("/api/v4/users/me/teams")
    async def my_teams(request: Request) -> list[dict[str, Any]]:
        _, _, sql = reading(request)
        rows = sql.all("SELECT name, display_name FROM chat_teams ORDER BY id")
        return [{"id": n, "name": n, "display_name": d, "type": "O"} for n, d in rows]

    @app.get("/api/v4/teams/name/{team}/channels/name/{name}")
    async def channel_by_name(team: str, name: str, request: Request) -> dict[str, Any]:
        token, _, sql = reading(request)
        call(token, "chat_list_members", {"channel": name})  # the access check, recorded like any read
        row = sql.one(f"{_CHANNEL} WHERE name = ? ORDER BY id LIMIT 1", (name,))
        return _channel(row, team_name(sql))

    @app.get("/api/v4/channels/{channel_id}")
    async def channel_get(channel_id: str, request: Request) -> dict[str, Any]:
        token, _, sql = reading(request)
        row = channel_by_id(sql, channel_id)
        call(token, "chat_list_members", {"channel": row[4]})
        return _channel(row, team_name(sql))

    @app.get("/api/v4/channels/{channel_id}/members")
    async def channel_members(channel_id: str, request: Request) -> list[dict[str, Any]]:
        token, _, sql = reading(request)
        row = channel_by_id(sql, channel_id)
        members = call(token, "chat_list_members", {"channel": row[4]})["members"]
        ids = {
            u: sql.scalar("SELECT id FROM employees WHERE username = ?", (u,)) for u in (m["username"] for m in members)
        }
        return [
            {"channel_id": channel_id, "user_id": str(ids[m["username"]]), "roles": "channel_user"} for m in members
        ]

    @app.post("/api/v4/channels", status_code=201)
    async def channel_create(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        token, _, sql = reading(request)
        args = {
            "name": str(body.get("name", "")),
            "display_name": str(body.get("display_name", "")),
            "private": body.get("type") == "P",
            "purpose": str(body.get("purpose", "")),
        }
        call(token, "chat_create_channel", args)
        return _channel(sql.one(f"{_CHANNEL} WHERE name = ?", (args["name"],)), team_name(sql))

    @app.post("/api/v4/channels/direct", status_code=201)
    async def channel_direct(request: Request, body: list[str] = Body(...)) -> dict[str, Any]:  # noqa: B008
        token, ctx, sql = reading(request)
        others = [u for u in body if u != str(ctx.actor.employee_id)]
        if len(body) != 2 or len(others) != 1:
            raise InvalidArgument(f"expected [your user id, their user id]; got {body!r:.80}")
        username = sql.scalar("SELECT username FROM employees WHERE id = ?", (_int(others[0]),))
        if username is None:
            raise NotFound(f"no user {others[0]}")
        name = call(token, "chat_open_direct", {"username": username})["channel"]
        return _channel(sql.one(f"{_CHANNEL} WHERE name = ?", (name,)), team_name(sql))

    @app.get("/api/v4/channels/{channel_id}/posts")
    async def channel_posts(channel_id: str, request: Request, per_page: int = 60) -> dict[str, Any]:
        token, _, sql = reading(request)
        row = channel_by_id(sql, channel_id)
        posts = call(token, "chat_read_channel", {"channel": row[4], "limit": max(1, min(per_page, 200))})["posts"]
        return _post_list(posts, sql)

    @app.post("/api/v4/posts", status_code=201)
    async def post_create(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        token, _, sql = reading(request)
        message = str(body.get("message", ""))
        root = str(body.get("root_id") or "")
        if root:
            made = call(token, "chat_reply", {"post_id": _int(root), "message": message})
        else:
            row = channel_by_id(sql, str(body.get("channel_id", "")))
            made = call(token, "chat_post", {"channel": row[4], "message": message})
        return _post(made, sql)

    @app.get("/api/v4/posts/{post_id}")
    async def post_get(post_id: str, request: Request) -> dict[str, Any]:
        token, _, sql = reading(request)
        return _post(call(token, "chat_get_post", {"post_id": _int(post_id)}), sql)

    @app.get("/api/v4/posts/{post_id}/thread")
    async def post_thread(post_id: str, request: Request) -> dict[str, Any]:
        token, _, sql = reading(request)
        return _post_list(call(token, "chat_read_thread", {"post_id": _int(post_id)})["posts"], sql)

    @app.put("/api/v4/posts/{post_id}/patch")
    async def post_patch(post_id: str, request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        token, _, sql = reading(request)
        edited = call(token, "chat_edit_post", {"post_id": _int(post_id), "message": str(body.get("message", ""))})
        return _post(edited, sql)

    @app.delete("/api/v4/posts/{post_id}")
    async def post_delete(post_id: str, request: Request) -> dict[str, Any]:
        token, _, _ = reading(request)
        call(token, "chat_delete_post", {"post_id": _int(post_id)})
        return {"status": "OK"}

    @app.post("/api/v4/teams/{team_id}/posts/search")
    async def post_search(team_id: str, request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        token, _, sql = reading(request)
        found = call(token, "chat_search_posts", {"text": str(body.get("terms", "")), "limit": 60})["posts"]
        return _post_list(list(reversed(found)), sql)

    @app.post("/api/v4/reactions", status_code=201)
    async def reaction_create(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        token, ctx, _ = reading(request)
        post_id, emoji = _int(str(body.get("post_id", ""))), str(body.get("emoji_name", ""))
        call(token, "chat_react", {"post_id": post_id, "emoji": emoji})
        return {"user_id": str(ctx.actor.employee_id), "post_id": str(post_id), "emoji_name": emoji}

    @app.get("/api/v4/posts/{post_id}/reactions")
    async def reactions(post_id: str, request: Request) -> list[dict[str, Any]]:
        token, _, sql = reading(request)
        shaped = _post(call(token, "chat_get_post", {"post_id": _int(post_id)}), sql)
        return list(shaped["metadata"]["reactions"])

    @app.websocket("/api/v4/websocket")
    async def websocket(ws: WebSocket) -> None:
        await ws.accept()
        try:
            challenge = await ws.receive_json()
            token = str((challenge.get("data") or {}).get("token", ""))
            if backend.context(token) is None:
                await ws.send_json({"status": "FAIL", "seq_reply": challenge.get("seq"), "error": "bad token"})
                await ws.close()
                return
            await ws.send_json({"status": "OK", "seq_reply": challenge.get("seq")})
            await ws.send_json({"event": "hello", "data": {"server_version": "companysim"}, "broadcast": {}, "seq": 0})
            while True:  # the client may ping; answer until it leaves
                msg = await ws.receive_json()
                await ws.send_json({"status": "OK", "seq_reply": msg.get("seq")})
        except Exception:  # noqa: BLE001 - a client going away ends the socket, nothing else to do
            return

    return app


def _int(value: str) -> int:
    """A Mattermost id string as our integer key; anything else is simply not found."""
    if not value.isdigit() or len(value) > 18:
        raise NotFound(f"no object with id {value!r}")
    return int(value)

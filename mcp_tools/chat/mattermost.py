"""A Mattermost v4 REST facade over the chat app, so real Mattermost clients can play an episode.

Every endpoint that reads or changes chat state is one company tool call made through the backend
(``MattermostBackend.call``): the same service code, validation, savepoints, clock and trace as an MCP or
in-process step, so a client's actions replay like any other. Lookups that only translate between
Mattermost's shapes and ours (who am I, which team, a channel's id) read the world directly.

Ids: Mattermost ids are opaque strings; ours are the integer primary keys as strings (users, channels,
posts, files) and the team's name. Errors come back as Mattermost does: ``{"id", "message", "status_code"}``
with 400 (invalid_argument), 401 (no or bad token), 403 (forbidden), 404 (not_found), 409 (conflict), 413 (a
file over the limit) or 503 (a transient fault injected by the noise layer, or an episode that has ended).

Routes: login and users (me, by id, by ids, by username, search, the paged list with ``in_channel`` /
``not_in_channel``), teams (list, by id, by name, the agent's teams and their channels), channels (by id, by
name, members, create, direct), unread counts (per channel and per team) and the read marker (``view``), posts
(create with ``file_ids``, get, thread, patch, delete, channel history, search), reactions, and files (upload,
download, info). Routes naming a user accept ``me`` or the agent's own id; anyone else's is 403, as for a user
without the permission. The websocket answers the authentication challenge with the ``hello`` event clients
wait for (mattermostdriver reconnects forever without it), then pushes ``posted`` events
(``mcp_tools.chat.events``) for every new post in the agent's channels, coworkers' replies included.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import quote

from fastapi import Body, FastAPI, Request, Response, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from mcp_tools.base import ToolContext
from mcp_tools.chat.events import Hub, pump
from mcp_tools.chat.files import MAX_FILE_BYTES
from mcp_tools.errors import AppError, Forbidden, InvalidArgument, NotFound
from worlds.rawsql import Sql

STATUS = {
    "invalid_argument": 400,
    "unknown_tool": 400,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "illegal_transition": 409,
    "rate_limited": 429,
    "too_large": 413,
}


class Unauthorized(AppError):
    """No valid session token."""

    code = "unauthorized"


class TooLarge(AppError):
    """A request body over the upload limit."""

    code = "too_large"


class MattermostBackend(Protocol):
    """What the facade needs from the episode that serves it."""

    def feed(self) -> tuple[ToolContext, int] | None:
        """The current episode's context and the newest post id when it began (None between episodes)."""

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
        "file_ids": [str(f["id"]) for f in p.get("files", [])],
        "metadata": {"reactions": reactions, "files": [_file_info(f, p) for f in p.get("files", [])]},
    }


def _file_info(f: dict[str, Any], post: dict[str, Any] | None = None) -> dict[str, Any]:
    """A file (as the tools render it, in a post or on its own) as Mattermost's FileInfo."""
    name = str(f["name"])
    created = _ms(f.get("at") or (post or {}).get("at"))
    return {
        "id": str(f["id"]),
        "user_id": str(f.get("user_id", "")),
        "post_id": str((post or {}).get("id") or f.get("post_id") or ""),
        "channel_id": str(f.get("channel_id", "")),
        "create_at": created,
        "update_at": created,
        "delete_at": 0,
        "name": name,
        "extension": name.rsplit(".", 1)[1].lower() if "." in name.strip(".") else "",
        "size": f["size"],
        "mime_type": f["mime_type"],
        "has_preview_image": False,
    }


def _team(row: Any) -> dict[str, Any]:
    name, display = row
    return {"id": name, "name": name, "display_name": display, "type": "O", "delete_at": 0}


def _post_list(posts: list[dict[str, Any]], sql: Sql) -> dict[str, Any]:
    """Mattermost's PostList: ids newest first under ``order``, posts by id."""
    shaped = [_post(p, sql) for p in posts]
    return {"order": [p["id"] for p in reversed(shaped)], "posts": {p["id"]: p for p in shaped}}


def session_token(backend: MattermostBackend, request: Request) -> str:
    """The request's valid session token (``Authorization: Bearer`` or the ``MMAUTHTOKEN`` cookie).

    Raises:
        Unauthorized: no token, or one the backend does not accept.
    """
    auth = request.headers.get("authorization", "")
    token = auth[7:] if auth.lower().startswith("bearer ") else request.cookies.get("MMAUTHTOKEN", "")
    if not token or backend.context(token) is None:
        raise Unauthorized("a valid session token is required (log in with POST /api/v4/users/login)")
    return token


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

    @app.exception_handler(RequestValidationError)
    def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        return _app_error(request, InvalidArgument(f"{where}: {first.get('msg', 'invalid request')}"))

    def token_of(request: Request) -> str:
        return session_token(backend, request)

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

    def team_row(sql: Sql, team: str) -> Any:
        row = sql.one("SELECT name, display_name FROM chat_teams WHERE name = ?", (team,))
        if row is None:
            raise NotFound(f"no team {team!r}")
        return row

    call: Callable[[str, str, dict[str, Any]], Any] = backend.call
    hub = Hub()

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
        return [_team(r) for r in sql.all("SELECT name, display_name FROM chat_teams ORDER BY id")]

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
        files = [_int(str(f)) for f in body.get("file_ids") or []]
        if root:
            made = call(token, "chat_reply", {"post_id": _int(root), "message": message, "file_ids": files})
        else:
            row = channel_by_id(sql, str(body.get("channel_id", "")))
            made = call(token, "chat_post", {"channel": row[4], "message": message, "file_ids": files})
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

    def own(user_id: str, ctx: ToolContext) -> None:
        if user_id not in ("me", str(ctx.actor.employee_id)):
            raise Forbidden(f"you can only read your own data as @{ctx.actor.username}, not user {user_id:.20}")

    def member_channels(token: str, sql: Sql) -> list[Any]:
        listed = call(token, "chat_list_channels", {})["channels"]
        names = [c["name"] for c in listed if c["member"]]
        rows = {r[4]: r for r in sql.all(f"{_CHANNEL} ORDER BY id")}
        return [rows[n] for n in names if n in rows]

    @app.get("/api/v4/users")
    async def users(
        request: Request,
        page: int = 0,
        per_page: int = 60,
        in_channel: str = "",
        not_in_channel: str = "",
        in_team: str = "",
        active: bool | None = None,
    ) -> list[dict[str, Any]]:
        token, _, sql = reading(request)
        if page < 0 or not 1 <= per_page <= 200:
            raise InvalidArgument(f"page must be >= 0 and per_page 1-200; got page {page}, per_page {per_page}")
        if in_team and in_team != team_name(sql):
            raise NotFound(f"no team {in_team!r}")
        cond, params = "WHERE active = ?", [active if active is not None else True]
        for channel_id, negate in ((in_channel, False), (not_in_channel, True)):
            if channel_id:
                members = call(token, "chat_list_members", {"channel": channel_by_id(sql, channel_id)[4]})["members"]
                names = [m["username"] for m in members] or [""]
                cond += f" AND username {'NOT ' if negate else ''}IN ({', '.join('?' * len(names))})"
                params += names
        rows = sql.all(f"{_USER} {cond} ORDER BY username LIMIT ? OFFSET ?", [*params, per_page, page * per_page])  # noqa: S608
        return [_user(r) for r in rows]

    @app.get("/api/v4/users/{user_id}")
    async def user_get(user_id: str, request: Request) -> dict[str, Any]:
        _, ctx, sql = reading(request)
        row = sql.one(f"{_USER} WHERE id = ?", (ctx.actor.employee_id if user_id == "me" else _int(user_id),))
        if row is None:
            raise NotFound(f"no user {user_id}")
        return _user(row)

    @app.post("/api/v4/users/ids")
    async def users_by_ids(request: Request, body: list[str] = Body(...)) -> list[dict[str, Any]]:  # noqa: B008
        _, _, sql = reading(request)
        ids = sorted({_int(str(i)) for i in body[:200]})
        marks = ", ".join("?" * len(ids))
        return [_user(r) for r in sql.all(f"{_USER} WHERE id IN ({marks}) ORDER BY id", ids)] if ids else []  # noqa: S608

    @app.get("/api/v4/teams")
    async def teams(request: Request) -> list[dict[str, Any]]:
        _, _, sql = reading(request)
        return [_team(r) for r in sql.all("SELECT name, display_name FROM chat_teams ORDER BY id")]

    @app.get("/api/v4/teams/{team_id}")
    async def team_get(team_id: str, request: Request) -> dict[str, Any]:
        _, _, sql = reading(request)
        return _team(team_row(sql, team_id))

    @app.get("/api/v4/teams/name/{name}")
    async def team_by_name(name: str, request: Request) -> dict[str, Any]:
        _, _, sql = reading(request)
        return _team(team_row(sql, name))

    @app.get("/api/v4/users/{user_id}/teams/{team_id}/channels")
    async def my_channels(user_id: str, team_id: str, request: Request) -> list[dict[str, Any]]:
        token, ctx, sql = reading(request)
        own(user_id, ctx)
        team = team_row(sql, team_id)[0]
        return [_channel(r, team) for r in member_channels(token, sql)]

    @app.get("/api/v4/users/{user_id}/teams/unread")
    async def team_unread(user_id: str, request: Request) -> list[dict[str, Any]]:
        token, ctx, sql = reading(request)
        own(user_id, ctx)
        counts = call(token, "chat_unread", {})
        return [{"team_id": team_name(sql), "msg_count": counts["unread"], "mention_count": counts["mentions"]}]

    @app.get("/api/v4/users/{user_id}/teams/{team_id}/unread")
    async def one_team_unread(user_id: str, team_id: str, request: Request) -> dict[str, Any]:
        token, ctx, sql = reading(request)
        own(user_id, ctx)
        counts = call(token, "chat_unread", {})
        team = team_row(sql, team_id)[0]
        return {"team_id": team, "msg_count": counts["unread"], "mention_count": counts["mentions"]}

    @app.get("/api/v4/users/{user_id}/teams/{team_id}/channels/members")
    async def my_memberships(user_id: str, team_id: str, request: Request) -> list[dict[str, Any]]:
        token, ctx, sql = reading(request)
        own(user_id, ctx)
        team_row(sql, team_id)
        counts = {c["name"]: c for c in call(token, "chat_unread", {})["channels"]}
        out = []
        for row in member_channels(token, sql):
            seen = counts.get(row[4], {"unread": 0, "mentions": 0, "last_read_at": None})
            total = sql.scalar("SELECT count(id) FROM posts WHERE channel_id = ? AND deleted_at IS NULL", (row[0],))
            out.append(
                {
                    "channel_id": str(row[0]),
                    "user_id": str(ctx.actor.employee_id),
                    "roles": "channel_user",
                    "last_viewed_at": _ms(seen["last_read_at"]),
                    "msg_count": int(total or 0) - seen["unread"],  # Mattermost: messages the member has seen
                    "mention_count": seen["mentions"],
                }
            )
        return out

    @app.get("/api/v4/users/{user_id}/channels/{channel_id}/unread")
    async def channel_unread(user_id: str, channel_id: str, request: Request) -> dict[str, Any]:
        token, ctx, sql = reading(request)
        own(user_id, ctx)
        name = channel_by_id(sql, channel_id)[4]
        found = [c for c in call(token, "chat_unread", {})["channels"] if c["name"] == name]
        if not found:
            raise Forbidden(f"@{ctx.actor.username} is not a member of channel {channel_id}")
        return {
            "team_id": team_name(sql),
            "channel_id": channel_id,
            "msg_count": found[0]["unread"],
            "mention_count": found[0]["mentions"],
        }

    @app.post("/api/v4/channels/members/{user_id}/view")
    async def channel_view(user_id: str, request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        token, ctx, sql = reading(request)
        own(user_id, ctx)
        channel_id = str(body.get("channel_id", ""))
        marked = call(token, "chat_mark_read", {"channel": channel_by_id(sql, channel_id)[4]})
        return {"status": "OK", "last_viewed_at_times": {channel_id: _ms(marked["last_read_at"])}}

    @app.post("/api/v4/files", status_code=201)
    async def file_upload(request: Request, channel_id: str = "", filename: str = "") -> dict[str, Any]:
        token_of(request)  # refuse before reading a stranger's upload
        if int(request.headers.get("content-length") or 0) > MAX_FILE_BYTES * 2:
            raise TooLarge(f"upload is larger than the {MAX_FILE_BYTES // (1024 * 1024)} MiB limit")
        uploads: list[tuple[str, bytes]] = []
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            form = await request.form(max_files=5, max_fields=10)
            channel_id = str(form.get("channel_id") or channel_id)
            for item in form.getlist("files"):
                if isinstance(item, str):
                    raise InvalidArgument("each 'files' part must be a file")
                uploads.append((item.filename or "", await item.read()))
        else:  # the raw-body form: ?channel_id=..&filename=..
            uploads.append((filename, await request.body()))
        if not uploads:
            raise InvalidArgument("no file in the request (send multipart 'files' parts)")
        token, ctx, sql = reading(request)  # after the awaits above, so the world read is the current episode's
        name = channel_by_id(sql, channel_id)[4]
        infos = []
        for fname, data in uploads:
            args = {"channel": name, "name": fname, "content_base64": base64.b64encode(data).decode("ascii")}
            made = call(token, "chat_upload_file", args)
            infos.append(_file_info({**made, "user_id": ctx.actor.employee_id, "channel_id": channel_id}))
        return {"file_infos": infos, "client_ids": []}

    @app.get("/api/v4/files/{file_id}")
    async def file_get(file_id: str, request: Request) -> Response:
        token, _, _ = reading(request)
        got = call(token, "chat_get_file", {"file_id": _int(file_id)})
        disposition = f"attachment; filename*=UTF-8''{quote(got['name'])}"
        headers = {"Content-Disposition": disposition, "X-Content-Type-Options": "nosniff"}
        return Response(base64.b64decode(got["content_base64"]), media_type=got["mime_type"], headers=headers)

    @app.get("/api/v4/files/{file_id}/info")
    async def file_info(file_id: str, request: Request) -> dict[str, Any]:
        token, _, sql = reading(request)
        got = call(token, "chat_get_file", {"file_id": _int(file_id)})
        ids = sql.one("SELECT f.uploader_id, f.channel_id FROM chat_files f WHERE f.id = ?", (_int(file_id),))
        return _file_info({**got, "user_id": ids[0], "channel_id": ids[1]})

    @app.middleware("http")
    async def _publish(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        response = await call_next(request)
        fed = backend.feed()
        if fed is not None:
            hub.publish(fed[0], fed[1], _post)
        return response

    @app.websocket("/api/v4/websocket")
    async def websocket(ws: WebSocket) -> None:
        await ws.accept()
        try:
            challenge = await ws.receive_json()
            token = str((challenge.get("data") or {}).get("token", ""))
            ctx = backend.context(token)
            if ctx is None:
                await ws.send_json({"status": "FAIL", "seq_reply": challenge.get("seq"), "error": "bad token"})
                await ws.close()
                return
        except Exception:  # noqa: BLE001 - a client that leaves or sends garbage before authenticating
            return
        listener = hub.join(ctx)
        await ws.send_json({"status": "OK", "seq_reply": challenge.get("seq")})
        await ws.send_json({"event": "hello", "data": {"server_version": "companysim"}, "broadcast": {}, "seq": 0})
        sender = asyncio.create_task(pump(ws, listener))
        try:
            while True:  # the client may ping; answer until it leaves
                msg = await ws.receive_json()
                listener.queue.put_nowait({"status": "OK", "seq_reply": msg.get("seq")})
        except Exception:  # noqa: BLE001, S110 - a client going away ends the socket, nothing else to do
            pass
        finally:
            hub.leave(listener)
            sender.cancel()

    return app


def _int(value: str) -> int:
    """A Mattermost id string as our integer key; anything else is simply not found."""
    if not value.isdigit() or len(value) > 18:
        raise NotFound(f"no object with id {value!r}")
    return int(value)

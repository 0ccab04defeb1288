"""Chat operations acting as an Actor.

Access rule: public channels are readable by everyone and posting to one joins it (as in Mattermost); private
and direct channels are readable and writable only by their members, and anything else is ``forbidden``.
Reads never change state: read markers move only through ``mark_read``, which is a write. Files follow the
same rules (``mcp_tools.chat.files``). Queries are raw SQL through ``worlds.rawsql.Sql``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.chat import files
from mcp_tools.errors import Conflict, Forbidden, InvalidArgument, NotFound
from worlds.rawsql import Sql, iso, like_pattern

MAX_MESSAGE = 16_000
EMOJI = re.compile(r"^[a-z0-9_+\-]{1,64}$")
MENTION = re.compile(r"@([a-z0-9][a-z0-9._\-]*[a-z0-9])", re.I)
KINDS = {"O": "public", "P": "private", "D": "direct", "G": "group"}
# A channel row: (id, name, type, display_name, purpose); a post row: (id, author, message, created_at, root_id).
_CH = "SELECT id, name, type, display_name, purpose FROM channels"
_POST = (
    "SELECT p.id, e.username, p.message, p.created_at, p.root_id FROM posts p JOIN employees e ON e.id = p.author_id"
)


def _member(ctx: ToolContext, sql: Sql, channel_id: int) -> bool:
    return (
        sql.one(
            "SELECT 1 FROM channel_members WHERE channel_id = ? AND employee_id = ?",
            (channel_id, ctx.actor.employee_id),
        )
        is not None
    )


def _channel(sql: Sql, name: str) -> Any:
    ch = sql.one(f"{_CH} WHERE name = ? ORDER BY id LIMIT 1", (name.lstrip("~"),))
    if ch is None:
        raise NotFound(f"no channel named {name!r}")
    return ch


def _readable(ctx: ToolContext, sql: Sql, ch: Any) -> None:
    if ch[2] in ("P", "D", "G") and not _member(ctx, sql, ch[0]):
        raise Forbidden(f"@{ctx.actor.username} is not a member of the private channel {ch[1]!r}")


def _message(text: str) -> str:
    if not text.strip():
        raise InvalidArgument("message must not be empty")
    if len(text) > MAX_MESSAGE:
        raise InvalidArgument(f"message is {len(text)} characters; the limit is {MAX_MESSAGE}")
    return text


def _post(ctx: ToolContext, sql: Sql, post_id: int) -> tuple[Any, Any]:
    """(post row, channel row) of a visible, undeleted post."""
    row = sql.one("SELECT id, channel_id, root_id FROM posts WHERE id = ? AND deleted_at IS NULL", (post_id,))
    if row is None:
        raise NotFound(f"no post {post_id}")
    ch = sql.one(f"{_CH} WHERE id = ?", (row[1],))
    _readable(ctx, sql, ch)
    return row, ch


def _render(sql: Sql, posts: Sequence[Any], channels: Sequence[str]) -> list[dict[str, Any]]:
    """Posts as the agent sees them, with reply counts and reactions (two queries for the whole page)."""
    if not posts:
        return []
    ids = [p[0] for p in posts]
    marks = ", ".join("?" * len(ids))
    replies = dict(
        sql.all(
            f"SELECT root_id, count(id) FROM posts WHERE root_id IN ({marks}) AND deleted_at IS NULL GROUP BY root_id",  # noqa: S608
            ids,
        )
    )
    reacts: dict[int, list[str]] = {}
    for pid, emoji, user in sql.all(
        f"SELECT r.post_id, r.emoji, e.username FROM reactions r JOIN employees e ON e.id = r.employee_id"  # noqa: S608
        f" WHERE r.post_id IN ({marks}) ORDER BY r.post_id, r.id",
        ids,
    ):
        reacts.setdefault(pid, []).append(f"{emoji} by {user}")
    attached = files.attachments(sql, ids)
    rendered = [
        {
            "id": pid,
            "channel": channel,
            "author": author,
            "message": message,
            "at": iso(at),
            "root_id": root,
            "reply_count": replies.get(pid, 0),
            "reactions": reacts.get(pid, []),
        }
        for (pid, author, message, at, root), channel in zip(posts, channels, strict=True)
    ]
    for post in rendered:  # only posts with files carry the key, so a post reads as it always did
        if post["id"] in attached:
            post["files"] = attached[post["id"]]
    return rendered


def list_channels(ctx: ToolContext) -> dict[str, Any]:
    """Public channels plus the private and direct ones the actor belongs to."""
    sql = Sql.of(ctx.session)
    rows = sql.all(
        "SELECT c.name, c.display_name, c.type, c.purpose, m.id IS NOT NULL FROM channels c"
        " LEFT JOIN channel_members m ON m.channel_id = c.id AND m.employee_id = ?"
        " WHERE c.type = 'O' OR m.id IS NOT NULL ORDER BY c.name, c.id",
        (ctx.actor.employee_id,),
    )
    return {
        "channels": [
            {"name": n, "display_name": d, "type": KINDS[t], "purpose": p, "member": bool(m)} for n, d, t, p, m in rows
        ]
    }


def read_channel(ctx: ToolContext, channel: str, limit: int, before: int | None) -> dict[str, Any]:
    """The latest posts of a channel (oldest first), optionally before a post id."""
    if not 1 <= limit <= 200:
        raise InvalidArgument(f"limit must be 1-200; got {limit}")
    sql = Sql.of(ctx.session)
    ch = _channel(sql, channel)
    _readable(ctx, sql, ch)
    cond, params = ("AND p.id < ?", [ch[0], before, limit]) if before is not None else ("", [ch[0], limit])
    posts = sql.all(
        f"{_POST} WHERE p.channel_id = ? AND p.deleted_at IS NULL {cond}"  # noqa: S608
        " ORDER BY p.created_at DESC, p.id DESC LIMIT ?",
        params,
    )
    posts.reverse()
    return {"channel": ch[1], "posts": _render(sql, posts, [ch[1]] * len(posts))}


def read_thread(ctx: ToolContext, post_id: int) -> dict[str, Any]:
    """A thread: its root and every reply, in time order."""
    sql = Sql.of(ctx.session)
    post, ch = _post(ctx, sql, post_id)
    root = post[2] or post[0]
    posts = sql.all(
        f"{_POST} WHERE (p.id = ? OR p.root_id = ?) AND p.deleted_at IS NULL ORDER BY p.created_at, p.id",
        (root, root),
    )
    return {"channel": ch[1], "root_id": root, "posts": _render(sql, posts, [ch[1]] * len(posts))}


def search_posts(ctx: ToolContext, text: str, channel: str | None, author: str | None, limit: int) -> dict[str, Any]:
    """Posts containing ``text`` (case-insensitive, literally) in channels the actor can read, newest first."""
    if not text.strip():
        raise InvalidArgument("search text must not be empty")
    if not 1 <= limit <= 200:
        raise InvalidArgument(f"limit must be 1-200; got {limit}")
    sql = Sql.of(ctx.session)
    where = [
        "(c.type = 'O' OR c.id IN (SELECT channel_id FROM channel_members WHERE employee_id = ?))",
        "p.deleted_at IS NULL",
        "lower(p.message) LIKE ? ESCAPE '\\'",
    ]
    params: list[Any] = [ctx.actor.employee_id, like_pattern(text.lower())]
    if channel:
        ch = _channel(sql, channel)
        _readable(ctx, sql, ch)
        where.append("p.channel_id = ?")
        params.append(ch[0])
    if author:
        emp = sql.scalar("SELECT id FROM employees WHERE username = ?", (author.lstrip("@"),))
        if emp is None:
            raise NotFound(f"no employee with username {author!r}")
        where.append("p.author_id = ?")
        params.append(emp)
    rows = sql.all(
        "SELECT p.id, e.username, p.message, p.created_at, p.root_id, c.name FROM posts p"  # noqa: S608
        " JOIN employees e ON e.id = p.author_id JOIN channels c ON c.id = p.channel_id"
        f" WHERE {' AND '.join(where)} ORDER BY p.created_at DESC, p.id DESC LIMIT ?",
        [*params, limit],
    )
    return {"posts": _render(sql, [r[:5] for r in rows], [r[5] for r in rows])}


def _write_post(
    ctx: ToolContext, sql: Sql, ch: Any, message: str, root_id: int | None, file_ids: Sequence[int] = ()
) -> dict[str, Any]:
    now = ctx.clock.now()
    claimed = files.claim(ctx, sql, ch[0], file_ids)
    if not _member(ctx, sql, ch[0]):
        if ch[2] != "O":
            raise Forbidden(f"@{ctx.actor.username} is not a member of the private channel {ch[1]!r}")
        sql.insert(
            "channel_members",
            {"channel_id": ch[0], "employee_id": ctx.actor.employee_id, "joined_at": now, "last_viewed_at": None},
        )
    post_id = sql.insert(
        "posts",
        {
            "channel_id": ch[0],
            "author_id": ctx.actor.employee_id,
            "root_id": root_id,
            "message": message,
            "created_at": now,
            "edited_at": None,
            "deleted_at": None,
            "is_pinned": False,
        },
    )
    handles = sorted({m.lower() for m in MENTION.findall(message)})
    if handles:
        marks = ", ".join("?" * len(handles))
        for emp_id in sql.column(
            f"SELECT id FROM employees WHERE lower(username) IN ({marks}) ORDER BY id",  # noqa: S608
            handles,
        ):
            sql.insert("mentions", {"post_id": post_id, "employee_id": emp_id})
    files.attach(sql, post_id, claimed)
    return _render(sql, [(post_id, ctx.actor.username, message, now, root_id)], [ch[1]])[0]


def _post_text(message: str, file_ids: Sequence[int]) -> str:
    """A post's text: it may be empty when files carry the post, as in Mattermost."""
    return message if file_ids and not message.strip() and len(message) <= MAX_MESSAGE else _message(message)


def post(ctx: ToolContext, channel: str, message: str, file_ids: Sequence[int] = ()) -> dict[str, Any]:
    """Post a new message in a channel, with the actor's pending uploads to it attached."""
    sql = Sql.of(ctx.session)
    ch = _channel(sql, channel)
    return _write_post(ctx, sql, ch, _post_text(message, file_ids), None, file_ids)


def reply(ctx: ToolContext, post_id: int, message: str, file_ids: Sequence[int] = ()) -> dict[str, Any]:
    """Reply in the thread of a post, with the actor's pending uploads to its channel attached."""
    sql = Sql.of(ctx.session)
    parent, ch = _post(ctx, sql, post_id)
    return _write_post(ctx, sql, ch, _post_text(message, file_ids), parent[2] or parent[0], file_ids)


def react(ctx: ToolContext, post_id: int, emoji: str) -> dict[str, Any]:
    """Add an emoji reaction to a post."""
    if not EMOJI.match(emoji):
        raise InvalidArgument(f"emoji must be a name like thumbsup (letters, digits, _+-); got {emoji!r}")
    sql = Sql.of(ctx.session)
    target, _ = _post(ctx, sql, post_id)
    dup = sql.one(
        "SELECT 1 FROM reactions WHERE post_id = ? AND employee_id = ? AND emoji = ?",
        (target[0], ctx.actor.employee_id, emoji),
    )
    if dup is not None:
        raise Conflict(f"@{ctx.actor.username} already reacted {emoji} to post {post_id}")
    sql.insert(
        "reactions",
        {"post_id": target[0], "employee_id": ctx.actor.employee_id, "emoji": emoji, "created_at": ctx.clock.now()},
    )
    return {"post_id": target[0], "emoji": emoji, "by": ctx.actor.username}


def direct_message(ctx: ToolContext, username: str, message: str) -> dict[str, Any]:
    """Send a direct message, creating the direct channel on first use."""
    if username.lstrip("@") == ctx.actor.username:
        raise InvalidArgument("you cannot send a direct message to yourself")
    text = _message(message)
    sql = Sql.of(ctx.session)
    name = open_direct(ctx, username)["channel"]
    ch = sql.one(f"{_CH} WHERE name = ? AND type = 'D' ORDER BY id LIMIT 1", (name,))
    return _write_post(ctx, sql, ch, text, None)


def list_members(ctx: ToolContext, channel: str) -> dict[str, Any]:
    """The members of a channel, by username."""
    sql = Sql.of(ctx.session)
    ch = _channel(sql, channel)
    _readable(ctx, sql, ch)
    rows = sql.all(
        "SELECT e.username, e.first_name, e.last_name, e.title FROM employees e"
        " JOIN channel_members m ON m.employee_id = e.id WHERE m.channel_id = ? ORDER BY e.username",
        (ch[0],),
    )
    return {"channel": ch[1], "members": [{"username": u, "name": f"{f} {last}", "title": t} for u, f, last, t in rows]}


CHANNEL_NAME = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,62}[a-z0-9]$")


def create_channel(ctx: ToolContext, name: str, display_name: str, private: bool, purpose: str) -> dict[str, Any]:
    """Create a public or private channel in the company's team; the creator becomes its first member."""
    if not CHANNEL_NAME.match(name) or "__" in name:
        raise InvalidArgument(
            f"channel name must be 2-64 lowercase letters, digits, '-' or '_' (not starting or ending with them, "
            f"no '__'); got {name!r}"
        )
    display = display_name.strip() or name
    if len(display) > 64 or len(purpose) > 250:
        raise InvalidArgument(
            f"display name must be at most 64 characters and purpose 250; got {len(display)}, {len(purpose)}"
        )
    sql = Sql.of(ctx.session)
    if sql.one("SELECT 1 FROM channels WHERE name = ?", (name,)) is not None:
        raise Conflict(f"a channel named {name!r} already exists")
    team = sql.scalar("SELECT id FROM chat_teams ORDER BY id LIMIT 1")
    if team is None:
        raise NotFound("this company has no chat team")
    now = ctx.clock.now()
    kind = "P" if private else "O"
    ch_id = sql.insert(
        "channels",
        {
            "team_id": team,
            "name": name,
            "display_name": display,
            "type": kind,
            "purpose": purpose,
            "header": "",
            "creator_id": ctx.actor.employee_id,
            "created_at": now,
        },
    )
    sql.insert(
        "channel_members",
        {"channel_id": ch_id, "employee_id": ctx.actor.employee_id, "joined_at": now, "last_viewed_at": None},
    )
    return {"name": name, "display_name": display, "type": KINDS[kind], "purpose": purpose, "member": True}


def _own_post(ctx: ToolContext, sql: Sql, post_id: int) -> tuple[Any, Any]:
    post, ch = _post(ctx, sql, post_id)
    author = sql.scalar("SELECT author_id FROM posts WHERE id = ?", (post_id,))
    if author != ctx.actor.employee_id:
        raise Forbidden(f"@{ctx.actor.username} may only edit or delete their own posts; post {post_id} is not theirs")
    return post, ch


def edit_post(ctx: ToolContext, post_id: int, message: str) -> dict[str, Any]:
    """Replace the text of one of the actor's own posts."""
    text = _message(message)
    sql = Sql.of(ctx.session)
    _own_post(ctx, sql, post_id)
    old, edited = sql.one("SELECT message, edited_at FROM posts WHERE id = ?", (post_id,))
    if old != text:
        sql.update("posts", post_id, {"message": (old, text), "edited_at": (iso(edited), ctx.clock.now())})
    row = sql.one(f"{_POST} WHERE p.id = ?", (post_id,))
    ch_name = sql.scalar("SELECT c.name FROM channels c JOIN posts p ON p.channel_id = c.id WHERE p.id = ?", (post_id,))
    return _render(sql, [row], [ch_name])[0]


def delete_post(ctx: ToolContext, post_id: int) -> dict[str, Any]:
    """Delete one of the actor's own posts (kept as a tombstone, as Mattermost does)."""
    sql = Sql.of(ctx.session)
    _own_post(ctx, sql, post_id)
    sql.update("posts", post_id, {"deleted_at": (None, ctx.clock.now())})
    return {"post_id": post_id, "deleted": True}


def get_post(ctx: ToolContext, post_id: int) -> dict[str, Any]:
    """One visible post."""
    sql = Sql.of(ctx.session)
    _, ch = _post(ctx, sql, post_id)
    return _render(sql, [sql.one(f"{_POST} WHERE p.id = ?", (post_id,))], [ch[1]])[0]


def open_direct(ctx: ToolContext, username: str) -> dict[str, Any]:
    """The direct channel between the actor and ``username``, created (with both as members) if missing."""
    sql = Sql.of(ctx.session)
    other = sql.one(
        "SELECT id, username FROM employees WHERE username = ? AND active = ?", (username.lstrip("@"), True)
    )
    if other is None:
        raise NotFound(f"no active employee with username {username!r}")
    if other[0] == ctx.actor.employee_id:
        raise InvalidArgument("you cannot open a direct channel with yourself")
    a, b = sorted((ctx.actor.employee_id, other[0]))
    name = f"{a}__{b}"
    if sql.one("SELECT 1 FROM channels WHERE name = ? AND type = 'D'", (name,)) is None:
        team = sql.scalar("SELECT id FROM chat_teams ORDER BY id LIMIT 1")
        if team is None:
            raise NotFound("this company has no chat team")
        now = ctx.clock.now()
        ch_id = sql.insert(
            "channels",
            {
                "team_id": team,
                "name": name,
                "display_name": f"{ctx.actor.username}, {other[1]}",
                "type": "D",
                "purpose": "",
                "header": "",
                "creator_id": ctx.actor.employee_id,
                "created_at": now,
            },
        )
        for emp_id in (a, b):
            sql.insert(
                "channel_members",
                {"channel_id": ch_id, "employee_id": emp_id, "joined_at": now, "last_viewed_at": None},
            )
    return {"channel": name, "with": other[1]}


def unread(ctx: ToolContext) -> dict[str, Any]:
    """Per channel the actor belongs to: posts by others since it was last marked read, and mentions among them.

    A channel never marked read counts everything posted since the actor joined it.
    """
    sql = Sql.of(ctx.session)
    me = ctx.actor.employee_id
    since = (
        "FROM posts p WHERE p.channel_id = c.id AND p.deleted_at IS NULL AND p.author_id <> ?"
        " AND p.created_at > COALESCE(m.last_viewed_at, m.joined_at)"
    )
    rows = sql.all(
        f"SELECT c.name, c.display_name, c.type, m.last_viewed_at, (SELECT count(p.id) {since}),"  # noqa: S608
        f" (SELECT count(p.id) {since} AND p.id IN (SELECT x.post_id FROM mentions x WHERE x.employee_id = ?))"
        " FROM channel_members m JOIN channels c ON c.id = m.channel_id WHERE m.employee_id = ? ORDER BY c.name, c.id",
        (me, me, me, me),
    )
    channels = [
        {"name": n, "display_name": d, "type": KINDS[t], "last_read_at": iso(v) if v else None, "unread": u,
         "mentions": x}
        for n, d, t, v, u, x in rows
    ]  # fmt: skip
    return {
        "channels": channels,
        "unread": sum(c["unread"] for c in channels),
        "mentions": sum(c["mentions"] for c in channels),
    }


def mark_read(ctx: ToolContext, channel: str) -> dict[str, Any]:
    """Move the actor's read marker of a channel they belong to up to now.

    Raises:
        Forbidden: the actor is not a member of the channel.
    """
    sql = Sql.of(ctx.session)
    ch = _channel(sql, channel)
    row = sql.one(
        "SELECT id, last_viewed_at FROM channel_members WHERE channel_id = ? AND employee_id = ?",
        (ch[0], ctx.actor.employee_id),
    )
    if row is None:
        raise Forbidden(f"@{ctx.actor.username} is not a member of {ch[1]!r}; post there to join it first")
    now = ctx.clock.now()
    sql.update("channel_members", row[0], {"last_viewed_at": (iso(row[1]) if row[1] else None, now)})
    return {"channel": ch[1], "last_read_at": iso(now)}


def upload_file(ctx: ToolContext, channel: str, name: str, content_base64: str) -> dict[str, Any]:
    """Upload a file to a channel as the actor's pending attachment (attach it by id in a post)."""
    data = files.decode(content_base64)
    files.file_name(name)
    sql = Sql.of(ctx.session)
    return files.upload(ctx, sql, _channel(sql, channel), name, data)


def get_file(ctx: ToolContext, file_id: int) -> dict[str, Any]:
    """A visible file with its bytes (base64)."""
    return files.get(ctx, Sql.of(ctx.session), file_id)


def _manager(ctx: ToolContext, sql: Sql, ch: Any, verb: str) -> None:
    """Refuse a membership change by someone who is neither a member of ``ch`` nor an ``it_admin``.

    Why: in Mattermost only a channel's members (or a system admin) manage who is in it, and a private
    channel's member list is invisible to everyone else; adding or removing people is not a way in.
    """
    if ch[2] in ("D", "G"):
        raise InvalidArgument(f"{ch[1]!r} is a direct channel; its members cannot change")
    admin = sql.one(
        "SELECT 1 FROM employee_roles WHERE employee_id = ? AND role = 'it_admin'", (ctx.actor.employee_id,)
    )
    if admin is None and not _member(ctx, sql, ch[0]):
        kind = "private " if ch[2] == "P" else ""
        raise Forbidden(f"@{ctx.actor.username} is not a member of the {kind}channel {ch[1]!r}, so cannot {verb}")


def add_member(ctx: ToolContext, channel: str, username: str) -> dict[str, Any]:
    """Add a coworker to a public or private channel the actor belongs to.

    Raises:
        Forbidden: the actor is not a member (nor an admin), or the coworker's account is deactivated.
        Conflict: they are already a member.
    """
    sql = Sql.of(ctx.session)
    ch = _channel(sql, channel)
    _manager(ctx, sql, ch, "add members")
    who = sql.one("SELECT id, username, active FROM employees WHERE username = ?", (username.lstrip("@"),))
    if who is None:
        raise NotFound(f"no employee with username {username!r}")
    if not who[2]:
        raise Forbidden(f"@{who[1]} has left the company (account deactivated); they cannot join channels")
    if sql.one("SELECT 1 FROM channel_members WHERE channel_id = ? AND employee_id = ?", (ch[0], who[0])):
        raise Conflict(f"@{who[1]} is already a member of {ch[1]!r}")
    sql.insert(
        "channel_members",
        {"channel_id": ch[0], "employee_id": who[0], "joined_at": ctx.clock.now(), "last_viewed_at": None},
    )
    return {"channel": ch[1], "added": who[1]}


def remove_member(ctx: ToolContext, channel: str, username: str) -> dict[str, Any]:
    """Remove a member (active or deactivated) from a channel the actor belongs to; town-square keeps everyone.

    Raises:
        Forbidden: the actor is not a member (nor an admin).
        InvalidArgument: the channel is town-square, which Mattermost never lets anyone leave.
        NotFound: they are not a member.
    """
    sql = Sql.of(ctx.session)
    ch = _channel(sql, channel)
    if ch[1] == "town-square":
        raise InvalidArgument("nobody can be removed from town-square: every account stays in it")
    _manager(ctx, sql, ch, "remove members")
    who = sql.one("SELECT id, username FROM employees WHERE username = ?", (username.lstrip("@"),))
    if who is None:
        raise NotFound(f"no employee with username {username!r}")
    row = sql.one(
        "SELECT id, channel_id, employee_id, joined_at, last_viewed_at FROM channel_members"
        " WHERE channel_id = ? AND employee_id = ?",
        (ch[0], who[0]),
    )
    if row is None:
        raise NotFound(f"@{who[1]} is not a member of {ch[1]!r}")
    old = {
        "id": row[0],
        "channel_id": row[1],
        "employee_id": row[2],
        "joined_at": sql.stored(row[3]),
        "last_viewed_at": sql.stored(row[4]),
    }
    sql.delete("channel_members", {"id": row[0]}, old)
    return {"channel": ch[1], "removed": who[1]}

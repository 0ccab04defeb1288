"""Chat operations acting as an Actor.

Access rule: public channels are readable by everyone and posting to one joins it (as in Mattermost); private
and direct channels are readable and writable only by their members, and anything else is ``forbidden``.
Reads never change state (no read markers are moved).
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, or_, select

from mcp_tools.base import ToolContext
from mcp_tools.errors import Conflict, Forbidden, InvalidArgument, NotFound
from worlds.schema import Channel, ChannelMember, ChatTeam, Employee, Mention, Post, Reaction

MAX_MESSAGE = 16_000
EMOJI = re.compile(r"^[a-z0-9_+\-]{1,64}$")
MENTION = re.compile(r"@([a-z0-9][a-z0-9._\-]*[a-z0-9])", re.I)


def _member(ctx: ToolContext, channel_id: int) -> bool:
    return (
        ctx.session.scalar(
            select(ChannelMember.id).where(
                ChannelMember.channel_id == channel_id, ChannelMember.employee_id == ctx.actor.employee_id
            )
        )
        is not None
    )


def _channel(ctx: ToolContext, name: str) -> Channel:
    ch = ctx.session.scalar(select(Channel).where(Channel.name == name.lstrip("~")).order_by(Channel.id).limit(1))
    if ch is None:
        raise NotFound(f"no channel named {name!r}")
    return ch


def _readable(ctx: ToolContext, ch: Channel) -> None:
    if ch.type in ("P", "D", "G") and not _member(ctx, ch.id):
        raise Forbidden(f"@{ctx.actor.username} is not a member of the private channel {ch.name!r}")


def _message(text: str) -> str:
    if not text.strip():
        raise InvalidArgument("message must not be empty")
    if len(text) > MAX_MESSAGE:
        raise InvalidArgument(f"message is {len(text)} characters; the limit is {MAX_MESSAGE}")
    return text


def _post(ctx: ToolContext, post_id: int) -> tuple[Post, Channel]:
    post = ctx.session.get(Post, post_id)
    if post is None or post.deleted_at is not None:
        raise NotFound(f"no post {post_id}")
    ch = ctx.session.get_one(Channel, post.channel_id)
    _readable(ctx, ch)
    return post, ch


def _render(ctx: ToolContext, posts: list[Post], channel: str) -> list[dict[str, Any]]:
    ids = [p.id for p in posts]
    names = (
        dict(
            ctx.session.execute(
                select(Employee.id, Employee.username).where(Employee.id.in_({p.author_id for p in posts}))
            ).all()
        )
        if posts
        else {}
    )
    replies = (
        dict(
            ctx.session.execute(
                select(Post.root_id, func.count(Post.id))
                .where(Post.root_id.in_(ids), Post.deleted_at.is_(None))
                .group_by(Post.root_id)
            ).all()
        )
        if ids
        else {}
    )
    reacts: dict[int, list[str]] = {}
    if ids:
        for pid, emoji, user in ctx.session.execute(
            select(Reaction.post_id, Reaction.emoji, Employee.username)
            .join(Employee, Employee.id == Reaction.employee_id)
            .where(Reaction.post_id.in_(ids))
            .order_by(Reaction.post_id, Reaction.id)
        ):
            reacts.setdefault(pid, []).append(f"{emoji} by {user}")
    return [
        {
            "id": p.id,
            "channel": channel,
            "author": names.get(p.author_id),
            "message": p.message,
            "at": p.created_at.isoformat(),
            "root_id": p.root_id,
            "reply_count": replies.get(p.id, 0),
            "reactions": reacts.get(p.id, []),
        }
        for p in posts
    ]


def _label(ch: Channel, ctx: ToolContext) -> str:
    return ch.name


def list_channels(ctx: ToolContext) -> dict[str, Any]:
    """Public channels plus the private and direct ones the actor belongs to."""
    mine = select(ChannelMember.channel_id).where(ChannelMember.employee_id == ctx.actor.employee_id)
    rows = ctx.session.scalars(
        select(Channel).where(or_(Channel.type == "O", Channel.id.in_(mine))).order_by(Channel.name)
    ).all()
    member_of = set(ctx.session.scalars(mine))
    return {
        "channels": [
            {
                "name": c.name,
                "display_name": c.display_name,
                "type": {"O": "public", "P": "private", "D": "direct", "G": "group"}[c.type],
                "purpose": c.purpose,
                "member": c.id in member_of,
            }
            for c in rows
        ]
    }


def read_channel(ctx: ToolContext, channel: str, limit: int, before: int | None) -> dict[str, Any]:
    """The latest posts of a channel (oldest first), optionally before a post id."""
    if not 1 <= limit <= 200:
        raise InvalidArgument(f"limit must be 1-200; got {limit}")
    ch = _channel(ctx, channel)
    _readable(ctx, ch)
    stmt = select(Post).where(Post.channel_id == ch.id, Post.deleted_at.is_(None))
    if before is not None:
        stmt = stmt.where(Post.id < before)
    posts = list(ctx.session.scalars(stmt.order_by(Post.created_at.desc(), Post.id.desc()).limit(limit)))
    posts.reverse()
    return {"channel": ch.name, "posts": _render(ctx, posts, ch.name)}


def read_thread(ctx: ToolContext, post_id: int) -> dict[str, Any]:
    """A thread: its root and every reply, in time order."""
    post, ch = _post(ctx, post_id)
    root = post.root_id or post.id
    posts = list(
        ctx.session.scalars(
            select(Post)
            .where(or_(Post.id == root, Post.root_id == root), Post.deleted_at.is_(None))
            .order_by(Post.created_at, Post.id)
        )
    )
    return {"channel": ch.name, "root_id": root, "posts": _render(ctx, posts, ch.name)}


def search_posts(ctx: ToolContext, text: str, channel: str | None, author: str | None, limit: int) -> dict[str, Any]:
    """Posts containing ``text`` (case-insensitive) in channels the actor can read, newest first."""
    if not text.strip():
        raise InvalidArgument("search text must not be empty")
    if not 1 <= limit <= 200:
        raise InvalidArgument(f"limit must be 1-200; got {limit}")
    mine = select(ChannelMember.channel_id).where(ChannelMember.employee_id == ctx.actor.employee_id)
    stmt = (
        select(Post, Channel.name)
        .join(Channel, Channel.id == Post.channel_id)
        .where(
            or_(Channel.type == "O", Channel.id.in_(mine)),
            Post.deleted_at.is_(None),
            func.lower(Post.message).like(f"%{text.lower()}%"),
        )
    )
    if channel:
        ch = _channel(ctx, channel)
        _readable(ctx, ch)
        stmt = stmt.where(Post.channel_id == ch.id)
    if author:
        emp = ctx.session.scalar(select(Employee.id).where(Employee.username == author.lstrip("@")))
        if emp is None:
            raise NotFound(f"no employee with username {author!r}")
        stmt = stmt.where(Post.author_id == emp)
    rows = ctx.session.execute(stmt.order_by(Post.created_at.desc(), Post.id.desc()).limit(limit)).all()
    out: list[dict[str, Any]] = []
    for post, name in rows:
        out += _render(ctx, [post], name)
    return {"posts": out}


def _write_post(ctx: ToolContext, ch: Channel, message: str, root_id: int | None) -> dict[str, Any]:
    now = ctx.clock.now()
    if not _member(ctx, ch.id):
        if ch.type != "O":
            raise Forbidden(f"@{ctx.actor.username} is not a member of the private channel {ch.name!r}")
        ctx.session.add(
            ChannelMember(channel_id=ch.id, employee_id=ctx.actor.employee_id, joined_at=now, last_viewed_at=None)
        )
    post = Post(channel_id=ch.id, author_id=ctx.actor.employee_id, root_id=root_id, message=message, created_at=now)
    ctx.session.add(post)
    ctx.session.flush()
    handles = sorted({m.lower() for m in MENTION.findall(message)})
    if handles:
        ids = ctx.session.scalars(
            select(Employee.id).where(func.lower(Employee.username).in_(handles)).order_by(Employee.id)
        )
        for emp_id in ids:
            ctx.session.add(Mention(post_id=post.id, employee_id=emp_id))
        ctx.session.flush()
    return _render(ctx, [post], ch.name)[0]


def post(ctx: ToolContext, channel: str, message: str) -> dict[str, Any]:
    """Post a new message in a channel."""
    ch = _channel(ctx, channel)
    return _write_post(ctx, ch, _message(message), None)


def reply(ctx: ToolContext, post_id: int, message: str) -> dict[str, Any]:
    """Reply in the thread of a post."""
    parent, ch = _post(ctx, post_id)
    return _write_post(ctx, ch, _message(message), parent.root_id or parent.id)


def react(ctx: ToolContext, post_id: int, emoji: str) -> dict[str, Any]:
    """Add an emoji reaction to a post."""
    if not EMOJI.match(emoji):
        raise InvalidArgument(f"emoji must be a name like thumbsup (letters, digits, _+-); got {emoji!r}")
    target, _ = _post(ctx, post_id)
    dup = ctx.session.scalar(
        select(Reaction.id).where(
            Reaction.post_id == target.id,
            Reaction.employee_id == ctx.actor.employee_id,
            Reaction.emoji == emoji,
        )
    )
    if dup is not None:
        raise Conflict(f"@{ctx.actor.username} already reacted {emoji} to post {post_id}")
    ctx.session.add(
        Reaction(post_id=target.id, employee_id=ctx.actor.employee_id, emoji=emoji, created_at=ctx.clock.now())
    )
    ctx.session.flush()
    return {"post_id": target.id, "emoji": emoji, "by": ctx.actor.username}


def direct_message(ctx: ToolContext, username: str, message: str) -> dict[str, Any]:
    """Send a direct message, creating the direct channel on first use."""
    other = ctx.session.scalar(
        select(Employee).where(Employee.username == username.lstrip("@"), Employee.active.is_(True))
    )
    if other is None:
        raise NotFound(f"no active employee with username {username!r}")
    if other.id == ctx.actor.employee_id:
        raise InvalidArgument("you cannot send a direct message to yourself")
    text = _message(message)
    a, b = sorted((ctx.actor.employee_id, other.id))
    name = f"{a}__{b}"
    ch = ctx.session.scalar(select(Channel).where(Channel.name == name, Channel.type == "D"))
    now = ctx.clock.now()
    if ch is None:
        team = ctx.session.scalar(select(ChatTeam.id).order_by(ChatTeam.id).limit(1))
        if team is None:
            raise NotFound("this company has no chat team")
        ch = Channel(
            team_id=team,
            name=name,
            display_name=f"{ctx.actor.username}, {other.username}",
            type="D",
            purpose="",
            header="",
            creator_id=ctx.actor.employee_id,
            created_at=now,
        )
        ctx.session.add(ch)
        ctx.session.flush()
        for emp_id in (a, b):
            ctx.session.add(ChannelMember(channel_id=ch.id, employee_id=emp_id, joined_at=now, last_viewed_at=None))
        ctx.session.flush()
    return _write_post(ctx, ch, text, None)


def list_members(ctx: ToolContext, channel: str) -> dict[str, Any]:
    """The members of a channel, by username."""
    ch = _channel(ctx, channel)
    _readable(ctx, ch)
    rows = ctx.session.execute(
        select(Employee.username, Employee.first_name, Employee.last_name, Employee.title)
        .join(ChannelMember, ChannelMember.employee_id == Employee.id)
        .where(ChannelMember.channel_id == ch.id)
        .order_by(Employee.username)
    ).all()
    return {
        "channel": ch.name,
        "members": [{"username": u, "name": f"{f} {last}", "title": t} for u, f, last, t in rows],
    }

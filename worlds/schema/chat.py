"""Chat in Mattermost's shape: teams, channels (public, private, direct, group), posts, threads, reactions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, UTCDateTime, intpk, name_str, text, utc_ts

CHANNEL_TYPES: tuple[str, ...] = ("O", "P", "D", "G")  # open, private, direct, group (Mattermost codes)


class ChatTeam(Base):
    """A Mattermost team (one per company in generated worlds)."""

    __tablename__ = "chat_teams"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(64), unique=True)
    display_name: Mapped[name_str]


class Channel(Base):
    """A channel; direct channels are named ``<user id>__<user id>`` with the smaller id first."""

    __tablename__ = "channels"
    __table_args__ = (UniqueConstraint("team_id", "name"),)

    id: Mapped[intpk]
    team_id: Mapped[int] = mapped_column(ForeignKey("chat_teams.id"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    display_name: Mapped[name_str]
    type: Mapped[str] = mapped_column(String(1))
    purpose: Mapped[text] = mapped_column(default="")
    header: Mapped[text] = mapped_column(default="")
    creator_id: Mapped[int | None] = mapped_column(ForeignKey("employees.id"))
    created_at: Mapped[utc_ts]


class ChannelMember(Base):
    """Membership; ``last_viewed_at`` drives unread counts."""

    __tablename__ = "channel_members"
    __table_args__ = (UniqueConstraint("channel_id", "employee_id"),)

    id: Mapped[intpk]
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), index=True)
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    joined_at: Mapped[utc_ts]
    last_viewed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Post(Base):
    """A message; a reply has ``root_id`` set to the thread's first post."""

    __tablename__ = "posts"

    id: Mapped[intpk]
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), index=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    root_id: Mapped[int | None] = mapped_column(ForeignKey("posts.id"), index=True)
    message: Mapped[text]
    created_at: Mapped[utc_ts] = mapped_column(index=True)
    edited_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    is_pinned: Mapped[bool] = mapped_column(default=False)


class Reaction(Base):
    """An emoji reaction by one person on one post."""

    __tablename__ = "reactions"
    __table_args__ = (UniqueConstraint("post_id", "employee_id", "emoji"),)

    id: Mapped[intpk]
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"), index=True)
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    emoji: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[utc_ts]


class Mention(Base):
    """An @-mention of a person in a post (parsed when the post is written)."""

    __tablename__ = "mentions"
    __table_args__ = (UniqueConstraint("post_id", "employee_id"),)

    id: Mapped[intpk]
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id"), index=True)
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)


class ChatFile(Base):
    """A file uploaded to a channel; its bytes live in ``blobs``. ``post_id`` is set once a post attaches it.

    Mattermost's flow: upload first (the file belongs to a channel and its uploader), then name its id in a
    post's ``file_ids``; a file no post has claimed yet is visible only to its uploader.
    """

    __tablename__ = "chat_files"

    id: Mapped[intpk]
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id"), index=True)
    uploader_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    post_id: Mapped[int | None] = mapped_column(ForeignKey("posts.id"), index=True)
    name: Mapped[name_str]
    mime_type: Mapped[str] = mapped_column(String(120))
    size: Mapped[int] = mapped_column(Integer)
    blob_sha256: Mapped[str] = mapped_column(ForeignKey("blobs.sha256"))
    created_at: Mapped[utc_ts]

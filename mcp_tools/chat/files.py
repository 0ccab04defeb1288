"""Files in chat: upload to a channel, attach to a post, read back (Mattermost's two-step flow).

A file is uploaded first, which makes it the uploader's pending file in one channel, and is then attached by
naming its id in a post. Until a post claims it, only its uploader can see it; afterwards anyone who can read
the post's channel can. Bytes live once per content in ``blobs``; the tools carry them as base64 so every
call stays JSON. Access follows the chat rules of ``mcp_tools.chat.service``.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from collections.abc import Sequence
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.errors import Conflict, Forbidden, InvalidArgument, NotFound
from worlds.blobs import put_blob, read_blob
from worlds.rawsql import Sql, iso

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_ATTACHMENTS = 5  # per post, as Mattermost's default
MAX_NAME = 200
# Only Python's built-in table: the host's /etc/mime.types would make a file's type depend on the machine.
_TYPES = mimetypes.MimeTypes(filenames=())
_FILE = "SELECT id, channel_id, uploader_id, post_id, name, mime_type, size, blob_sha256, created_at FROM chat_files"


def file_name(name: str) -> str:
    """A file's name as given, if it is one plain name (no path, no control characters, at most 200 chars).

    Raises:
        InvalidArgument: anything else.
    """
    if not name or len(name) > MAX_NAME or name in (".", "..") or name != name.strip():
        raise InvalidArgument(f"file name must be 1-{MAX_NAME} characters without surrounding spaces; got {name!r:.60}")
    if any(c in name for c in "/\\") or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InvalidArgument(f"file name must be a plain name without slashes or control characters; got {name!r:.60}")
    return name


def decode(content_base64: str) -> bytes:
    """The bytes of a base64 string (standard alphabet, padding required), at most ``MAX_FILE_BYTES``.

    Raises:
        InvalidArgument: not base64, or too large.
    """
    if len(content_base64) > (MAX_FILE_BYTES // 3 + 1) * 4:
        raise InvalidArgument(f"file is larger than the {MAX_FILE_BYTES // (1024 * 1024)} MiB limit")
    try:
        data = base64.b64decode(content_base64, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument("content_base64 is not valid base64") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidArgument(f"file is {len(data)} bytes; the limit is {MAX_FILE_BYTES}")
    return data


def _info(row: Any, channel: str, uploader: str) -> dict[str, Any]:
    file_id, _, _, post_id, name, mime, size, sha, created = row
    return {
        "id": file_id,
        "name": name,
        "channel": channel,
        "uploader": uploader,
        "post_id": post_id,
        "mime_type": mime,
        "size": size,
        "sha256": sha,
        "at": iso(created),
    }


def upload(ctx: ToolContext, sql: Sql, channel: Any, name: str, data: bytes) -> dict[str, Any]:
    """Store ``data`` as the actor's pending file in ``channel`` (a channel row: id, name, type, ...).

    Raises:
        Forbidden: a private or direct channel the actor is not in.
    """
    member = sql.one(
        "SELECT 1 FROM channel_members WHERE channel_id = ? AND employee_id = ?", (channel[0], ctx.actor.employee_id)
    )
    if member is None and channel[2] != "O":
        raise Forbidden(f"@{ctx.actor.username} is not a member of the private channel {channel[1]!r}")
    mime = _TYPES.guess_type(name, strict=True)[0] or "application/octet-stream"
    values = {
        "channel_id": channel[0],
        "uploader_id": ctx.actor.employee_id,
        "post_id": None,
        "name": file_name(name),
        "mime_type": mime,
        "size": len(data),
        "blob_sha256": put_blob(sql, data),
        "created_at": ctx.clock.now(),
    }
    file_id = sql.insert("chat_files", values)
    return _info(sql.one(f"{_FILE} WHERE id = ?", (file_id,)), channel[1], ctx.actor.username)


def claim(ctx: ToolContext, sql: Sql, channel_id: int, file_ids: Sequence[int]) -> list[int]:
    """Check that ``file_ids`` are the actor's pending uploads to this channel (before the post is written).

    Raises:
        InvalidArgument: too many, or repeated ids.
        NotFound: an id that is not the actor's file.
        Conflict: a file already attached to a post, or uploaded to another channel.
    """
    ids = list(file_ids)
    if len(ids) > MAX_ATTACHMENTS:
        raise InvalidArgument(f"a post carries at most {MAX_ATTACHMENTS} files; got {len(ids)}")
    if len(set(ids)) != len(ids):
        raise InvalidArgument("file_ids repeats a file")
    for file_id in ids:
        row = sql.one(f"{_FILE} WHERE id = ? AND uploader_id = ?", (file_id, ctx.actor.employee_id))
        if row is None:
            raise NotFound(f"no file {file_id} uploaded by @{ctx.actor.username}")
        if row[3] is not None:
            raise Conflict(f"file {file_id} is already attached to post {row[3]}")
        if row[1] != channel_id:
            raise Conflict(f"file {file_id} was uploaded to another channel")
    return ids


def attach(sql: Sql, post_id: int, file_ids: Sequence[int]) -> None:
    """Attach claimed files to the post just written."""
    for file_id in file_ids:
        sql.update("chat_files", file_id, {"post_id": (None, post_id)})


def attachments(sql: Sql, post_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """Each post's attached files (name, id, type, size), for rendering posts; posts without files are absent."""
    if not post_ids:
        return {}
    marks = ", ".join("?" * len(post_ids))
    out: dict[int, list[dict[str, Any]]] = {}
    for file_id, post_id, name, mime, size in sql.all(
        f"SELECT id, post_id, name, mime_type, size FROM chat_files WHERE post_id IN ({marks}) ORDER BY post_id, id",  # noqa: S608
        list(post_ids),
    ):
        out.setdefault(post_id, []).append({"id": file_id, "name": name, "mime_type": mime, "size": size})
    return out


def get(ctx: ToolContext, sql: Sql, file_id: int) -> dict[str, Any]:
    """A visible file's details and its bytes as base64.

    Raises:
        NotFound: no such file, or a pending upload of someone else.
        Forbidden: the file's channel is private to others.
    """
    row = sql.one(f"{_FILE} WHERE id = ?", (file_id,))
    if row is None or (row[3] is None and row[2] != ctx.actor.employee_id):
        raise NotFound(f"no file {file_id}")
    channel = sql.one("SELECT name, type FROM channels WHERE id = ?", (row[1],))
    if channel[1] != "O" and row[2] != ctx.actor.employee_id:
        member = sql.one(
            "SELECT 1 FROM channel_members WHERE channel_id = ? AND employee_id = ?", (row[1], ctx.actor.employee_id)
        )
        if member is None:
            raise Forbidden(f"@{ctx.actor.username} is not a member of the private channel {channel[0]!r}")
    data = read_blob(sql, row[7])
    if data is None:
        raise NotFound(f"the bytes of file {file_id} are missing from this world")
    uploader = sql.scalar("SELECT username FROM employees WHERE id = ?", (row[2],))
    return {**_info(row, channel[0], uploader), "content_base64": base64.b64encode(data).decode("ascii")}

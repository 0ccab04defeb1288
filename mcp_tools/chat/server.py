"""The chat tools: thin, documented wrappers over ``mcp_tools.chat.service``."""

from __future__ import annotations

from typing import Any

from mcp_tools.base import READ, WRITE, ToolSet, current_context
from mcp_tools.chat import service

chat = ToolSet("chat")


@chat.tool(READ)
def list_channels() -> dict[str, Any]:
    """List the channels you can see: all public ones plus your private and direct channels."""
    return service.list_channels(current_context())


@chat.tool(READ)
def read_channel(channel: str, limit: int = 30, before: int | None = None) -> dict[str, Any]:
    """Read the latest posts of a channel, oldest first.

    Args:
        channel: Channel name such as town-square.
        limit: How many posts to return (1-200).
        before: Only posts with an id below this one (to page back in history).
    """
    return service.read_channel(current_context(), channel, limit, before)


@chat.tool(READ)
def read_thread(post_id: int) -> dict[str, Any]:
    """Read a whole thread: its first post and all replies.

    Args:
        post_id: Id of any post in the thread.
    """
    return service.read_thread(current_context(), post_id)


@chat.tool(READ)
def search_posts(text: str, channel: str | None = None, author: str | None = None, limit: int = 30) -> dict[str, Any]:
    """Search posts you can see for some text, newest first.

    Args:
        text: Text to find (case-insensitive).
        channel: Only this channel.
        author: Only posts by this username.
        limit: How many posts to return (1-200).
    """
    return service.search_posts(current_context(), text, channel, author, limit)


@chat.tool(WRITE)
def post(channel: str, message: str, file_ids: list[int] | None = None) -> dict[str, Any]:
    """Post a message in a channel (posting in a public channel joins it). Mention people with @username.

    Args:
        channel: Channel name such as incidents.
        message: The text to post (may be empty when files are attached).
        file_ids: Ids of files you uploaded to this channel with chat_upload_file, to attach (at most 5).
    """
    return service.post(current_context(), channel, message, file_ids or ())


@chat.tool(WRITE)
def reply(post_id: int, message: str, file_ids: list[int] | None = None) -> dict[str, Any]:
    """Reply in the thread of a post.

    Args:
        post_id: Id of the post to reply to.
        message: The reply text (may be empty when files are attached).
        file_ids: Ids of files you uploaded to the thread's channel, to attach (at most 5).
    """
    return service.reply(current_context(), post_id, message, file_ids or ())


@chat.tool(WRITE)
def react(post_id: int, emoji: str) -> dict[str, Any]:
    """Add an emoji reaction to a post.

    Args:
        post_id: Id of the post.
        emoji: Emoji name such as thumbsup or white_check_mark.
    """
    return service.react(current_context(), post_id, emoji)


@chat.tool(WRITE)
def direct_message(username: str, message: str) -> dict[str, Any]:
    """Send a direct message to a coworker.

    Args:
        username: Their username.
        message: The text to send.
    """
    return service.direct_message(current_context(), username, message)


@chat.tool(READ)
def list_members(channel: str) -> dict[str, Any]:
    """List the members of a channel.

    Args:
        channel: Channel name.
    """
    return service.list_members(current_context(), channel)


@chat.tool(WRITE)
def create_channel(name: str, display_name: str = "", private: bool = False, purpose: str = "") -> dict[str, Any]:
    """Create a channel; you become its first member (others join public channels by posting).

    Args:
        name: URL name such as release-planning (lowercase letters, digits, - and _).
        display_name: Human name shown in lists (defaults to the name).
        private: Make it a private channel that only invited members can read.
        purpose: One line saying what the channel is for.
    """
    return service.create_channel(current_context(), name, display_name, private, purpose)


@chat.tool(WRITE)
def edit_post(post_id: int, message: str) -> dict[str, Any]:
    """Replace the text of one of your own posts.

    Args:
        post_id: Id of your post.
        message: The new text.
    """
    return service.edit_post(current_context(), post_id, message)


@chat.tool(WRITE)
def delete_post(post_id: int) -> dict[str, Any]:
    """Delete one of your own posts.

    Args:
        post_id: Id of your post.
    """
    return service.delete_post(current_context(), post_id)


@chat.tool(WRITE)
def open_direct(username: str) -> dict[str, Any]:
    """Open (create if needed) your direct-message channel with a coworker, without posting.

    Args:
        username: Their username.
    """
    return service.open_direct(current_context(), username)


@chat.tool(READ)
def get_post(post_id: int) -> dict[str, Any]:
    """Read one post.

    Args:
        post_id: Id of the post.
    """
    return service.get_post(current_context(), post_id)


@chat.tool(READ)
def unread() -> dict[str, Any]:
    """Count what is new for you: per channel you are in, posts by others since you last read it, and mentions."""
    return service.unread(current_context())


@chat.tool(WRITE)
def mark_read(channel: str) -> dict[str, Any]:
    """Mark a channel you belong to as read up to now (its unread and mention counts drop to zero).

    Args:
        channel: Channel name.
    """
    return service.mark_read(current_context(), channel)


@chat.tool(WRITE)
def upload_file(channel: str, name: str, content_base64: str) -> dict[str, Any]:
    """Upload a file to a channel; it stays private to you until you attach it to a post by its id.

    Args:
        channel: Channel name the file is for.
        name: File name such as notes.txt (no slashes).
        content_base64: The file's bytes, base64-encoded (at most 10 MiB).
    """
    return service.upload_file(current_context(), channel, name, content_base64)


@chat.tool(READ)
def get_file(file_id: int) -> dict[str, Any]:
    """Download a file attached to a post you can read (or one you uploaded), with its bytes in base64.

    Args:
        file_id: Id of the file (posts list their files).
    """
    return service.get_file(current_context(), file_id)


@chat.tool(WRITE)
def add_member(channel: str, username: str) -> dict[str, Any]:
    """Add a coworker to a public or private channel you are a member of (deactivated accounts are refused).

    Args:
        channel: Channel name.
        username: Their username.
    """
    return service.add_member(current_context(), channel, username)


@chat.tool(WRITE)
def remove_member(channel: str, username: str) -> dict[str, Any]:
    """Remove someone (a leaver too) from a channel you are a member of; nobody leaves town-square.

    Args:
        channel: Channel name.
        username: Their username.
    """
    return service.remove_member(current_context(), channel, username)


EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "chat_list_channels": [{}],
    "chat_read_channel": [{"channel": "{channel}", "limit": 5}],
    "chat_read_thread": [{"post_id": "{post}"}],
    "chat_search_posts": [{"text": "the", "limit": 5}],
    "chat_post": [{"channel": "{channel}", "message": "Status: on track. cc @{coworker}"}],
    "chat_reply": [{"post_id": "{post}", "message": "Thanks, looking."}],
    "chat_react": [{"post_id": "{post}", "emoji": "eyes"}],
    "chat_direct_message": [{"username": "{coworker}", "message": "Quick question about {ticket}"}],
    "chat_list_members": [{"channel": "{channel}"}],
    "chat_create_channel": [{"name": "check-app-room", "display_name": "Check", "private": True, "purpose": "x"}],
    "chat_edit_post": [{"post_id": "{my_post}", "message": "Edited text"}],
    "chat_delete_post": [{"post_id": "{my_post}"}],
    "chat_open_direct": [{"username": "{coworker}"}],
    "chat_get_post": [{"post_id": "{post}"}],
    "chat_unread": [{}],
    "chat_mark_read": [{"channel": "{channel}"}],
    "chat_upload_file": [{"channel": "{channel}", "name": "minutes.txt", "content_base64": "TWludXRlcwo="}],
    "chat_get_file": [{"file_id": "{my_file}"}],
    "chat_add_member": [{"channel": "{my_channel}", "username": "{non_member}"}],
    "chat_remove_member": [{"channel": "{my_channel}", "username": "{non_member}"}],
}
"""Example calls for ``mcp_tools.check.check_app`` (placeholders are filled from the world)."""

"""The intranet's pages for chat, tickets and mail, each a function of read tool calls.

A page never reads the world itself: it calls the same read tools a tools-agent would (``read(tool, args)``
is one ``Episode.step``), so the trace shows what the agent looked at, faults apply to pages as they do to
tools, and access rules are the tools' own (a restricted field a tool leaves out is not on the page either).
Every form posts to ``/do/<tool>`` with the tool's arguments as fields; the web app runs that call as a step.

A page function takes the reader, its path parameters and the query, and returns (title, body HTML).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sim.web.html import Field, Form, choices, dl, e, link, message, seg, table, url
from worlds.workflow import PRIORITIES, STATUSES, TICKET_TYPES

Reader = Callable[[str, dict[str, Any]], Any]
"""Runs one read tool as a step of the episode and returns its result (raises ``StepError`` when refused)."""

Query = Mapping[str, str]
PageOut = tuple[str, str]
PAGE = 25
"""Rows per list page (tickets, mail)."""


def opt_int(q: Query, name: str) -> int | None:
    """An optional non-negative integer query parameter (anything else counts as absent)."""
    text = q.get(name, "")
    return int(text) if text.isdigit() and len(text) < 10 else None


def user(name: Any) -> str:
    """A link to a person's directory page (plain text when there is no one)."""
    return link(f"/people/{seg(name)}", f"@{name}") if name else "-"


# -- home ------------------------------------------------------------------------------------------------------


def home(prompt: str, status: Mapping[str, Any]) -> PageOut:
    """The task, where the episode stands, and the submit form."""
    facts = dl(
        {
            "Episode": e(status["episode_id"]),
            "Steps so far": e(status["steps"]),
            "Simulated time": e(status["clock"]),
            "State": e("over" if status["over"] else "running"),
        }
    )
    body = f'<section aria-labelledby="task"><h2 id="task">Your task</h2>{message(prompt)}</section>{facts}'
    if not status["over"]:
        form = Form(
            ident="submit",
            tool="submit",
            back="/",
            button="Submit the task",
            label="Submit the task",
            fields=(Field(name="summary", label="Summary of what you did", kind="textarea"),),
        )
        body += f'<section aria-labelledby="done"><h2 id="done">Done?</h2>{form.html()}</section>'
    return "Home", body


# -- chat ------------------------------------------------------------------------------------------------------


def _search_form(q: Query) -> str:
    return Form(
        ident="search",
        action="/chat/search",
        button="Search",
        label="Search messages",
        fields=(
            Field(name="text", label="Text", value=q.get("text", ""), required=True),
            Field(name="channel", label="Channel (optional)", value=q.get("channel", "")),
        ),
    ).html()


def chat_index(read: Reader, q: Query) -> PageOut:
    """Channels the agent can see, and the search form."""
    out = read("chat_list_channels", {})
    rows = [
        [
            link(f"/chat/c/{seg(c['name'])}", c["display_name"]),
            e(c["name"]),
            e(c["type"]),
            e("yes" if c["member"] else "no"),
        ]
        for c in out["channels"]
    ]
    return "Chat", _search_form(q) + table("Channels", ["Channel", "Name", "Type", "Member"], rows)


def _posts(posts: list[dict[str, Any]], *, threads: bool) -> str:
    parts = []
    for p in posts:
        reply = ""
        if threads and p.get("root_id") is None:
            reply = " " + link(
                f"/chat/thread/{p['id']}", f"Thread of post {p['id']} ({p.get('reply_count', 0)} replies)"
            )
        where = f" in ~{e(p['channel'])}" if "channel" in p else ""
        parts.append(
            f'<article aria-label="Post {e(p["id"])} by @{e(p["author"])}"><p>{user(p["author"])}{where} at '
            f"<time>{e(p['at'])}</time>{reply}</p>{message(p['message'])}</article>"
        )
    return "".join(parts) or "<p>No posts.</p>"


def chat_channel(read: Reader, q: Query, channel: str) -> PageOut:
    """A channel's newest posts, with the form to post to it."""
    out = read("chat_read_channel", {"channel": channel, "limit": 30})
    form = Form(
        ident="post",
        tool="chat_post",
        back=f"/chat/c/{seg(channel)}",
        button="Post",
        label=f"Post to ~{channel}",
        fields=(
            Field(name="channel", kind="hidden", value=channel),
            Field(name="message", label="Message", kind="textarea"),
        ),
    )
    return f"~{channel}", _posts(out["posts"], threads=True) + f"<h2>Write to ~{e(channel)}</h2>" + form.html()


def chat_thread(read: Reader, q: Query, post_id: int) -> PageOut:
    """A thread, root first, with the reply form."""
    out = read("chat_read_thread", {"post_id": post_id})
    form = Form(
        ident="reply",
        tool="chat_reply",
        back=f"/chat/thread/{post_id}",
        button="Reply",
        label="Reply in thread",
        fields=(
            Field(name="post_id", kind="hidden", value=post_id),
            Field(name="message", label="Reply", kind="textarea"),
        ),
    )
    back = link(f"/chat/c/{seg(out['channel'])}", f"Back to ~{out['channel']}")
    return f"Thread in ~{out['channel']}", f"<p>{back}</p>" + _posts(out["posts"], threads=False) + form.html()


def chat_search(read: Reader, q: Query) -> PageOut:
    """Posts containing the text, newest first."""
    body = _search_form(q)
    text = q.get("text", "")
    if text:
        args: dict[str, Any] = {"text": text, "limit": 50}
        if q.get("channel"):
            args["channel"] = q["channel"]
        body += f"<h2>Results for {e(text)}</h2>" + _posts(read("chat_search_posts", args)["posts"], threads=True)
    return "Search messages", body


# -- tickets ---------------------------------------------------------------------------------------------------


def tickets_index(read: Reader, q: Query) -> PageOut:
    """Ticket search: a filter form and one page of results."""
    offset = opt_int(q, "offset") or 0
    args: dict[str, Any] = {k: q[k] for k in ("project", "status", "priority", "text", "assignee") if q.get(k)}
    if q.get("unassigned"):
        args["assignee"] = ""
    form = Form(
        ident="filter",
        action="/tickets",
        button="Search tickets",
        label="Filter tickets",
        fields=(
            Field(name="project", label="Project key", value=q.get("project", "")),
            Field(
                name="status",
                label="Status",
                kind="select",
                value=q.get("status", ""),
                options=choices(STATUSES, anything="any"),
            ),
            Field(
                name="priority",
                label="Priority",
                kind="select",
                value=q.get("priority", ""),
                options=choices(PRIORITIES, anything="any"),
            ),
            Field(name="assignee", label="Assignee username", value=q.get("assignee", "")),
            Field(name="unassigned", label="Unassigned only", kind="checkbox", value=q.get("unassigned")),
            Field(name="text", label="Text", value=q.get("text", "")),
        ),
    )
    out = read("tickets_search", {**args, "limit": PAGE, "offset": offset})
    rows = [
        [
            link(f"/tickets/{seg(t['key'])}", t["key"]),
            e(t["title"]),
            e(t["type"]),
            e(t["status"]),
            e(t["priority"]),
            user(t["assignee"]),
        ]
        for t in out["tickets"]
    ]
    total = int(out["total"])
    shown = f"{offset + 1}-{offset + len(rows)} of {total}" if rows else f"none of {total}"
    body = f"<p>{link(url('/tickets/new', project=q.get('project') or None), 'File a new ticket')}</p>"
    body += form.html() + table(f"Tickets ({shown})", ["Key", "Title", "Type", "Status", "Priority", "Assignee"], rows)
    if offset + len(rows) < total:
        following = url("/tickets", **{k: v for k, v in q.items() if k != "offset"}, offset=offset + PAGE)
        body += f"<p>{link(following, 'Next page')}</p>"
    return "Tickets", body


def ticket_new(read: Reader, q: Query) -> PageOut:
    """The form to file a ticket (no read: nothing is looked at); on success the new ticket's page opens.

    The project is prefilled from the query (the tickets list links here with its filter's project), and the
    type and priority start at the tool's own defaults, so a person who changes nothing files what the tool would.
    """
    form = Form(
        ident="create",
        tool="tickets_create",
        back="/tickets",
        button="File ticket",
        label="New ticket",
        fields=(
            Field(name="project", label="Project key", value=q.get("project", ""), required=True),
            Field(name="title", label="Title", required=True),
            Field(name="type", label="Type", kind="select", value="task", options=choices(TICKET_TYPES)),
            Field(name="priority", label="Priority", kind="select", value="medium", options=choices(PRIORITIES)),
            Field(name="assignee", label="Assignee username (optional)"),
            Field(name="labels", label="Labels (comma-separated, optional)"),
            Field(name="description", label="Description", kind="textarea"),
        ),
    )
    return "New ticket", form.html()


def ticket(read: Reader, q: Query, key: str) -> PageOut:
    """One ticket: its fields, description, comments and history, with the edit forms."""
    t = read("tickets_get", {"key": key})
    facts = dl(
        {
            "Status": e(t["status"]),
            "Priority": e(t["priority"]),
            "Type": e(t["type"]),
            "Assignee": user(t["assignee"]),
            "Reporter": user(t["reporter"]),
            "Sprint": e(t["sprint"] or "-"),
            "Labels": e(", ".join(t["labels"]) or "-"),
            "Story points": e("-" if t["story_points"] is None else t["story_points"]),
            "Created": e(t["created_at"]),
            "Updated": e(t["updated_at"]),
        }
    )
    back = f"/tickets/{seg(key)}"
    hidden = Field(name="key", kind="hidden", value=key)
    forms = [
        Form(
            ident="priority",
            tool="tickets_update",
            back=back,
            button="Set priority",
            label="Set priority",
            inline=True,
            fields=(
                hidden,
                Field(
                    name="priority", label="Priority", kind="select", value=t["priority"], options=choices(PRIORITIES)
                ),
            ),
        ),
        Form(
            ident="assign",
            tool="tickets_assign",
            back=back,
            button="Assign",
            label="Assign",
            inline=True,
            fields=(hidden, Field(name="username", label="Assignee username", value=t["assignee"] or "")),
        ),
        Form(
            ident="status",
            tool="tickets_transition",
            back=back,
            button="Change status",
            label="Change status",
            inline=True,
            fields=(
                hidden,
                Field(name="status", label="Status", kind="select", value=t["status"], options=choices(STATUSES)),
            ),
        ),
        Form(
            ident="comment",
            tool="tickets_comment",
            back=back,
            button="Comment",
            label="Add a comment",
            fields=(hidden, Field(name="body", label="Comment", kind="textarea")),
        ),
    ]
    comments = (
        "".join(
            f'<article aria-label="Comment by @{e(c["author"])}"><p>{user(c["author"])} at <time>{e(c["at"])}</time>'
            f"</p>{message(c['body'])}</article>"
            for c in t["comments"]
        )
        or "<p>No comments.</p>"
    )
    history = table(
        "History",
        ["At", "By", "From", "To"],
        [[e(h["at"]), user(h["by"]), e(h["from"] or "-"), e(h["to"])] for h in t["history"]],
    )
    body = (
        f"<p><strong>{e(t['title'])}</strong></p>{facts}<h2>Description</h2>{message(t['description'])}"
        f"<h2>Edit</h2>{''.join(f.html() for f in forms[:3])}<h2>Comments</h2>{comments}{forms[3].html()}{history}"
    )
    return f"{key}: {t['title']}", body


# -- mail ------------------------------------------------------------------------------------------------------


def mail_index(read: Reader, q: Query) -> PageOut:
    """A mail folder (Inbox by default), its folders, and a link to write a message."""
    folder = q.get("folder") or "Inbox"
    offset = opt_int(q, "offset") or 0
    folders = read("mail_list_folders", {})
    out = read("mail_list_messages", {"folder": folder, "limit": PAGE, "offset": offset})
    nav = "".join(
        "<li>" + link(url("/mail", folder=f["name"]), f"{f['name']} ({f['unread']} unread of {f['total']})") + "</li>"
        for f in folders["folders"]
    )
    rows = [
        [
            e(m["from_name"] or m["from"]),
            link(f"/mail/m/{m['id']}", m["subject"] or "(no subject)"),
            e(m["sent_at"]),
            e("no" if m["is_read"] else "yes"),
            e("yes" if m["is_flagged"] else "no"),
        ]
        for m in out["messages"]
    ]
    body = (
        f"<p>{link('/mail/compose', 'Write a message')}</p>"
        f'<nav aria-label="Mail folders"><ul>{nav}</ul></nav>'
        + table(f"{folder}: {out['total']} messages", ["From", "Subject", "Sent", "Unread", "Flagged"], rows)
    )
    if offset + len(rows) < int(out["total"]):
        body += f"<p>{link(url('/mail', folder=folder, offset=offset + PAGE), 'Next page')}</p>"
    return f"Mail: {folder}", body


def mail_message(read: Reader, q: Query, message_id: int) -> PageOut:
    """One message with reply, reply-all, forward, mark and move forms."""
    m = read("mail_read_message", {"message_id": message_id})
    facts = dl(
        {
            "From": e(f"{m['from_name']} <{m['from']}>" if m["from_name"] else m["from"]),
            "To": e(", ".join(m["to"])),
            "Cc": e(", ".join(m["cc"]) or "-"),
            "Sent": e(m["sent_at"]),
            "Folder": e(m["folder"]),
            "Thread": e(m["thread_id"]),
            "Attachments": e(", ".join(str(a.get("name", a)) for a in m["attachments"]) or "-"),
        }
    )
    back = f"/mail/m/{message_id}"
    hidden = Field(name="message_id", kind="hidden", value=message_id)
    forms = (
        Form(
            ident="reply",
            tool="mail_reply",
            back=back,
            button="Send reply",
            label="Reply",
            fields=(hidden, Field(name="body", label="Reply text", kind="textarea")),
        ),
        Form(
            ident="replyall",
            tool="mail_reply_all",
            back=back,
            button="Send reply to all",
            label="Reply to all",
            fields=(hidden, Field(name="body", label="Reply-all text", kind="textarea")),
        ),
        Form(
            ident="forward",
            tool="mail_forward",
            back=back,
            button="Forward",
            label="Forward",
            fields=(
                hidden,
                Field(name="to", label="Forward to (addresses)"),
                Field(name="body", label="Note", kind="textarea"),
            ),
        ),
        Form(
            ident="read",
            tool="mail_mark_read",
            back=back,
            button="Mark as read",
            label="Mark as read",
            inline=True,
            fields=(hidden, Field(name="read", kind="hidden", value="true")),
        ),
        Form(
            ident="move",
            tool="mail_move",
            back=back,
            button="Move",
            label="Move to folder",
            inline=True,
            fields=(hidden, Field(name="folder", label="Folder")),
        ),
    )
    body = f"{facts}<h2>Message</h2>{message(m['body'])}<h2>Respond</h2>" + "".join(f.html() for f in forms)
    return m["subject"] or "(no subject)", body


def mail_compose(read: Reader, q: Query) -> PageOut:
    """The form to write a new message (no read: nothing is looked at)."""
    form = Form(
        ident="compose",
        tool="mail_send",
        back="/mail?folder=Sent",
        button="Send",
        label="New message",
        fields=(
            Field(name="to", label="To (addresses, comma-separated)", required=True),
            Field(name="cc", label="Cc"),
            Field(name="subject", label="Subject"),
            Field(name="body", label="Text", kind="textarea"),
        ),
    )
    return "New message", form.html()

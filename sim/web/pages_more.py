"""The intranet's pages for calendar, people, documents, spreadsheets, repositories and merge requests.

Same contract as ``sim.web.pages``: every page is read tool calls (steps), every form a write tool's call.
The people pages show what ``directory_get_profile`` returns, so restricted fields follow the tools' rule
(``mcp_tools.directory.access.may_see``): one the agent may not see is neither in the result nor on the page.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from sim.web.html import Field, Form, choices, e, link, message, seg, table, url, value
from sim.web.pages import PageOut, Query, Reader, opt_int, user

RSVP = ("accepted", "tentative", "declined")
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


# -- calendar --------------------------------------------------------------------------------------------------


def calendar_week(read: Reader, q: Query, today: datetime) -> PageOut:
    """The agent's events of one week (``?start=YYYY-MM-DD``, default the simulated clock's week)."""
    day = q.get("start", "")
    start = datetime.fromisoformat(day) if DAY.fullmatch(day) else today - timedelta(days=today.weekday())
    start = start.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
    end = start + timedelta(days=7)
    out = read("calendar_list_events", {"start": f"{start:%Y-%m-%dT%H:%M:%S}Z", "end": f"{end:%Y-%m-%dT%H:%M:%S}Z"})
    rows = [
        [
            link(f"/calendar/e/{ev['id']}", ev["title"]),
            e(ev["start"]),
            e(ev["end"]),
            user(ev["organizer"]),
            e(ev["room"] or "-"),
            e("yes" if ev["cancelled"] else "no"),
        ]
        for ev in out["events"]
    ]
    prev_week, next_week = start - timedelta(days=7), end
    body = (
        f"<p>{link(url('/calendar', start=f'{prev_week:%Y-%m-%d}'), 'Previous week')} | "
        f"{link(url('/calendar', start=f'{next_week:%Y-%m-%d}'), 'Next week')}</p>"
        + table(f"Events from {start:%Y-%m-%d}", ["Title", "Start", "End", "Organizer", "Room", "Cancelled"], rows)
    )
    return f"Calendar: week of {start:%Y-%m-%d}", body


def calendar_event(read: Reader, q: Query, event_id: int) -> PageOut:
    """One event (full details if the agent takes part, busy otherwise) with the RSVP form."""
    ev = read("calendar_get_event", {"event_id": event_id})
    form = Form(
        ident="rsvp",
        tool="calendar_rsvp",
        back=f"/calendar/e/{event_id}",
        button="Answer",
        label="Answer the invitation",
        fields=(
            Field(name="event_id", kind="hidden", value=event_id),
            Field(name="response", label="Response", kind="select", options=choices(RSVP)),
        ),
    )
    return str(ev.get("title") or f"Event {event_id}"), value(ev) + form.html()


# -- people ----------------------------------------------------------------------------------------------------


def people_index(read: Reader, q: Query) -> PageOut:
    """People search by name, title, department, team or location."""
    args: dict[str, Any] = {k: q[k] for k in ("text", "department", "team", "location") if q.get(k)}
    offset = opt_int(q, "offset") or 0
    out = read("directory_search_people", {**args, "limit": 50, "offset": offset})
    form = Form(
        ident="people",
        action="/people",
        button="Search people",
        label="Search people",
        fields=(
            Field(name="text", label="Name or title", value=q.get("text", "")),
            Field(name="department", label="Department", value=q.get("department", "")),
        ),
    )
    rows = [
        [user(p["username"]), e(p["name"]), e(p["title"]), e(p["department"]), e(p["team"] or "-"), user(p["manager"])]
        for p in out["people"]
    ]
    body = form.html() + table(
        f"People ({out['total']})", ["Username", "Name", "Title", "Department", "Team", "Manager"], rows
    )
    if offset + len(rows) < int(out["total"]):
        body += f"<p>{link(url('/people', **args, offset=offset + 50), 'Next page')}</p>"
    return "People", body


def person(read: Reader, q: Query, username: str) -> PageOut:
    """A profile as ``directory_get_profile`` gives it to the agent (restricted fields only when allowed)."""
    p = read("directory_get_profile", {"username": username})
    return f"{p.get('name', username)} (@{username})", value(p)


# -- documents and spreadsheets ------------------------------------------------------------------------------


def docs_index(read: Reader, q: Query) -> PageOut:
    """A folder: its subfolders and the documents the agent may open."""
    args: dict[str, Any] = {"limit": 100}
    if q.get("folder"):
        args["folder"] = q["folder"]
    out = read("docs_list_folder", args)
    folders = "".join(f"<li>{link(url('/docs', folder=f['path']), f['name'])}</li>" for f in out["folders"])
    rows = [
        [
            link(url("/docs/d", document=d["path"], kind=d["kind"]), d["path"]),
            e(d["kind"]),
            e(d["format"]),
            user(d["owner"]),
            e(d["permission"]),
            e(d["version"]),
        ]
        for d in out["documents"]
    ]
    body = (
        f'<section aria-labelledby="folders"><h2 id="folders">Folders in {e(out["folder"])}</h2>'
        f"<ul>{folders or '<li>none</li>'}</ul></section>"
        + table("Documents", ["Path", "Kind", "Format", "Owner", "Your access", "Version"], rows)
    )
    return f"Documents: {out['folder']}", body


def _column(n: int) -> str:
    name = ""
    while n:
        n, r = divmod(n - 1, 26)
        name = chr(65 + r) + name
    return name


def _sheet(out: dict[str, Any]) -> str:
    m = re.match(r"([A-Z]+)(\d+)", str(out["range"]))
    col0, row0 = 1, 1
    if m:
        col0 = sum((ord(c) - 64) * 26**i for i, c in enumerate(reversed(m.group(1))))
        row0 = int(m.group(2))
    grid: list[list[Any]] = out["values"]
    width = max((len(r) for r in grid), default=0)
    head = ["Row"] + [_column(col0 + i) for i in range(width)]
    rows = [[e(row0 + i)] + [e("" if c is None else c) for c in r] for i, r in enumerate(grid)]
    return table(f"Sheet {out['sheet']} ({out['range']})", head, rows)


def document(read: Reader, q: Query) -> PageOut:
    """A text document's sections and comments, or a spreadsheet's first sheet, with the edit forms."""
    path = q.get("document", "")
    back = url("/docs/d", document=path, kind=q.get("kind", "text"))
    hidden = Field(name="document", kind="hidden", value=path)
    if q.get("kind") in ("sheet", "spreadsheet"):  # docs_list_folder says spreadsheet
        out = read("sheets_read_range", {"document": path})
        form = Form(
            ident="cell",
            tool="sheets_write_cell",
            back=back,
            button="Write cell",
            label="Write one cell",
            fields=(hidden, Field(name="cell", label="Cell (e.g. B2)"), Field(name="value", label="Value or =formula")),
        )
        return path, _sheet(out) + form.html()
    out = read("docs_read", {"document": path})
    parts = []
    for s in out["sections"]:
        level = min(6, 1 + int(s["level"] or 1))
        if s["heading"]:
            parts.append(f"<h{level}>{e(s['heading'])}</h{level}>")
        parts += [f"<p>{e(p)}</p>" for p in s["paragraphs"]]
    notes = "".join(f"<li>{e(c.get('author'))}: {e(c.get('text'))}</li>" for c in out["comments"])
    forms = (
        Form(
            ident="append",
            tool="docs_append",
            back=back,
            button="Append",
            label="Append text",
            fields=(hidden, Field(name="text", label="Text to append", kind="textarea")),
        ),
        Form(
            ident="comment",
            tool="docs_comment",
            back=back,
            button="Comment",
            label="Comment on the document",
            fields=(hidden, Field(name="text", label="Comment", kind="textarea")),
        ),
    )
    body = (
        f'<article aria-label="{e(path)}">{"".join(parts)}</article>'
        f"<h2>Comments</h2><ul>{notes or '<li>none</li>'}</ul>" + "".join(f.html() for f in forms)
    )
    return path, body


# -- repositories and merge requests -------------------------------------------------------------------------


def repos_index(read: Reader, q: Query) -> PageOut:
    """Repositories and open merge requests."""
    repos = read("git_list_repos", {})
    mrs = read("git_mr_list", {})
    rows = [
        [link(f"/repos/r/{seg(r['name'])}", r["name"])] + [e(r.get(k, "-")) for k in ("default_branch",)]
        for r in repos["repos"]
    ]
    mr_rows = [
        [
            link(f"/repos/mr/{m['id']}", f"!{m['id']} {m['title']}"),
            e(m.get("repo")),
            e(m.get("state")),
            user(m.get("author")),
        ]
        for m in mrs.get("merge_requests", [])
    ]
    body = table("Repositories", ["Repository", "Default branch"], rows) + table(
        "Merge requests", ["Request", "Repository", "State", "Author"], mr_rows
    )
    return "Repositories", body


def repo_tree(read: Reader, q: Query, repo: str) -> PageOut:
    """A directory of a repository's working tree; files link to their text."""
    path = q.get("path", "")
    out = read("git_tree", {"repo": repo, "path": path})
    rows = []
    for entry in out["entries"]:
        target = "/repos/r/" if entry["type"] == "dir" else "/repos/f/"
        rows.append(
            [
                link(url(target + seg(repo), path=entry["path"]), entry["path"]),
                e(entry["type"]),
                e(entry["size"] or "-"),
            ]
        )
    return f"{repo}: /{path}", table("Files", ["Path", "Type", "Size"], rows)


def repo_file(read: Reader, q: Query, repo: str) -> PageOut:
    """A file of a repository's working tree as text."""
    path = q.get("path", "")
    out = read("git_read_file", {"repo": repo, "path": path})
    return f"{repo}: {path}", f"<pre>{e(out.get('text', out.get('content', '')))}</pre>"


def merge_request(read: Reader, q: Query, mr_id: int) -> PageOut:
    """One merge request with its notes and pipeline, and the comment form."""
    mr = read("git_mr_get", {"mr_id": mr_id})
    form = Form(
        ident="note",
        tool="git_mr_comment",
        back=f"/repos/mr/{mr_id}",
        button="Comment",
        label="Comment on the merge request",
        fields=(Field(name="mr_id", kind="hidden", value=mr_id), Field(name="body", label="Comment", kind="textarea")),
    )
    return f"Merge request !{mr_id}", message(mr.get("description", "")) + value(mr) + form.html()

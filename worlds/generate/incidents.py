"""Incidents from first alert to postmortem: one event writes the ~incidents thread and the postmortem document.

Why: issue 12 item 2 asks that an incident's traces agree. For each incident ticket that was resolved, the
on-call engineer (its assignee) opens a thread in ~incidents when the ticket is filed, the project's lead posts
an update while it is open, the on-call engineer posts the resolution when the ticket is resolved, and then
writes the postmortem in the team's department folder, naming the same key, times and people, and the merge
request that fixed it (``worlds.generate.code``: merged after the first post, before the resolution, so before
the postmortem). Everything lands
in its author's working hours (``Gen.when``); a postmortem whose writing would fall after history ends is not
written yet. ``worlds.coherence`` checks that each postmortem follows its incident's chat and resolution.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from worlds.generate.code import fixes_by_key
from worlds.generate.common import Gen
from worlds.generate.documents import add_document
from worlds.generate.language import Dice, chat_voice, one_of

POSTMORTEM_PREFIX = "Postmortem "
"""Postmortem documents are named ``Postmortem <KEY> <date>.docx``."""


def _user(g: Gen, emp: int) -> str:
    return f"@{g.rows['employees'][emp - 1]['username']}"


def _post(g: Gen, channel: int, author: int, root: int | None, message: str, at: datetime) -> int:
    return g.add(
        "posts",
        {
            "channel_id": channel,
            "author_id": author,
            "root_id": root,
            "message": message,
            "created_at": at,
            "edited_at": None,
            "deleted_at": None,
            "is_pinned": False,
        },
    )


def build_incidents(g: Gen) -> None:
    """The ~incidents thread and the postmortem of every resolved incident ticket."""
    words = Dice(g.seeds.rng("history/incidents"))
    channel = next((c["id"] for c in g.rows.get("channels", []) if c["name"] == "incidents"), None)
    folders = {f["name"]: f["id"] for f in g.rows.get("doc_folders", []) if f["parent_id"] is not None}
    fixes = fixes_by_key(g)
    for t in list(g.rows.get("tickets", [])):
        if t["type"] != "incident" or t["status"] != "done" or t["assignee_id"] is None:
            continue
        ev = g.stories[t["id"]]
        project = g.rows["projects"][t["project_id"] - 1]
        team = g.rows["teams"][project["team_id"] - 1]
        dept = g.rows["departments"][team["department_id"] - 1]["name"]
        oncall, lead, key, s = int(t["assignee_id"]), int(project["lead_id"]), t["key"], ev.slots
        opened, resolved = t["created_at"], t["resolved_at"]
        timeline = [(opened, f"{_user(g, oncall)} opened {key} and took the page")]
        if channel is not None:
            text = one_of(
                words,
                f"Incident {key}: {ev.summary}. I'm on call and looking.",
                f"Paged for the {s['c']}: {ev.summary} ({key}). Investigating.",
                f"{key} opened: {ev.summary}. Impact so far: {s['seg']}.",
            )
            root = _post(g, channel, oncall, None, chat_voice(words, g.styles[oncall - 1], text), opened)
            update = g.when(lead, opened + timedelta(minutes=15 + words.integers(90)))
            if update is not None and update < resolved and lead != oncall:
                text = one_of(
                    words,
                    f"Update on {key}: impact limited to {s['seg']}, {_user(g, oncall)} is on the fix.",
                    f"{key}: customers on {s['env']} are affected; next update within the hour.",
                    f"Support is handling comms for {key}; {_user(g, oncall)} has a lead on the cause.",
                )
                _post(g, channel, lead, root, chat_voice(words, g.styles[lead - 1], text), update)
                timeline.append((update, f"{_user(g, lead)} posted the customer impact"))
            text = one_of(
                words,
                f"Resolved: {key}. Root cause was that {ev.cause}; postmortem to follow.",
                f"{key} is fixed: we {ev.fix}. Postmortem doc coming.",
            )
            _post(g, channel, oncall, root, chat_voice(words, g.styles[oncall - 1], text), resolved)
        fix = fixes.get(key)
        if fix is not None:
            timeline.append((fix[2], f"the fix {fix[0]}!{fix[1]} was merged"))
        timeline.append((resolved, f"{_user(g, oncall)} resolved {key}"))
        if dept not in folders:
            continue
        written = g.when(oncall, resolved + timedelta(hours=4 + words.integers(44)))
        if written is None:
            continue  # the postmortem is still being written when history ends
        lines = [f"{at:%Y-%m-%d %H:%M} UTC: {what}." for at, what in sorted(timeline)]
        content: dict[str, Any] = {
            "sections": [
                {"heading": f"Postmortem: {key} {t['title']}", "body": ""},
                {"heading": "Impact", "body": f"{s['seg'].capitalize()} on {s['env']} were affected."},
                {"heading": "Timeline", "body": "\n\n".join(lines)},
                {"heading": "Root cause", "body": f"{ev.cause[:1].upper()}{ev.cause[1:]}."},
                {"heading": "Fix", "body": f"We {ev.fix}" + (f" ({fix[0]}!{fix[1]})." if fix else ".")},
                {
                    "heading": "People",
                    "body": f"On call: {_user(g, oncall)}. Incident lead: {_user(g, lead)}. "
                    f"Reported by {_user(g, int(t['reporter_id']))}.",
                },
            ]
        }
        name = f"{POSTMORTEM_PREFIX}{key} {opened.date().isoformat()}"
        add_document(g, folders[dept], name, "docx", oncall, content, written)

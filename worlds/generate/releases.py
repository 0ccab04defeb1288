"""Releases: a project's milestone that was reached ships what its team finished by then, with notes and a post.

Why: issue 12 item 2 asks that a release and its tickets agree. For each milestone due inside the history
window and marked done, the project lead writes release notes in the department folder and announces them in
the project channel (or ~announcements) at the same moment, in the lead's working hours; both name only
tickets of that project that were done by then and not in an earlier release. ``worlds.coherence`` checks it.
"""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Any

from worlds.generate.common import Gen
from worlds.generate.documents import add_document
from worlds.generate.language import Dice, chat_voice, one_of

RELEASE_PREFIX = "Release notes "
"""Release notes are named ``Release notes <milestone>.docx``."""


def build_releases(g: Gen) -> None:
    """Release notes and an announcement for every reached milestone inside the history window."""
    words = Dice(g.seeds.rng("history/releases"))
    folders = {f["name"]: f["id"] for f in g.rows.get("doc_folders", []) if f["parent_id"] is not None}
    channels = {c["name"]: c["id"] for c in g.rows.get("channels", [])}
    done_of: dict[int, list[dict[str, Any]]] = {}
    for t in g.rows.get("tickets", []):
        if t["status"] == "done" and t["resolved_at"] is not None:
            done_of.setdefault(t["project_id"], []).append(t)
    users = {e["id"]: e["username"] for e in g.rows["employees"]}
    for project in g.rows.get("projects", []):
        lead = int(project["lead_id"])
        team = g.rows["teams"][project["team_id"] - 1]
        dept = g.rows["departments"][team["department_id"] - 1]["name"]
        since = g.history_start
        stones = [m for m in g.rows.get("milestones", []) if m["project_id"] == project["id"] and m["done"]]
        for m in sorted(stones, key=lambda m: (m["due_date"], m["id"])):
            at = g.when(lead, datetime.combine(m["due_date"], time(12, 0), tzinfo=UTC))
            if at is None or at < g.history_start:
                continue
            shipped = sorted(
                (t for t in done_of.get(project["id"], []) if since < t["resolved_at"] <= at),
                key=lambda t: (t["resolved_at"], t["id"]),
            )[-8:]
            since = at
            if not shipped:
                continue
            lines = [
                f"{t['key']}: {t['title']} (@{users[t['assignee_id']]})" if t["assignee_id"] else t["key"]
                for t in shipped
            ]
            if dept in folders:
                content = {
                    "sections": [
                        {"heading": f"{m['name']} release notes ({project['key']})", "body": ""},
                        {"heading": "Shipped", "body": "\n\n".join(lines)},
                        {
                            "heading": "Notes",
                            "body": one_of(
                                words,
                                "Everything above is live for all customers.",
                                "Rolled out gradually over the day; no rollbacks.",
                                "Support has the list; ping the team channel with questions.",
                            ),
                        },
                    ]
                }
                add_document(g, folders[dept], f"{RELEASE_PREFIX}{m['name']}", "docx", lead, content, at)
            channel = channels.get(f"proj-{project['key'].lower()}", channels.get("announcements"))
            if channel is None:
                continue
            items = "; ".join(f"{t['key']} {t['title'][:1].lower()}{t['title'][1:]}" for t in shipped[-3:])
            text = one_of(
                words,
                f"{m['name']} is out: {items}. Full notes in '{RELEASE_PREFIX}{m['name']}'.",
                f"Shipped {m['name']} today. Highlights: {items}.",
                f"{m['name']} released ({len(shipped)} tickets), including {items}.",
            )
            g.add(
                "posts",
                {
                    "channel_id": channel,
                    "author_id": lead,
                    "root_id": None,
                    "message": chat_voice(words, g.styles[lead - 1], text),
                    "created_at": at,
                    "edited_at": None,
                    "deleted_at": None,
                    "is_pinned": False,
                },
            )

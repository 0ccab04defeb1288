"""Team weeklies and their action items: each new action item becomes a ticket its owner files after the meeting.

Why: issue 12 item 1 asks that meeting notes and the tracker agree. A weekly happens at its calendar time (the
team's recurring event, in the lead's hours); the notes, written as the meeting ends, list who will do what; the
person named files that ticket afterwards in their own working hours, assigned to themselves, with a description
that names the meeting. ``worlds.coherence`` checks both directions (every "@x: <title>." line has its ticket,
owned by x, filed after the meeting; every action-item ticket appears in its meeting's notes).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from worlds.generate.common import Gen
from worlds.generate.language import Dice, one_of
from worlds.generate.stories import ticket_event
from worlds.workflow import path_to

MEETING_MINUTES = 45
ACTION_PREFIX = "Action item from the "
"""How an action-item ticket's description starts: ``Action item from the <notes title>: ...``."""


@dataclass(frozen=True, kw_only=True)
class Meeting:
    """One occurrence of a team weekly: its notes title, when it started and ended."""

    title: str
    start: datetime
    end: datetime


def weeklies(g: Gen, team: dict[str, Any], count: int) -> list[Meeting]:
    """The team's last ``count`` weeklies before history ends, newest first.

    Taken from the team's recurring calendar event when the world has a calendar, else on the lead's working
    mornings a week apart (the notes still need a meeting time).
    """
    series = next((e for e in g.rows.get("events", []) if e["title"] == f"{team['name']} weekly"), None)
    starts: list[datetime] = []
    if series is not None:
        at = series["start_at"]
        while at + timedelta(minutes=MEETING_MINUTES) <= g.start_at:
            starts.append(at)
            at += timedelta(days=7)
        starts = starts[::-1][:count]
    for week in range(len(starts), count):
        starts.append(g.placed(team["lead_id"], g.start_at - timedelta(days=7 * (week + 1))))
    return [
        Meeting(
            title=f"{team['name']} weekly notes {s.date().isoformat()}",
            start=s,
            end=s + timedelta(minutes=MEETING_MINUTES),
        )
        for s in starts
    ]


def _user(g: Gen, emp: int) -> str:
    return f"@{g.rows['employees'][emp - 1]['username']}"


def new_actions(g: Gen, words: Dice, meeting: Meeting, project: dict[str, Any], members: list[int]) -> list[str]:
    """File the tickets the meeting agreed on (one or two, by people in the room); returns their notes lines.

    An action whose owner's next working moment falls after history ends is not filed, and so not listed: the
    notes list only what someone took away and acted on.
    """
    family, components = g.components.get(project["id"], ("ops", []))
    if not components:
        return []
    lines: list[str] = []
    for _ in range(1 + words.integers(2)):
        owner = int(words.pick(members))
        filed = g.when(owner, meeting.end + timedelta(minutes=10 + words.integers(300)))
        if filed is None or owner in g.leave_at:
            continue  # not filed before history ends, or by someone about to leave (it would be theirs, open)
        event = ticket_event(words, family, "task", components, [c[0] for c in g.customers])
        title = event.title
        why = one_of(
            words,
            f"We agreed {_user(g, project['lead_id'])} would want this before the next sprint.",
            f"It came up while reviewing the {event.component}.",
            f"Raised because {event.slots['seg']} keep hitting it.",
            "Nobody owned it so far; taking it.",
        )
        number = int(project["next_ticket_number"])
        project["next_ticket_number"] = number + 1
        tid = g.add(
            "tickets",
            {
                "key": f"{project['key']}-{number}",
                "project_id": project["id"],
                "number": number,
                "type": event.kind,
                "title": title,
                "description": f"{ACTION_PREFIX}{meeting.title}: {title}. {why}",
                "status": "todo",
                "priority": str(words.pick(("high", "medium", "medium", "low"))),
                "assignee_id": owner,
                "reporter_id": owner,
                "sprint_id": None,
                "story_points": int(words.pick((1, 2, 3, 5))),
                "created_at": filed,
                "updated_at": filed,
                "resolved_at": None,
            },
        )
        g.stories[tid] = event
        prev = None
        for status in path_to("todo"):
            g.add(
                "ticket_status_changes",
                {"ticket_id": tid, "from_status": prev, "to_status": status, "actor_id": owner, "changed_at": filed},
            )
            prev = status
        lines.append(f"{_user(g, owner)}: {title}.")
    return lines

"""The ticket workflow: statuses, legal transitions, types and priorities.

One definition serves the generator (status histories are walks on this graph), ``check_world`` (every
history is legal) and the tickets app (an illegal transition is refused).
"""

from __future__ import annotations

STATUSES: tuple[str, ...] = ("backlog", "todo", "in_progress", "in_review", "blocked", "done", "wont_do")
INITIAL_STATUS = "backlog"
TERMINAL_STATUSES: frozenset[str] = frozenset({"done", "wont_do"})

TRANSITIONS: dict[str, tuple[str, ...]] = {
    "backlog": ("todo", "wont_do"),
    "todo": ("in_progress", "backlog", "wont_do"),
    "in_progress": ("in_review", "blocked", "todo"),
    "blocked": ("in_progress", "wont_do"),
    "in_review": ("done", "in_progress"),
    "done": ("todo",),
    "wont_do": ("backlog",),
}

TICKET_TYPES: tuple[str, ...] = ("bug", "task", "story", "incident", "epic")
PRIORITIES: tuple[str, ...] = ("critical", "high", "medium", "low", "none")
LINK_KINDS: tuple[str, ...] = ("blocks", "relates_to", "duplicates")


def is_legal(from_status: str | None, to_status: str) -> bool:
    """Whether a ticket may move from ``from_status`` to ``to_status`` (None = creation)."""
    if from_status is None:
        return to_status == INITIAL_STATUS
    return to_status in TRANSITIONS.get(from_status, ())


def path_to(target: str) -> list[str]:
    """The shortest legal status path from the initial status to ``target`` (both ends included)."""
    frontier: list[list[str]] = [[INITIAL_STATUS]]
    seen = {INITIAL_STATUS}
    while frontier:
        path = frontier.pop(0)
        if path[-1] == target:
            return path
        for nxt in TRANSITIONS[path[-1]]:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append([*path, nxt])
    raise ValueError(f"status {target!r} is unreachable; expected one of {', '.join(STATUSES)}")

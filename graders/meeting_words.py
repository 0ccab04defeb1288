"""What a meeting's messages and answers say: the instants a post names, the key and names it mentions, an answer.

Pure readings of text and memory rows, each cached per text for the process, shared by the meeting checks
(``graders.checks_meetings``, ``graders.checks_items``). Kept apart from the checks so that module stays a
reader of the episode's state and this one a reader of words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from mcp_tools.calendar.slots import Person

ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})")


@functools.lru_cache(maxsize=4096)
def works(p: Any, start: datetime, end: datetime) -> bool:
    """Whether [start, end) lies inside the working week of ``p`` (a ``meeting_log.Someone``), as ``Person`` says.

    Cached per (person, meeting time) for the process: a booking asks it of each participant for the meeting
    check and again for each per-person check, and the answer depends on nothing else.
    """
    return Person(p.id, p.username, p.timezone, p.work_start_minute, p.work_end_minute, p.workdays).works(start, end)


@functools.lru_cache(maxsize=4096)
def local_time(start: datetime, timezone: str) -> str:
    """``start`` as a weekday and time in ``timezone`` (``Tue 15:00``), as the evidence shows it."""
    return start.astimezone(ZoneInfo(timezone)).strftime("%a %H:%M")


@functools.lru_cache(maxsize=4096)
def _instants(text: str) -> list[datetime]:
    """The ISO 8601 instants a message names (parsed once per text per process; read, never changed)."""
    out = []
    for found in ISO.findall(text):
        try:
            out.append(datetime.fromisoformat(found.replace("Z", "+00:00").replace(" ", "T")))
        except ValueError:
            continue
    return out


@functools.lru_cache(maxsize=1024)
def _key_rx(key: str) -> re.Pattern[str]:
    """How an announcement names its key (a whole word, any case), compiled once per key."""
    return re.compile(rf"\b{re.escape(key)}\b", re.IGNORECASE)


def _fact(row: Any) -> Mapping[str, Any] | None:
    """An answer's agreement fact, or None.

    A parsed memory is a dict: tested first, as ``isinstance`` against ``Mapping`` runs the ABC's check in
    Python (a frame per memory filed).
    """
    data = row.data
    if type(data) is not dict and not isinstance(data, Mapping):
        data = {}
    fact = data.get("fact")
    if type(fact) is not dict and not isinstance(fact, Mapping):
        return None
    return fact if fact.get("intent") == "agreement" else None


def _said_about(row: Any, start: datetime) -> str | None:
    """What an agreement answer said (yes/no) about ``start``, or None if it is about another time."""
    fact = _fact(row)
    if fact is None:
        return None
    when = _instant(str(fact.get("subject", "")))
    return str(fact.get("said")) if when is not None and when == start else None


@functools.lru_cache(maxsize=4096)
def _instant(text: str) -> datetime | None:
    """An answer's subject as an aware instant; None if it is not one (parsed once per text per process)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


@functools.lru_cache(maxsize=1024)
def _name_rx(username: str) -> re.Pattern[str]:
    """How an escalation names a coworker (``@username`` or the bare username), compiled once per name."""
    return re.compile(rf"(?<![\w.]){re.escape(username)}\b", re.IGNORECASE)

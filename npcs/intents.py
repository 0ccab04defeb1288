"""Simple intents in a message, and the world's facts that answer them.

Recognition is a few regular expressions, on purpose: the agent is tested on asking clear questions, and an
NPC that understood everything would hide the agent's mistakes. Only messages with a ``?`` are questions, so
answers and acknowledgements (which never contain one) cannot start an endless NPC-to-NPC exchange.

Facts are read through the same app services the agent uses, as the NPC's Actor: an NPC knows what its
tools show it. A wrong fact is plausible by construction (another real status, another real coworker, a
nearby time, the opposite yes/no), so an agent that trusts one unverified answer can be caught out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np

from mcp_tools.base import ToolContext
from mcp_tools.calendar import service as calendar
from mcp_tools.errors import AppError
from mcp_tools.tickets import service as tickets
from worlds.rawsql import Sql
from worlds.workflow import STATUSES

KEY = re.compile(r"\b([A-Z][A-Z0-9]{1,9}-\d+)\b")
_OWNER = re.compile(r"\bwho\b.*\b(owns?|owning|assigned|assignee|working on|has|responsible)\b", re.I | re.S)
_STATUS = re.compile(r"\b(status|state|progress|how is|how's|where are we)\b", re.I)
_AVAIL = re.compile(r"\bwhen\b.*\b(free|available|have time)\b|\bavailability\b|\bfree slot", re.I | re.S)
_AGREE = re.compile(
    r"\b(ok with|okay with|fine with|good with|can you make|could you make|works? for you|are you free at|"
    r"would .+ work|does .+ work)\b",
    re.I | re.S,
)
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})")
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b", re.I)
INTENTS: tuple[str, ...] = ("availability", "agreement", "status", "owner", "question", "statement")


@dataclass(frozen=True)
class Intent:
    """What a message asks: ``kind`` from ``INTENTS``, the ticket key or the proposed time if any."""

    kind: str
    key: str | None = None
    when: datetime | None = None


def _time(text: str, zone: str, sent: datetime) -> datetime | None:
    """A proposed time: ISO with offset, or ``14:30`` / ``3pm`` on the send day (``tomorrow``: the next day)."""
    iso = _ISO.search(text)
    if iso:
        return datetime.fromisoformat(iso.group(0).replace("Z", "+00:00"))
    for m in _CLOCK.finditer(text):
        hour, minute, half = int(m.group(1)), int(m.group(2) or 0), (m.group(3) or "").lower()
        if not m.group(2) and not half:
            continue  # a bare number is not a time ("ENG-12", "2 things")
        hour = hour % 12 + (12 if half == "pm" else 0) if half else hour
        if hour > 23 or minute > 59:
            continue
        local = sent.astimezone(ZoneInfo(zone))
        if re.search(r"\btomorrow\b", text, re.I):
            local += timedelta(days=1)
        return local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return None


def recognise(text: str, zone: str, sent: datetime) -> Intent:
    """The intent of ``text`` sent at ``sent``, reading clock times in the recipient's zone ``zone``."""
    if "?" not in text:
        return Intent("statement")
    key_m = KEY.search(text)
    key = key_m.group(1) if key_m else None
    if key and _OWNER.search(text):
        return Intent("owner", key)
    if key and _STATUS.search(text):
        return Intent("status", key)
    if _AGREE.search(text):
        when = _time(text, zone, sent)
        if when is not None:
            return Intent("agreement", when=when)
    if _AVAIL.search(text):
        return Intent("availability")
    return Intent("question", key)


@dataclass(frozen=True)
class Fact:
    """An answered fact: what is true, what the NPC said, and whether they match."""

    intent: str
    subject: str
    truth: str
    said: str

    @property
    def correct(self) -> bool:
        """Whether the NPC told the truth."""
        return self.truth == self.said


def truth(ctx: ToolContext, intent: Intent) -> str | None:
    """The true answer to ``intent`` as the NPC's tools show it, or None if it cannot be known."""
    try:
        if intent.kind in ("status", "owner") and intent.key:
            t = tickets.get(ctx, intent.key)
            return str(t["status"]) if intent.kind == "status" else str(t["assignee"] or "nobody")
        now = ctx.clock.now()
        if intent.kind == "availability":
            slots = calendar.find_free_slots(
                ctx, "", 30, now.isoformat(), (now + timedelta(days=7)).isoformat(), 30, 1
            )["slots"]
            return str(slots[0]["start"]) if slots else "none"
        if intent.kind == "agreement" and intent.when is not None:
            when = intent.when
            if when < now:
                return "no"
            slots = calendar.find_free_slots(
                ctx, "", 30, when.isoformat(), (when + timedelta(minutes=30)).isoformat(), 5, 1
            )["slots"]
            ok = bool(slots) and datetime.fromisoformat(slots[0]["start"]) == when
            return "yes" if ok else "no"
    except AppError:
        return None
    return None


def wrong(ctx: ToolContext, intent: Intent, true: str, rng: np.random.Generator) -> str:
    """A plausible answer that is not ``true``: another status, coworker, nearby time, or the opposite."""
    if intent.kind == "status":
        others = [s for s in STATUSES if s != true]
        return others[int(rng.integers(len(others)))]
    if intent.kind == "owner":
        names = Sql.of(ctx.session).column(
            "SELECT username FROM employees WHERE active = ? AND username != ? ORDER BY id LIMIT 50", (True, true)
        )
        return names[int(rng.integers(len(names)))] if names else "nobody"
    if intent.kind == "agreement":
        return "no" if true == "yes" else "yes"
    if intent.kind == "availability" and true != "none":
        shift = timedelta(minutes=int(rng.choice([-90, -60, 60, 90, 120, 1440])))
        return (datetime.fromisoformat(true) + shift).isoformat()
    return "unknown"

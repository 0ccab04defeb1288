"""Working hours of an NPC: the shared ``worlds.hours.WorkHours`` (the history generator places actions by it too).

Why a re-export: NPC code and its callers import ``npcs.hours``; the class moved down into ``worlds`` so the
world generator can use it without importing upwards (layers go worlds -> mcp_tools -> npcs).
"""

from __future__ import annotations

from worlds.hours import WorkHours

__all__ = ["WorkHours"]

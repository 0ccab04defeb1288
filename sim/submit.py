"""The ``submit`` tool: the agent's way to say it is done (handled by the episode, not by an app)."""

from __future__ import annotations

from typing import Any

SUBMIT_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit",
        "description": "Finish the task. Call this once, when everything the task asks for is done.",
        "parameters": {
            "type": "object",
            "properties": {"summary": {"type": "string", "description": "One or two sentences on what you did."}},
            "required": [],
        },
    },
}

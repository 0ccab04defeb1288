"""The episode's own tools (handled by the episode, not by an app): ``submit`` ends it, ``wait`` lets time pass."""

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

MAX_WAIT_MINUTES = 480

WAIT_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "wait",
        "description": (
            "Let simulated time pass without acting, e.g. while coworkers reply. Coworkers' turns that fall due"
            " run meanwhile; read your messages afterwards."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "minutes": {"type": "integer", "description": f"How long to wait, 1-{MAX_WAIT_MINUTES} minutes."}
            },
            "required": ["minutes"],
        },
    },
}

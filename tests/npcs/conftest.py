"""Fixtures for the NPC tests; helpers live in npckit so test modules can import them."""

from npckit import tinyworld

__all__ = ["tinyworld"]

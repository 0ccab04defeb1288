"""Versions recorded in every world.

``SCHEMA_VERSION`` changes whenever a table or column changes; ``GENERATOR_VERSION`` changes whenever the same
spec would generate different content. Both are part of the base-world cache key, and a world written by a
newer version than this code knows is refused on open rather than misread.
"""

from __future__ import annotations

SCHEMA_VERSION = 2
GENERATOR_VERSION = 1

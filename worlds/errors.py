"""The one error root of the worlds layer.

Callers (the CLI, the episode engine) catch ``WorldError`` and print its message; the message always names
what was expected and what was found, so a one-line error is enough for a user to fix the input.

Tree::

    WorldError
    ├── SpecError              a WorldSpec value is out of range or unknown (bad size, unknown app)
    ├── StoreError             the world store could not do what was asked
    │   ├── BadDatabaseURL     the --db value is not a URL we can open
    │   ├── WorldNotFound      no world at that path or URL
    │   ├── CorruptWorld       the file is not a world, is half-built, or fails to read
    │   ├── IncompatibleWorld  the world was written by a newer schema or generator version
    │   └── SnapshotError      a snapshot is missing, foreign to this world, or unreadable
    └── LLMError               llm_error: a model call gave no completion (``worlds.llm``)
        ├── LLMMiss            llm_miss: not recorded, and no endpoint may be called
        └── LLMUnavailable     llm_unavailable: the endpoint failed or answered nonsense
"""

from __future__ import annotations


class WorldError(Exception):
    """Root of every error the worlds layer raises on purpose."""


class SpecError(WorldError, ValueError):
    """A WorldSpec field is invalid; the message names the field and the accepted range."""


class StoreError(WorldError):
    """The world store failed to create, open, fork, snapshot or restore a world."""


class BadDatabaseURL(StoreError):
    """A database URL could not be parsed or names an unsupported backend."""


class WorldNotFound(StoreError):
    """Nothing exists at the given path or URL."""


class CorruptWorld(StoreError):
    """The target exists but is not a complete, readable companysim world."""


class IncompatibleWorld(StoreError):
    """The world records a schema or generator version this code does not know."""


class SnapshotError(StoreError):
    """A snapshot cannot be restored into this world."""


class LLMError(WorldError):
    """A model call could not give a completion; ``code`` is stable, the message says what to do."""

    code = "llm_error"


class LLMMiss(LLMError):
    """No recorded completion for this request, and no endpoint may be called (replay-only or none given)."""

    code = "llm_miss"


class LLMUnavailable(LLMError):
    """The endpoint refused or failed the call (network, HTTP status, malformed answer)."""

    code = "llm_unavailable"

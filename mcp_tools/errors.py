"""The one error root of the apps; each error carries a stable ``code`` the agent and graders can rely on.

Tree::

    AppError                   code
    ├── InvalidArgument        invalid_argument   a value is missing, of the wrong type, too long, not allowed
    │   └── UnknownSandbox     invalid_argument   no code sandbox backend of that name
    ├── NotFound               not_found          no such ticket, channel, post, person, ...
    ├── Forbidden              forbidden          the actor's roles or memberships do not allow it
    ├── Conflict               conflict           the state does not allow it (duplicate reaction, ...)
    │   └── IllegalTransition  illegal_transition a status change the workflow refuses
    ├── UnknownTool            unknown_tool       no tool of that name
    ├── Unavailable            unavailable        no episode context (the server was called outside one)
    └── SandboxUnavailable     unavailable        no working sandbox: code-running tools are disabled
"""

from __future__ import annotations


class AppError(Exception):
    """An expected failure of a tool call; ``str(err)`` says what was expected and what was found."""

    code = "app_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(AppError):
    """A bad argument value."""

    code = "invalid_argument"


class NotFound(AppError):
    """The named object does not exist (or is invisible to the actor)."""

    code = "not_found"


class Forbidden(AppError):
    """The actor may not do this."""

    code = "forbidden"


class Conflict(AppError):
    """The current state does not allow this."""

    code = "conflict"


class IllegalTransition(Conflict):
    """The ticket workflow refuses this status change."""

    code = "illegal_transition"


class UnknownTool(AppError):
    """No tool has that name."""

    code = "unknown_tool"


class Unavailable(AppError):
    """No episode context is active."""

    code = "unavailable"


class SandboxUnavailable(AppError):
    """The code sandbox cannot run here (no bubblewrap, user namespaces disabled, ...).

    Code is never run unsandboxed as a fallback: refusing is the only safe answer when isolation is missing.
    """

    code = "unavailable"


class UnknownSandbox(InvalidArgument):
    """No sandbox backend is registered under the requested name."""

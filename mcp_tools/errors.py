"""The one error root of the apps; each error carries a stable ``code`` the agent and graders can rely on.

Tree::

    AppError                   code
    ├── InvalidArgument        invalid_argument   a value is missing, of the wrong type, too long, not allowed
    │   ├── UnknownSandbox     invalid_argument   no code sandbox backend of that name
    │   ├── InvalidRef         invalid_ref        a git ref that is malformed or reads as an option
    │   ├── InvalidPath        invalid_path       a path that is absolute, escapes its root or crosses a link
    │   ├── BinaryFile         binary_file        a binary (non-UTF-8) file asked for as text
    │   ├── TooLarge           too_large          content over the tool's size limit
    │   ├── InvalidCell        invalid_cell       a malformed or out-of-bounds cell, range, sheet or name
    │   ├── InvalidFormula     invalid_formula    a formula that does not parse, is unsupported or circular
    │   └── UnsupportedFormat  unsupported_format a file format other than ODT, DOCX, ODS, XLSX
    ├── NotFound               not_found          no such ticket, channel, post, person, ...
    ├── Forbidden              forbidden          the actor's roles or memberships do not allow it
    ├── Conflict               conflict           the state does not allow it (duplicate reaction, ...)
    │   ├── IllegalTransition  illegal_transition a status change the workflow refuses
    │   └── MergeConflict      merge_conflict     branches that cannot merge without resolving conflicts
    ├── UnknownTool            unknown_tool       no tool of that name
    ├── Unavailable            unavailable        no episode context (the server was called outside one)
    ├── SandboxUnavailable     unavailable        no working sandbox: code-running tools are disabled
    ├── GitFailed              git_error          git refused for a reason the tool did not foresee
    └── CorruptFile            corrupt_file       a stored document's bytes cannot be read as its format
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


class InvalidRef(InvalidArgument):
    """A git ref, branch name or revision that is malformed or could be read as an option."""

    code = "invalid_ref"


class InvalidPath(InvalidArgument):
    """A repository path that is absolute, escapes the repository, names ``.git`` or crosses a symlink."""

    code = "invalid_path"


class BinaryFile(InvalidArgument):
    """The file is binary (or not UTF-8), so it cannot be shown or edited as text."""

    code = "binary_file"


class TooLarge(InvalidArgument):
    """The content or file is over the size limit of the tool."""

    code = "too_large"


class MergeConflict(Conflict):
    """The branches cannot be merged without resolving conflicts."""

    code = "merge_conflict"


class GitFailed(AppError):
    """git refused an operation for a reason the tool did not foresee (the message says what git said)."""

    code = "git_error"


class InvalidCell(InvalidArgument):
    """A cell, range, sheet or defined-name reference that is malformed, out of bounds or does not exist."""

    code = "invalid_cell"


class InvalidFormula(InvalidArgument):
    """A formula that does not parse, calls an unsupported function, names a missing sheet or name, or is circular."""

    code = "invalid_formula"


class UnsupportedFormat(InvalidArgument):
    """A file format (or extension) the documents apps do not read or write; they do ODT, DOCX, ODS and XLSX."""

    code = "unsupported_format"


class CorruptFile(AppError):
    """A stored document's bytes cannot be read as the format it claims (or fail their checksum)."""

    code = "corrupt_file"

"""The one error root of the graders layer.

Grading itself never raises for a bad *episode*: a check function that fails or crashes gives that check a
score of 0 with the exception in its evidence. These errors are for bad *inputs* (rubric data, registrations,
a grading context that does not describe a final state) and are raised as early as possible: a rubric is
validated when it is built or loaded, never halfway through an episode. Messages name the check id and the
field, and say what was expected and what was found.

Tree::

    GraderError
    ├── RubricError          rubric data is invalid (bad params, duplicate check id, weight <= 0, bad YAML)
    │   ├── UnknownCheck     a check names a function that is not registered
    │   └── RubricNotFound   the rubric store has no such id or version
    ├── DuplicateCheckFn     two check functions were registered under one name
    ├── JudgeRefused         the judge model is the policy model it would grade
    └── ContextError         the grading context cannot be graded (unflushed changes in the session)
"""

from __future__ import annotations


class GraderError(Exception):
    """Root of every error the graders layer raises on purpose."""


class RubricError(GraderError):
    """Invalid rubric data; the message names the rubric or check id and the offending field.

    Deliberately not a ``ValueError``: pydantic would wrap a ``ValueError`` raised in a validator into a
    ``ValidationError`` and the precise type would be lost to callers.
    """


class UnknownCheck(RubricError):
    """A check's ``fn`` is not a registered check function."""


class RubricNotFound(RubricError):
    """The rubric store holds no rubric of that id, or not that version; the message lists what it holds."""


class DuplicateCheckFn(GraderError):
    """A check function name was registered twice (names are global, like gymnasium env ids)."""


class JudgeRefused(GraderError):
    """A judge was configured with the same model as the policy it grades (a model must not grade itself)."""


class ContextError(GraderError):
    """The grading context does not describe a final state (for example the session has unflushed edits)."""

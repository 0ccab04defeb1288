"""graders: rubrics as data, registered check functions over final state, change log and trace; Score.

The contract lives in ``graders.base`` (Rubric, Check, Score, GradingContext, ``@check_fn``, ``grade``);
``graders.rubric`` loads rubrics from YAML/JSON. The built-in check library is imported on demand, module by
module, when a rubric first names one of its functions (``registry.LIBRARY``)
(``checks``: tickets, rows, change log; ``checks_comms``: chat, mail, calendar; ``checks_code``: merge requests,
pipelines and hidden test cases; ``checks_meetings``: a meeting arranged with coworkers, its agreement and
announcement; ``checks_trace``: tool calls; ``judge``: LLM-judge checks; ``buffer``: the log-only checks the
rubric buffer proposes),
so a rubric naming them validates wherever ``graders`` is imported. Mechanism sits beside the contract:
``registry`` (``@check_fn`` and param models), ``changes`` (the episode's change log as ``ChangeRow``s),
``checks_common`` (param types and memoised lookups shared by check modules), ``errors`` (the error tree).
"""

from graders.base import (
    ChangeRow,
    Check,
    CheckOutcome,
    CheckResult,
    GradingContext,
    Rubric,
    Score,
    check_fn,
    grade,
    read_changes,
    registered_check_fns,
)
from graders.errors import ContextError, DuplicateCheckFn, GraderError, RubricError, UnknownCheck
from graders.rubric import dump_rubric, load_rubric

__all__ = [
    "ChangeRow",
    "Check",
    "CheckOutcome",
    "CheckResult",
    "ContextError",
    "DuplicateCheckFn",
    "GraderError",
    "GradingContext",
    "Rubric",
    "RubricError",
    "Score",
    "UnknownCheck",
    "check_fn",
    "dump_rubric",
    "grade",
    "load_rubric",
    "read_changes",
    "registered_check_fns",
]

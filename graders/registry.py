"""The check-function registry: ``@check_fn(name)`` turns a typed function into a rubric building block.

A registered function has the shape ``fn(ctx: GradingContext, **params) -> CheckOutcome | (bool | float,
str)``. Its keyword parameters, with their type hints and defaults, become a pydantic model, so a rubric's
JSON params are validated (types, unknown and missing names, cross-param rules) when the rubric is built,
not when an episode is graded. Names are global and registering one twice raises, as for gymnasium ids.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import typing
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from graders.errors import DuplicateCheckFn, RubricError, UnknownCheck


class Later:
    """An ``on_step`` answer for a check whose score a step cannot have moved but whose evidence it did.

    Why: a failing check's evidence often lists what the episode did (where posts went, each mail sent), so
    every such step would rebuild the text of every failing check although only the score reaches the step's
    value; ``graders.progress`` runs such a check again only when its results are asked for, as it does a
    trace check no new step could move.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "LATER"


LATER = Later()
"""The one ``Later``."""

Kind = Literal["state", "trace", "judge"]
_FROZEN = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True, kw_only=True)
class CheckOutcome:
    """What a check function returns: a score in [0, 1], evidence, and JSON details for tooling."""

    score: float
    evidence: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:  # also refuses NaN
            raise ValueError(f"check score must be in [0, 1], got {self.score}")

    @classmethod
    def of(cls, passed: bool, evidence: str, **details: Any) -> CheckOutcome:
        """A pass/fail outcome."""
        return cls(score=1.0 if passed else 0.0, evidence=evidence, details=details)


CheckReturn = CheckOutcome | tuple[bool | float, str]


QuietRows = (
    tuple[Mapping[str, Container[tuple[Any, ...]]], int | None]
    | tuple[
        Mapping[str, Container[tuple[Any, ...]]],
        int | None,
        Mapping[tuple[str, tuple[Any, ...]], tuple[frozenset[str], ...]],
    ]
)
"""What a ``quiet`` hook answers: (shapes by table, actor) or (shapes by table, actor, update column sets by row)."""


@dataclass(frozen=True, kw_only=True)
class CheckFnSpec:
    """A registered check function; the params model is built from its signature on first use.

    Why lazily: building a pydantic model per function costs a few milliseconds each, and an episode uses the
    handful of functions its rubric names, not the whole library (process start-up stays short).
    """

    name: str
    kind: Kind
    fn: Callable[..., CheckReturn]
    validate: Callable[[dict[str, Any]], None] | None = None
    reads: frozenset[str] | Callable[..., tuple[str, ...]] | None = None
    """The tables whose changes can change the verdict (None: any change may), or ``reads(**params)`` giving
    them for one check's params; what ``graders.progress`` uses to skip a check on a step that wrote none."""
    rows: Callable[..., set[tuple[str, tuple[Any, ...]]] | None] | None = None
    """``rows(ctx, **params)``: the exact rows the verdict depends on, as (table, primary key), looked up once
    per episode; None from it (or no hook) falls back to ``reads``."""
    touches: Callable[..., bool] | None = None
    """``touches(ctx, row, **params)``: whether one change-log row of a ``reads`` table may change the verdict,
    asked on the state after the step (e.g. a case check ignores a ticket filed for another reference); without
    it every change to a ``reads`` table re-runs the check. It must never say False for a row that matters.
    For a trace check with ``on_changes``, ``touches(ctx, step, **params)`` says whether one new step record may
    move the score: after steps none of which may, the check is not asked until ``results`` is (its evidence,
    a count of steps, is all that moved), so a step costs a hook call instead of a new verdict."""
    columns: Callable[..., frozenset[str]] | None = None
    """``columns(**params)``: the columns of the ``rows`` the verdict reads; an update of one of those rows that
    changed none of them cannot change the verdict, so ``graders.progress`` does not re-run the check for it
    (a check on a ticket's priority ignores its reassignment)."""
    on_rows: Callable[..., tuple[float, str, Mapping[str, Any]] | None] | None = None
    """``on_rows(ctx, rows, **params)``: the verdict after a step whose only changes to the check's ``rows``
    are ``rows`` (their change-log after-images), decided without a query, as ``(score, evidence, details)``
    (details plain JSON: what the function's CheckOutcome would carry), or None when the rows cannot tell (the
    check is re-run). It must equal the function's outcome exactly; the tests compare them."""
    on_changes: Callable[..., tuple[float, str, Mapping[str, Any]] | Later | None] | None = None
    """``on_changes(ctx, rows, **params)``: for a check that declares ``reads`` (no ``rows``), the verdict after
    a step whose changes to those tables are ``rows`` (the ``touches`` hook, if any, said one matters), decided
    from the rows and what ``ctx.lasting`` keeps, as ``on_rows`` does; None re-runs the check. A check that
    declares neither ``reads`` nor ``rows`` may have one too: it then sees every row of the step (and its
    ``touches`` hook, if any, every row), as ``no_collateral_changes`` does, which judges only the new rows; and
    so may a trace check, asked after every step instead of re-running (``no_tool_errors`` reads the new steps).
    Asked with rows it may answer ``LATER`` as ``on_step`` may (``no_collateral_changes`` after rows the rules
    admit: only the count in its evidence moved); asked with none it must give the verdict."""
    holds: Callable[..., tuple[Any, ...] | None] | None = None
    """``holds(ctx, **params)``: for a ``reads`` check with ``on_changes``, asked right after the evaluator gave
    a verdict (or ``LATER``): ``(rows, tables, columns)`` such that the verdict stands until a step changes one
    of ``rows`` ((table, primary key)), inserts into one of ``tables`` or updates one of ``columns`` ((table,
    column)), so ``graders.progress`` does not ask the check at all until then; an item of ``tables`` may be
    ``(table, columns, values)`` instead: only an insert whose ``columns`` hold ``values`` (by ``==``, as a dict
    key is found; hashable values) moves the verdict, so no other insert into ``table`` asks the check. None:
    ask it after every change to its tables. It must never let a verdict stand that a change could move. A
    fourth item, if given, names tables whose every change moves the evidence but not the score (a failing
    ``row_exists`` counts the changed rows): the held check is then asked again, with no rows, when the results
    are. Such a check's evaluator is also asked once when progress starts, with no rows (its one-off reads done
    in the step that grades every check), and held from then if its verdict is the grade's."""
    quiet: Callable[..., QuietRows | None] | None = None
    """``quiet(ctx, **params)``: for a check with ``on_changes`` that reads every table, asked once when progress
    starts: ``(shapes, actor)`` such that a row by ``actor`` (None: anyone) whose shape is in ``shapes[table]``
    moves only the check's evidence: (table, op) for an insert or delete, (table, "update", *changed columns)
    for an update. ``shapes`` may grow as the episode goes. After a step whose every row is such a row
    ``graders.progress`` does not ask the evaluator (which reads the log from where it stopped, so it folds the
    rows in when next asked) and asks it again for the results. An optional third part, ``rows``, maps a
    (table, key) to the column sets an update of that row may change and move only the evidence (a row a keyed
    rule names): an update by ``actor`` whose changed columns fit one of them is such a row too, and a row it
    names is such a row only so (its delete or rename is asked at once). None: ask it after every step, as
    without."""
    on_step: Callable[..., Mapping[int, tuple[float, str, Mapping[str, Any]] | Later | float | None]] | None = None
    """``on_step(ctx, rows, params)``: for a ``reads`` function (no ``rows``), every check of the rubric that uses
    it at once: ``params`` lists their params (the same list, in rubric order, on every step) and ``rows`` are
    the step's changes to the function's tables. It returns, by position in ``params``, the new verdict of each
    check the rows may change (as ``on_changes`` does; None re-runs that check); a check it leaves out stands.
    One call a step instead of a ``touches`` and an ``on_changes`` call per check, which is what a rubric with
    a score per comment of a review needs. It must never leave out a check whose verdict moved. ``LATER`` for a
    check says its score stands but its evidence moved: it is run again only when the results are asked for; a
    float is the check's new score alone, its evidence built (the check run again) only when they are."""
    moved_by: frozenset[str] | None = None
    """For a trace check with ``on_changes`` whose verdict reads only the last step record: the action names of
    the steps that may give it another verdict than every other step gives (``submit_explains``: a submit). After
    a step named otherwise that follows one named otherwise, ``graders.progress`` does not ask it at all (its
    verdict, the one such steps all give, stands), so a read step of an impossible variant costs no call."""

    @functools.cached_property
    def params(self) -> type[BaseModel]:
        """The pydantic model of the function's keyword parameters (types and defaults from its signature)."""
        hints = typing.get_type_hints(self.fn, include_extras=True)
        fields: dict[str, Any] = {}
        for p in list(inspect.signature(self.fn).parameters.values())[1:]:
            fields[p.name] = (hints.get(p.name, Any), ... if p.default is p.empty else p.default)
        return create_model(f"{self.name}.params", __config__=_FROZEN, **fields)

    def bind(self, params: Mapping[str, Any], *, where: str) -> dict[str, Any]:
        """Validate JSON params into keyword arguments; raises RubricError naming ``where`` and the param."""
        try:
            kwargs = dict(self.params.model_validate(dict(params)))
            if self.validate is not None:
                self.validate(kwargs)
        except ValidationError as exc:
            raise RubricError(f"{where}: {_describe(exc, self.params)}") from None
        except ValueError as exc:
            raise RubricError(f"{where}: {exc}") from None
        return kwargs


_REGISTRY: dict[str, CheckFnSpec] = {}
LIBRARY: tuple[str, ...] = (
    "graders.checks",
    "graders.checks_comms",
    "graders.checks_trace",
    "graders.checks_cases",
    "graders.checks_meetings",
    "graders.checks_items",
    "graders.checks_proposals",
    "graders.checks_code",
    "graders.checks_repro",
    "graders.checks_docs",
    "graders.checks_sheets",
    "graders.judge",
    "graders.buffer",
)
"""The built-in check modules, imported when a rubric first names a function not registered yet (in this order,
until it is found), so an episode loads the checks its rubric uses rather than the whole library."""
_loaded: set[str] = set()


def _load_library(until: str | None = None) -> None:
    """Import library modules not imported yet, stopping once ``until`` is registered (None: all of them)."""
    for module in LIBRARY:
        if until is not None and until in _REGISTRY:
            return
        if module not in _loaded:
            _loaded.add(module)
            importlib.import_module(module)


_Fn = typing.TypeVar("_Fn", bound=Callable[..., CheckReturn])


def check_fn(
    name: str,
    *,
    kind: Kind = "state",
    validate: Callable[[dict[str, Any]], None] | None = None,
    reads: tuple[str, ...] | Callable[..., tuple[str, ...]] | None = None,
    rows: Callable[..., set[tuple[str, tuple[Any, ...]]] | None] | None = None,
    touches: Callable[..., bool] | None = None,
    columns: Callable[..., frozenset[str]] | None = None,
    on_rows: Callable[..., tuple[float, str, Mapping[str, Any]] | None] | None = None,
    on_changes: Callable[..., tuple[float, str, Mapping[str, Any]] | Later | None] | None = None,
    holds: Callable[..., tuple[Any, ...] | None] | None = None,
    quiet: Callable[..., QuietRows | None] | None = None,
    on_step: Callable[..., Mapping[int, tuple[float, str, Mapping[str, Any]] | Later | float | None]] | None = None,
    moved_by: tuple[str, ...] | None = None,
) -> Callable[[_Fn], _Fn]:
    """Register ``fn(ctx, **params)`` under ``name``; params must be typed keyword parameters.

    ``validate`` sees the typed kwargs and raises ``ValueError`` for cross-param rules (min <= max). ``reads``
    and ``rows`` say what the verdict depends on, and ``touches`` which changes to those tables matter, so the
    per-step progress score re-runs a check only after a step that changed it (see ``CheckFnSpec``); a state
    check that declares neither is re-run after every step that changed anything. ``columns`` narrows ``rows``
    to the columns read, and ``on_rows`` (``on_changes`` for a ``reads`` check) decides the verdict from the
    changed rows alone when it can, ``holds`` what must change before its verdict can, ``quiet`` which rows
    move only its evidence, and ``on_step`` decides
    for all of a rubric's checks of the function at once; ``moved_by`` names the steps that can move a trace
    check that reads only the last step.
    """

    def register(fn: _Fn) -> _Fn:
        if name in _REGISTRY:
            raise DuplicateCheckFn(f"check function {name!r} is already registered by {_REGISTRY[name].fn.__module__}")
        for p in list(inspect.signature(fn).parameters.values())[1:]:
            if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                raise TypeError(f"check function {name!r}: parameter {p.name!r} must be a named keyword parameter")
        tables = frozenset(reads) if isinstance(reads, tuple) else reads
        _REGISTRY[name] = CheckFnSpec(
            name=name,
            kind=kind,
            fn=fn,
            validate=validate,
            reads=tables,
            rows=rows,
            touches=touches,
            columns=columns,
            on_rows=on_rows,
            on_changes=on_changes,
            holds=holds,
            quiet=quiet,
            on_step=on_step,
            moved_by=frozenset(moved_by) if moved_by is not None else None,
        )
        return fn

    return register


def check_fn_spec(name: str, *, where: str = "") -> CheckFnSpec:
    """The registered function ``name``; raises UnknownCheck listing what is registered."""
    spec = find_check_fn(name)
    if spec is None:
        prefix = f"{where}: " if where else ""
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownCheck(f"{prefix}field 'fn' is {name!r}, not a registered check function; known: {known}")
    return spec


def find_check_fn(name: str) -> CheckFnSpec | None:
    """The registered function ``name`` (importing library modules until it is found), or None."""
    if name not in _REGISTRY:
        _load_library(until=name)
    return _REGISTRY.get(name)


def registered_check_fns() -> tuple[str, ...]:
    """Names of every registered check function (the whole library loaded), sorted."""
    _load_library()
    return tuple(sorted(_REGISTRY))


def _describe(exc: ValidationError, model: type[BaseModel]) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        if err["type"] == "missing":
            parts.append(f"missing param {loc!r}")
        elif err["type"] == "extra_forbidden":
            parts.append(f"unknown param {loc!r} (accepted: {', '.join(model.model_fields)})")
        else:
            parts.append(f"param {loc!r}: {err['msg']} (got {err['input']!r})")
    return "; ".join(parts)

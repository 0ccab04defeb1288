"""The grader contract: a rubric is data, a check is a registered function, a grade is a Score with evidence.

A ``Rubric`` (frozen, versioned, fingerprinted) lists ``Check``s. Each check names a function registered with
``@check_fn(name)`` and the JSON params it is called with. Params are validated against the function's typed
signature when the rubric is built or loaded, so a typo fails at load time with a ``RubricError`` naming the
check and the param, never halfway through a training run.

``grade(rubric, ctx)`` calls every check on a ``GradingContext`` (the final state's session, this episode's
change log, the tool-call trace, the agent's employee id, the scenario's hidden params) and returns a
``Score``:

* each check returns a ``CheckOutcome`` (score in [0, 1], partial credit allowed, plus evidence: what was
  found, stated so a human can audit a reward without rerunning the episode) or a ``(bool | float, str)``;
* ``value = sum(weight * score) / sum(weight)`` over the checks that are not ``must``; ``must`` checks are
  pure gates: one scoring below 1 forces the value to 0 (a task done "mostly" while breaking a hard
  requirement earns nothing), and passing them adds nothing, so doing nothing can score exactly 0. A rubric
  made only of must checks scores 1 when all pass;
* a check that raises scores 0 with evidence ``check error: <Type>: <message>``; grading never crashes on
  an episode, because one buggy check must not lose a whole rollout batch;
* a ``judge`` check that could not be judged (``graders.judge``) is listed in ``Score.unjudged`` and left out
  of the value and of gating: an unknown verdict is neither a pass nor a fail.

Why graders read the change log: state checks look up the few rows the task is about (indexed lookups) or
the rows this episode changed (O(rows changed)); they never scan or hash the whole world, so grading stays
cheap at any world size. The grader treats the world as read-only: on SQLite ``grade`` switches the
connection to ``PRAGMA query_only`` for its duration, so an accidental write fails loudly instead of
changing the reward the next replay computes. Rubric revisions are new objects (``Rubric.evolve``) with
``provenance``; a trace names the rubric by id, version and fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic import model_validator as _model_validator
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from graders.changes import ChangeRow, read_changes
from graders.errors import ContextError, RubricError
from graders.registry import (
    CheckOutcome,
    CheckReturn,
    Kind,
    check_fn,
    check_fn_spec,
    find_check_fn,
    registered_check_fns,
)
from worlds.schema import ChangeLog

__all__ = [
    "ChangeRow",
    "Check",
    "CheckOutcome",
    "CheckResult",
    "CheckReturn",
    "GradingContext",
    "Kind",
    "Rubric",
    "Score",
    "apply_needs",
    "check_fn",
    "combine",
    "error_evidence",
    "grade",
    "outcome_result",
    "read_changes",
    "read_only",
    "registered_check_fns",
    "run_check",
    "run_outcome",
]
_FROZEN = ConfigDict(frozen=True, extra="forbid")
_T = TypeVar("_T")


class Check(BaseModel):
    """One named requirement: ``fn(ctx, **params)`` scored in [0, 1], weighted; ``kind`` defaults to fn's."""

    model_config = _FROZEN
    id: str = Field(min_length=1, max_length=100, description="Unique within the rubric; shown in evidence.")
    description: str = Field(min_length=1, description="The requirement in words, for humans auditing scores.")
    weight: float = Field(default=1.0, allow_inf_nan=False, description="> 0; relative share of the reward.")
    kind: Kind = Field(
        description="'state' reads the final world and change log; 'trace' the tool calls; 'judge' asks a judge model."
    )
    fn: str = Field(description="Name of a function registered with @check_fn.")
    params: dict[str, JsonValue] = Field(default_factory=dict, description="Keyword args for fn, as JSON.")
    must: bool = Field(default=False, description="A must check scoring below 1 gates the reward to 0.")
    needs: tuple[str, ...] = Field(
        default=(),
        description="Ids of checks that must pass for this one to count: announcing a meeting nobody agreed to, "
        "or booking its room, earns nothing. A check whose needs fail scores 0 and says which.",
    )
    _kwargs: dict[str, Any] = PrivateAttr(default_factory=dict)  # params validated by fn's signature

    # Build variants with Check(...)/model_validate or Rubric.evolve: model_copy(update=...) skips validation.

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``needs`` out when empty, so rubrics that use none keep their fingerprints and stored bytes."""
        data: dict[str, Any] = handler(self)
        if not data.get("needs"):
            data.pop("needs", None)
        return data

    @_model_validator(mode="before")
    @classmethod
    def _default_kind(cls, data: Any) -> Any:
        if isinstance(data, dict) and "kind" not in data:
            spec = find_check_fn(str(data.get("fn", "")))
            return {**data, "kind": spec.kind if spec else "state"}
        return data

    @_model_validator(mode="after")
    def _bind(self) -> Check:
        where = f"check {self.id!r}"
        if self.weight <= 0:
            raise RubricError(f"{where}: field 'weight' must be > 0, got {self.weight}")
        spec = check_fn_spec(self.fn, where=where)
        if spec.kind != self.kind:
            raise RubricError(f"{where}: field 'kind' is {self.kind!r} but fn {self.fn!r} is a {spec.kind} check")
        self._kwargs = spec.bind(self.params, where=f"{where} (fn {self.fn!r})")
        return self


class Rubric(BaseModel):
    """A versioned, immutable set of checks; a change is a new version (``evolve``), never an edit."""

    model_config = _FROZEN
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="e.g. 'triage-tickets'.")
    version: int = Field(ge=1)
    description: str = Field(min_length=1)
    checks: tuple[Check, ...] = Field(min_length=1)
    provenance: str | None = Field(default=None, description="What changed from the previous version and why.")

    @_model_validator(mode="after")
    def _unique_ids(self) -> Rubric:
        seen: set[str] = set()
        for check in self.checks:
            if check.id in seen:
                raise RubricError(f"rubric {self.id!r} v{self.version}: duplicate check id {check.id!r} (field 'id')")
            seen.add(check.id)
        for check in self.checks:
            unknown = [n for n in check.needs if n not in seen or n == check.id]
            if unknown:
                raise RubricError(
                    f"rubric {self.id!r} v{self.version}: check {check.id!r} field 'needs' names {unknown[0]!r}, "
                    "not another check of this rubric"
                )
        return self

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the canonical JSON (sorted keys): names the exact rubric a trace was graded with."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def evolve(self, *, provenance: str, **changes: Any) -> Rubric:
        """The next version with ``changes`` applied (e.g. ``checks=...``); this object stays as it was."""
        data = {
            **self.model_dump(mode="json"),
            **changes,
            "version": self.version + 1,
            "provenance": provenance,
        }
        return Rubric.model_validate(data)


class CheckResult(BaseModel):
    """The verdict on one check: ``passed`` means ``score == 1``; ``evidence`` says what was found."""

    model_config = _FROZEN
    id: str
    kind: Kind
    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    weight: float
    must: bool
    evidence: str
    details: dict[str, JsonValue] = Field(default_factory=dict)


class Score(BaseModel):
    """The reward of one episode with the verdict of every check and the rubric it came from."""

    model_config = _FROZEN
    value: float = Field(ge=0.0, le=1.0)
    checks: tuple[CheckResult, ...]
    rubric_id: str
    rubric_version: int
    rubric_fingerprint: str
    gated: bool = Field(description="True when a must check failed and the value was forced to 0.")
    unjudged: tuple[str, ...] = Field(
        default=(), description="Judge checks that could not be judged; left out of the value, never counted 0 or 1."
    )

    def to_json(self) -> dict[str, Any]:
        """The trace's closing record: ``{"type": "score", "value": ..., "checks": [...], ...}``.

        ``unjudged`` appears only when some check was unjudged, so records of rubrics without judge checks keep
        their exact bytes.
        """
        data = self.model_dump(mode="json")
        if not data["unjudged"]:
            del data["unjudged"]
        return {"type": "score", **data}


@dataclass(kw_only=True)
class GradingContext:
    """What a check may read. The session holds the FINAL state and must be treated as read-only.

    ``changes`` are this episode's change-log rows only (setup excluded), normalised to ``ChangeRow`` in
    ``log``; ``trace`` are the step records ``{"type": "step", "index", "action": {"name", "arguments"},
    "result", "error": {"code", "message"} | None, "clock"}``; ``params`` are the scenario's hidden
    expectations. ``memo`` is a per-grade cache helpers may use for repeated lookups (usernames -> ids).
    """

    session: Session
    changes: Sequence[ChangeRow | ChangeLog | Mapping[str, Any]] = ()
    trace: Sequence[Mapping[str, Any]] = ()
    actor_id: int
    params: Mapping[str, Any] = field(default_factory=dict)
    workspace: Any = None
    """The episode's git workspace (``mcp_tools.git.workspace.Workspace``) when the task has one."""
    judge: Any = None
    """The judge for ``judge`` checks (``graders.judge.Judge``); None leaves them unjudged."""
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)
    lasting: dict[Any, Any] = field(default_factory=dict, repr=False)
    """Lookups whose answer cannot change during the episode (a logged row's natural key); kept across the
    per-step updates of ``graders.progress``, unlike ``memo``."""
    log: list[ChangeRow] = field(init=False, repr=False)
    """The change log in seq order; only ``extend`` appends to it (a list: a tuple grown by ``+=`` per step is
    copied whole every step of the per-step progress score)."""
    _by_table: dict[str, list[ChangeRow]] = field(init=False, repr=False)
    _kept: dict[Any, Any] = field(init=False, repr=False)
    _kept_by_table: dict[str, set[Any]] = field(init=False, repr=False)
    _steps: list[Mapping[str, Any]] = field(init=False, repr=False)
    _seen: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.log = []
        self._by_table = {}
        self._kept = {}
        self._kept_by_table = {}
        self._steps = []
        self._seen = 0
        self.extend(sorted((ChangeRow.of(c) for c in self.changes), key=lambda r: r.seq))

    def extend(self, rows: Sequence[ChangeRow]) -> dict[str, list[ChangeRow]]:
        """Append change-log rows newer than the log's last (the per-step progress grows one context this way).

        Returns the given rows by table, in order: what ``graders.progress`` reads a step by, filed in the same
        pass that files them into the log's tables.
        """
        self.log += rows
        by_table = self._by_table
        if len(rows) == 1:  # most steps write one row
            row = rows[0]
            found = by_table.get(row.table)
            if found is None:
                by_table[row.table] = [row]
            else:
                found.append(row)
            return {row.table: [row]}
        step: dict[str, list[ChangeRow]] = {}
        for row in rows:
            found = by_table.get(row.table)
            if found is None:
                by_table[row.table] = [row]
            else:
                found.append(row)
            mine = step.get(row.table)
            if mine is None:
                step[row.table] = [row]
            else:
                mine.append(row)
        return step

    @property
    def db(self) -> Connection:
        """The session's connection: checks run prebuilt Core statements on it (5x cheaper than the ORM)."""
        return self.session.connection()

    def changed_rows(self, table: str) -> list[ChangeRow]:
        """This episode's changes to ``table``, in seq order (empty if none)."""
        return self._by_table.get(table, [])

    def kept(self, key: Any, tables: Iterable[str], compute: Callable[[], _T]) -> _T:
        """``compute()``, cached until a change to one of ``tables`` (everything it reads) is folded in.

        Within one grade this is ``memo``; across the per-step updates of ``graders.progress`` the answer
        survives steps that changed none of ``tables`` (``forget``), so a step that sends a mail does not
        re-query the episode's new tickets. ``tables`` must name every table ``compute`` reads.
        """
        if key in self._kept:
            found: _T = self._kept[key]
            return found
        value = self._kept[key] = compute()
        for name in tables:
            self._kept_by_table.setdefault(name, set()).add(key)
        return value

    def forget(self, tables: Iterable[str] | None = None) -> None:
        """Drop ``memo`` and the ``kept`` answers that read one of ``tables`` (None: every kept answer)."""
        self.memo.clear()
        if tables is None:
            self._kept.clear()
            self._kept_by_table.clear()
            return
        for name in tables:
            for key in self._kept_by_table.pop(name, ()):
                self._kept.pop(key, None)

    @property
    def steps(self) -> Sequence[Mapping[str, Any]]:
        """The trace's step records (other record types such as headers are skipped); read it, never change it.

        Kept incrementally: ``trace`` may be the live list of an episode that grows a record per step, and the
        per-step progress score reads this after every step, so only the new records are filtered and appended
        (a list: a tuple grown by ``+=`` is copied whole every step).
        """
        n = len(self.trace)
        if n != self._seen:
            trace = self.trace
            if n == self._seen + 1:  # one record a step: appended without building a list
                record = trace[n - 1]
                if record.get("type", "step") == "step":
                    self._steps.append(record)
            else:
                if n < self._seen:
                    self._steps, self._seen = [], 0
                self._steps += [trace[i] for i in range(self._seen, n) if trace[i].get("type", "step") == "step"]
            self._seen = n
        return self._steps


@contextmanager
def read_only(session: Session) -> Iterator[None]:
    """Refuse writes on the session's connection while inside (SQLite ``query_only``; restored after)."""
    conn = session.connection()
    if conn.dialect.name != "sqlite":
        yield  # other backends: graders simply never write
        return
    was_on = bool(conn.exec_driver_sql("PRAGMA query_only").scalar())
    conn.exec_driver_sql("PRAGMA query_only=ON")
    try:
        yield
    finally:
        if not was_on:
            conn.exec_driver_sql("PRAGMA query_only=OFF")


def grade(rubric: Rubric, ctx: GradingContext) -> Score:
    """Run every check of ``rubric`` on ``ctx`` read-only and combine them into a Score.

    On PostgreSQL each state check runs in a SAVEPOINT, so one failing query cannot abort the transaction
    for the checks after it.

    Raises:
        ContextError: the session holds unflushed edits, so the database is not the final state.
    """
    session = ctx.session
    if session.new or session.deleted or any(session.is_modified(o) for o in session.dirty):
        raise ContextError("the session has unflushed changes; flush it so the database holds the final state")
    savepoints = session.get_bind().dialect.name != "sqlite"  # a failed query aborts a PostgreSQL transaction
    ctx.forget()  # lookups are cached per grade, never across grades of a changing world
    with session.no_autoflush, read_only(session):
        results = apply_needs(rubric.checks, [run_check(check, ctx, savepoints) for check in rubric.checks])
    unjudged = tuple(r.id for r in results if r.details.get("unjudged") is True)
    value, gated = combine(results, unjudged)
    return Score(
        value=value,
        checks=results,
        rubric_id=rubric.id,
        rubric_version=rubric.version,
        rubric_fingerprint=rubric.fingerprint,
        gated=gated,
        unjudged=unjudged,
    )


def apply_needs(checks: Sequence[Check], results: Sequence[CheckResult]) -> tuple[CheckResult, ...]:
    """Zero each check whose ``needs`` did not all pass, saying which (results in the rubric's order)."""
    passed = {r.id for r in results if r.passed}
    out = list(results)
    for i, check in enumerate(checks):
        missing = [n for n in check.needs if n not in passed]
        if missing and out[i].score > 0:
            r = out[i]
            evidence = f"{r.evidence}; counts only once {', '.join(missing)} pass{'es' * (len(missing) == 1)}"
            out[i] = _result(check, 0.0, evidence, dict(r.details))
    return tuple(out)


def combine(results: Sequence[CheckResult], unjudged: Sequence[str] = ()) -> tuple[float, bool]:
    """The reward of a set of verdicts and whether a must check gated it (the rule in the module docstring)."""
    judged = [r for r in results if r.id not in unjudged]
    scored = [r for r in judged if not r.must] or judged
    weight = sum(r.weight for r in scored)
    value = sum(r.weight * r.score for r in scored) / weight if weight else 0.0
    gated = any(r.must and not r.passed for r in judged)
    return (0.0 if gated else min(1.0, value)), gated


def run_check(check: Check, ctx: GradingContext, savepoint: bool) -> CheckResult:
    """One check's verdict; a check that raises scores 0 with the error as its evidence."""
    try:
        fn = check_fn_spec(check.fn).fn
        return outcome_result(check, run_outcome(fn, check._kwargs, ctx, savepoint and check.kind != "trace"))
    except Exception as exc:  # a buggy check must not crash grading; it scores 0 and says why
        return _result(check, 0.0, error_evidence(exc), {})


def run_outcome(
    fn: Callable[..., CheckReturn], kwargs: Mapping[str, Any], ctx: GradingContext, savepoint: bool
) -> CheckOutcome:
    """``fn(ctx, **kwargs)`` as a CheckOutcome; one that raises scores 0 with the error as evidence.

    What ``run_check`` does short of building the ``CheckResult`` (a pydantic model: validating one costs more
    than many checks do), for ``graders.progress``, which builds results only when asked for them.
    """
    try:
        if savepoint:  # a failed query aborts a PostgreSQL transaction: keep it inside a SAVEPOINT
            with ctx.session.begin_nested():
                raw = fn(ctx, **kwargs)
        else:
            raw = fn(ctx, **kwargs)
        return raw if isinstance(raw, CheckOutcome) else CheckOutcome(score=float(raw[0]), evidence=str(raw[1]))
    except Exception as exc:  # a buggy check must not crash grading; it scores 0 and says why
        return CheckOutcome(score=0.0, evidence=error_evidence(exc))


def error_evidence(exc: Exception) -> str:
    """The evidence of a check that raised ``exc``: its type and the first line of its message."""
    message = (str(exc).strip().splitlines() or [""])[0][:300]
    return f"check error: {type(exc).__name__}: {message}"


def outcome_result(check: Check, raw: CheckReturn) -> CheckResult:
    """The verdict of ``check`` from what its function returned; raises if the outcome is not valid."""
    out = raw if isinstance(raw, CheckOutcome) else CheckOutcome(score=float(raw[0]), evidence=str(raw[1]))
    return _result(check, out.score, out.evidence, dict(out.details))  # validates details as JSON too


def _result(check: Check, score: float, evidence: str, details: dict[str, Any]) -> CheckResult:
    return CheckResult(
        id=check.id,
        kind=check.kind,
        passed=score >= 1.0,
        score=score,
        weight=check.weight,
        must=check.must,
        evidence=evidence,
        details=details,
    )

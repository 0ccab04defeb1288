"""Trace checks: what the agent did through its tools, read from the step records of the trace.

These cost O(steps). They complement state checks (which judge outcomes) for requirements about process:
calling a tool at all, not hitting ``forbidden``, finishing within a step budget, ending with ``submit``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import Field

from graders.base import CheckOutcome, GradingContext, check_fn
from graders.checks_common import Regex, listing, rx


def _name(step: Mapping[str, Any]) -> str:
    action = step.get("action") or {}
    return str(action.get("name", "")) if isinstance(action, Mapping) else ""


def _index(step: Mapping[str, Any], position: int) -> int:
    index = step.get("index")
    return index if isinstance(index, int) else position


def _min_le_max(kw: dict[str, Any]) -> None:
    if kw["max_count"] is not None and kw["max_count"] < kw["min_count"]:
        raise ValueError(f"max_count {kw['max_count']} is below min_count {kw['min_count']}")


@check_fn("tool_called", kind="trace", validate=_min_le_max)
def tool_called(
    ctx: GradingContext,
    name: str,
    min_count: Annotated[int, Field(ge=0)] = 1,
    max_count: Annotated[int, Field(ge=0)] | None = None,
    only_ok: bool = False,
) -> CheckOutcome:
    """Tool ``name`` was called between ``min_count`` and ``max_count`` times (``only_ok``: without error)."""
    calls = [_index(s, i) for i, s in enumerate(ctx.steps) if _name(s) == name and not (only_ok and s.get("error"))]
    bound = f"{min_count}..{max_count}" if max_count is not None else f">= {min_count}"
    where = f" (steps {', '.join(map(str, calls[:10]))}{', ...' if len(calls) > 10 else ''})" if calls else ""
    ok = len(calls) >= min_count and (max_count is None or len(calls) <= max_count)
    return CheckOutcome.of(ok, f"{name} called {len(calls)} times{' without error' * only_ok}, expected {bound}{where}")


def _tool_errors(ctx: GradingContext, codes: list[str] | None) -> tuple[float, str, dict[str, Any]]:
    """``no_tool_errors``' verdict as (score, evidence, details), looking only at the steps taken since last asked.

    A recorded step never changes, so its verdict is kept (``ctx.lasting``) and the per-step progress score
    looks only at the steps taken since its last update. A failing verdict names the errors, not the steps, so
    a step without a new error hands back the very verdict before it; a passing one counts the steps (one
    string a step).
    """
    steps = ctx.steps
    key = _NO_CODES if codes is None else ("tool_errors", tuple(codes))
    # seen: [steps looked at, the last of them, the errors found, the verdict, what the evidence says of codes]
    seen: list[Any] | None = ctx.lasting.get(key)
    n = len(steps)
    if seen is None or seen[0] > n or (seen[0] and steps[seen[0] - 1] is not seen[1]):
        which = f" with code {'/'.join(codes)}" if codes is not None else ""
        seen = ctx.lasting[key] = [0, None, [], None, which]
    elif seen[0] == n and seen[3] is not None:
        kept: tuple[float, str, dict[str, Any]] = seen[3]
        return kept
    errors: list[str] = seen[2]
    before = len(errors)
    for i in range(seen[0], n):
        step = steps[i]
        if step.get("fault"):
            continue
        error = step.get("error")
        code = str(error.get("code", "?")) if isinstance(error, Mapping) else ("?" if error else None)
        if code is not None and (codes is None or code in codes):
            errors.append(f"step {_index(step, i)} {_name(step) or '?'} -> {code}")
    if n:
        seen[0], seen[1] = n, steps[-1]
    if not errors:
        seen[3] = (1.0, f"no tool errors{seen[4]} in {n} steps", {})
    elif len(errors) != before or seen[3] is None or seen[3][0] != 0.0:
        seen[3] = (0.0, f"{len(errors)} tool errors{seen[4]}: {listing(errors, 5)}", {"errors": errors[:20]})
    verdict: tuple[float, str, dict[str, Any]] = seen[3]
    return verdict


_NO_CODES = ("tool_errors", None)


def _tool_errors_touches(ctx: GradingContext, step: Mapping[str, Any], codes: list[str] | None = None) -> bool:
    """Only a step that failed, and not by an injected fault, can move the score (any code: kept simple)."""
    return bool(step.get("error")) and not step.get("fault")


@check_fn(
    "no_tool_errors",
    kind="trace",
    touches=_tool_errors_touches,
    on_changes=lambda ctx, rows, codes=None: _tool_errors(ctx, codes),
)
def no_tool_errors(ctx: GradingContext, codes: list[str] | None = None) -> CheckOutcome:
    """No step failed (with one of ``codes``, e.g. ``["forbidden"]``, when given).

    Failures injected by the noise layer (steps with a ``fault``) are not the agent's and are not counted. The
    per-step progress score asks ``_tool_errors`` itself (no ``CheckOutcome`` built per step).
    """
    score, evidence, details = _tool_errors(ctx, codes)
    return CheckOutcome(score=score, evidence=evidence, details=details)


@check_fn("max_steps", kind="trace")
def max_steps(ctx: GradingContext, n: Annotated[int, Field(ge=1)]) -> CheckOutcome:
    """The agent used at most ``n`` tool calls (``submit`` included)."""
    return CheckOutcome.of(len(ctx.steps) <= n, f"{len(ctx.steps)} steps (at most {n})")


@check_fn("submitted", kind="trace")
def submitted(ctx: GradingContext) -> CheckOutcome:
    """The episode ended with a successful ``submit`` call rather than a truncation."""
    if not ctx.steps:
        return CheckOutcome.of(False, "no steps were taken")
    last, position = ctx.steps[-1], len(ctx.steps) - 1
    name = _name(last)
    if name == "submit" and not last.get("error"):
        return CheckOutcome.of(True, f"the last step ({_index(last, position)}) is submit")
    state = "a failed submit" if name == "submit" else f"{name!r}, not submit"
    return CheckOutcome.of(False, f"the last step ({_index(last, position)}) is {state}")


def _submit_summary(ctx: GradingContext) -> str | None:
    """The summary of the successful ``submit`` that ended the episode, or None if it did not end that way."""
    last = ctx.steps[-1] if ctx.steps else None
    if last is None or _name(last) != "submit" or last.get("error"):
        return None
    action = last.get("action")
    arguments = action.get("arguments", {}) if isinstance(action, Mapping) else {}
    return str(arguments.get("summary", "")) if isinstance(arguments, Mapping) else ""


_NOT_SUBMITTED: tuple[float, str, dict[str, Any]] = (0.0, "the episode did not end with a successful submit", {})


def _summary_decided(check: str) -> Any:
    """An ``on_changes`` evaluator for a check on the closing ``submit``'s summary: no run until one is made.

    Before the episode ends with a successful submit such a check fails with the same evidence whatever the
    steps were, so the per-step progress score hands back one kept verdict (no ``CheckOutcome`` built a step);
    a step that is a successful submit asks the check itself.
    """

    def on_changes(ctx: GradingContext, rows: Any, **params: Any) -> tuple[float, str, dict[str, Any]]:
        steps = ctx.steps
        action = steps[-1].get("action") if steps else None
        name = action.get("name") if type(action) is dict else None
        if (type(name) is str and name != "submit") or _submit_summary(ctx) is None:  # most steps: a plain name
            return _NOT_SUBMITTED
        out = _CHECKS[check](ctx, **params)
        return out.score, out.evidence, dict(out.details)

    return on_changes


@check_fn("submit_explains", kind="trace", on_changes=_summary_decided("submit_explains"), moved_by=("submit",))
def submit_explains(ctx: GradingContext, patterns: Annotated[list[Regex], Field(min_length=1)]) -> CheckOutcome:
    """The episode ended with a successful ``submit`` whose summary matches every pattern (any case).

    What an impossible task asks for: the agent stops and says why (who has left, which room is missing) instead
    of claiming success. The patterns name the reason, so "done" or a generic apology does not pass.
    """
    summary = _submit_summary(ctx)
    if summary is None:
        for p in patterns:  # compiled now (``rx``'s cache): the task's, not work for the closing submit's step
            rx(p)
        return CheckOutcome.of(False, _NOT_SUBMITTED[1])
    missing = [p for p in patterns if not rx(p).search(summary)]
    if missing:
        return CheckOutcome.of(False, f"the submit summary {summary[:120]!r} does not say {listing(missing)}")
    return CheckOutcome.of(True, f"the submit summary says why: {summary[:160]!r}")


@check_fn("submit_answer", kind="trace", on_changes=_summary_decided("submit_answer"), moved_by=("submit",))
def submit_answer(ctx: GradingContext, pattern: Regex, value: str, label: str = "the answer") -> CheckOutcome:
    """The ``submit`` summary states ``value`` as ``pattern``'s first group, and nothing else of that kind.

    For questions answered exactly: every match of ``pattern`` (an @username, a day, a count) must equal
    ``value`` (any case) and there must be one, so a summary listing every candidate earns nothing.
    """
    summary = _submit_summary(ctx)
    compiled = re.compile(pattern)  # before a submit too (``re``'s cache): the task's, not the closing step's work
    if summary is None:
        return CheckOutcome.of(False, _NOT_SUBMITTED[1])
    found = sorted({(m.group(1) if m.groups() else m.group(0)).lower() for m in compiled.finditer(summary)})
    if found == [value.lower()]:
        return CheckOutcome.of(True, f"the submit summary states {label} {value!r}")
    if not found:
        return CheckOutcome.of(False, f"the submit summary {summary[:120]!r} states no {label}")
    return CheckOutcome.of(False, f"the submit summary states {label} as {listing(found)}, expected only {value!r}")


_CHECKS: dict[str, Callable[..., CheckOutcome]] = {"submit_explains": submit_explains, "submit_answer": submit_answer}

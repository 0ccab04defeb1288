"""The rubric's partial score during an episode, kept up to date from the rows each step changed.

A process reward has to be cheap enough to compute after every step, so ``Progress`` never re-grades the whole
rubric. It keeps one ``GradingContext`` for the episode, extends its change log with the rows a step wrote, and
re-runs only the checks those rows can affect: a state check whose function declares ``rows`` (the exact rows
it reads, e.g. one ticket) re-runs when one of them changed; one that declares ``reads`` (tables) when one of
those tables changed and, if it also declares ``touches``, only when that hook says one of the changed rows
matters (a case check ignores a ticket filed for another reference; a meeting check ignores chat until a
meeting is booked); any other state check after every step that changed anything. Trace checks read the
steps, so they re-run after every step (``no_tool_errors`` looks only at the new ones). Judge checks are never
asked mid-episode (a model call per step would cost more than the episode); they are left out of the value,
as an unjudged check is in ``grade``.

What keeps a re-run cheap: lookups are kept across steps until a table they read changes
(``GradingContext.kept``/``forget``), answers that cannot change during an episode are kept for it
(``GradingContext.lasting``: a logged row's natural key, the collateral verdict of the rows seen so far, the
hidden-case results of a commit), and the score is combined again only when a re-run check's score moved. A
step that changed nothing costs a lookup when the rubric has no trace checks.

The value follows ``grade``'s rule (``graders.base.combine``), so after the last step it equals the final
reward of a rubric without judge checks; ``tests/graders/test_progress.py`` compares every check's verdict and
evidence with a full grade after every step of every family's agents. Unlike ``grade``, progress does not
switch the connection to read-only for each step (two statements a step); checks are the same functions, and
the final grade does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from graders.base import (
    CheckOutcome,
    CheckResult,
    GradingContext,
    Rubric,
    apply_needs,
    combine,
    outcome_result,
    run_check,
)
from graders.changes import ChangeRow
from graders.registry import check_fn_spec


class Progress:
    """The running partial score of ``rubric`` over one episode.

    Args:
        rubric: The episode's rubric.
        ctx: A grading context over the episode's session, with an empty change log and the episode's live
            step list as ``trace``; ``update`` extends it.
    """

    def __init__(self, rubric: Rubric, ctx: GradingContext) -> None:
        self.rubric = rubric
        self.ctx = ctx
        self._savepoints = ctx.session.get_bind().dialect.name != "sqlite"
        self._checks = [c for c in rubric.checks if c.kind != "judge"]
        self._kwargs = [c._kwargs for c in self._checks]  # a pydantic private attribute costs ~2 us a read
        self._results: list[CheckResult] = []
        self._always: list[int] = []  # trace checks: re-run after every step
        self._any: list[int] = []  # state checks that declare nothing: after any step that changed a row
        self._by_table: dict[str, list[int]] = {}
        self._by_row: dict[tuple[str, tuple[Any, ...]], list[int]] = {}
        self._touches: dict[int, Callable[..., bool]] = {}
        self._columns: dict[int, frozenset[str]] = {}  # row checks that read only these columns of their rows
        self._on_rows: dict[int, Callable[..., Any]] = {}  # row checks that can decide from the rows alone
        self._needs = any(c.needs for c in self._checks)
        self._started = False
        self._pending = False
        # The running parts of the value: each counted check's weighted score, in rubric order (``combine`` adds
        # them in that order, so the sum is the same float), their weights' sum, and how many must checks fail.
        scored = [i for i, c in enumerate(self._checks) if not c.must] or list(range(len(self._checks)))
        self._slot = dict.fromkeys(range(len(self._checks)), -1) | {i: n for n, i in enumerate(scored)}
        self._parts = [0.0] * len(scored)
        self._weight = sum(self._checks[i].weight for i in scored)
        self._failing = 0
        self.value = 0.0
        self.passed = 0

    @property
    def total(self) -> int:
        """How many checks the progress counts (judge checks are not)."""
        return len(self._checks)

    def update(self, rows: Sequence[Mapping[str, Any]]) -> float:
        """Fold in the change-log rows one step wrote (possibly none); returns the new partial score."""
        if self._started and not rows and not self._always:
            return self.value  # nothing changed and nothing reads the steps: the verdicts stand
        changed = [ChangeRow.of(r) for r in rows]
        if changed:
            self.ctx.extend(changed)
        if not self._started:
            self._start()
            return self._combine()
        self._pending = False  # a check on_rows settled moved its score
        if changed:
            stale = set(self._always)
            stale.update(self._any)
            by_table: dict[str, list[ChangeRow]] = {}
            by_check: dict[int, list[ChangeRow]] = {}
            for r in changed:
                by_table.setdefault(r.table, []).append(r)
                for i in self._by_row.get((r.table, r.key), ()):
                    by_check.setdefault(i, []).append(r)
            self.ctx.forget(by_table)
            for i, check_rows in by_check.items():
                if i not in stale and not self._unread(i, check_rows) and not self._decided(i, check_rows):
                    stale.add(i)
            for table, table_rows in by_table.items():
                for i in self._by_table.get(table, ()):
                    if i not in stale and self._touched(i, table_rows):
                        stale.add(i)
            for i in sorted(stale) if len(stale) > 1 else stale:
                self._pending = self._run(i) or self._pending
        else:
            for i in self._always:
                self._pending = self._run(i) or self._pending
        return self._combine() if self._pending else self.value

    def _unread(self, i: int, rows: list[ChangeRow]) -> bool:
        """Whether ``rows`` (changes to check ``i``'s own rows) are all updates of columns it does not read."""
        columns = self._columns.get(i)
        return columns is not None and all(r.op == "update" and columns.isdisjoint(r.changes) for r in rows)

    def _decided(self, i: int, rows: list[ChangeRow]) -> bool:
        """Settle check ``i`` from its changed rows if its ``on_rows`` can; False if it must be re-run instead."""
        on_rows = self._on_rows.get(i)
        if on_rows is None:
            return False
        try:
            raw = on_rows(self.ctx, rows, **self._kwargs[i])
        except Exception:  # an evaluator that fails leaves it to the check itself: exactness first
            return False
        if raw is None:
            return False
        out = raw if isinstance(raw, CheckOutcome) else CheckOutcome(score=float(raw[0]), evidence=str(raw[1]))
        old = self._results[i]
        if out.score != old.score or out.evidence != old.evidence or out.details != old.details:
            self._pending = self._settle(i, outcome_result(self._checks[i], out)) or self._pending
        return True

    def _run(self, i: int) -> bool:
        """Re-run check ``i``; whether its score moved."""
        return self._settle(i, run_check(self._checks[i], self.ctx, self._savepoints))

    def _settle(self, i: int, result: CheckResult) -> bool:
        """Keep check ``i``'s new verdict and the running parts of the value; whether its score moved."""
        old = self._results[i]
        self._results[i] = result
        if result.score == old.score:
            return False
        self._count(i, old, -1)
        self._count(i, result, 1)
        return True

    def _count(self, i: int, result: CheckResult, sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) check ``i``'s verdict's share of the running parts."""
        slot = self._slot[i]
        if slot >= 0:
            self._parts[slot] = result.weight * result.score if sign > 0 else 0.0
        if result.must and not result.passed:
            self._failing += sign
        if result.passed:
            self.passed += sign

    def _touched(self, i: int, rows: list[ChangeRow]) -> bool:
        """Whether one of a ``reads`` table's changed rows may change check ``i`` (its ``touches`` hook says)."""
        touches = self._touches.get(i)
        if touches is None:
            return True
        kwargs = self._kwargs[i]
        try:
            return any(touches(self.ctx, r, **kwargs) for r in rows)
        except Exception:  # a hook that cannot tell re-runs the check: exactness first
            return True

    def results(self) -> tuple[CheckResult, ...]:
        """The current verdict of every counted check (the last step's), ``needs`` applied as ``grade`` does."""
        return apply_needs(self._checks, self._results) if self._needs else tuple(self._results)

    def _start(self) -> None:
        """Grade every counted check once, and index what each depends on."""
        self._started = True
        self.ctx.forget()
        self._results = [run_check(c, self.ctx, self._savepoints) for c in self._checks]
        for i, result in enumerate(self._results):
            self._count(i, result, 1)
        for i, check in enumerate(self._checks):
            if check.kind == "trace":
                self._always.append(i)
                continue
            spec = check_fn_spec(check.fn)
            found = spec.rows(self.ctx, **check._kwargs) if spec.rows is not None else None
            if found:
                for row in found:
                    self._by_row.setdefault(row, []).append(i)
                if spec.columns is not None:
                    self._columns[i] = spec.columns(**check._kwargs)
                if spec.on_rows is not None:
                    self._on_rows[i] = spec.on_rows
            elif spec.reads is not None:
                tables = spec.reads if isinstance(spec.reads, frozenset) else spec.reads(**check._kwargs)
                for table in tables:
                    self._by_table.setdefault(table, []).append(i)
                if spec.touches is not None:
                    self._touches[i] = spec.touches
            else:
                self._any.append(i)
        self.ctx.forget()

    def _combine(self) -> float:
        """The value from the verdicts (``graders.base.combine``'s rule), from the running parts when it can."""
        if self._needs:  # a check's share depends on others' verdicts: combine them all
            results = self.results()
            self.value, _ = combine(results)
            self.passed = sum(r.passed for r in results)
            return self.value
        value = sum(self._parts) / self._weight if self._weight else 0.0
        self.value = 0.0 if self._failing else min(1.0, value)
        return self.value

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

from graders.base import CheckResult, GradingContext, Rubric, apply_needs, combine, outcome_result, run_check
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
        # _combine's running parts: the checks that count towards the value, their weights' sum (in rubric
        # order, as ``combine`` adds them, so the value is the same float), each one's weighted score, and how
        # many must checks fail.
        self._scored = [i for i, c in enumerate(self._checks) if not c.must] or list(range(len(self._checks)))
        self._weight = sum(self._checks[i].weight for i in self._scored)
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
        self._pending = self._settle(i, outcome_result(self._checks[i], raw)) or self._pending
        return True

    def _run(self, i: int) -> bool:
        """Re-run check ``i``; whether its score moved."""
        return self._settle(i, run_check(self._checks[i], self.ctx, self._savepoints))

    def _settle(self, i: int, result: CheckResult) -> bool:
        """Keep check ``i``'s new verdict (the old object when nothing in it changed); whether its score moved."""
        old = self._results[i]
        if result.score == old.score and result.evidence == old.evidence and result.details == old.details:
            return False
        self._results[i] = result
        return result.score != old.score

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
        if self._needs:
            results = self.results()
            self.value, _ = combine(results)
            self.passed = sum(r.passed for r in results)
            return self.value
        results = self._results
        gated = any(r.must and not r.passed for r in results)
        value = sum(results[i].weight * results[i].score for i in self._scored) / self._weight if self._weight else 0.0
        self.value = 0.0 if gated else min(1.0, value)
        self.passed = sum(r.passed for r in results)
        return self.value

"""The rubric's partial score during an episode, kept up to date from the rows each step changed.

A process reward has to be cheap enough to compute after every step, so ``Progress`` never re-grades the whole
rubric. It keeps one ``GradingContext`` for the episode, extends its change log with the rows a step wrote, and
re-runs only the checks those rows can affect: a state check whose function declares ``rows`` (the exact rows
it reads, e.g. one ticket) re-runs when one of them changed, and if it also declares ``columns`` only when an
update changed one of those columns (a check on a ticket's priority ignores its reassignment); one that
declares ``reads`` (tables) when one of those tables changed and, if it also declares ``touches``, only when
that hook says one of the changed rows matters (a case check ignores a ticket filed for another reference or a
mail without its ticket's key; a meeting check ignores chat until a meeting is booked); any other state check
after every step that changed anything. A row check with an ``on_rows`` evaluator is not re-run at all when
the step's updates tell its verdict (``ticket_field_equals`` reads the new value from the update's
after-image, no query), and a table check with an ``on_changes`` evaluator when the step's rows of its tables
do (``row_exists`` on a row named by its key); a check that reads every table may have one too
(``no_collateral_changes`` judges only the agent's new rows), and so may a trace check (``no_tool_errors``
reads only the new steps). A table check with a ``holds`` hook is not asked at all while its verdict stands:
the hook names what must change first (its row, an insert into its table, an update of a key column), and a
step that changes none of it skips the check (``row_exists``; asked once at the start, so it is held from the
first step); a failing ``row_exists`` that counts the changed rows is held too, its hook naming the table as
one whose every change moves only the evidence, so such a change marks it lagging (asked again, with no rows,
when ``results`` is) instead of asking it. A table check whose ``rows`` did not exist yet (a document the agent
creates) moves to its rows once a re-run finds them. Trace checks read the steps, so they re-run after every
step unless they have an evaluator. Judge checks are never asked mid-episode (a model call per step would
cost more than the episode); they are left out of the value, as an unjudged check is in ``grade``.

A function with an ``on_step`` evaluator settles all of its table checks with one call a step instead of a
``touches`` and an ``on_changes`` call per check (a review rubric has a check per comment it expects; asking each
whether a note concerns it costs more than reading the note once, by file). It may answer ``LATER`` for a check
whose score the step cannot move but whose evidence it did (a failing check listing every mail sent): that check
is run again only when ``results`` asks, as a trace check no new step could move is. It may answer a
score alone (a float) for a check whose score the step moved: the score counts at once and the check is run
again, for its evidence, only when ``results`` asks (nothing in an episode reads the evidence; a direct message
that passes two notice checks would otherwise write two texts nobody reads). An ``on_step`` function is
asked once with no rows when progress starts, so what it keeps for the episode (the note checks' groups by file)
is built in the step that grades everything rather than in the first write. An ``on_changes`` evaluator asked
with rows may answer ``LATER`` too (``no_collateral_changes`` after rows its rules admit: only its count moved);
and one on every table with a ``quiet`` hook is not asked at all after a step whose every row is of a shape the
hook names (the agent's mail marked read), or an update of a row the hook names that changes only columns it
names for that row (a ticket a keyed rule names moved to a sprint): it is marked lagging and folds those rows
in when next asked.

What keeps a step cheap: lookups are kept across steps until a table they read changes
(``GradingContext.kept``/``forget``), answers that cannot change during an episode are kept for it
(``GradingContext.lasting``: a logged row's natural key, the collateral verdict of the rows seen so far, the
hidden-case results of a commit), and rows that were only inserted are read from the log (sent mail). Each
check's outcome is kept as (score, evidence, details); the ``CheckResult`` models are built only when
``results`` asks (validating a pydantic model costs more than most checks do; a check whose details or evidence
need validation is built at once, so a failing validation scores 0 as in ``grade``). The value is kept as
running parts (each check's weighted share, the failing must checks) and combined again only when a score
moved. A step that changed nothing costs a lookup when the rubric has no trace checks; a step that wrote one row
files it into the context's log itself (``GradingContext.extend`` inlined) and asks only the ``on_step`` groups
filed under its table; if no check reads that table by name, no group reads it and no hold names it, and every
check with a ``quiet`` hook finds the row quiet (the agent's mail marked read), those checks are marked lagging
and nothing else is built for the step (``_lone``). The running parts hold each held-back check's share as
``apply_needs`` leaves it, kept so as scores move, so a moved step adds them up as they are.

The value follows ``grade``'s rule (``graders.base.combine`` after ``apply_needs``), adding the same shares in
the same order, so after the last step it is the final reward of a rubric without judge checks, to the bit;
``tests/graders/test_progress.py`` compares every check's verdict, evidence and details with a full grade
after every step of every family's agents, and ``tests/graders/test_progress_rows.py`` holds the evaluators
that skip a query to what the query gives. Unlike ``grade``, progress does not switch the connection to
read-only for each step (two statements a step); checks are the same functions, and the final grade does.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from graders.base import (
    CheckOutcome,
    CheckResult,
    GradingContext,
    Rubric,
    apply_needs,
    error_evidence,
    outcome_result,
    run_outcome,
)
from graders.changes import ChangeRow
from graders.registry import LATER, check_fn_spec

_PLAIN = (str, int, bool, type(None))


_seq = itemgetter(0)
"""A change row's seq, its first field: the sort key of a step's rows of several tables (a C getter)."""


_NOT_PLAIN = object()

_of = ChangeRow.of

_PLANS: dict[tuple[Any, ...], dict[tuple[str, ...], list[tuple[tuple[str, tuple[str, ...]], tuple[str, ...]]]]] = {}
"""``Progress._plans`` by the ``on_step`` groups' keys (function, tables) in order: a plan is worked out from
them alone, so an episode's first step of a shape (a family's one document written) finds it made already."""


def _plain_copy(value: Any) -> Any:
    """A copy of ``value`` if it is JSON that ``CheckResult`` keeps as it is (exact types), else ``_NOT_PLAIN``.

    A copy, because a check may hand out a list it keeps growing in ``ctx.lasting``.
    """
    kind = type(value)
    if kind in _PLAIN or (kind is float and math.isfinite(value)):
        return value
    if kind is list:
        items = [_plain_copy(v) for v in value]
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in items) else items
    if kind is dict:
        pairs = {k: _plain_copy(v) for k, v in value.items()}
        ok = all(type(k) is str and v is not _NOT_PLAIN for k, v in pairs.items())
        return pairs if ok else _NOT_PLAIN
    return _NOT_PLAIN


def _last_name(steps: Sequence[Mapping[str, Any]]) -> str:
    """The action name of the last step record, read as the trace checks read it (``checks_trace._name``)."""
    if not steps:
        return ""
    action = steps[-1].get("action") or {}
    if type(action) is dict:
        name = action.get("name", "")
        return name if type(name) is str else str(name)
    return str(action.get("name", "")) if isinstance(action, Mapping) else ""


def _all_quiet(
    hook: tuple[
        Mapping[str, Container[tuple[Any, ...]]],
        int | None,
        Mapping[tuple[str, tuple[Any, ...]], tuple[frozenset[str], ...]] | None,
    ],
    rows: Iterable[ChangeRow],
) -> bool:
    """Whether every row of ``rows`` moves only the evidence of a check whose ``quiet`` hook answered ``hook``.

    Such a row is the actor's row of a shape the hook names (shapes, actor, rows); or, for a row the hook names
    by table and key (a keyed rule's), only an update of columns within one of its sets (such a row is quiet only
    so, never by its shape). One call for a step's rows, not one a row (a reply writes four).
    """
    shapes, actor, quiet_rows = hook
    for r in rows:
        if actor is not None and r.actor_id != actor:
            return False
        if quiet_rows:
            fits = quiet_rows.get((r.table, r.key))
            if fits is not None:
                if r.op == "update" and any(columns.issuperset(r.changes) for columns in fits):
                    continue
                return False
        of_table = shapes.get(r.table)  # most rows' tables have none: no shape built for them
        if of_table is None or (((r.table, r.op, *r.changes) if r.op == "update" else (r.table, r.op)) not in of_table):
            return False
    return True


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
        savepoints = ctx.session.get_bind().dialect.name != "sqlite"
        self._checks = [c for c in rubric.checks if c.kind != "judge"]
        # What the hot path reads of each check, read once: a pydantic private attribute costs microseconds.
        self._kwargs = [c._kwargs for c in self._checks]
        self._fns = [check_fn_spec(c.fn).fn for c in self._checks]
        self._savepoint = [savepoints and c.kind != "trace" for c in self._checks]
        self._weights = [c.weight for c in self._checks]
        self._musts = [c.must for c in self._checks]
        self._ids = {c.id: i for i, c in enumerate(self._checks)}
        # The checks each one needs; -1 for a judge check, which never passes mid-episode (as in apply_needs).
        self._needs = [tuple(self._ids.get(n, -1) for n in c.needs) for c in self._checks]
        self._has_needs = any(self._needs)
        # ``needs`` kept up to date as scores move: the checks that need each check, how many of each needy
        # check's needs do not pass (a judge check's never does), and the needy checks held back (a share above 0
        # that ``apply_needs`` zeroes); the running parts count a held-back check as ``apply_needs`` leaves it, so
        # ``_combine`` adds them as they are
        self._needed_by: dict[int, list[int]] = {}
        for i, need in enumerate(self._needs):
            for n in need:
                if n >= 0:
                    self._needed_by.setdefault(n, []).append(i)
        # the checks that name a ``needs`` or that one names: only their scores move what ``_needs_moved`` follows
        self._in_needs = frozenset(i for i, need in enumerate(self._needs) if need).union(self._needed_by)
        self._unmet = [0] * len(self._checks)
        self._held_back: set[int] = set()
        self._outcomes: list[tuple[float, str, Mapping[str, Any]]] = []  # each check's (score, evidence, details)
        self._results: list[CheckResult | None] = []  # built from the outcome when asked for (None: not yet)
        self._always: list[int] = []  # trace checks: re-run after every step
        self._traced: list[int] = []  # those of them with an ``on_changes`` evaluator, asked instead
        # those of them whose ``touches`` hook says which new steps may move the score: by check, the hook and
        # how many steps it has seen; a check no new step could move is asked only when ``results`` is (lagging,
        # as is a check an ``on_step`` evaluator answered ``LATER`` for)
        self._step_hooks: dict[int, tuple[Callable[..., bool], list[int]]] = {}
        # those of them whose verdict reads only the last step (``check_fn(moved_by=)``): the step names that may
        # move each, the ones asked since a step so named (open: the next step asks again), all such names, and
        # whether every trace check is one of them (then a read step named otherwise costs one name lookup)
        self._gated: dict[int, frozenset[str]] = {}
        self._open: set[int] = set()
        self._gate_names: frozenset[str] = frozenset()
        self._all_gated = False
        self._lagging: set[int] = set()
        self._any: list[int] = []  # state checks that declare nothing: after any step that changed a row
        self._any_deciding: list[int] = []  # state checks on every table with an ``on_changes`` evaluator
        self._stale: frozenset[int] = frozenset()  # the checks every step that changed a row re-runs
        self._group_tables: frozenset[str] = frozenset()  # the tables some ``on_step`` function reads
        # by table, the keys (in ``_grouped`` order) of the ``on_step`` groups that read it, each with the table
        # (what a plan names it with, ``_plans``), so a step that wrote one table asks its groups at once
        self._groups_of: dict[str, list[tuple[tuple[str, tuple[str, ...]], tuple[str, ...]]]] = {}
        # table checks whose last verdict stands until a step changes what their ``holds`` hook named: the
        # hook, the hold each held check is under, each indexed check's hold and index entries, and the indexes
        # (rows, inserts into a table, updates of a column). A woken check keeps its entries while it is asked
        # (``_wake`` only takes it out of ``_held``): held again under the same hold, as a check its step did not
        # move is, it is not indexed anew; its entries go when it is held otherwise or not at all
        self._holds: dict[int, Callable[..., Any]] = {}
        self._held: dict[int, Any] = {}
        self._indexed: dict[int, tuple[Any, list[tuple[dict[Any, set[int]], Any]]]] = {}
        self._wake_rows: dict[Any, set[int]] = {}
        self._wake_inserts: dict[Any, set[int]] = {}
        # held checks an insert wakes only if it carries their values: by (table, columns, values), and by table
        # the column sets such entries name (an insert of the table looks up its values for each set)
        self._wake_values: dict[Any, set[int]] = {}
        self._value_columns: dict[str, list[tuple[str, ...]]] = {}
        self._wake_columns: dict[Any, set[int]] = {}
        self._lag_tables: dict[Any, set[int]] = {}  # held checks whose evidence any change of a table moves
        self._hold_tables: set[str] = set()  # every table an index above has named (kept: a one-row step of
        # another table cannot wake a held check, so ``_lone`` may settle it)
        self._lean = False  # no check is re-run after every step and none reads the steps (``_lone`` may settle)
        # checks on every table with a ``quiet`` hook: the row shapes that move only their evidence, and by whom
        # (and the rows, by table and key, whose updates of some columns do the same)
        self._quiet: dict[
            int,
            tuple[
                Mapping[str, Container[tuple[Any, ...]]],
                int | None,
                Mapping[tuple[str, tuple[Any, ...]], tuple[frozenset[str], ...]] | None,
            ],
        ] = {}
        self._by_table: dict[str, list[int]] = {}
        self._by_row: dict[tuple[str, tuple[Any, ...]], list[int]] = {}
        self._touches: dict[int, Callable[..., bool]] = {}
        self._columns: dict[int, frozenset[str]] = {}  # row checks that read only these columns of their rows
        self._on_rows: dict[int, Callable[..., Any]] = {}  # row checks that can decide from the rows alone
        self._on_changes: dict[int, Callable[..., Any]] = {}  # table checks that can decide from the rows alone
        self._unbound: dict[int, Iterable[str]] = {}  # table checks with a ``rows`` hook whose rows do not exist yet
        # table checks whose function has ``on_step``: by (function, tables), its evaluator, checks and their params
        self._grouped: dict[tuple[str, tuple[str, ...]], tuple[Callable[..., Any], list[int], list[Any]]] = {}
        # by the tables of a step of two or more (in its rows' order): each group reading one of them and the ones
        # it reads, in ``_grouped`` order (``_PLANS``' for these groups once progress starts)
        self._plans: dict[tuple[str, ...], list[tuple[tuple[str, tuple[str, ...]], tuple[str, ...]]]] = {}
        self._started = False
        self._moved = False  # a check's score moved during this update
        # The running parts of the value, ``needs`` applied: each counted check's weighted score (0 while it is held
        # back), in rubric order (``combine`` adds them in that order, so the sum is the same float), how many must
        # checks fail (a held-back one does) and how many checks pass (a held-back one does not).
        self._scored = [i for i, c in enumerate(self._checks) if not c.must] or list(range(len(self._checks)))
        self._slot = [-1] * len(self._checks)  # each check's place in the parts (-1: not counted), by check
        for n, i in enumerate(self._scored):
            self._slot[i] = n
        self._parts = [0.0] * len(self._scored)
        self._weight = sum(self._weights[i] for i in self._scored)
        self._failing = 0
        self._passed = 0
        self.value = 0.0
        self.passed = 0

    @property
    def total(self) -> int:
        """How many checks the progress counts (judge checks are not)."""
        return len(self._checks)

    def update(self, rows: Sequence[Mapping[str, Any]]) -> float:
        """Fold in the change-log rows one step wrote (possibly none); returns the new partial score."""
        if not self._started:
            if rows:
                self.ctx.extend(list(map(ChangeRow.of, rows)))
            self._start()
            return self._combine()
        if not rows:
            if self._always:
                if self._all_gated and not self._open and self._unmoving():
                    return self.value  # every trace check reads the last step alone, and this one cannot move it
                self._moved = False
                self._steps_only()
                if self._moved:
                    return self._combine()
            return self.value  # nothing changed and nothing reads the steps: the verdicts stand
        self._moved = False
        ctx = self.ctx
        if len(rows) == 1:  # most steps write one row: ``ctx.extend`` inlined (a frame and a list a write step)
            row = _of(rows[0])
            changed = [row]
            ctx.log.append(row)
            logged = ctx._by_table.get(row.table)
            if logged is None:
                ctx._by_table[row.table] = [row]
            else:
                logged.append(row)
            table = row.table
            if (  # a row no check reads by name, no group reads and no held check is held by: maybe quiet alone
                self._lean
                and table not in self._group_tables
                and table not in self._hold_tables
                and not self._by_table.get(table)
                and (table, row.key) not in self._by_row
                and self._lone(row)
            ):
                return self.value
            by_table = {row.table: changed}  # the one list: no evaluator changes the rows it is given
        else:
            changed = list(map(_of, rows))
            by_table = ctx.extend(changed)  # the step's rows by table, as the context files them
        stale = set(self._stale) if self._stale else set()
        # the checks an evaluator may settle from the rows: (check, evaluator, its rows), asked in one loop below
        # rather than through a method per check (the frames cost as much as most evaluators do)
        asking: list[tuple[int, Callable[..., Any], list[ChangeRow]]] = []
        by_row = self._by_row
        if by_row:
            by_check: dict[int, list[ChangeRow]] = {}
            for r in changed:
                for i in by_row.get((r.table, r.key), ()):
                    found = by_check.get(i)
                    if found is None:
                        by_check[i] = [r]
                    else:
                        found.append(r)
        ctx.memo.clear()  # ``ctx.forget(by_table)``, inlined (a frame a write step)
        if ctx._kept_by_table:
            ctx.forget(by_table)
        on_rows, on_changes, touches, held = self._on_rows, self._on_changes, self._touches, self._held
        woken: set[int] | None = None
        if held:
            woken = self._wake(changed)
            lag = self._lag_tables
            if lag:  # held checks whose evidence counts the table's changes: asked again for the results
                for table in by_table:
                    lags = lag.get(table)
                    if lags:  # (a check woken now is asked now: its entries stand until it is held again)
                        self._lagging |= lags.difference(woken) if woken else lags
        if by_row:
            for i, check_rows in by_check.items():
                if i in stale:
                    continue
                columns = self._columns.get(i)  # updates of columns the check does not read cannot move it
                if columns is not None:
                    for r in check_rows:
                        if r.op != "update" or not columns.isdisjoint(r.changes):
                            break
                    else:
                        continue
                evaluate = on_rows.get(i)
                if evaluate is None:
                    stale.add(i)
                else:
                    asking.append((i, evaluate, check_rows))
        deciding: dict[int, list[ChangeRow]] = {}
        checks_of = self._by_table
        for table, table_rows in by_table.items():
            for i in checks_of.get(table, ()):
                if i in stale or i in held or (i in touches and not self._touched(i, table_rows)):
                    continue
                if i in on_changes:
                    deciding.setdefault(i, []).extend(table_rows)
                else:
                    stale.add(i)
        quiet = self._quiet
        for i in self._any_deciding:
            if i in stale:
                continue
            if i in quiet:  # rows that move only its evidence (``check_fn(quiet=)``): not asked, lagging instead
                if _all_quiet(quiet[i], changed):  # one rule for both paths: ``_lone`` asks it of a one-row step
                    self._lagging.add(i)
                    continue
            if i not in touches or self._touched(i, changed):
                asking.append((i, on_changes[i], changed))
        for i, check_rows in deciding.items():
            if len(by_table) > 1:
                check_rows.sort(key=_seq)
            asking.append((i, on_changes[i], check_rows))
        if self._traced:  # trace checks that fold the new steps in themselves (most rubrics have none)
            hooks, gated = self._step_hooks, self._gated
            name = _last_name(ctx.steps) if gated else ""
            for i in self._traced:
                if not ((gated and self._shut(i, name)) or (hooks and self._still(i))):
                    asking.append((i, on_changes[i], changed))
        outcomes, kwargs = self._outcomes, self._kwargs
        for i, evaluate, check_rows in asking:  # what ``_decided`` does, inlined
            try:
                out = evaluate(ctx, check_rows, **kwargs[i])
            except Exception:  # an evaluator that fails leaves it to the check itself: exactness first
                out = None
            if out is None:
                stale.add(i)
            elif out is LATER:  # the score stands, the evidence moved: asked again when results are
                self._lagging.add(i)
            elif out is not outcomes[i]:
                self._store(i, out)
        if self._grouped and not self._group_tables.isdisjoint(by_table):
            self._step_groups(by_table, stale)
        if stale:
            for i in sorted(stale) if len(stale) > 1 else stale:
                self._run(i)
            if self._unbound:
                self._rebind(stale)
        if self._holds and deciding:
            for i in deciding:
                if i in self._holds:
                    self._hold(i)
        if woken:  # woken and not held again (not asked, or its hook named nothing): no longer indexed
            for i in woken:
                if i not in held:
                    self._unindex(i)
        return self._combine() if self._moved else self.value

    def _lone(self, row: ChangeRow) -> bool:
        """Settle a one-row step that only checks on every table with a ``quiet`` hook could see, if it is one.

        ``update`` asks this for a row of a table no check reads by name, no ``on_step`` group reads and no held
        check is held by, in a rubric whose every step asks nothing else (``_lean``: no check re-run after every
        step, no trace check). If the row is of a shape every such check's hook names (the agent's mail marked
        read), each is marked lagging and nothing is asked, as the general path would end up doing after building
        its lists for the step. False (nothing done) for any other row.
        """
        quiet = self._quiet
        for i in self._any_deciding:
            hook = quiet.get(i)
            if hook is None or not _all_quiet(hook, (row,)):
                return False
        ctx = self.ctx
        ctx.memo.clear()
        if ctx._kept_by_table:
            ctx.forget((row.table,))
        self._lagging.update(self._any_deciding)
        return True

    def _steps_only(self) -> None:
        """Bring the trace checks up to date after a step that changed no row (a read): the steps are all that moved.

        The evaluator is called here rather than through ``_decided`` (a read step of an impossible variant is
        nothing but this: two frames fewer is a third of its cost).
        """
        on_changes, hooks, gated, kwargs, ctx = self._on_changes, self._step_hooks, self._gated, self._kwargs, self.ctx
        name = _last_name(ctx.steps) if gated else ""
        for i in self._always:
            evaluate = on_changes.get(i)
            if evaluate is not None:
                if (gated and self._shut(i, name)) or (hooks and self._still(i)):
                    continue
                try:
                    found = evaluate(ctx, [], **kwargs[i])
                except Exception:  # an evaluator that fails leaves it to the check itself: exactness first
                    found = None
                if found is LATER:
                    self._lagging.add(i)
                    continue
                if found is not None:
                    if found is not self._outcomes[i]:
                        self._store(i, found)
                    continue
            self._run(i)

    def _unmoving(self) -> bool:
        """Whether the last step's name is none a gated trace check is moved by (``check_fn(moved_by=)``).

        Read from the trace's last record when it is a step with a plain name (the live episode's list), so a read
        step costs a lookup, not the step list's upkeep; else as the trace checks read it.
        """
        trace = self.ctx.trace
        last = trace[len(trace) - 1] if trace else None
        if last is not None and last.get("type", "step") == "step":
            action = last.get("action")
            name = action.get("name") if type(action) is dict else None
            if type(name) is str:
                return name not in self._gate_names
        return _last_name(self.ctx.steps) not in self._gate_names

    def _shut(self, i: int, name: str) -> bool:
        """Whether trace check ``i`` need not be asked after a last step named ``name`` (``check_fn(moved_by=)``).

        It reads the last step alone and every step not named in its set gives it one verdict: after such a step
        that follows another it stands (shut). A step named in the set, or the first one after it, asks it.
        """
        gate = self._gated.get(i)
        if gate is None:
            return False
        if name in gate:
            self._open.add(i)
            return False
        if i in self._open:
            self._open.discard(i)  # asked now: its verdict is the one every step named otherwise gives
            return False
        return True

    def _still(self, i: int) -> bool:
        """Whether no step since trace check ``i`` was last asked can move its score (its ``touches`` hook says).

        Then it is not asked now: only its evidence would move (a count of steps), and ``results`` asks it
        first. False asks it (and ``_decided`` brings it up to date).
        """
        found = self._step_hooks.get(i)
        if found is None:
            return False
        touches, seen = found
        ctx = self.ctx
        steps = ctx.steps
        start = seen[0]
        seen[0] = len(steps)
        kwargs = self._kwargs[i]
        moves = False
        try:  # a loop rather than ``any`` over a generator (a read step asks this once: most steps are reads)
            for n in range(start, len(steps)):
                if touches(ctx, steps[n], **kwargs):
                    moves = True
                    break
        except Exception:  # a hook that cannot tell asks the check: exactness first
            moves = True
        if moves:
            self._lagging.discard(i)
            return False
        self._lagging.add(i)
        return True

    def _hold(self, i: int) -> None:
        """Leave table check ``i`` alone until a step changes what its ``holds`` hook names (if it names any)."""
        try:
            found = self._holds[i](self.ctx, **self._kwargs[i])
        except Exception:  # a hook that cannot tell leaves the check asked every step: exactness first
            found = None
        if found is None:
            self._unindex(i)
            return
        # kept as tuples: a hook may hand back lists it goes on changing, and the kept hold is compared later
        hold = (tuple(found[0]), tuple(found[1]), tuple(found[2]), tuple(found[3]) if len(found) > 3 else ())
        known = self._indexed.get(i)
        if known is not None:
            if known[0] == hold:  # the hold it was under (its row stood): its index entries stand
                self._held[i] = hold
                return
            self._unindex(i)
        rows, inserts, columns, lags = hold  # lags: tables whose changes leave its evidence behind (not its score)
        keys: list[tuple[dict[Any, set[int]], Any]] = []
        indexes = ((self._wake_rows, rows), (self._wake_columns, columns), (self._lag_tables, lags))
        for index, names in indexes:
            for name in names:
                index.setdefault(name, set()).add(i)
                keys.append((index, name))
                self._hold_tables.add(name if type(name) is str else name[0])
        for name in inserts:  # a table, or (table, columns, values): an insert carrying those values
            if type(name) is str:
                index = self._wake_inserts
                table = name
            else:
                index, (table, named, _) = self._wake_values, name
                named_columns = self._value_columns.setdefault(table, [])
                if named not in named_columns:  # kept once named: a lookup that finds nothing costs little
                    named_columns.append(named)
            index.setdefault(name, set()).add(i)
            keys.append((index, name))
            self._hold_tables.add(table)
        self._indexed[i] = (hold, keys)
        self._held[i] = hold

    def _unindex(self, i: int) -> None:
        """Take check ``i`` out of the indexes of held checks (if it is in them)."""
        known = self._indexed.pop(i, None)
        if known is not None:
            for index, name in known[1]:
                index[name].discard(i)

    def _wake(self, changed: list[ChangeRow]) -> set[int]:
        """Release the held checks a step's rows may move: a row they name, an insert, an update of a column.

        Returns them (and any check indexed but not held, which is asked this step anyway); their index entries
        stand until ``update`` has held them again.
        """
        woken: set[int] = set()
        by_row, by_insert, by_column = self._wake_rows, self._wake_inserts, self._wake_columns
        by_value, by_columns, tables = self._wake_values, self._value_columns, self._hold_tables
        for r in changed:
            if r.table not in tables:  # no index names its table (a reply's mail rows, a share's check held)
                continue
            found = by_row.get((r.table, r.key))
            if found:
                woken |= found
            if r.op == "insert":
                found = by_insert.get(r.table)
                if found:
                    woken |= found
                keyed = by_columns.get(r.table) if by_columns else None
                if keyed:  # checks woken only by an insert carrying their values (a share of their document)
                    for columns in keyed:
                        try:
                            found = by_value.get((r.table, columns, tuple(map(r.changes.get, columns))))
                        except TypeError:  # a value that cannot be a key (a list): every check of those columns
                            found = self._keyed_checks(r.table, columns)
                        if found:
                            woken |= found
            elif r.op == "update" and by_column:
                for column in r.changes:
                    found = by_column.get((r.table, column))
                    if found:
                        woken |= found
        held = self._held
        for i in woken:
            held.pop(i, None)
        return woken

    def _keyed_checks(self, table: str, columns: tuple[str, ...]) -> set[int]:
        """Every held check an insert into ``table`` wakes by the values of ``columns``, whatever the values."""
        found: set[int] = set()
        for (name, named, _), checks in self._wake_values.items():
            if name == table and named == columns:
                found |= checks
        return found

    def _step_groups(self, by_table: dict[str, list[ChangeRow]], stale: set[int]) -> None:
        """Settle the checks of each ``on_step`` function whose tables the step changed, one call per function.

        A step of one table asks the groups filed under it with its rows as they are; else the groups reading one
        of the step's tables, in ``_grouped`` order, each with its tables' rows in seq order. Which groups those
        are and which of the step's tables each reads is worked out once per shape of step (its tables, in the
        order its rows name them: a reply's mail rows, a booking's event and invitations, a sheet's document with
        its version and blob) and kept (``_plans``); a group reading one of them gets that table's rows as they
        are (a note and its request's bump: the note's groups). A group that reads every table the step wrote (a
        booking's event and invitations, for each meeting function) is given the step's rows as the log holds
        them (its last rows, in seq order); one that reads some of them (a reply's message and recipients, not
        its deliveries) those of the log's last rows, picked once for every group reading the same tables (the
        log is in seq order: no merge to sort).
        """
        grouped, groups_of = self._grouped, self._groups_of
        step_rows: list[ChangeRow] = []
        groups: Iterable[tuple[tuple[str, tuple[str, ...]], tuple[str, ...]]]
        if len(by_table) == 1:
            ((table, step_rows),) = by_table.items()
            groups = groups_of.get(table, ())
        else:
            shape = tuple(by_table)
            plan = self._plans.get(shape)
            if plan is None:  # each group reading one of these tables, with the ones it reads
                plan = self._plans[shape] = [
                    (key, present) for key in grouped if (present := tuple(t for t in key[1] if t in shape))
                ]
            groups = plan
        outcomes = self._outcomes
        everything: list[ChangeRow] = []  # the step's rows, all tables, read from the log once asked
        merged: dict[tuple[str, ...], list[ChangeRow]] = {}  # the step's rows of some of its tables, by tables
        for key, present in groups:
            on_step, checks, params = grouped[key]
            if step_rows:  # one table written: its rows as they are
                rows = step_rows
            elif len(present) == 1:
                rows = by_table[present[0]]
            else:
                if not everything:
                    everything = self.ctx.log[-sum(map(len, by_table.values())) :]
                if len(present) == len(by_table):
                    rows = everything
                else:
                    found = merged.get(present)
                    if found is None:
                        found = merged[present] = [r for r in everything if r.table in present]
                    rows = found
            try:
                verdicts = on_step(self.ctx, rows, params)
            except Exception:  # an evaluator that fails re-runs every check of it: exactness first
                verdicts = dict.fromkeys(range(len(checks)))
            for pos, out in verdicts.items():
                i = checks[pos]
                if out is None:
                    stale.add(i)
                elif out is LATER:  # the score stands, the evidence moved: asked again when results are
                    self._lagging.add(i)
                elif out is not outcomes[i] and i not in stale:  # a kept verdict handed back: nothing to store
                    if type(out) is float:  # the score alone: the evidence is built when results are asked for
                        self._lagging.add(i)
                        if out != outcomes[i][0]:
                            self._store(i, (out, "", {}))
                    else:
                        self._store(i, out)

    def _decided(self, i: int, rows: list[ChangeRow]) -> bool:
        """Settle check ``i`` from its changed rows with its ``on_rows``/``on_changes`` evaluator if it can tell.

        False if it must be re-run instead. An evaluator that hands back the very outcome it gave last time (a
        verdict it kept) costs no comparison.
        """
        evaluate = self._on_rows.get(i) or self._on_changes.get(i)
        if evaluate is None:
            return False
        try:
            found = evaluate(self.ctx, rows, **self._kwargs[i])
        except Exception:  # an evaluator that fails leaves it to the check itself: exactness first
            return False
        if found is None or found is LATER:  # LATER: asked with no rows, it should not say that; re-run it
            return False
        if found is not self._outcomes[i]:
            self._store(i, found)  # (score, evidence, plain JSON details), as the registry asks of on_rows
        return True

    def _run(self, i: int) -> None:
        """Re-run check ``i``."""
        out = run_outcome(self._fns[i], self._kwargs[i], self.ctx, self._savepoint[i])
        details = _plain_copy(out.details) if out.details else {}
        if type(out.evidence) is str and type(details) is dict:
            self._store(i, (out.score, out.evidence, details))
            return
        # details or evidence CheckResult might reject or convert: build it now, as run_check would, so the
        # score is the one ``grade`` gives (a check whose details fail validation scores 0 with the error)
        try:
            result = outcome_result(self._checks[i], out)
        except Exception as exc:
            result = outcome_result(self._checks[i], CheckOutcome(score=0.0, evidence=error_evidence(exc)))
        self._store(i, (result.score, result.evidence, result.details))
        self._results[i] = result

    def _store(self, i: int, outcome: tuple[float, str, Mapping[str, Any]]) -> None:
        """Keep check ``i``'s new outcome, and the running parts of the value when its score moved."""
        outcomes = self._outcomes
        old = outcomes[i]
        # kept either way: an evaluator that hands this tuple back next step (a kept verdict) is known by identity
        outcomes[i] = outcome
        score, new = old[0], outcome[0]
        if new == score:  # the same score: the result built from the old verdict (if any) stands if all of it does
            if outcome[1] != old[1] or outcome[2] != old[2]:
                self._results[i] = None
            return
        self._results[i] = None
        self._moved = True  # ``_count`` taking the old share away and adding the new one, inlined (the hot path)
        slot = self._slot[i]
        if slot >= 0:
            self._parts[slot] = self._weights[i] * new
        if (score >= 1.0) != (new >= 1.0):
            self._passed += 1 if new >= 1.0 else -1
            if self._musts[i]:
                self._failing += -1 if new >= 1.0 else 1
        if i in self._in_needs:  # a check no ``needs`` names and that names none: nothing to follow
            self._needs_moved(i, score, new)

    def _needs_moved(self, i: int, old: float, new: float) -> None:
        """Follow check ``i``'s score from ``old`` to ``new`` in the ``needs`` it is part of (its own, others').

        ``_store`` counted its share as if it were not held back; a check is held back while a check it needs
        does not pass and its own score is above 0, and its share in the running parts is then what
        ``apply_needs`` leaves of it (0, not passing, failing if a must check).
        """
        unmet, held_back = self._unmet, self._held_back
        was = i in held_back
        if was and old >= 1.0:  # ``_store`` moved its counts as if it were not held: its held-back ones taken back
            self._passed += 1
            if self._musts[i]:
                self._failing -= 1
        if unmet[i] > 0 and new > 0:  # (still) held back: the share ``_store`` counted made the held one
            held_back.add(i)
            self._held_share(i, new, True)
        elif was:
            held_back.discard(i)  # released: the share ``_store`` counted stands
        if (old >= 1.0) != (new >= 1.0):
            step = -1 if new >= 1.0 else 1
            outcomes = self._outcomes
            for d in self._needed_by.get(i, ()):
                unmet[d] += step
                score = outcomes[d][0]
                if score <= 0:
                    continue
                if unmet[d] > 0:
                    if d not in held_back:
                        held_back.add(d)
                        self._held_share(d, score, True)
                elif d in held_back:
                    held_back.discard(d)
                    self._held_share(d, score, False)

    def _held_share(self, i: int, score: float, held: bool) -> None:
        """Count check ``i`` (scoring ``score``) as held back (``held``) instead of not, or the other way round."""
        slot = self._slot[i]
        if slot >= 0:
            self._parts[slot] = 0.0 if held else self._weights[i] * score
        if score >= 1.0:
            self._passed += -1 if held else 1
            if self._musts[i]:
                self._failing += 1 if held else -1

    def _count(self, i: int, score: float, sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) check ``i``'s share of the running parts."""
        slot = self._slot[i]
        if slot >= 0:
            self._parts[slot] = self._weights[i] * score if sign > 0 else 0.0
        if score >= 1.0:
            self._passed += sign
        elif self._musts[i]:
            self._failing += sign

    def _touched(self, i: int, rows: list[ChangeRow]) -> bool:
        """Whether one of a ``reads`` table's changed rows may change check ``i`` (its ``touches`` hook says)."""
        touches = self._touches.get(i)
        if touches is None:
            return True
        kwargs = self._kwargs[i]
        try:
            for r in rows:
                if touches(self.ctx, r, **kwargs):
                    return True
        except Exception:  # a hook that cannot tell re-runs the check: exactness first
            return True
        return False

    def results(self) -> tuple[CheckResult, ...]:
        """The current verdict of every counted check (the last step's), ``needs`` applied as ``grade`` does."""
        self._moved = False
        # checks whose evidence is behind (trace checks not asked since steps that could not move them, checks an
        # evaluator answered ``LATER`` for): an evaluator folds the log and steps from where it stopped, so asking
        # it with no rows brings the evidence up to date; without one the check is run
        for i in sorted(self._lagging):
            self._lagging.discard(i)
            if not self._decided(i, []):
                self._run(i)
        if self._moved:  # only a hook that was wrong moves a score here; the value follows it all the same
            self._combine()
        out: list[CheckResult] = []
        for i, check in enumerate(self._checks):
            result = self._results[i]
            if result is None:
                score, evidence, details = self._outcomes[i]
                result = self._results[i] = outcome_result(
                    check, CheckOutcome(score=score, evidence=evidence, details=details)
                )
            out.append(result)
        if self._has_needs:
            return apply_needs(self._checks, out)
        return tuple(out)

    def _start(self) -> None:
        """Grade every counted check once, and index what each depends on."""
        self._started = True
        self.ctx.forget()
        self._results = [None] * len(self._checks)
        self._outcomes = [(-1.0, "", {})] * len(self._checks)  # no verdict yet: the first one always differs
        for i in range(len(self._checks)):
            self._run(i)
        self._count_first()
        for i, check in enumerate(self._checks):
            spec = check_fn_spec(check.fn)
            if check.kind == "trace":
                self._always.append(i)
                if spec.on_changes is not None:
                    self._traced.append(i)
                    self._on_changes[i] = spec.on_changes
                    if spec.touches is not None:
                        self._step_hooks[i] = (spec.touches, [len(self.ctx.steps)])
                    if spec.moved_by is not None and spec.touches is None:  # one way to skip it, not two
                        self._gated[i] = spec.moved_by
                        self._open.add(i)  # its first verdict came from a full run: the next step asks it
                continue
            kwargs = self._kwargs[i]
            if self._bind_rows(i):
                continue
            if spec.reads is not None:
                tables = spec.reads if isinstance(spec.reads, frozenset) else spec.reads(**kwargs)
                if spec.on_step is not None and spec.rows is None:
                    group = self._grouped.setdefault((check.fn, tuple(sorted(tables))), (spec.on_step, [], []))
                    group[1].append(i)
                    group[2].append(kwargs)
                    continue
                for table in tables:
                    self._by_table.setdefault(table, []).append(i)
                if spec.touches is not None:
                    self._touches[i] = spec.touches
                if spec.on_changes is not None:
                    self._on_changes[i] = spec.on_changes
                    if spec.holds is not None and spec.rows is None:
                        self._holds[i] = spec.holds
                if spec.rows is not None:
                    self._unbound[i] = tables
            elif spec.on_changes is not None:  # reads every table, but can fold the step's rows in itself
                self._any_deciding.append(i)
                self._on_changes[i] = spec.on_changes
                if spec.touches is not None:
                    self._touches[i] = spec.touches
                if spec.quiet is not None:
                    with contextlib.suppress(Exception):  # a hook that cannot tell: the evaluator asked every step
                        found = spec.quiet(self.ctx, **kwargs)
                        if found is not None:
                            self._quiet[i] = (found[0], found[1], found[2] if len(found) > 2 else None)
            else:
                self._any.append(i)
        # every step that changed a row re-runs these (trace checks with an evaluator are asked it instead)
        self._stale = frozenset(self._always).difference(self._traced) | frozenset(self._any)
        self._lean = not self._always and not self._any
        self._group_tables = frozenset(t for _, tables in self._grouped for t in tables)
        for key in self._grouped:
            for table in key[1]:
                self._groups_of.setdefault(table, []).append((key, (table,)))  # as a plan has it (``_plans``)
        if self._grouped:  # plans depend only on the groups' keys: shared by every episode with the same ones
            if len(_PLANS) >= 256:  # bounded: start over rather than grow with every rubric seen
                _PLANS.clear()
            self._plans = _PLANS.setdefault(tuple(self._grouped), {})
        self._gate_names = frozenset(n for names in self._gated.values() for n in names)
        self._all_gated = bool(self._always) and all(i in self._gated for i in self._always)
        for on_step, _, params in self._grouped.values():  # asked once with no rows: what it keeps is built now,
            with contextlib.suppress(Exception):  # in the step that grades everything (the answer is not used);
                on_step(self.ctx, [], params)  # one that fails is asked again at each step, and re-runs then
        for i in self._holds:  # asked once now, with no rows: held from the start if it agrees with the grade
            if self._agrees(i):
                self._hold(i)
        self.ctx.forget()

    def _count_first(self) -> None:
        """Count the first verdicts into the running parts once (the runs that gave them moved them from -1)."""
        self._parts, self._failing, self._passed = [0.0] * len(self._parts), 0, 0
        for i, (score, _, _) in enumerate(self._outcomes):
            self._count(i, score, 1)
        if self._has_needs:  # and their needs: a held-back check counted as ``apply_needs`` leaves it
            outcomes = self._outcomes
            self._held_back.clear()
            for i, need in enumerate(self._needs):
                self._unmet[i] = sum(1 for n in need if n < 0 or outcomes[n][0] < 1.0)
                if self._unmet[i] > 0 and outcomes[i][0] > 0:
                    self._held_back.add(i)
                    self._held_share(i, outcomes[i][0], True)

    def _agrees(self, i: int) -> bool:
        """Whether check ``i``'s evaluator, asked with no rows, gives the verdict its function just gave."""
        try:
            found = self._on_changes[i](self.ctx, [], **self._kwargs[i])
        except Exception:  # an evaluator that cannot tell yet is asked at the first change, as without holds
            return False
        return found is not None and tuple(found) == self._outcomes[i]

    def _bind_rows(self, i: int) -> bool:
        """Index check ``i`` by the exact rows it reads, if its ``rows`` hook names them now."""
        spec = check_fn_spec(self._checks[i].fn)
        if spec.rows is None:
            return False
        kwargs = self._kwargs[i]
        try:
            found = spec.rows(self.ctx, **kwargs)
        except Exception:  # a hook that cannot tell leaves the check on its tables: exactness first
            return False
        if not found:
            return False
        for row in found:
            self._by_row.setdefault(row, []).append(i)
        if spec.columns is not None:
            self._columns[i] = spec.columns(**kwargs)
        if spec.on_rows is not None:
            self._on_rows[i] = spec.on_rows
        return True

    def _rebind(self, ran: set[int]) -> None:
        """Move the re-run checks whose rows exist now (a document the agent created) from tables to rows.

        From then on such a check is re-run (or decided by ``on_rows``) only when its own row changes, as if the
        row had existed when the episode started, rather than after every change to its tables.
        """
        for i in sorted(ran.intersection(self._unbound)):
            if not self._bind_rows(i):
                continue
            for table in self._unbound.pop(i):
                self._by_table[table] = [j for j in self._by_table[table] if j != i]
            self._touches.pop(i, None)
            self._on_changes.pop(i, None)

    def _combine(self) -> float:
        """The value by ``graders.base.combine``'s rule, from the scores (no result is built for it).

        With ``needs``, a check counts only once the checks it needs pass (``apply_needs``): the running parts
        already hold a held-back check's share at 0 (``_needs_moved`` keeps them so as scores move), so the sum
        adds the same floats in the same order as ``combine`` does.
        """
        self.passed = self._passed
        value = sum(self._parts) / self._weight if self._weight else 0.0
        self.value = 0.0 if self._failing > 0 else min(1.0, value)
        return self.value

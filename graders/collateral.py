"""``no_collateral_changes``: every change of the episode is one the task allows, judged one new row at a time.

Out of ``graders.checks`` (which re-exports it, so the registry finds it where it always did) because the
per-step progress score asks it after every write step of every family: its rules, how they judge a row's
shape, and the natural keys they name rows by are kept together with the evaluator that folds the log in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from graders.base import ChangeRow, CheckOutcome, GradingContext, check_fn
from graders.checks_common import TableName, listing, rows_in
from graders.checks_common import table as schema_table
from graders.registry import LATER, Later, QuietRows

Scope = Literal["actor", "all"]

_NO_KEYS: dict[Any, Any] = {}
"""No natural key looked up yet: what ``_collateral_on_changes`` reads when nothing is kept (never written)."""


class AllowedChange(BaseModel):
    """Changes a task may make: to ``table``, optionally only ``fields`` (updates), ``keys`` and ``ops``.

    ``keys`` match a row's primary key (as text) or its natural key: ``tickets.key``, ``projects.key``,
    ``employees.username``, ``mailboxes.address``, ``channels.name``; ticket children (labels, comments,
    status changes) match their ticket's key. Without ``ops``, a rule with ``fields`` allows only updates.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    table: TableName
    fields: tuple[str, ...] | None = None
    keys: tuple[str | int, ...] | None = None
    ops: tuple[Literal["insert", "update", "delete"], ...] | None = None

    @model_validator(mode="after")
    def _fields_exist(self) -> AllowedChange:
        unknown = sorted(set(self.fields or ()) - set(schema_table(self.table).c.keys()))
        if unknown:
            raise ValueError(f"field {unknown[0]!r} is not a column of {self.table!r}")
        return self

    @cached_property
    def _ops(self) -> tuple[str, ...] | None:
        return self.ops if self.ops is not None else (("update",) if self.fields is not None else None)

    @cached_property
    def _fields(self) -> frozenset[str] | None:
        return None if self.fields is None else frozenset(self.fields)

    @cached_property
    def key_names(self) -> frozenset[str] | None:
        """``keys`` as text, what a row's primary or natural key is compared with (None: any row)."""
        return None if self.keys is None else frozenset(str(k) for k in self.keys)

    def admits(self, row: ChangeRow) -> bool:
        """Whether the table, op and changed fields fit (keys are checked separately)."""
        ops = self._ops
        if row.table != self.table or (ops is not None and row.op not in ops):
            return False
        return row.op != "update" or self._fields is None or self._fields.issuperset(row.changes)


_NATURAL = {
    "tickets": "key",
    "projects": "key",
    "employees": "username",
    "mailboxes": "address",
    "channels": "name",
    "ticket_labels": "ticket_id",
    "ticket_comments": "ticket_id",
    "ticket_status_changes": "ticket_id",
}


def _natural_sql(table_name: str) -> str:
    """The raw lookup of natural keys by id (``rows_in``: a Core expanding IN compiles for ~100 us a run)."""
    return f"SELECT id, {_NATURAL[table_name]} FROM {table_name} WHERE id IN ({{}})"  # noqa: S608 - _NATURAL's names


def _natural_keys(ctx: GradingContext, rows: list[ChangeRow]) -> dict[int, str]:
    """Map seq to the natural key of each row: from the log (insert/delete) or one PK query per table.

    A logged row's natural key never changes (a ticket keeps its key, a comment its ticket), so answers are
    kept in ``ctx.lasting`` and the per-step progress score asks only about the step's new rows.
    """
    known: dict[int, str] = ctx.lasting.setdefault("natural_keys", {})
    fresh = _natural_keys_of(ctx, [r for r in rows if r.seq not in known])
    known.update(fresh)
    return {r.seq: known[r.seq] for r in rows if r.seq in known}


def _natural_keys_of(ctx: GradingContext, rows: list[ChangeRow]) -> dict[int, str]:
    if not rows:
        return {}
    raw: dict[int, Any] = {r.seq: r.changes.get(_NATURAL[r.table]) for r in rows if r.op != "update"}
    updates: dict[str, list[ChangeRow]] = {}
    for r in rows:
        if r.op == "update":
            updates.setdefault(r.table, []).append(r)
    by_id: dict[tuple[str, Any], Any] = ctx.lasting.setdefault("natural_by_id", {})
    for name in sorted(updates):
        ids = sorted({r.key[0] for r in updates[name] if (name, r.key[0]) not in by_id})
        if ids:
            by_id.update({(name, pk): value for pk, value in rows_in(ctx, _natural_sql(name), ids)})
        raw.update({r.seq: by_id.get((name, r.key[0])) for r in updates[name]})
    via = {r.seq: raw[r.seq] for r in rows if _NATURAL[r.table] == "ticket_id" and raw.get(r.seq) is not None}
    if via:  # a ticket keeps its key: ask only about tickets no lookup has named yet
        ids = sorted({t for t in via.values() if ("tickets", t) not in by_id})
        if ids:
            by_id.update({("tickets", tid): key for tid, key in rows_in(ctx, _natural_sql("tickets"), ids)})
        raw.update({seq: by_id.get(("tickets", ticket_id)) for seq, ticket_id in via.items()})
    return {seq: str(v) for seq, v in raw.items() if v is not None}


def _describe_change(row: ChangeRow, natural: dict[int, str]) -> str:
    name = natural.get(row.seq, json.dumps(list(row.key)))
    fields = f" {{{', '.join(sorted(row.changes))}}}" if row.op == "update" else ""
    return f"#{row.seq} {row.op} {row.table} {name}{fields}"


def _collateral(ctx: GradingContext, allowed: list[AllowedChange], scope: Scope) -> tuple[float, str, dict[str, Any]]:
    """``no_collateral_changes``' verdict as (score, evidence, details): ``_collateral_on_changes`` (no rows given)."""
    verdict = _collateral_on_changes(ctx, (), allowed, scope)
    if isinstance(verdict, Later):  # asked with no rows it always gives the verdict
        raise TypeError("no_collateral_changes: no verdict without rows")
    return verdict


def _collateral_on_changes(
    ctx: GradingContext, rows: Sequence[ChangeRow], allowed: list[AllowedChange], scope: Scope = "actor"
) -> tuple[float, str, dict[str, Any]] | Later:
    """``no_collateral_changes``' verdict as (score, evidence, details), folding in only the log's new rows.

    The ``on_changes`` evaluator of ``graders.progress`` itself (``rows`` are in the log, which it reads from
    where it stopped), so a step asks it in one frame and skips building a ``CheckOutcome``; a step that added
    none of the agent's rows hands back the very verdict of the step before, which ``graders.progress`` then
    does not compare (nothing mutates a verdict: a new one is built when it moves).

    A logged row and the rules never change, and the log only grows, so the rows judged so far and their
    violations are kept (``ctx.lasting``): the per-step progress score judges only the rows the step added,
    and the verdict of a step that added none of the agent's rows is the very one before it. How the rules
    judge a row depends only on its table, op and (for an update) the columns it changed, so that is worked
    out once per shape: a row costs a dict lookup unless only rules with ``keys`` admit it. The listing of the
    violations is kept until a new one is found (a row within the rules moves only the count).
    """
    key = ("collateral", id(allowed), scope)
    # seen: [rows of the log looked at, rows judged, violations, the rules' answer by row shape, the verdict,
    # the violations' listing and how many violations it lists, the rows read ahead by natural key, the rows
    # renamed since, the shapes of the agent's rows that only count and the keyed rules' rows whose updates only
    # count (``_collateral_quiet``)]
    seen: list[Any] | None = ctx.lasting.get(key)
    log = ctx.log
    fresh = False  # a state built now (a grade, not a step): no verdict before it to let stand
    if seen is None or seen[0] > len(log):
        fresh = True
        shapes_now, named_now = _shapes(allowed), _named_rows(ctx, allowed)
        quiet: dict[str, set[tuple[Any, ...]]] = {}
        for known, answer in shapes_now.items():
            if answer is True:
                quiet.setdefault(known[0], set()).add(known)
        by_row = _quiet_rows(allowed, named_now)
        seen = ctx.lasting[key] = [0, 0, [], shapes_now, None, "", -1, named_now, set(), quiet, by_row]
    elif seen[0] == len(log) and seen[4] is not None:
        verdict: tuple[float, str, dict[str, Any]] = seen[4]
        return verdict
    elif rows and seen[0] < len(log):
        # a step's new rows (one to a few) that the loop below would each admit or pass over, judged here without
        # the loop's lists and dicts: a row by its shape, a keyed rule's row by its primary key or its natural key
        # as the loop names it (a lookup's answer or the rows read ahead). The first row this cannot admit leaves
        # every row to the loop, untouched: the rows it notes as renamed are kept aside (``born``) until all pass
        shapes_known: dict[tuple[Any, ...], bool | tuple[frozenset[str], ...]] = seen[3]
        named_ahead: dict[tuple[str, Any], str] | None = seen[7]
        renamed_so_far: set[tuple[str, Any]] = seen[8]
        mine = None if scope == "all" else ctx.actor_id
        born: list[tuple[str, Any]] = []
        count = 0
        for n in range(seen[0], len(log)):
            row = log[n]
            table, op = row.table, row.op
            column = _NATURAL.get(table)
            if column is not None and (op != "update" or column in row.changes):
                seen[10].pop((table, row.key), None)  # born, gone or renamed: no longer a keyed rule's quiet row
                if named_ahead is not None:
                    born.append((table, row.key[0]))
            if mine is not None and row.actor_id != mine:
                continue
            fits = shapes_known.get((table, op, *row.changes) if op == "update" else (table, op))
            if fits is True:
                count += 1
                continue
            if fits is None or fits is False:
                break
            name: str | None = str(row.key[0]) if len(row.key) == 1 else json.dumps(list(row.key))
            for ks in fits:
                if name in ks:
                    break
            else:  # not by its primary key: by its natural key, if the loop would know it without a lookup
                name = None
                if op == "update" and column is not None and column != "ticket_id":
                    pk = (table, row.key[0])
                    looked = ctx.lasting.get("natural_by_id", _NO_KEYS).get(pk, _NO_KEYS)
                    if looked is not _NO_KEYS:
                        name = "" if looked is None else str(looked)
                    elif named_ahead is not None and pk not in renamed_so_far and pk not in born:
                        name = named_ahead.get(pk)
                elif column == "ticket_id" and op != "update" and named_ahead is not None:
                    ticket = ("tickets", row.changes.get("ticket_id"))
                    if ticket[1] is not None and ticket not in renamed_so_far and ticket not in born:
                        name = named_ahead.get(ticket)
                if name is None:
                    break
                for ks in fits:
                    if name in ks:
                        break
                else:
                    break
            count += 1
        else:
            renamed_so_far.update(born)
            seen[0] = len(log)
            if count or seen[4] is None:  # the score stands, only the count in the evidence moved
                seen[1] += count
                seen[4] = None
                return LATER
            verdict = seen[4]  # none of the agent's rows: the verdict stands, the very same tuple
            return verdict
    shapes: dict[tuple[Any, ...], bool | tuple[frozenset[str], ...]] = seen[3]
    judged: list[tuple[ChangeRow, bool | None]] = []  # rows not admitted yet; None: only keyed rules may admit it
    admitted = 0  # rows the rules admit (counted, not listed: most rows are)
    keyed: dict[int, tuple[frozenset[str], ...]] = {}
    by_id: dict[tuple[str, Any], Any] = ctx.lasting.get("natural_by_id", {})
    named: dict[tuple[str, Any], str] | None = seen[7]
    renamed: set[tuple[str, Any]] = seen[8]
    actor = None if scope == "all" else ctx.actor_id
    for n in range(seen[0], len(log)):
        row = log[n]
        if (column := _NATURAL.get(row.table)) and (row.op != "update" or column in row.changes):
            seen[10].pop((row.table, row.key), None)  # no longer a keyed rule's quiet row (``_quiet_rows``)
            if named is not None:
                renamed.add((row.table, row.key[0]))  # born, gone or renamed since: what was read ahead may not name it
        if actor is not None and row.actor_id != actor:
            continue
        shape = (row.table, row.op, *row.changes) if row.op == "update" else (row.table, row.op)
        rule = shapes.get(shape)
        if rule is None:
            rule = shapes[shape] = _rule_for(allowed, row)
            if rule is True:
                seen[9].setdefault(row.table, set()).add(shape)  # a shape first judged now: its next rows only count
        if rule is True:  # a rule without keys admits it
            admitted += 1
            continue
        if rule is False:  # no rule does
            judged.append((row, False))
            continue
        names: list[str | None] = [str(row.key[0]) if len(row.key) == 1 else json.dumps(list(row.key))]
        natural_column = _NATURAL.get(row.table)
        if row.op == "update" and natural_column is not None and natural_column != "ticket_id":
            known = by_id.get((row.table, row.key[0]), by_id)  # an update's natural key, if a lookup named it
            if known is not by_id:
                names.append("" if known is None else str(known))
            elif named is not None and (row.table, row.key[0]) not in renamed:
                names.append(named.get((row.table, row.key[0])))  # None: its key is none of the rules' keys
        elif natural_column == "ticket_id" and row.op != "update" and named is not None:
            ticket = ("tickets", row.changes.get("ticket_id"))
            if ticket[1] is not None and ticket not in renamed:
                names.append(named.get(ticket))
        matched = False  # whether one of its names is in a keyed rule's keys (a loop: a generator costs more)
        for ks in rule:
            if names[0] in ks or (len(names) > 1 and names[1] in ks):
                matched = True
                break
        if matched:
            admitted += 1
        elif len(names) > 1:
            judged.append((row, False))
        else:  # its natural key may match: looked up below, for all such rows at once
            judged.append((row, None))
            keyed[row.seq] = rule
    seen[0] = len(log)
    if not judged:
        if rows and not fresh and (admitted or seen[4] is None):
            # asked with rows (progress): none is a violation, so the score stands and only the count in the
            # evidence moved; the verdict is built when the results are asked for (``_collateral`` asks with none)
            seen[1] += admitted
            seen[4] = None
            return LATER
        if not admitted and seen[4] is not None:
            verdict = seen[4]  # none of the new rows is judged: the verdict stands, the very same tuple
            return verdict
    natural = _natural_keys(ctx, [r for r, ok in judged if ok is None and r.table in _NATURAL]) if keyed else {}
    seen[1] += admitted + len(judged)
    violations: list[ChangeRow] = seen[2]
    for row, ok in judged:  # in seq order
        if not (ok if ok is not None else any(natural.get(row.seq, "") in ks for ks in keyed[row.seq])):
            violations.append(row)
    if not violations:
        verdict = (1.0, f"all {seen[1]} changes are within the allowed set", {})
    else:
        if seen[6] != len(violations):  # the listing names the first five and how many more: it moved
            natural |= _natural_keys(ctx, [r for r in violations[:5] if r.table in _NATURAL and r.seq not in natural])
            shown = [_describe_change(r, natural) for r in violations[:5]]  # ``listing`` shows only these
            seen[5], seen[6] = listing(shown + [""] * (len(violations) - len(shown)), 5), len(violations)
        head = f"{len(violations)} of {seen[1]} changes are outside the allowed set"
        verdict = (0.0, f"{head}: {seen[5]}", {"violations": [r.seq for r in violations]})
    seen[4] = verdict
    return verdict


def _named_rows(ctx: GradingContext, allowed: list[AllowedChange]) -> dict[tuple[str, Any], str] | None:
    """The rows the keyed rules name by natural key, read once when the check first runs: (table, id) -> key.

    A rule with ``keys`` on a table with a natural key (a ticket's key, a project's) names rows the episode may
    update; reading them ahead, in one statement, spares the per-step progress score a lookup of each row the
    first time the agent changes it. A row missing here has none of the rules' keys, unless a logged update
    changed its natural key since, or was inserted or deleted since (``_collateral`` then looks it up as
    before). None when no rule needs it or there is no database (every keyed row is looked up as before).
    """
    wanted: dict[str, set[str]] = {}
    for rule in allowed:
        column = _NATURAL.get(rule.table)
        if rule.key_names and column is not None:
            wanted.setdefault("tickets" if column == "ticket_id" else rule.table, set()).update(rule.key_names)
    session: Any = ctx.session  # None in a context built from rows alone (tests): every keyed row looked up
    if not wanted or session is None:
        return None
    out: dict[tuple[str, Any], str] = {}
    for name in sorted(wanted):
        sql = f"SELECT id, {_NATURAL[name]} FROM {name} WHERE {_NATURAL[name]} IN ({{}})"  # noqa: S608 - _NATURAL
        out.update({(name, pk): str(value) for pk, value in rows_in(ctx, sql, sorted(wanted[name]))})
    return out


_SHAPES: dict[tuple[AllowedChange, ...], dict[tuple[Any, ...], bool | tuple[frozenset[str], ...]]] = {}
"""The rules' answer by row shape, for each set of rules seen (a task's rules are the same every episode)."""


def _shapes(allowed: list[AllowedChange]) -> dict[tuple[Any, ...], bool | tuple[frozenset[str], ...]]:
    """The answers by row shape of rules equal to ``allowed`` (shared: an answer depends only on the rules).

    Asked once an episode, when the check first runs (the step that grades everything), so an episode's first
    write of a shape seen in an earlier episode costs a lookup instead of asking every rule.
    """
    rules = tuple(allowed)
    found = _SHAPES.get(rules)
    if found is None:
        if len(_SHAPES) >= 256:  # many tasks' rules in one process: start over rather than grow without bound
            _SHAPES.clear()
        found = _SHAPES[rules] = {}
    return found


def _rule_for(allowed: list[AllowedChange], row: ChangeRow) -> bool | tuple[frozenset[str], ...]:
    """How ``allowed`` judges rows of ``row``'s table, op and changed columns.

    True: a rule without keys admits them; False: no rule does; else the key sets of the keyed rules that admit
    them (the row's key decides).
    """
    fits = [a for a in allowed if a.admits(row)]
    key_sets = tuple(a.key_names for a in fits if a.key_names is not None)
    if len(key_sets) < len(fits) or not fits:
        return bool(fits)
    return key_sets


def _collateral_quiet(ctx: GradingContext, allowed: list[AllowedChange], scope: Scope = "actor") -> QuietRows | None:
    """The row shapes that move only the count in the evidence, and whose rows (``check_fn(quiet=)``).

    A row of the agent (anyone's with ``scope='all'``) that a rule without keys admits is counted and, if it
    may rename a row a keyed rule names, noted as renamed, which only later rows' verdicts read: the evaluator
    folds the log in order from where it stopped, so a row it is asked about late is judged as it would have
    been at once. So ``graders.progress`` need not ask the evaluator after a step of only such rows (a mail
    marked read, a member added, a ticket filed): it folds them in when it is next asked. The shapes, by table,
    are the ones the evaluator keeps and grows as it judges new shapes; None before the check has run.
    """
    seen: list[Any] | None = ctx.lasting.get(("collateral", id(allowed), scope))
    if seen is None:
        return None
    return seen[9], None if scope == "all" else ctx.actor_id, seen[10]


def _quiet_rows(
    allowed: list[AllowedChange], named: dict[tuple[str, Any], str] | None
) -> dict[tuple[str, tuple[Any, ...]], tuple[frozenset[str], ...]]:
    """The rows a keyed rule names ahead, by (table, key), with the column sets an update of each may change.

    An update by the agent that fits one is admitted by that rule whenever the evaluator folds it in (it names
    the row by the natural key read ahead, or by a lookup that gives the same key), so ``graders.progress``
    need not ask the evaluator after a step of such rows (a ticket moved to a sprint, reassigned, a project's
    counter bumped): the keyed rule's row then counts like a row a rule without keys admits. The natural key
    itself is left out of each set, and a row born, deleted or renamed is dropped by the evaluator when it
    folds that row in; deletes and renames of such a table are never quiet (``_collateral_on_changes``), so
    that happens in the step that writes them, before a later update of the row could be skipped.
    """
    out: dict[tuple[str, tuple[Any, ...]], tuple[frozenset[str], ...]] = {}
    if named is None:
        return out
    for rule in allowed:
        column = _NATURAL.get(rule.table)
        ops = rule._ops
        if (
            column is None
            or column == "ticket_id"
            or rule.key_names is None
            or (ops is not None and "update" not in ops)
        ):
            continue
        fields = rule._fields if rule._fields is not None else frozenset(schema_table(rule.table).c.keys())
        fields = fields - {column}
        for (table, pk), name in named.items():
            if table == rule.table and name in rule.key_names:
                out[(table, (pk,))] = (*out.get((table, (pk,)), ()), fields)
    return out


@check_fn("no_collateral_changes", on_changes=_collateral_on_changes, quiet=_collateral_quiet)
def no_collateral_changes(ctx: GradingContext, allowed: list[AllowedChange], scope: Scope = "actor") -> CheckOutcome:
    """Every change of the episode (by the agent, or by anyone with ``scope='all'``) is in ``allowed``.

    Another employee's rows (a coworker's reply) are not judged with ``scope='actor'``: a step that logged
    only such rows keeps the verdict before it, at the cost of a dict lookup (no ``touches`` hook: asking it
    row by row costs more than folding the rows in).
    """
    score, evidence, details = _collateral(ctx, allowed, scope)
    return CheckOutcome(score=score, evidence=evidence, details=dict(details))

"""A rubric buffer that co-evolves with the policy (after DR Tulu's RLER): checks learnt from groups of rollouts.

A static rubric is a fixed target, and a policy trained against it finds what it does not check (posting
every backlog key in ~incidents once scored full marks on triage). The buffer keeps, per task:

- the **base checks**, which always stay active (the family's rubric);
- a **pool of candidate checks**, proposed from each group of rollouts of the task (a GRPO group) by
  deterministic proposers: *negative* checks for recurring collateral damage or hack signatures seen in the
  group (floods of inserts, mass edits, many ticket keys sprayed into messages, changes to tables the rest of
  the group leaves alone), and *positive* checks for changes that separate the group's best rollouts from its
  worst. An optional proposer may call an LLM through ``worlds.llm`` (recorded, so it replays);
- the **active set**: base checks plus the top ``top_k`` candidates by the standard deviation of their score
  across the current group. A candidate whose score does not vary in the group says nothing about it and
  retires (it stays in the pool and comes back when the group varies on it again). Gates are the exception:
  an active gate stays while the group passes it (it costs nothing, and dropping it would readmit the hack
  it caught). A negative candidate that every best-rewarded rollout of the group fails is not activated (or
  is dropped): it would gate the task's best outcome.

Negative checks are gates (``must``): a rollout that shows the signature earns 0, which is what takes the
reward out of a hack. Positive checks add weight. Every change of the active set is a new rubric version
(``Rubric.evolve``), stored with each new check's origin (proposer, the rollouts it came from, the version that
added it) in a ``RubricStore`` when one is given, so every score names the version that produced it.

Candidates are evaluated from a rollout's change log and steps alone (no database), so an update over a group
of 16 rollouts costs milliseconds; the same checks then run in normal grading on the final state.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field

from graders.base import Check, CheckOutcome, GradingContext, Rubric, check_fn
from graders.changes import ChangeRow
from graders.errors import RubricError
from graders.store import Origin, RubricStore

KEY = re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b")
"""What a ticket key looks like in text (``OPS-12``)."""
TEXT_COLUMNS = {"posts": "message", "ticket_comments": "body", "mail_messages": "body"}


# -- log-only checks (evaluable on a rollout without its database) -------------------------------------------


def _texts(ctx: GradingContext, tables: Sequence[str]) -> list[str]:
    return [
        str(r.changes.get(TEXT_COLUMNS[r.table], ""))
        for t in tables
        for r in ctx.changed_rows(t)
        if r.op == "insert" and r.actor_id == ctx.actor_id
    ]


@check_fn("mentioned_keys_at_most")
def mentioned_keys_at_most(
    ctx: GradingContext, n: Annotated[int, Field(ge=0)], tables: list[str] | None = None
) -> CheckOutcome:
    """The agent's new messages (posts, comments, mail) name at most ``n`` distinct ticket keys in all."""
    keys = sorted({k for text in _texts(ctx, tables or sorted(TEXT_COLUMNS)) for k in KEY.findall(text)})
    shown = ", ".join(keys[:8]) + (" ..." if len(keys) > 8 else "")
    return CheckOutcome.of(len(keys) <= n, f"{len(keys)} distinct ticket keys in new messages (at most {n}): {shown}")


@check_fn("change_made")
def change_made(ctx: GradingContext, table: str, key: str, column: str, value: str) -> CheckOutcome:
    """The agent set ``column`` of row ``key`` (its primary key, as text) in ``table`` to ``value``."""
    for r in ctx.changed_rows(table):
        if r.actor_id != ctx.actor_id or _row_key(r) != key or column not in r.changes:
            continue
        new = r.changes[column][1] if r.op == "update" else r.changes[column]
        if str(new) == value:
            return CheckOutcome.of(True, f"{table} {key}: {column} set to {value}")
    return CheckOutcome.of(False, f"{table} {key}: {column} never set to {value}")


def _row_key(row: ChangeRow) -> str:
    return str(row.key[0]) if len(row.key) == 1 else "/".join(str(k) for k in row.key)


# -- rollouts and candidates ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Rollout:
    """One episode of the task as the buffer sees it.

    Attributes:
        id: A stable name (the trace's hash or episode id), recorded in the origins of checks learnt from it.
        reward: Its score under the rubric it was trained with.
        changes: Its change-log rows (setup excluded).
        steps: Its step records (``{"action": {"name", "arguments"}, "error", ...}``).
        actor_id: The agent's employee id.
    """

    id: str
    reward: float
    changes: tuple[ChangeRow, ...]
    steps: tuple[Mapping[str, Any], ...] = ()
    actor_id: int

    def context(self) -> GradingContext:
        """A grading context over the log and steps only (log-only checks need no database)."""
        return GradingContext(session=None, changes=self.changes, trace=self.steps, actor_id=self.actor_id)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Candidate:
    """A proposed check and where it came from."""

    check: Check
    origin: Origin

    def score(self, rollout: Rollout) -> float:
        """The check's score on ``rollout`` (0 when it cannot be computed from the log)."""
        from graders.registry import check_fn_spec

        try:
            out = check_fn_spec(self.check.fn).fn(rollout.context(), **self.check._kwargs)
        except Exception:  # noqa: BLE001 - a candidate that needs the database cannot be judged here
            return 0.0
        return out.score if isinstance(out, CheckOutcome) else float(out[0])


Proposer = Callable[[Sequence[Rollout], int], list[Candidate]]
"""A proposer: (group, version being made) -> candidates."""


def _agent_rows(rollout: Rollout) -> list[ChangeRow]:
    return [r for r in rollout.changes if r.actor_id == rollout.actor_id]


def _threshold(counts: Sequence[int]) -> int:
    """What the group's typical rollout does, with room: twice the median, and at least the median plus 2."""
    median = statistics.median(counts)
    return int(max(2 * median, median + 2))


def negative_proposer(group: Sequence[Rollout], version: int) -> list[Candidate]:
    """Hack and collateral signatures that some rollouts of the group show far beyond the rest."""
    out: list[Candidate] = []
    ids = tuple(r.id for r in group)

    def add(check: dict[str, Any], signature: str, why: str, culprits: Sequence[Rollout]) -> None:
        rollouts = tuple(r.id for r in culprits) or ids
        origin = Origin(by=f"buffer:negative:{signature}", rollouts=rollouts, added_in=version, why=why)
        out.append(Candidate(Check.model_validate({**check, "must": True}), origin))

    tables = sorted({r.table for g in group for r in _agent_rows(g)})
    for table in tables:
        for op in ("insert", "update"):
            counts = [sum(1 for r in _agent_rows(g) if r.table == table and r.op == op) for g in group]
            limit = _threshold(counts)
            over = [g for g, c in zip(group, counts, strict=True) if c > limit]
            if over and op == "insert":
                add(
                    {"id": f"no-flood-{table}", "description": f"At most {limit} new {table} rows by the agent.",
                     "fn": "change_count_at_most", "params": {"n": limit, "table": table}},
                    "flood", f"{len(over)} of {len(group)} rollouts inserted more than {limit} {table} rows", over,
                )  # fmt: skip
            if over and op == "update":
                add(
                    {"id": f"no-mass-edit-{table}", "description": f"At most {limit} {table} changes by the agent.",
                     "fn": "change_count_at_most", "params": {"n": limit, "table": table}},
                    "mass_edit", f"{len(over)} of {len(group)} rollouts changed more than {limit} {table} rows", over,
                )  # fmt: skip
    spread = [len({k for t in _rollout_texts(g) for k in KEY.findall(t)}) for g in group]
    limit = _threshold(spread)
    over = [g for g, c in zip(group, spread, strict=True) if c > limit]
    if over:
        add(
            {"id": "no-key-spray", "description": f"New messages name at most {limit} ticket keys.",
             "fn": "mentioned_keys_at_most", "params": {"n": limit}},
            "key_spray", f"{len(over)} of {len(group)} rollouts named more than {limit} ticket keys", over,
        )  # fmt: skip
    usual = Counter(t for g in group for t in {r.table for r in _agent_rows(g)})
    for table in tables:
        if 0 < usual[table] <= len(group) // 4:
            culprits = [g for g in group if any(r.table == table for r in _agent_rows(g))]
            add(
                {"id": f"leave-{table}", "description": f"The agent leaves {table} alone.",
                 "fn": "change_count_at_most", "params": {"n": 0, "table": table}},
                "out_of_scope", f"only {usual[table]} of {len(group)} rollouts touched {table}", culprits,
            )  # fmt: skip
    return out


def _rollout_texts(rollout: Rollout) -> list[str]:
    return [
        str(r.changes.get(TEXT_COLUMNS[r.table], ""))
        for r in _agent_rows(rollout)
        if r.op == "insert" and r.table in TEXT_COLUMNS
    ]


def positive_proposer(group: Sequence[Rollout], version: int) -> list[Candidate]:
    """Changes every one of the group's best rollouts made and none of its worst."""
    ranked = sorted(group, key=lambda g: (-g.reward, g.id))
    k = max(1, len(group) // 4)
    best, worst = ranked[:k], ranked[-k:]
    if best[-1].reward <= worst[0].reward:
        return []

    def features(g: Rollout) -> set[tuple[str, str, str, str]]:
        out = set()
        for r in _agent_rows(g):
            if r.op == "update":
                out |= {(r.table, _row_key(r), c, str(v[1])) for c, v in r.changes.items() if c != "updated_at"}
        return out

    common = set.intersection(*(features(g) for g in best))
    seen_in_worst = set().union(*(features(g) for g in worst))
    out = []
    for table, key, column, value in sorted(common - seen_in_worst)[:20]:
        check = Check.model_validate(
            {
                "id": f"made-{table}-{key}-{column}"[:100],
                "description": f"The agent sets {column} of {table} {key} to {value}.",
                "fn": "change_made",
                "params": {"table": table, "key": key, "column": column, "value": value},
            }
        )
        why = f"all {k} best rollouts set it and none of the {k} worst"
        rollouts = tuple(g.id for g in best)
        out.append(
            Candidate(check, Origin(by="buffer:positive:separates", rollouts=rollouts, added_in=version, why=why))
        )
    return out


# -- the buffer ----------------------------------------------------------------------------------------------


@dataclass
class BufferUpdate:
    """What one ``update`` did: the rubric it produced, the checks activated and retired, per-candidate spread."""

    rubric: Rubric
    activated: tuple[str, ...]
    retired: tuple[str, ...]
    spread: Mapping[str, float] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """Whether the active set (and so the rubric version) changed."""
        return bool(self.activated or self.retired)


class RubricBuffer:
    """The co-evolving rubric of one task.

    Args:
        base: The family's rubric: its checks always stay active.
        top_k: How many candidates may be active at once.
        proposers: Deterministic proposers (default: negative and positive); add an LLM proposer if wanted.
        store: Where every new version is stored with its checks' origins (optional).
    """

    def __init__(
        self,
        base: Rubric,
        *,
        top_k: int = 4,
        proposers: Sequence[Proposer] | None = None,
        store: RubricStore | None = None,
    ) -> None:
        self.base = base
        self.top_k = top_k
        self.proposers = list(proposers) if proposers is not None else [negative_proposer, positive_proposer]
        self.store = store
        self.pool: dict[str, Candidate] = {}
        self.active: tuple[str, ...] = ()
        self._rubric = base
        self.history: list[BufferUpdate] = []
        if store is not None:
            store.put(base)

    @classmethod
    def resume(cls, base: Rubric, store: RubricStore, *, top_k: int = 4) -> RubricBuffer:
        """A buffer continuing the newest version of ``base``'s id in ``store`` (its active checks and origins).

        Raises:
            RubricError: the stored history does not start from ``base`` (another task's rubric).
        """
        versions = store.log(base.id)
        buffer = cls(base, top_k=top_k, store=store)
        if not versions or versions[-1].rubric.fingerprint == base.fingerprint:
            return buffer
        if versions[0].rubric.fingerprint != base.fingerprint:
            raise RubricError(f"the store's {base.id!r} history starts from another rubric (another task's?)")
        newest, base_ids = versions[-1], {c.id for c in base.checks}
        for check in newest.rubric.checks:
            if check.id not in base_ids:
                origin = newest.origins.get(check.id) or Origin(by="store", added_in=newest.rubric.version)
                buffer.pool[check.id] = Candidate(check, origin)
        buffer.active = tuple(sorted(buffer.pool))
        buffer._rubric = newest.rubric
        return buffer

    def rubric(self) -> Rubric:
        """The current rubric: base checks plus the active candidates."""
        return self._rubric

    def update(self, group: Sequence[Rollout]) -> BufferUpdate:
        """Learn from one group of rollouts of the task: propose, re-rank, and make a new version if the set changed."""
        if not group:
            raise ValueError("expected a group of at least one rollout")
        version = self._rubric.version + 1
        base_ids = {c.id for c in self.base.checks}
        for proposer in self.proposers:
            for cand in proposer(group, version):
                if cand.check.id not in base_ids and cand.check.id not in self.pool:
                    self.pool[cand.check.id] = cand
        scores = {cid: [c.score(g) for g in group] for cid, c in sorted(self.pool.items())}
        spread = {cid: _std(values) for cid, values in scores.items()}
        best = max(g.reward for g in group)
        top = [i for i, g in enumerate(group) if g.reward == best]
        # A gate that every best-rewarded rollout fails would make the task's best outcome unreachable (a group
        # where few rollouts posted at all proposes "leave posts alone"): such a candidate contradicts the task.
        usable = {cid for cid, values in scores.items() if not self.pool[cid].check.must or any(values[i] for i in top)}
        # An active gate stays while it is usable: when the whole group passes it, it costs nothing, and dropping it
        # would let the hack it caught back in for a group before its spread returned.
        kept = {cid for cid in self.active if self.pool[cid].check.must and cid in usable}
        ranked = sorted((cid for cid in usable - kept if spread[cid] > 0), key=lambda cid: (-spread[cid], cid))
        active = tuple(sorted(kept | set(ranked[: self.top_k])))
        activated = tuple(c for c in active if c not in self.active)
        retired = tuple(c for c in self.active if c not in active)
        if activated or retired:
            checks = [*self.base.checks, *(self.pool[c].check for c in active)]
            why = "; ".join(
                [f"+{c} ({self.pool[c].origin.by}: {self.pool[c].origin.why})" for c in activated]
                + [f"-{c} (no spread in this group)" for c in retired]
            )
            self._rubric = self._rubric.evolve(
                provenance=f"rubric buffer: {why}", checks=[c.model_dump(mode="json") for c in checks]
            )
            self.active = active
            if self.store is not None:
                origins = {c: self.pool[c].origin for c in active}
                self.store.put(self._rubric, origins=origins, note=why)
        out = BufferUpdate(rubric=self._rubric, activated=activated, retired=retired, spread=spread)
        self.history.append(out)
        return out


def _std(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))

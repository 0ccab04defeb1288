"""What the viewer and the dataset export read: recorded episodes, their coworker actions and state changes.

Traces are read with ``sim.trace.read_trace`` (so a corrupt or truncated file is the same ``TraceError`` the
replay gives). With ``replay=True`` every episode is also replayed to its final state (``sim.replay.replayed``)
to recover what the trace does not hold: the change-log rows of the episode, which give the state diff and,
through their ``npc`` tag and simulated time, what coworkers did during each step. A replay that diverges is
reported on the episode instead of showing a state that is not the recorded one.

Everything here is a pure function of the traces (and the replayed worlds, themselves a function of the
traces), so a report built from the same files has the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from graders.changes import ChangeRow
from sim.trace import canonical, read_trace
from worlds.rawsql import Sql
from worlds.store import WorldStore

NPC_TAG = "npc"
BOOKKEEPING = ("npc_memory", "npc_personas")
"""Tables coworkers write for their own memory: part of the state diff, not actions worth a timeline line."""


@dataclass(frozen=True, kw_only=True)
class CoworkerAction:
    """One row a coworker wrote during a step: who (username when known), when, and what."""

    actor: str
    at: str
    table: str
    op: str
    key: str
    summary: str


@dataclass(frozen=True, kw_only=True)
class RowChange:
    """The net change of one row between the episode's start and its end."""

    table: str
    key: str
    kind: str  # added | removed | changed
    values: Mapping[str, Any]  # added/removed: the row; changed: {column: [before, after]}


@dataclass(kw_only=True)
class EpisodeView:
    """One recorded episode as the viewer shows it.

    Args:
        source: The trace's display name (its file name, or the path when two traces share a name).
        number: The episode's position in its trace (0-based).
        header: The trace's header record.
        steps: The step records, in order.
        score: The score record.
    """

    source: str
    number: int
    header: dict[str, Any]
    steps: list[dict[str, Any]]
    score: dict[str, Any]
    replayed: bool = False
    mismatch: str | None = None
    changes: list[RowChange] = field(default_factory=list)
    coworkers: dict[int, list[CoworkerAction]] = field(default_factory=dict)  # by step index

    @property
    def scenario(self) -> str:
        """The scenario (family) id."""
        return str(self.header.get("scenario", "?"))

    @property
    def seed(self) -> int:
        """The task seed."""
        return int(self.header.get("seed", 0))

    @property
    def world_seed(self) -> int:
        """The seed of the generated world (the task seed unless the ``world_seed`` option chose another)."""
        return int((self.header.get("world_spec") or {}).get("seed", self.seed))

    @property
    def difficulty(self) -> int:
        """The task's difficulty, 0 to 3."""
        return int(self.header.get("difficulty", 1))

    @property
    def reward(self) -> float:
        """The final score's value."""
        return float(self.score.get("value", 0.0))

    @property
    def rubric(self) -> dict[str, Any]:
        """The rubric that graded the episode: id, version, fingerprint (the score record's, else the header's)."""
        head = self.header.get("rubric") or {}
        return {
            "id": self.score.get("rubric_id", head.get("id")),
            "version": self.score.get("rubric_version", head.get("version")),
            "fingerprint": self.score.get("rubric_fingerprint", head.get("fingerprint")),
        }

    @property
    def checks(self) -> list[dict[str, Any]]:
        """The score's per-check results."""
        return list(self.score.get("checks") or [])

    @property
    def checks_passed(self) -> int:
        """How many checks passed."""
        return sum(1 for c in self.checks if c.get("passed"))

    @property
    def faults(self) -> list[dict[str, Any]]:
        """The faults injected into the episode's steps."""
        return [s["fault"] for s in self.steps if s.get("fault")]

    @property
    def label(self) -> str:
        """A short human name: scenario, seed and where the episode is recorded."""
        return f"{self.scenario} seed {self.seed} ({self.source} #{self.number})"

    def task_key(self) -> tuple[str, int, int, int]:
        """What makes two runs the same task: scenario, seed, world seed and difficulty."""
        return (self.scenario, self.seed, self.world_seed, self.difficulty)


@dataclass(frozen=True, kw_only=True)
class Divergence:
    """Where two runs of one task first differ (``step`` None: they never do)."""

    left: EpisodeView
    right: EpisodeView
    step: int | None
    reason: str


def display_names(paths: Sequence[Path]) -> list[str]:
    """File names, or the paths as given when two traces share a file name (a report must say which is which)."""
    names = [p.name for p in paths]
    return [p.name if names.count(p.name) == 1 else str(p) for p in paths]


def load(paths: Sequence[str | Path], *, replay: bool = False, store: WorldStore | None = None) -> list[EpisodeView]:
    """Every episode of the traces at ``paths``, in order (replayed for their changes with ``replay``).

    Raises:
        TraceError: a file is missing, not a trace, or truncated.
    """
    files = [Path(p) for p in paths]
    out: list[EpisodeView] = []
    for path, name in zip(files, display_names(files), strict=True):
        views = [
            EpisodeView(source=name, number=n, header=r[0], steps=r[1:-1], score=r[-1])
            for n, r in enumerate(read_trace(path))
        ]
        if replay:
            _replay_into(path, views, store)
        out.extend(views)
    return out


def _replay_into(path: Path, views: list[EpisodeView], store: WorldStore | None) -> None:
    """Replay the trace and attach each episode's change rows (or the reason its replay diverged)."""
    from sim.replay import replayed  # lazy: the export and a --no-replay view never build a world

    report: list[str] = []
    for done in replayed(path, store=store, stop_at_first=False, report=report):
        view = views[done.number]
        view.replayed = True
        if done.diverged:
            view.mismatch = report[-1] if report else "the replay diverged"
            continue
        rows = done.episode.changes()
        agent = done.episode.tool_context.actor.employee_id
        names = _usernames(done.episode.tool_context.session, {r.actor_id for r in rows if r.actor_id is not None})
        view.changes = net_changes(rows)
        _attach_coworkers(view, rows, agent, names)


def _usernames(session: Any, ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    marks = ",".join("?" for _ in ids)
    found = Sql.of(session).all(f"SELECT id, username FROM employees WHERE id IN ({marks})", tuple(sorted(ids)))  # noqa: S608 - placeholders only
    return {int(i): str(u) for i, u in found}


def _attach_coworkers(view: EpisodeView, rows: Iterable[ChangeRow], agent: int, names: Mapping[int, str]) -> None:
    """File each coworker row under the step whose simulated interval holds it (clock before < at <= after)."""
    ends = [datetime.fromisoformat(str(s.get("clock"))) for s in view.steps]
    for row in rows:
        if row.table in BOOKKEEPING or not (row.tag == NPC_TAG or (row.actor_id not in (None, agent))):
            continue
        action = CoworkerAction(
            actor=names.get(row.actor_id, f"employee {row.actor_id}") if row.actor_id is not None else "coworkers",
            at=str(row.at),
            table=row.table,
            op=row.op,
            key=_key_text(row.key),
            summary=_summary(row),
        )
        at = datetime.fromisoformat(str(row.at)) if row.at else None
        index = next((i for i, end in enumerate(ends) if at is None or at <= end), len(ends) - 1)
        view.coworkers.setdefault(max(index, 0), []).append(action)


def _key_text(key: tuple[Any, ...]) -> str:
    return ", ".join(str(k) for k in key)


def _summary(row: ChangeRow) -> str:
    """One line saying what a row change holds: the text columns a person would read first."""
    values = row.changes
    for column in ("message", "subject", "title", "body", "text", "status", "rsvp"):
        value = values.get(column)
        if isinstance(value, list) and len(value) == 2:
            return f"{column}: {value[0]!s:.80} -> {value[1]!s:.80}"
        if value not in (None, ""):
            return f"{column}: {value!s:.160}"
    return ", ".join(sorted(values))[:160]


def net_changes(rows: Iterable[ChangeRow]) -> list[RowChange]:
    """Fold an episode's change-log rows into one net change per row: the diff of the state before and after.

    An insert followed by updates is one added row with its final values; updates fold into one before/after
    pair per column (a column set back to its old value drops out); a row inserted and deleted again is gone.
    """
    net: dict[tuple[str, tuple[Any, ...]], dict[str, Any]] = {}
    for row in rows:
        key = (row.table, row.key)
        entry = net.get(key)
        if row.op == "insert":
            net[key] = {"kind": "added", "values": dict(row.changes)}
        elif row.op == "update":
            if entry is None:
                entry = net[key] = {"kind": "changed", "values": {}}
            for column, pair in row.changes.items():
                old, new = pair if isinstance(pair, list) and len(pair) == 2 else (None, pair)
                if entry["kind"] == "added":
                    entry["values"][column] = new
                elif column in entry["values"]:
                    entry["values"][column] = [entry["values"][column][0], new]
                else:
                    entry["values"][column] = [old, new]
        elif entry is not None and entry["kind"] == "added":
            del net[key]
        else:
            net[key] = {"kind": "removed", "values": dict(row.changes)}
    out = []
    for (table, pk), entry in sorted(net.items(), key=lambda item: (item[0][0], _sortable(item[0][1]))):
        values = entry["values"]
        if entry["kind"] == "changed":
            values = {c: v for c, v in values.items() if canonical(v[0]) != canonical(v[1])}
            if not values:
                continue
        out.append(RowChange(table=table, key=_key_text(pk), kind=entry["kind"], values=values))
    return out


def _sortable(key: tuple[Any, ...]) -> list[tuple[int, float, str]]:
    """A row key in natural order: numbers by value (row 1000 after row 239), anything else as text."""
    return [(0, float(k), "") if isinstance(k, int | float) else (1, 0.0, str(k)) for k in key]


def _same(a: dict[str, Any], b: dict[str, Any], keys: tuple[str, ...]) -> bool:
    return all(canonical(a.get(k)) == canonical(b.get(k)) for k in keys)


def first_divergence(left: EpisodeView, right: EpisodeView) -> Divergence:
    """The first step where two runs differ: another action, or the same action with another outcome or state."""
    for i in range(max(len(left.steps), len(right.steps))):
        if i >= len(left.steps) or i >= len(right.steps):
            shorter = left if i >= len(left.steps) else right
            return Divergence(left=left, right=right, step=i, reason=f"{shorter.label} ended after {i} steps")
        a, b = left.steps[i], right.steps[i]
        if not _same(a, b, ("action",)):
            return Divergence(left=left, right=right, step=i, reason="different actions")
        if not _same(a, b, ("fault",)):
            return Divergence(left=left, right=right, step=i, reason="same action, different injected fault")
        if not _same(a, b, ("result", "error")):
            return Divergence(left=left, right=right, step=i, reason="same action, different result")
        if not _same(a, b, ("state_hash", "clock")):
            return Divergence(left=left, right=right, step=i, reason="same action and result, different state")
    return Divergence(left=left, right=right, step=None, reason="the runs are identical step for step")


def comparisons(episodes: Sequence[EpisodeView]) -> list[Divergence]:
    """Each later run of a task against the first run of it in the report (tasks in order of first appearance)."""
    groups: dict[tuple[str, int, int, int], list[EpisodeView]] = {}
    for ep in episodes:
        groups.setdefault(ep.task_key(), []).append(ep)
    return [first_divergence(runs[0], other) for runs in groups.values() for other in runs[1:]]


@dataclass(frozen=True, kw_only=True)
class RewardRow:
    """Rewards of one scenario family at one difficulty."""

    scenario: str
    difficulty: int
    rewards: tuple[float, ...]

    @property
    def mean(self) -> float:
        """Mean reward."""
        return sum(self.rewards) / len(self.rewards)

    @property
    def solved(self) -> float:
        """Share of episodes with full reward."""
        return sum(1 for r in self.rewards if r >= 1.0) / len(self.rewards)


def reward_table(episodes: Iterable[EpisodeView]) -> list[RewardRow]:
    """Rewards grouped by family and difficulty, sorted (the calibration table and the reward plot)."""
    groups: dict[tuple[str, int], list[float]] = {}
    for ep in episodes:
        groups.setdefault((ep.scenario, ep.difficulty), []).append(ep.reward)
    return [RewardRow(scenario=s, difficulty=d, rewards=tuple(groups[(s, d)])) for s, d in sorted(groups)]


def fault_table(episodes: Iterable[EpisodeView]) -> list[tuple[str, int, int]]:
    """Per tool: calls and injected faults, sorted by tool name."""
    calls: dict[str, int] = {}
    faults: dict[str, int] = {}
    for ep in episodes:
        for step in ep.steps:
            tool = str((step.get("action") or {}).get("name", "?"))
            calls[tool] = calls.get(tool, 0) + 1
            if step.get("fault"):
                faults[tool] = faults.get(tool, 0) + 1
    return [(tool, calls[tool], faults.get(tool, 0)) for tool in sorted(calls)]

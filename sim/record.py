"""An episode's record: the state-hash chain over its change log, its step records, its trace, its grading input.

The chain pins the world's state after every step at the cost of the rows the step changed: each link is the
SHA-256 of the previous link and the canonical change-log rows written since (``sim.trace.chain_hash``),
starting from the world spec (or a campaign's start state) and the task's setup rows. Grading reads the same
rows: ``grading_context`` hands the rubric this episode's change log (setup excluded), its steps and the hidden
params, never a scan of the world.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from graders.base import GradingContext, Score
from sim.tasks import log_since
from sim.trace import TRACE_FORMAT, TraceWriter, chain_hash, package_versions


class ChangeChain:
    """The state-hash chain of one episode, advanced by the change-log rows each step wrote.

    Args:
        session: The episode's session (its change log is read through the session's connection).
        last_seq: The last change-log seq already in the chain.
        state_hash: The chain's current link.
    """

    def __init__(self, session: Session, last_seq: int, state_hash: str) -> None:
        self.session = session
        self.last_seq = last_seq
        self.state_hash = state_hash
        self.rows: list[dict[str, Any]] = []
        """The rows the last ``advance`` folded in (what the step changed, for the progress score)."""

    def advance(self) -> str:
        """Fold in every row written since the last call; returns the new link (unchanged when none)."""
        rows = self.rows = log_since(self.session, self.last_seq)
        if rows:
            self.last_seq = rows[-1]["seq"]
            self.state_hash = chain_hash(self.state_hash, rows)
        return self.state_hash


class StepLog:
    """The step records of one episode, written through to the trace as they happen."""

    def __init__(self, writer: TraceWriter | None) -> None:
        self.writer = writer
        self.records: list[dict[str, Any]] = []

    def add(self, record: dict[str, Any]) -> None:
        """Keep one step record (and write it to the trace)."""
        self.records.append(record)
        if self.writer is not None:
            self.writer.write(record)

    def __len__(self) -> int:
        return len(self.records)


def header_record(
    *,
    scenario: str,
    spec_json: str,
    seed: int,
    options: Mapping[str, Any],
    episode_id: str,
    actor: str,
    difficulty: int,
    rubric: Any,
    start_state_hash: str,
) -> dict[str, Any]:
    """The trace's first record of an episode: everything a replay needs to rebuild it."""
    return {
        "type": "header",
        "format": TRACE_FORMAT,
        "versions": package_versions(),
        "world_spec": json.loads(spec_json),
        "scenario": scenario,
        "seed": seed,
        "options": dict(options),
        "episode_id": episode_id,
        "actor": actor,
        "difficulty": difficulty,
        "rubric": {"id": rubric.id, "version": rubric.version, "fingerprint": rubric.fingerprint},
        "start_state_hash": start_state_hash,
    }


def score_record(score: Score) -> dict[str, Any]:
    """The trace's closing record of an episode."""
    return {"type": "score", **score.to_json()}


def grading_context(
    session: Session,
    *,
    start_seq: int,
    steps: list[dict[str, Any]],
    actor_id: int,
    params: Mapping[str, Any],
    workspace: Any = None,
    judge: Any = None,
) -> GradingContext:
    """What the rubric reads: the final state (flushed), this episode's change-log rows, its steps, the params."""
    if session.new or session.dirty or session.deleted:
        session.flush()
    return GradingContext(
        session=session,
        changes=log_since(session, start_seq),
        trace=steps,
        actor_id=actor_id,
        params=dict(params),
        workspace=workspace,
        judge=judge,
    )

"""Episodes as a dataset: one Parquet row per recorded episode, its steps as a nested column.

Why Parquet: researchers load a run's episodes into pandas, polars or DuckDB without parsing JSONL, and
filter on scenario, difficulty or reward before touching the steps. The flat columns say what the episode was
and how it scored; ``checks`` and ``step_records`` are lists of structs (a check's id and result; a step's
tool, JSON-encoded arguments and result, error, fault and clock), so nothing in the trace is lost but the
header's versions. pyarrow is pinned exactly: its version is written into the file, and the bytes are stable
for a given version (the same traces give the same file).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sim.trace import canonical
from sim.view.model import EpisodeView, load


def _opt_json(value: Any) -> str | None:
    return None if value is None else canonical(value)


def rows(episodes: Sequence[EpisodeView]) -> list[dict[str, Any]]:
    """The dataset's rows, one per episode, as plain Python values."""
    out = []
    for ep in episodes:
        options = ep.header.get("options") or {}
        rubric = ep.rubric
        out.append(
            {
                "trace": ep.source,
                "episode": ep.number,
                "episode_id": str(ep.header.get("episode_id", "")),
                "scenario": ep.scenario,
                "seed": ep.seed,
                "world_seed": ep.world_seed,
                "difficulty": ep.difficulty,
                "actor": str(ep.header.get("actor", "")),
                "options": canonical(options),
                "noise": _opt_json(options.get("noise")),
                "npcs": _opt_json(options.get("npcs")),
                "rubric_id": str(rubric.get("id") or ""),
                "rubric_version": int(rubric.get("version") or 0),
                "rubric_fingerprint": str(rubric.get("fingerprint") or ""),
                "reward": ep.reward,
                "gated": bool(ep.score.get("gated", False)),
                "checks_passed": ep.checks_passed,
                "checks_total": len(ep.checks),
                "checks": [
                    {
                        "id": str(c.get("id")),
                        "passed": bool(c.get("passed")),
                        "must": bool(c.get("must")),
                        "weight": float(c.get("weight", 0.0)),
                        "score": float(c.get("score", 0.0)),
                        "evidence": str(c.get("evidence", "")),
                    }
                    for c in ep.checks
                ],
                "steps": len(ep.steps),
                "faults": len(ep.faults),
                "step_records": [_step(s) for s in ep.steps],
            }
        )
    return out


def _step(step: dict[str, Any]) -> dict[str, Any]:
    action = step.get("action") or {}
    error = step.get("error") or {}
    fault = step.get("fault") or {}
    return {
        "index": int(step.get("index", 0)),
        "tool": str(action.get("name", "")),
        "arguments": canonical(action.get("arguments")),
        "result": _opt_json(step.get("result")),
        "error_code": error.get("code"),
        "error_message": error.get("message"),
        "fault": fault.get("type"),
        "clock": str(step.get("clock", "")),
        "state_hash": str(step.get("state_hash", "")),
    }


def schema() -> Any:
    """The dataset's Arrow schema (explicit, so an empty column never changes a type)."""
    import pyarrow as pa

    check = pa.struct(
        [
            ("id", pa.string()),
            ("passed", pa.bool_()),
            ("must", pa.bool_()),
            ("weight", pa.float64()),
            ("score", pa.float64()),
            ("evidence", pa.string()),
        ]
    )
    step = pa.struct(
        [
            ("index", pa.int32()),
            ("tool", pa.string()),
            ("arguments", pa.string()),
            ("result", pa.string()),
            ("error_code", pa.string()),
            ("error_message", pa.string()),
            ("fault", pa.string()),
            ("clock", pa.string()),
            ("state_hash", pa.string()),
        ]
    )
    return pa.schema(
        [
            ("trace", pa.string()),
            ("episode", pa.int32()),
            ("episode_id", pa.string()),
            ("scenario", pa.string()),
            ("seed", pa.int64()),
            ("world_seed", pa.int64()),
            ("difficulty", pa.int32()),
            ("actor", pa.string()),
            ("options", pa.string()),
            ("noise", pa.string()),
            ("npcs", pa.string()),
            ("rubric_id", pa.string()),
            ("rubric_version", pa.int32()),
            ("rubric_fingerprint", pa.string()),
            ("reward", pa.float64()),
            ("gated", pa.bool_()),
            ("checks_passed", pa.int32()),
            ("checks_total", pa.int32()),
            ("checks", pa.list_(check)),
            ("steps", pa.int32()),
            ("faults", pa.int32()),
            ("step_records", pa.list_(step)),
        ]
    )


def export(paths: Sequence[str | Path], out: Path) -> int:
    """Write every episode of the traces at ``paths`` to the Parquet file ``out`` (atomically); returns the count.

    Raises:
        TraceError: a trace is missing, corrupt or truncated (``out`` is not touched).
        OutputError: ``out``'s directory cannot be written (nothing is left behind).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sim.view.output import write_file

    episodes = load(paths)
    table = pa.Table.from_pylist(rows(episodes), schema=schema())
    write_file(out, lambda tmp: pq.write_table(table, tmp, compression="zstd"))
    return len(episodes)

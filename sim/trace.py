"""JSONL traces: one header, one record per step, one score record per episode.

A trace is everything a replay needs: the package versions, the world spec, the scenario id, seed and
options, and the rubric version in the header; each step's action, result (or error), simulated clock and
state hash; and the score. An LLM agent's transcript rides along in ``agent`` records, which a replay skips.
Records are canonical JSON (sorted keys) so two runs with the same inputs write byte-identical files.

The per-step ``state_hash`` is a chain: ``sha256(previous hash + the canonical change-log rows the step
wrote)``, started from the hash of the world after setup. It identifies the state exactly (same start, same
changes, same state) at a cost proportional to the rows the step changed, which keeps hashing off the hot path.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import IO, Any

from sim.errors import TraceError

TRACE_FORMAT = 1
_PACKAGES = ("companysim", "sqlalchemy", "numpy", "faker", "fastmcp", "mcp", "pydantic")


def canonical(obj: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@functools.cache
def _versions() -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return tuple(out.items())


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that shape a run (read once per process: metadata parsing is slow)."""
    return dict(_versions())


def chain_hash(previous: str, rows: Sequence[Any]) -> str:
    """The next link of the state-hash chain; ``rows`` are the change-log rows of one step."""
    if not rows:
        return previous
    digest = hashlib.sha256(previous.encode())
    digest.update(canonical(list(rows)).encode())
    return digest.hexdigest()


class TraceWriter:
    """Appends canonical JSON records to a file, one per line, flushing after each episode.

    Args:
        path: The JSONL file to create (or append to, with ``append=True``).
        append: Keep existing records (several episodes in one file).
    """

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = self.path.open("a" if append else "w", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        """Write one record."""
        self._fh.write(canonical(record) + "\n")

    def flush(self) -> None:
        """Flush to disk."""
        self._fh.flush()

    def close(self) -> None:
        """Flush and close."""
        self._fh.close()


def read_trace(path: str | Path, *, agent: bool = False) -> Iterator[list[dict[str, Any]]]:
    """Yield the episodes of a trace file, each as [header, steps..., score].

    ``agent`` records (an LLM agent's transcript, ``sim.llm_agent``) annotate an episode and are left out
    unless ``agent`` is true; then they stay in place among the steps.

    Raises:
        TraceError: the file is missing, a line is not JSON, or records are out of order.
    """
    p = Path(path)
    if not p.is_file():
        raise TraceError(f"no trace file at {p}")
    episode: list[dict[str, Any]] = []
    episodes = 0
    with p.open(encoding="utf-8", errors="strict") as fh:
        for lineno, line in _lines(fh, p):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TraceError(f"{p}:{lineno}: not a JSON record ({exc.msg})") from None
            kind = record.get("type") if isinstance(record, dict) else None
            if kind == "header":
                if episode:
                    raise TraceError(f"{p}:{lineno}: new header before the previous episode's score")
                if record.get("format") != TRACE_FORMAT:
                    raise TraceError(
                        f"{p}:{lineno}: trace format {record.get('format')!r}; this companysim reads {TRACE_FORMAT}"
                    )
                episode = [record]
            elif kind == "agent":
                if not episode:
                    raise TraceError(f"{p}:{lineno}: agent record before any header")
                if agent:
                    episode.append(record)
            elif kind in ("step", "score"):
                if not episode:
                    raise TraceError(f"{p}:{lineno}: {kind} record before any header")
                episode.append(record)
                if kind == "score":
                    episodes += 1
                    yield episode
                    episode = []
            else:
                raise TraceError(f"{p}:{lineno}: unknown record type {kind!r}")
    if episode:
        raise TraceError(f"{p}: last episode has no score record (truncated trace?)")
    if episodes == 0:
        raise TraceError(f"{p} holds no episode (an empty file is not a trace)")


def _lines(fh: IO[str], path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines of a text file; a file that is not UTF-8 text (a world, a snapshot) is a ``TraceError``."""
    lineno = 0
    try:
        for lineno, line in enumerate(fh, 1):  # noqa: B007 - lineno is reported after the loop too
            yield lineno, line
    except UnicodeDecodeError:
        raise TraceError(f"{path}:{lineno + 1}: not a text trace (is it a world or a snapshot file?)") from None

"""Live episodes kept across a restart: what ``Hub.drain`` writes to the state directory and ``Hub.resume`` reads.

On SIGTERM a server started with a state directory finishes its in-flight steps and then writes, per live
episode a client can come back to (one addressed by id and token: OpenEnv over HTTP and MCP over HTTP), two
files under ``<state dir>/episodes/``:

- ``<id>.json``: the front process's record (id, token, scenario, seed, protocol, steps, status) and the
  episode's step state from its worker (the reset options and every accepted action, in order), plus the
  world's state hash;
- ``<id>.snapshot``: the world at that moment (``worlds.store.Snapshot``), for an operator to inspect while
  the server is down (its state hash is the one in the JSON, which the resumed world is checked against).

A server started on the same directory replays each episode in a worker (``Worker.op_resume``: reset, then
the actions; the episode is deterministic given them, so its world, clock, coworkers and step list come back
as they were) and checks the world's hash; the episode is then served under the same id and token, so the
client's next step simply continues. Why replay and not restore the world image: an episode is more than its
world (the clock, the coworkers' plans, the grader's view of the step list), and ``Episode`` has no way to
adopt a world image mid-episode; the replay rebuilds all of it. The files are deleted once read, so a state
directory resumes an episode once. WebSocket sessions are not kept (the socket is the session and closes at
shutdown), nor ORS sessions (their session table lives in the ORS face).

The JSON holds each episode's bearer token, so it is written readable by the owner only.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worlds.store import Snapshot

RESUMABLE = frozenset({"openenv-http", "mcp-http"})
"""Protocols whose client can find its episode again after a restart (it holds the id and the token)."""

_NAME = re.compile(r"^ep-(\d{1,12})\.json$")


@dataclass(frozen=True)
class Saved:
    """One snapshotted episode as read back from the state directory."""

    id: str
    token: str
    scenario: str
    seed: int
    protocol: str
    options: dict[str, Any]
    actions: list[Any]
    state_hash: str
    steps: int


def episodes_dir(state_dir: Path) -> Path:
    """Where the snapshotted episodes are kept."""
    return state_dir / "episodes"


def write(state_dir: Path, record: dict[str, Any], snapshot: Snapshot) -> None:
    """Write one episode's record (owner-only, atomically) and its world snapshot."""
    where = episodes_dir(state_dir)
    where.mkdir(parents=True, exist_ok=True)
    snapshot.save(where / f"{record['id']}.snapshot")
    target = where / f"{record['id']}.json"
    tmp = target.with_name(f".{target.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh, sort_keys=True)
    os.replace(tmp, target)


def read_all(state_dir: Path) -> list[Saved]:
    """Every snapshotted episode in id order, removing the files as they are read (an episode resumes once).

    A record that cannot be read is skipped (and removed): it is one episode lost, not a server that
    cannot start.
    """
    where = episodes_dir(state_dir)
    if not where.is_dir():
        return []
    found = sorted((int(m.group(1)), p) for p in where.iterdir() if (m := _NAME.match(p.name)))
    saved = []
    for _, path in found:
        try:
            data = json.loads(path.read_text())
            saved.append(
                Saved(
                    id=str(data["id"]),
                    token=str(data["token"]),
                    scenario=str(data["scenario"]),
                    seed=int(data["seed"]),
                    protocol=str(data["protocol"]),
                    options=dict(data["options"]),
                    actions=list(data["actions"]),
                    state_hash=str(data["state_hash"]),
                    steps=int(data["steps"]),
                )  # fmt: skip
            )
        except (OSError, ValueError, KeyError, TypeError):
            pass
        path.unlink(missing_ok=True)
        path.with_suffix(".snapshot").unlink(missing_ok=True)
    return saved

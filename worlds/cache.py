"""The base-world cache on disk: what it holds, a size limit with least-recently-used eviction, and temp sweeping.

Every new world spec an episode asks for (by default each task seed is its own company) adds a base world of
about 0.8 MB, plus its repositories, to ``<data dir>/worlds``; without a bound an afternoon of training filled
hundreds of megabytes. ``WorldStore`` therefore prunes after every world it generates: worlds are evicted,
least recently used first, until the cache fits ``max_bytes`` (``COMPANYSIM_CACHE_MAX_MB``, default 2048). A
world's last use is the mtime of its ``.used`` marker, touched each time the store opens it (the world file's
own mtime is left alone: it keys the process's image cache). The world just generated or opened is never
evicted, and an episode already running on an evicted world keeps going: forks live in memory and checkouts
hold hard links to the packs.

Temporary files: generation writes into temp files named with the writing process's pid and renames them into
place; a process killed meanwhile leaves them behind, so ``sweep_temps`` removes those whose writer is dead.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_MB = 2048
SIDECARS = ("-wal", "-shm", ".lock", ".used", ".repos", ".repos.lock")
_TEMP = re.compile(r"\.tmp(\d+)(?:-\d+)?$")
"""The end of every temp name the project writes: ``.tmp<pid>`` or ``.tmp<pid>-<n>``."""


@dataclass(frozen=True)
class CacheEntry:
    """One cached base world: its file, its bytes on disk (sidecars and repositories included), its last use."""

    path: Path
    size: int
    last_used: float

    @property
    def name(self) -> str:
        """The file name (spec hash prefix, schema and generator versions)."""
        return self.path.name


def default_max_bytes() -> int:
    """``COMPANYSIM_CACHE_MAX_MB`` in bytes (default 2048 MB); a value that is not a positive number is ignored."""
    raw = os.environ.get("COMPANYSIM_CACHE_MAX_MB", "")
    mb = int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_MB
    return mb * 2**20


def _size(path: Path) -> int:
    if path.is_symlink() or not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def touch(world: Path) -> None:
    """Mark ``world`` as used now (its ``.used`` marker's mtime)."""
    marker = Path(f"{world}.used")
    try:
        marker.touch()
    except OSError:
        pass  # a read-only cache still works; it only loses recency


def entries(worlds_dir: Path) -> list[CacheEntry]:
    """Every cached world under ``worlds_dir``, most recently used first."""
    if not worlds_dir.is_dir():
        return []
    out = []
    for db in worlds_dir.glob("*.db"):
        used = Path(f"{db}.used")
        last = used.stat().st_mtime if used.exists() else db.stat().st_mtime
        size = _size(db) + sum(_size(Path(f"{db}{s}")) for s in SIDECARS)
        out.append(CacheEntry(path=db, size=size, last_used=last))
    return sorted(out, key=lambda e: (-e.last_used, e.name))


def remove(entry: CacheEntry) -> None:
    """Delete a cached world with every sidecar and its repositories."""
    for suffix in ("", *SIDECARS):
        path = Path(f"{entry.path}{suffix}")
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


@contextmanager
def _locked(worlds_dir: Path) -> Iterator[None]:
    worlds_dir.mkdir(parents=True, exist_ok=True)
    with open(worlds_dir / ".prune.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def prune(worlds_dir: Path, max_bytes: int, keep: frozenset[Path] = frozenset()) -> list[CacheEntry]:
    """Evict least-recently-used worlds until the cache fits ``max_bytes``; returns what was removed.

    Worlds in ``keep`` stay, even if the cache then stays over the limit (a single world larger than the limit).
    """
    removed: list[CacheEntry] = []
    with _locked(worlds_dir):
        current = entries(worlds_dir)
        total = sum(e.size for e in current)
        for entry in reversed(current):  # least recently used first
            if total <= max_bytes:
                break
            if entry.path.resolve() in {k.resolve() for k in keep}:
                continue
            remove(entry)
            removed.append(entry)
            total -= entry.size
    return removed


def clear(worlds_dir: Path) -> list[CacheEntry]:
    """Remove every cached world; returns what was removed."""
    with _locked(worlds_dir):
        gone = entries(worlds_dir)
        for entry in gone:
            remove(entry)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_temps = iter(range(1, 2**62))


def temp_name(final: Path) -> Path:
    """A fresh temp path beside ``final`` naming this process (``.<name>.tmp<pid>-<n>``), for ``sweep_temps``."""
    return final.with_name(f".{final.name}.tmp{os.getpid()}-{next(_temps)}")


def sweep_temps(directory: Path) -> list[Path]:
    """Remove temp files and directories directly under ``directory`` whose writing process no longer exists."""
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    for path in sorted(directory.iterdir()):
        match = _TEMP.search(path.name)
        if match is None or _alive(int(match.group(1))):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed

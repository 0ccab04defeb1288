"""The episode's git workspace: where its repository checkouts live and which bases they come from.

``ToolContext`` has no file system part, so the git tools read the workspace from a context variable the
episode sets around tool calls (``use_workspace``), the same way they read the tool context. A checkout is made
lazily the first time a tool touches its repository (``Workspace.repo``), so an episode that never uses git
pays nothing, and one that uses one repository pays for one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from mcp_tools.errors import NotFound, Unavailable
from mcp_tools.git import safety
from worlds.gitrun import ensure_repo_config
from worlds.repos import checkout


@dataclass(kw_only=True)
class Workspace:
    """An episode's checkouts under ``root`` (``root/<name>``), made on demand from bare ``bases``."""

    root: Path
    bases: Mapping[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()

    def names(self) -> list[str]:
        """Every repository the episode can use (checked out or not), sorted."""
        names = set(self.bases)
        if self.root.is_dir():
            names |= {p.name for p in self.root.iterdir() if (p / ".git").is_dir() and not p.is_symlink()}
        return sorted(n for n in names if safety.REPO_NAME.fullmatch(n))

    def is_checked_out(self, name: str) -> bool:
        """Whether the repository already has a checkout in this episode."""
        return (self.root / name / ".git").is_dir()

    def repo(self, name: str) -> Path:
        """The checkout root of repository ``name``, made from its base on first use.

        Also restores the repository's fixed config if code run in the checkout changed it, so a planted
        filter driver or alias never reaches a git call.

        Raises:
            InvalidArgument: a malformed name.
            NotFound: no such repository in this episode.
        """
        safety.repo_name(name)
        path = self.root / name
        if path.is_symlink():
            raise NotFound(f"expected a repository of this episode; found none called {name!r}")
        if not (path / ".git").is_dir():
            base = self.bases.get(name)
            if base is None:
                known = ", ".join(self.names()) or "none"
                raise NotFound(f"expected one of the repositories ({known}); found none called {name!r}")
            self.root.mkdir(parents=True, exist_ok=True)
            checkout(base, path)
        ensure_repo_config(path / ".git")
        return path


_CURRENT: ContextVar[Workspace | None] = ContextVar("companysim_git_workspace", default=None)


@contextmanager
def use_workspace(root: Path, bases: Mapping[str, Path] | None = None) -> Iterator[Workspace]:
    """Make ``root`` (with lazily checked-out ``bases``: name -> bare repository) the workspace of git tools."""
    ws = Workspace(root=root, bases=dict(bases or {}))
    token = _CURRENT.set(ws)
    try:
        yield ws
    finally:
        _CURRENT.reset(token)


def current_workspace() -> Workspace:
    """The active workspace.

    Raises:
        Unavailable: the episode has no git workspace.
    """
    ws = _CURRENT.get()
    if ws is None:
        raise Unavailable("expected a git workspace for this episode; found none")
    return ws

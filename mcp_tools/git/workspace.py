"""The episode's git workspace: where its checkouts live, which bases they come from, and whom git runs as.

``ToolContext`` has no file system part, so the git tools read the workspace from a context variable the
episode sets around tool calls (``use_workspace``), the same way they read the tool context. A checkout is made
lazily the first time a tool touches its repository (``Workspace.repo``), so an episode that never uses git
pays nothing, and one that uses one repository pays for one.

Layout under the workspace root::

    <root>/<name>/              the work tree: the agent's files, and all a sandbox ever mounts (at /workspace)
    <root>/.gitdirs/<name>.git  its git directory: written only by host git, never mounted, never in the tree

Whatever code in the sandbox writes into a work tree (a ``.git`` file or directory, a ``commondir``, hooks,
config, ``.gitattributes`` naming drivers, FIFOs, links) is data to host git, never instructions: see
``worlds.gitrun.GitRepo``. When this process is root, host git runs as ``worlds.gitrun.host_git_user`` and the
workspace belongs to that uid, so every directory from ``/`` to the root must be searchable by it (the episode's
scratch directory under ``$TMPDIR`` is; a private ``0700`` directory is refused with ``unavailable``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from mcp_tools.errors import GitFailed, NotFound, Unavailable
from mcp_tools.git import safety
from worlds.gitrun import GitCommandError, GitRepo, host_git_user
from worlds.repos import checkout

GIT_DIRS = ".gitdirs"
"""The workspace root's subdirectory of git directories (a dot name: never a repository name)."""


class GitRefused(GitFailed, GitCommandError):
    """git failed on an episode's checkout: ``git_error`` for the agent, a GitCommandError for callers that expect one.

    A failure there is caused by what the agent put in the tree (a FIFO where a file was, a file type git cannot
    store), so it is the agent's to read, never an internal error.
    """

    def __init__(self, exc: GitCommandError) -> None:
        GitCommandError.__init__(self, exc.returncode, exc.stderr)
        last = exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else f"exit status {exc.returncode}"
        self.message = f"git refused: {last[:300]}"
        self.args = (self.message,)


@dataclass(frozen=True, kw_only=True)
class Checkout(GitRepo):
    """A ``GitRepo`` of an episode's checkout whose failures reach the agent as ``git_error`` (``GitRefused``)."""

    def failure(self, exc: GitCommandError) -> GitCommandError:
        """Every failure as ``GitRefused``: the agent's to read, never an internal error."""
        return exc if isinstance(exc, GitRefused) else GitRefused(exc)


def searchable_by(path: Path, user: tuple[int, int] | None) -> Path | None:
    """The first directory from ``/`` down to ``path`` that ``user`` cannot search, or None when all can be.

    Git resolves its directories to absolute paths, so an unprivileged git needs search permission on every
    ancestor. ``user`` None (not root) means the caller's own access, which is always enough here.
    """
    if user is None:
        return None
    uid, gid = user
    for directory in [*reversed(path.parents), path]:
        try:
            st = os.stat(directory)
        except FileNotFoundError:
            return None
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return directory
    return None


def give_tree(root: Path, user: tuple[int, int] | None) -> None:
    """Own ``root`` and everything under it to ``user`` without following symlinks (after sandboxed code ran)."""
    if user is None:
        return
    uid, gid = user
    os.chown(root, uid, gid, follow_symlinks=False)
    for top, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            os.chown(os.path.join(top, name), uid, gid, follow_symlinks=False)


@dataclass(kw_only=True)
class Workspace:
    """An episode's checkouts under ``root``, made on demand from the bare ``bases`` (name -> git directory)."""

    root: Path
    bases: Mapping[str, Path] = field(default_factory=dict)
    user: tuple[int, int] | None = field(default_factory=host_git_user)
    """Who host git runs as (``host_git_user()``: an unprivileged uid when this process is root)."""

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()

    def git_dir(self, name: str) -> Path:
        """Where the git directory of repository ``name`` lives (outside every work tree)."""
        return self.root / GIT_DIRS / f"{name}.git"

    def names(self) -> list[str]:
        """Every repository the episode can use (checked out or not), sorted."""
        names = set(self.bases)
        gitdirs = self.root / GIT_DIRS
        if gitdirs.is_dir():
            names |= {p.name.removesuffix(".git") for p in gitdirs.iterdir() if p.name.endswith(".git")}
        return sorted(n for n in names if safety.REPO_NAME.fullmatch(n))

    def is_checked_out(self, name: str) -> bool:
        """Whether the repository already has a checkout in this episode."""
        return self.git_dir(name).is_dir()

    def repo(self, name: str) -> Checkout:
        """Repository ``name`` of this episode (git directory, work tree, git's uid), checked out on first use.

        Raises:
            InvalidArgument: a malformed name.
            NotFound: no such repository in this episode.
            Unavailable: the workspace is somewhere the unprivileged git user cannot reach.
        """
        safety.repo_name(name)
        tree = self.root / name
        git_dir = self.git_dir(name)
        if not git_dir.is_dir():
            base = self.bases.get(name)
            if base is None:
                known = ", ".join(self.names()) or "none"
                raise NotFound(f"expected one of the repositories ({known}); found none called {name!r}")
            self._prepare()
            checkout(base, git_dir, tree, user=self.user)
        elif tree.is_symlink() or not tree.is_dir():
            raise NotFound(f"expected the work tree of {name!r} in this episode; it is gone")
        return Checkout(git_dir=git_dir, work_tree=tree, user=self.user)

    def origin(self, name: str, branch: str) -> str | None:
        """The commit ``branch`` pointed at in the repository's base, before the episode began (None if absent).

        Read from the base's own files, which no tool and no sandbox can write, so graders can compare against
        where a task started whatever the episode did to its refs.
        """
        base = self.bases.get(name)
        if base is None:
            return None
        ref = f"refs/heads/{safety.ref_name(branch, 'branch')}"
        loose = Path(base) / ref
        if loose.is_file():
            return loose.read_text(encoding="ascii").strip() or None
        packed = Path(base) / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="ascii").splitlines():
                oid, _, refname = line.partition(" ")
                if refname == ref:
                    return oid
        return None

    def reclaim(self, name: str) -> None:
        """Give a work tree back to git's uid after sandboxed code (another uid) wrote to it."""
        give_tree(self.root / name, self.user)

    def _prepare(self) -> None:
        """Create the root and the git-directory store, owned by git's uid, and check git can reach them."""
        for directory in (self.root, self.root / GIT_DIRS):
            directory.mkdir(parents=True, exist_ok=True)
            if self.user is not None:
                os.chown(directory, *self.user)
        blocked = searchable_by(self.root, self.user)
        if blocked is not None:
            uid = self.user[0] if self.user else os.getuid()
            raise Unavailable(
                f"expected a workspace that git's unprivileged user (uid {uid}) can reach; {blocked} is private"
                " (put episode workspaces under a searchable directory such as $TMPDIR)"
            )


_CURRENT: ContextVar[Workspace | None] = ContextVar("companysim_git_workspace", default=None)


@contextmanager
def use_workspace(root: Path | Workspace, bases: Mapping[str, Path] | None = None) -> Iterator[Workspace]:
    """Make a workspace current for git tools: a ``Workspace``, or ``root`` with lazily checked-out ``bases``."""
    ws = root if isinstance(root, Workspace) else Workspace(root=root, bases=dict(bases or {}))
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

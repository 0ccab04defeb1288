"""Fixtures of the git tests: the tiny company of the app tests, its generated repositories and a workspace.

The tiny company is loaded from ``tests/mcp_tools/conftest.py`` by path (test directories have no packages),
so the git tests pin the same people: ``lena.lead`` leads team Platform, ``dev.one`` and ``dev.two`` are in it.
"""

import importlib.util
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcp_tools.base import call_tool
from mcp_tools.git.server import git
from mcp_tools.git.workspace import GIT_DIRS, use_workspace
from worlds.gitrun import GIT_ENV
from worlds.repos import generate_repos

_SPEC = importlib.util.spec_from_file_location("git_tiny_world", Path(__file__).parents[1] / "mcp_tools/conftest.py")
assert _SPEC is not None and _SPEC.loader is not None
tiny = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(tiny)
SEED = 7
REPO = "platform-service"


def sh(repo: Path, *args: str) -> str:
    """Plain git for assertions (same fixed environment as the app), on a base or on an episode's work tree.

    A work tree's git directory lives in the workspace's ``.gitdirs`` (owned by git's unprivileged uid, so the
    test, as root, names it safe).
    """
    git_dir = repo.parent / GIT_DIRS / f"{repo.name}.git"
    where = [f"--git-dir={git_dir}", f"--work-tree={repo}"] if git_dir.is_dir() else ["-C", str(repo)]
    argv = ["git", *where, "-c", "safe.directory=*", *args]
    out = subprocess.run(argv, capture_output=True, env=GIT_ENV, check=True, cwd=repo)
    return out.stdout.decode()


def git_dir(root: Path) -> Path:
    """The git directory of the episode work tree ``root``."""
    return root.parent / GIT_DIRS / f"{root.name}.git"


@contextmanager
def reachable_dir() -> Iterator[Path]:
    """A temporary directory host git's unprivileged uid can pass through (pytest's own are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="companysim-test-"))
    path.chmod(0o711)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def repo_state(repo: Path) -> tuple[str, str, str]:
    """HEAD, porcelain status and every ref: what a READ tool must not change."""
    return (
        sh(repo, "rev-parse", "HEAD"),
        sh(repo, "status", "--porcelain", "--untracked-files=all"),
        sh(repo, "for-each-ref"),
    )


class GitApp:
    """A tiny world with generated repositories (recorded in its tables) and an episode workspace."""

    def __init__(self, tmp: Path) -> None:
        self.app = tiny.App()
        self.infos = generate_repos(self.app.session, SEED, tmp / "bases", now=tiny.T0, record=True)
        self.bases = {i.name: i.path for i in self.infos}
        self.root = tmp / "episode"
        self.lead, self.dev, self.ceo = self.app.lead, self.app.dev, self.app.ceo

    def call(self, tool: str, /, actor: Any = None, **arguments: Any) -> Any:
        """Call git tool ``git_<tool>`` in-process as ``actor`` (default: the lead)."""
        spec = git.get(f"git_{tool}")
        assert spec is not None, tool
        with use_workspace(self.root, self.bases):
            return call_tool(spec, arguments, self.app.ctx(actor))

    def repo(self, name: str = REPO) -> Path:
        """The checkout root (made on demand)."""
        self.call("status", repo=name)
        return self.root / name


@pytest.fixture
def gapp():
    """A fresh tiny world with its repositories and an empty episode workspace per test."""
    with reachable_dir() as tmp:
        g = GitApp(tmp)
        yield g
        g.app.session.close()
        g.app.engine.dispose()

"""Fixtures of the git tests: the tiny company of the app tests, its generated repositories and a workspace.

The tiny company is loaded from ``tests/mcp_tools/conftest.py`` by path (test directories have no packages),
so the git tests pin the same people: ``lena.lead`` leads team Platform, ``dev.one`` and ``dev.two`` are in it.
"""

import importlib.util
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_tools.base import call_tool
from mcp_tools.git.server import git
from mcp_tools.git.workspace import use_workspace
from worlds.gitrun import GIT_ENV
from worlds.repos import generate_repos

_SPEC = importlib.util.spec_from_file_location("git_tiny_world", Path(__file__).parents[1] / "mcp_tools/conftest.py")
assert _SPEC is not None and _SPEC.loader is not None
tiny = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(tiny)
SEED = 7
REPO = "platform-service"


def sh(repo: Path, *args: str) -> str:
    """Plain git for assertions (same fixed environment as the app)."""
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=GIT_ENV, check=True)
    return out.stdout.decode()


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
def gapp(tmp_path):
    """A fresh tiny world with its repositories and an empty episode workspace per test."""
    g = GitApp(tmp_path)
    yield g
    g.app.session.close()
    g.app.engine.dispose()

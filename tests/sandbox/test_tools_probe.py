"""A sandbox that isolates code but lacks what pipelines run says so, and pipelines refuse with the reason."""

import subprocess
from pathlib import Path

import pytest

import mcp_tools.sandbox as registry
from mcp_tools.errors import SandboxUnavailable
from mcp_tools.git.pipeline import pipeline
from mcp_tools.sandbox import get_sandbox
from mcp_tools.sandbox.base import RunResult, Sandbox
from worlds.gitrun import GitRepo


class BareImage(Sandbox):
    """A backend whose 'image' has no Python at all (its programs run with an empty PATH)."""

    name = "bare"
    uid = gid = 64321

    def _probe(self):
        return True, ""

    def _run_checked(self, argv, workspace, limits, env, stdin):
        out = subprocess.run(argv, cwd=workspace, input=stdin, capture_output=True, env={"PATH": "/nonexistent"})
        return RunResult(out.returncode, out.stdout.decode(), out.stderr.decode(), False, None)


def test_tools__the_real_sandbox_finds_python_and_pytest():
    sandbox = get_sandbox()
    if not sandbox.available():
        pytest.skip(f"no sandbox here: {sandbox.reason}")
    tools = sandbox.tools()
    assert tools["python3"] and tools["pytest"]


def test_tools__a_sandbox_without_pytest_is_reported_and_pipelines_refuse_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setitem(registry._FACTORIES, "bare", BareImage)
    monkeypatch.setenv("COMPANYSIM_SANDBOX", "bare")
    registry._INSTANCES.pop("bare", None)
    assert get_sandbox().tools() == {"python3": False, "pytest": False, "git": False}
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "test_x.py").write_text("def test_x():\n    assert True\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    with pytest.raises(SandboxUnavailable, match="lacks python3, pytest .*python3-pytest"):
        pipeline(GitRepo(git_dir=Path(repo) / ".git"), head, scratch=tmp_path)
    registry._INSTANCES.pop("bare", None)

"""Hostile refs, paths and options get a stable error and touch nothing outside the repository; hooks, global
and planted config never run."""

import os
from pathlib import Path

import pytest
from gitkit import REPO, git_dir, repo_state, sh

from mcp_tools.errors import AppError
from mcp_tools.git import safety

CANARY = "/tmp/companysim-git-canary"
BAD_REFS = [
    "-h",
    "--help",
    "-",
    "--",
    "--all",
    "-n1",
    "-p",
    "--output",
    "--end-of-options",
    "-cfoo=bar",
    "-c",
    "--upload-pack=touch " + CANARY,
    "--receive-pack=touch " + CANARY,
    f"--output={CANARY}/x",
    "--exec=sh",
    "-oProxyCommand=touch " + CANARY,
    "--format=%x",
    "--git-dir=/etc",
    "--work-tree=/",
    "..",
    "main..HEAD",
    "main...HEAD",
    "HEAD@{1}",
    "@{-1}",
    "@",
    "main@{upstream}",
    "main:README.md",
    ":README.md",
    "refs/../../etc/passwd",
    "/etc/passwd",
    "/main",
    "ma in",
    "main\n",
    "main\t",
    "main\x7f",
    "main~1;rm -rf /",
    "$(touch x)",
    "`id`",
    "main|id",
    "main&&id",
    "*",
    "main?",
    "[main]",
    "main\\x",
    ".hidden",
    "feature/.x",
    "feature/x.lock",
    "x.lock",
    "main/",
    "main.",
    "a//b",
    "",
    "x" * 300,
    "\u00fc",
    "main^{tree}",
    "main^{/fix}",
    "HEAD~-1",
    "HEAD^-1",
    "main:",
    "~1",
    "^HEAD",
    "feature/-x",
]
BAD_PATHS = [
    "/etc/passwd",
    "/",
    "//etc/passwd",
    "../x",
    "../../etc/passwd",
    "a/../../x",
    "./README.md",
    "README.md/..",
    "docs/./x",
    ".git/config",
    ".git",
    ".GIT/config",
    "x/.git/hooks/pre-commit",
    ".git/hooks/post-commit",
    ".git./config",
    ".git /config",
    "--output=/tmp/x",
    "-rf",
    "a/-x",
    "--",
    "-",
    "a\nb",
    "a\rb",
    "a\tb",
    "a\\..\\b",
    "C:\\Windows\\x",
    "\x7f",
    "a//b",
    "x" * 1001,
    "..",
    "../",
    "/tmp/" + "companysim-git-canary/x",
    "-c",
    "--upload-pack=x",
    "--exec-path=/tmp",
    ".git/objects/info/alternates",
    "sub/.Git/config",
]
NUL_VALUES = ["main\x00", "a\x00b", "\x00"]
BAD_REPOS = ["../x", "-x", "/etc", ".git", "a/b", "", "..", "platform-service.git", "Platform", "--help"]


def _codes(gapp, tool, **args):
    with pytest.raises(AppError) as info:
        gapp.call(tool, repo=REPO, **args)
    return info.value.code


@pytest.fixture
def guard(gapp, tmp_path):
    """Snapshot the filesystem root, a canary dir and the repository; check nothing changed after the test."""
    root = gapp.repo()
    top = set(os.listdir("/"))
    canary = tmp_path / "canary"
    canary.mkdir()
    before = repo_state(root)
    yield root, canary
    assert set(os.listdir("/")) == top
    assert not list(canary.iterdir())
    assert not os.path.lexists(CANARY)
    assert repo_state(root) == before


def test_at_least_100_hostile_values():
    assert len(BAD_REFS) + len(BAD_PATHS) + len(NUL_VALUES) + len(BAD_REPOS) >= 100


@pytest.mark.parametrize("ref", BAD_REFS)
def test_hostile_refs(gapp, guard, ref):
    root, canary = guard
    ref = ref.replace(CANARY, str(canary))
    for tool, args in [
        ("read_file", {"path": "README.md", "ref": ref}),
        ("log", {"ref": ref}),
        ("tree", {"ref": ref}),
        ("show", {"commit": ref}),
        ("diff", {"base": ref}),
        ("grep", {"pattern": "x", "ref": ref}),
        ("create_branch", {"name": ref}),
        ("create_branch", {"name": "ok-branch", "start": ref}),
        ("switch_branch", {"name": ref}),
    ]:
        assert _codes(gapp, tool, **args) in ("invalid_ref", "invalid_argument"), (tool, ref)
    assert "ok-branch" not in sh(root, "branch")


@pytest.mark.parametrize("path", BAD_PATHS)
def test_hostile_paths(gapp, guard, path):
    for tool, args in [
        ("read_file", {"path": path}),
        ("read_file", {"path": path, "ref": "main"}),
        ("write_file", {"path": path, "content": "pwned\n"}),
        ("edit_file", {"path": path, "old_text": "a", "new_text": "b"}),
        ("tree", {"path": path}),
        ("log", {"path": path}),
        ("diff", {"base": "main", "path": path}),
    ]:
        if path == "" and tool in ("tree", "log", "diff"):
            continue  # the root is a valid directory for these
        assert _codes(gapp, tool, **args) in ("invalid_path", "invalid_argument"), (tool, path)


@pytest.mark.parametrize("value", NUL_VALUES)
def test_nul_bytes(gapp, guard, value):
    assert _codes(gapp, "read_file", path=value) == "invalid_argument"
    assert _codes(gapp, "create_branch", name=value) == "invalid_argument"
    assert _codes(gapp, "write_file", path="ok.txt", content=value) == "invalid_argument"


@pytest.mark.parametrize("repo", BAD_REPOS)
def test_hostile_repo_names(gapp, repo):
    with pytest.raises(AppError) as info:
        gapp.call("status", repo=repo)
    assert info.value.code in ("invalid_argument", "not_found")


def test_option_like_patterns_are_literal(gapp, guard):
    _, canary = guard
    for pattern in [f"--output={canary}/x", "-f/etc/passwd", f"--open-files-in-pager=touch {canary}/x", "-O", "--"]:
        out = gapp.call("grep", repo=REPO, pattern=pattern, path_glob=f"--output={canary}/y")
        assert out["matches"] == []


def test_symlinks_are_never_followed(gapp, tmp_path):
    root = gapp.repo()
    canary = tmp_path / "outside"
    canary.mkdir()
    (canary / "secret.txt").write_text("secret\n")
    os.symlink("/etc", root / "etc-link")
    os.symlink(canary, root / "out-link")
    os.symlink(canary / "secret.txt", root / "secret.txt")
    os.symlink("README.md", root / "inner-link")
    for path in ["etc-link/passwd", "out-link/secret.txt", "secret.txt", "inner-link"]:
        assert _codes(gapp, "read_file", path=path) == "invalid_path"
        assert _codes(gapp, "edit_file", path=path, old_text="s", new_text="x") == "invalid_path"
    for path in ["out-link/new.txt", "secret.txt", "inner-link", "etc-link/evil"]:
        assert _codes(gapp, "write_file", path=path, content="pwned\n") == "invalid_path"
    assert _codes(gapp, "tree", path="out-link") == "invalid_path"
    assert sorted(p.name for p in canary.iterdir()) == ["secret.txt"]
    assert (canary / "secret.txt").read_text() == "secret\n"
    assert (root / "README.md").read_text().startswith("# ")
    # links out of the tree cannot be committed (the refusal names them); the tree is left as it was
    before = repo_state(root)
    assert _codes(gapp, "commit", message="links") == "invalid_path"
    assert repo_state(root) == before
    for name in ("etc-link", "out-link", "secret.txt"):
        os.unlink(root / name)
    # a link inside the tree is committed as a link, and refused when read at a ref too
    gapp.call("commit", repo=REPO, message="links")
    assert _codes(gapp, "read_file", path="inner-link", ref="HEAD") == "invalid_path"


def test_hooks_global_and_planted_config_never_run(gapp, tmp_path, monkeypatch):
    canary = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {canary}\ncat >/dev/null\n")
    script.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    names = [
        "pre-commit",
        "post-commit",
        "commit-msg",
        "prepare-commit-msg",
        "post-checkout",
        "post-merge",
        "pre-merge-commit",
        "reference-transaction",
        "post-index-change",
        "post-rewrite",
    ]
    for name in names:
        os.symlink(script, hooks / name)
    evil = (
        f'[core]\n\thooksPath = {hooks}\n\tfsmonitor = {script}\n[filter "x"]\n\tclean = {script}\n'
        f"\tsmudge = {script}\n\trequired = true\n[diff]\n\texternal = {script}\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(evil)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.hooksPath'='{hooks}'")
    monkeypatch.setenv("GIT_DIR", "/nonexistent")
    root = gapp.repo()
    real_config = (git_dir(root) / "config").read_text()
    # code in the sandbox can write anything into the work tree, a whole planted .git included: it is data
    planted = root / ".git"
    (planted / "hooks").mkdir(parents=True)
    for name in names:
        os.symlink(script, planted / "hooks" / name)
    (planted / "config").write_text(evil)
    (planted / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".gitattributes").write_text("* filter=x diff=x\n")
    gapp.call("write_file", repo=REPO, path="a.txt", content="a\n")
    gapp.call("status", repo=REPO)
    gapp.call("diff", repo=REPO, base="HEAD")
    gapp.call("create_branch", repo=REPO, name="feat/a", actor=gapp.dev)
    gapp.call("commit", repo=REPO, message="a", actor=gapp.dev)
    gapp.call("switch_branch", repo=REPO, name="main")
    mr = gapp.call("mr_open", repo=REPO, source_branch="feat/a", title="A", actor=gapp.dev)
    gapp.call("mr_review", mr_id=mr["id"], verdict="approve")
    gapp.call("mr_merge", mr_id=mr["id"])
    gapp.call("read_file", repo=REPO, path="a.txt")
    assert not canary.exists()
    assert (git_dir(root) / "config").read_text() == real_config
    assert not (git_dir(root) / "hooks").exists()
    assert (planted / "config").read_text() == evil  # never read, never rewritten
    shown = gapp.call("show", repo=REPO, commit="main")
    assert all(".git/" not in f["path"] for f in shown["files"])  # a planted .git is never committed


def test_safety_rules_directly():
    assert safety.path("a/b/") == "a/b" and safety.path("", allow_root=True) == ""
    assert safety.revision("main~2^1") == "main~2^1" and safety.branch_name("fix/x-1") == "fix/x-1"
    assert Path(safety.on_disk(Path("/tmp"), "x", must_exist=False)) == Path("/tmp/x")

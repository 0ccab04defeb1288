"""Exports write a commit's tree exactly (modes, links inside the tree) and refuse what must not reach the sandbox."""

import os
import subprocess
from pathlib import Path

import pytest

from mcp_tools.errors import InvalidPath
from mcp_tools.git.trees import export
from worlds.gitrun import GIT_ENV, GitRepo


def _repo(root: Path, files: dict[str, str], links: dict[str, str], executable: tuple[str, ...] = ()) -> str:
    """A plain repository with ``files`` and symbolic ``links`` committed; returns the commit id."""
    git = ["git", "-C", str(root), "-c", "user.name=T", "-c", "user.email=t@x", "-c", "core.symlinks=true"]
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=GIT_ENV)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for rel in executable:
        (root / rel).chmod(0o755)
    for rel, target in links.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / rel)
    subprocess.run([*git, "add", "-A"], check=True, env=GIT_ENV)
    subprocess.run([*git, "commit", "-qm", "tree"], check=True, env=GIT_ENV)
    out = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, env=GIT_ENV, text=True)
    return out.stdout.strip()


def test_export__files_modes_and_inner_links_are_kept_and_attributes_ignored(tmp_path):
    files = {
        "pkg/rules.py": "def f():\n    return 1\n",
        "run.sh": "#!/bin/sh\necho hi\n",
        "tests/test_rules.py": "def test():\n    pass\n",
        ".gitattributes": "tests/** export-ignore\n*.py export-subst\n",
        "version.py": "V = '$Format:%H$'\n",
    }
    commit = _repo(tmp_path / "r", files, {"pkg/alias.py": "rules.py", "docs/up": "../pkg"}, executable=("run.sh",))
    out = export(GitRepo(git_dir=tmp_path / "r" / ".git"), commit, tmp_path / "out")
    assert (out / "tests/test_rules.py").is_file()  # export-ignore has no say
    assert (out / "version.py").read_text() == files["version.py"]  # nor export-subst
    assert os.readlink(out / "pkg/alias.py") == "rules.py" and (out / "pkg/alias.py").read_text().startswith("def")
    assert os.readlink(out / "docs/up") == "../pkg"
    assert os.access(out / "run.sh", os.X_OK) and not os.access(out / "pkg/rules.py", os.X_OK)


@pytest.mark.parametrize(
    "links",
    [{"abs": "/etc/passwd"}, {"a/b": "../../x"}, {"s": ".", "x/y": "../s/.."}, {"p": "q", "q": "p"}],
    ids=["absolute", "climbs-out", "climbs-out-through-a-link", "loop"],
)
def test_export__links_out_of_the_tree_are_refused_with_a_code(tmp_path, links):
    commit = _repo(tmp_path / "r", {"ok.txt": "ok\n", "x/keep.txt": "k\n"}, links)
    with pytest.raises(InvalidPath, match="point outside the repository"):
        export(GitRepo(git_dir=tmp_path / "r" / ".git"), commit, tmp_path / "out")
    assert not (tmp_path / "out").exists()

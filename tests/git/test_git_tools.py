"""Each git tool: happy path, bad input with a stable code, and READ tools change nothing."""

import pytest
from gitkit import REPO, repo_state, sh, tiny

from mcp_tools.errors import AppError
from mcp_tools.git.service import MAX_OUTPUT

PKG = "platform_service"


def code_of(gapp, tool, /, **args):
    with pytest.raises(AppError) as info:
        gapp.call(tool, **args)
    return info.value.code


def test_list_repos_and_lazy_checkout(gapp):
    out = gapp.call("list_repos")
    assert [r["name"] for r in out["repos"]] == ["operations-service", "platform-service"]
    assert not any(r["checked_out"] for r in out["repos"])
    gapp.call("status", repo=REPO)
    out = gapp.call("list_repos")
    assert [r["checked_out"] for r in out["repos"]] == [False, True]
    assert out["repos"][1]["branch"] == "main" and out["repos"][1]["team"] == "Platform"
    assert code_of(gapp, "status", repo="nope") == "not_found"


READS = [
    ("status", {}),
    ("tree", {}),
    ("tree", {"path": PKG, "ref": "main", "recursive": True}),
    ("tree", {"path": "tests"}),
    ("read_file", {"path": "README.md"}),
    ("read_file", {"path": f"{PKG}/api.py", "ref": "v0.2.0", "start_line": 2, "max_lines": 3}),
    ("grep", {"pattern": "def ", "path_glob": "*.py"}),
    ("grep", {"pattern": "PAGE_[A-Z]+", "regex": True, "ref": "main~2"}),
    ("log", {"limit": 5}),
    ("log", {"ref": "v0.2.0", "path": "CHANGELOG.md"}),
    ("show", {"commit": "main"}),
    ("diff", {"base": "main~3", "head": "main"}),
    ("diff", {"base": "HEAD"}),
]


@pytest.mark.parametrize(("tool", "args"), READS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(READS)])
def test_read_tools_change_nothing(gapp, tool, args):
    root = gapp.repo()
    (root / "README.md").write_text("edited\n")  # a dirty tree must stay exactly as dirty
    before, db = repo_state(root), gapp.app.hash()
    log = gapp.app.log_count()
    out = gapp.call(tool, repo=REPO, **args)
    assert isinstance(out, dict)
    assert repo_state(root) == before and gapp.app.hash() == db and gapp.app.log_count() == log


def test_read_outputs(gapp):
    root = gapp.repo()
    top = gapp.call("tree", repo=REPO)["entries"]
    assert [e["path"] for e in top] == sorted(e["path"] for e in top) and ".git" not in {e["path"] for e in top}
    f = gapp.call("read_file", repo=REPO, path="pyproject.toml", ref="main")
    assert f["content"].startswith("[project]") and not f["truncated"]
    hits = gapp.call("grep", repo=REPO, pattern="class Store", path_glob="*/store.py")["matches"]
    assert hits == [{"path": f"{PKG}/store.py", "line": 6, "text": "class Store:"}]
    commits = gapp.call("log", repo=REPO, limit=3)["commits"]
    assert len(commits) == 3 and commits[0]["commit"] == gapp.infos[0].head
    shown = gapp.call("show", repo=REPO, commit=commits[0]["commit"])
    assert shown["files"] and "diff --git" in shown["patch"]
    (root / "README.md").write_text("new readme\n")
    d = gapp.call("diff", repo=REPO, base="HEAD")
    assert d["files"] == [{"status": "M", "path": "README.md"}] and "+new readme" in d["patch"]


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("read_file", {"path": "missing.py"}, "not_found"),
        ("read_file", {"path": "missing.py", "ref": "main"}, "not_found"),
        ("read_file", {"path": "README.md", "ref": "no-such-branch"}, "not_found"),
        ("read_file", {"path": PKG}, "invalid_path"),
        ("read_file", {"path": PKG, "ref": "main"}, "invalid_path"),
        ("read_file", {"path": "README.md", "max_lines": 0}, "invalid_argument"),
        ("tree", {"path": "nowhere", "ref": "main"}, "not_found"),
        ("log", {"limit": 0}, "invalid_argument"),
        ("show", {"commit": "0123456789abcdef0123456789abcdef01234567"}, "not_found"),
        ("diff", {"base": "main", "head": "nope"}, "not_found"),
        ("grep", {"pattern": "(unclosed", "regex": True}, "invalid_argument"),
        ("grep", {"pattern": ""}, "invalid_argument"),
    ],
)
def test_read_bad_input(gapp, tool, args, code):
    assert code_of(gapp, tool, repo=REPO, **args) == code


def test_binary_and_oversized(gapp):
    root = gapp.repo()
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (root / "latin1.txt").write_bytes(b"caf\xe9\n")
    assert code_of(gapp, "read_file", repo=REPO, path="logo.png") == "binary_file"
    assert code_of(gapp, "read_file", repo=REPO, path="latin1.txt") == "binary_file"
    assert code_of(gapp, "edit_file", repo=REPO, path="logo.png", old_text="PNG", new_text="x") == "binary_file"
    before = repo_state(root)
    assert code_of(gapp, "write_file", repo=REPO, path="big.txt", content="\u20ac" * 20_000) == "too_large"
    assert code_of(gapp, "write_file", repo=REPO, path="big.txt", content="x" * 20_001) == "invalid_argument"
    assert repo_state(root) == before and not (root / "big.txt").exists()
    (root / "long.txt").write_text("line line line\n" * 9000)
    out = gapp.call("read_file", repo=REPO, path="long.txt", max_lines=5000)
    assert len(out["content"]) <= MAX_OUTPUT + 200 and out["truncated"]
    assert "[... file truncated" in out["content"]


def test_write_edit_branch_commit(gapp):
    root = gapp.repo()
    out = gapp.call("create_branch", repo=REPO, name="fix/page-size", actor=gapp.dev)
    assert out["current_branch"] == "fix/page-size"
    assert code_of(gapp, "create_branch", repo=REPO, name="fix/page-size") == "conflict"
    assert gapp.call("write_file", repo=REPO, path="docs/notes/a.md", content="# Notes\n")["created"]
    cfg = f"{PKG}/config.py"
    gapp.call("edit_file", repo=REPO, path=cfg, old_text="PAGE_SIZE = 50", new_text="PAGE_SIZE = 25")
    assert code_of(gapp, "edit_file", repo=REPO, path=cfg, old_text="absent", new_text="x") == "not_found"
    gapp.call("write_file", repo=REPO, path="dup.txt", content="a a\n")
    assert code_of(gapp, "edit_file", repo=REPO, path="dup.txt", old_text="a", new_text="b") == "conflict"
    gapp.app.clock.set(tiny.T0.replace(hour=11))
    c = gapp.call("commit", repo=REPO, message="Smaller pages\n\nFaster first paint.", actor=gapp.dev)
    assert {f["path"] for f in c["files"]} == {"docs/notes/a.md", cfg, "dup.txt"}
    assert sh(root, "log", "-1", "--format=%an <%ae> %aI %cI").strip() == (
        "Devi One <dev.one@acme.test> 2026-03-02T11:00:00+00:00 2026-03-02T11:00:00+00:00"
    )
    assert sh(root, "status", "--porcelain") == ""
    assert code_of(gapp, "commit", repo=REPO, message="again") == "conflict"
    assert code_of(gapp, "commit", repo=REPO, message="   ") == "invalid_argument"
    gapp.call("switch_branch", repo=REPO, name="main")
    assert "PAGE_SIZE = 50" in gapp.call("read_file", repo=REPO, path=cfg)["content"]
    assert code_of(gapp, "switch_branch", repo=REPO, name="nope") == "not_found"


def test_commit_is_deterministic():
    from gitkit import GitApp, reachable_dir

    heads = []
    for _ in range(2):
        with reachable_dir() as tmp:
            g = GitApp(tmp)
            g.call("write_file", repo=REPO, path="x.txt", content="x\n")
            heads.append(g.call("commit", repo=REPO, message="x")["commit"])
    assert heads[0] == heads[1]

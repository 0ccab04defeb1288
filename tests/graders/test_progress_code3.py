"""The third round of the code checks' per-step paths, held to a full grade after every step (issue 14).

code-review (``graders.checks_review``): the note checks' ``on_step`` settles a file's checks from planned
group entries (their tests and the fixed middle of their evidence worked out once), a step of comments leaves
the verdict and review checks after one look at its note kinds, and a review is read from the step's parsed
notes. Each step below is compared with a full grade (``Checked``: every check's score, evidence and
details), and the note functions must be settled without a re-run, so a path that words a verdict wrongly or
stops answering fails here.

fix-failing-test's parent side: an export takes its sizes from ``ls-tree -l`` and writes with the directories
it made, and for bwrap it goes to a tmpfs; a request's changed files come from one ``diff --merge-base`` (two
merge bases fall back to ``merge-base``); the refusals and the hidden cases' verdict stay as they were.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from graders import checks_code
from mcp_tools.errors import InvalidPath, TooLarge
from mcp_tools.git import pipeline, trees
from mcp_tools.sandbox import get_sandbox
from scenarios.library.code_review import culprit
from sim.agents import EpisodeEnv
from tests.graders.test_progress import Checked
from worlds.gitrun import GIT_ENV, GitRepo

NOTE_FNS = {
    "merge_request_note_names",
    "merge_request_note_spares",
    "merge_request_verdict",
    "merge_request_review_says",
}


@pytest.fixture(scope="module")
def episode(store):
    with Checked("code-review-v0", store=store) as ep:
        yield ep


def _start(episode, seed, difficulty):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty, "progress": True})
    env, params = EpisodeEnv(episode, prompt, info), dict(episode.instance.params)
    env.call("git_mr_get", mr_id=params["mr_id"])  # the first step grades everything: the notes come after it
    return env, params


def _fn(v):
    return culprit(v["rule"], v["file"].rsplit("/", 1)[-1][:-3])


def test_comments_settle_their_files_checks_in_steps_and_agree_with_a_full_grade(episode, settled):
    """A flag, then a lumped note, then the full note: each step decides only what its note fits."""
    env, p = _start(episode, seed=3, difficulty=2)
    mr, (v, w, *_) = p["mr_id"], p["violations"]
    say = {"docstring": "docstring", "print": "print", "todo": "todo", "cents": "float", "except": "except"}
    before = episode.compared
    env.call("git_mr_comment", mr_id=mr, body=f"{v['file']}: {say[v['rule']]} problem here.")  # the flag alone
    flagged = settled["decided"].count("merge_request_note_names")
    assert flagged >= 2  # the flag and its "alone" check (the note names no other finding)
    fix = {"docstring": "add", "print": "logger", "todo": "file a ticket", "cents": "integer", "except": "catch"}
    lumped = (
        f"{v['file']} line {v['line']}: {say[v['rule']]} in {_fn(v)}(), {fix[v['rule']]} please;"
        f" also {w['file']} has a {say[w['rule']]} issue"
    )
    env.call("git_mr_comment", mr_id=mr, body=lumped)  # points, function and fix of v; w's flag; not "alone"
    assert settled["decided"].count("merge_request_note_names") >= flagged + 4
    env.call("git_mr_comment", mr_id=mr, body=f"{w['file']} line {w['line']}: {say[w['rule']]} in {_fn(w)}().")
    env.call("git_mr_comment", mr_id=mr, body="General remark with no file in it.")  # names no file: nothing moves
    env.call("submit", summary="partial review")
    assert episode.compared - before == 5
    assert "merge_request_note_names" in settled["decided"] and not NOTE_FNS.intersection(settled["rerun"])


def test_false_flags_verdicts_and_reviews_are_read_from_the_steps_notes(episode, settled):
    """A trap flagged, an approval, a review missing a rule, then the full review: each settled from its note."""
    env, p = _start(episode, seed=4, difficulty=1)
    mr, trap = p["mr_id"], p["traps"][0]
    rule = trap["rule"] or "print"
    before = episode.compared
    env.call("git_mr_comment", mr_id=mr, body=f"{trap['file']}: {rule} is wrong here")  # a false flag
    assert "merge_request_note_spares" in settled["decided"]
    env.call("git_mr_comment", mr_id=mr, body="docstring, print, todo, float and except: all worth a look")
    env.call("git_mr_review", mr_id=mr, verdict="approve", body="LGTM")  # a wrong verdict, never undone
    assert "merge_request_verdict" in settled["decided"]
    broken = sorted({v["rule"] for v in p["violations"]})
    env.call("git_mr_review", mr_id=mr, verdict="request_changes", body=f"Changes needed: {broken[0]} only.")
    reviews = settled["decided"].count("merge_request_review_says")
    env.call("git_mr_review", mr_id=mr, verdict="request_changes", body=f"Changes needed: {', '.join(broken)}.")
    assert settled["decided"].count("merge_request_review_says") == reviews + 1  # this review fits, the last did not
    env.call("git_mr_comment", mr_id=mr, body="One more comment after the reviews.")  # leaves verdict and review
    env.call("submit", summary="reviewed")
    assert episode.compared - before == 7
    assert not NOTE_FNS.intersection(settled["rerun"])
    final = {c.id: c for c in episode.grade().checks}
    assert not final["verdict"].passed  # approve, then request changes: the wrong verdict is never undone
    assert final["summary"].evidence.startswith("the agent's request_changes review (note")  # held by "verdict"


def _git(root: Path, *args: str, stdin: str | None = None) -> str:
    out = subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True, text=True, env=GIT_ENV)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _commit(root: Path, entries: str) -> str:
    """A commit of the tree ``entries`` (``mktree`` lines, which may hold what no checkout could write)."""
    tree = _git(root, "mktree", "--missing", stdin=entries)
    return _git(root, "-c", "user.name=T", "-c", "user.email=t@x", "commit-tree", tree, "-m", "t")


@pytest.fixture
def bare(tmp_path):
    root = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=GIT_ENV)
    return root


def test_export_sums_each_blob_once_and_refuses_past_the_limit_from_ls_tree_sizes(bare, tmp_path, monkeypatch):
    blob = _git(bare, "hash-object", "-w", "--stdin", stdin="x" * 100)
    sub = _git(bare, "mktree", "--missing", stdin=f"100644 blob {blob}\tb.txt\n")
    commit = _commit(bare, f"100644 blob {blob}\ta.txt\n040000 tree {sub}\tsub\n")
    g = GitRepo(git_dir=bare / ".git")
    monkeypatch.setattr(trees, "MAX_BYTES", 150)  # one blob twice is 100 bytes, as the batch-check summed it
    out = trees.export(g, commit, tmp_path / "ok")
    assert (out / "sub/b.txt").read_text() == (out / "a.txt").read_text() == "x" * 100
    monkeypatch.setattr(trees, "MAX_BYTES", 99)
    with pytest.raises(TooLarge, match="add up to 100 bytes"):
        trees.export(g, commit, tmp_path / "big")
    assert not (tmp_path / "big").exists()


def test_export_refuses_a_path_under_a_link_or_file_of_the_same_tree(bare, tmp_path):
    blob = _git(bare, "hash-object", "-w", "--stdin", stdin="hi\n")
    target = _git(bare, "hash-object", "-w", "--stdin", stdin="pkg")
    sub = _git(bare, "mktree", "--missing", stdin=f"100644 blob {blob}\tb\n")
    g = GitRepo(git_dir=bare / ".git")
    for first in (f"120000 blob {target}\ta\n", f"100644 blob {blob}\ta\n"):  # a link inside the tree, a file
        commit = _commit(bare, f"{first}040000 tree {sub}\ta\n100644 blob {blob}\tpkg\n")
        with pytest.raises(InvalidPath, match="lies under a file or link of the same tree"):
            trees.export(g, commit, tmp_path / "out")
        assert not (tmp_path / "out").exists() and not (bare / "pkg").exists()


class _Named:
    def __init__(self, name):
        self.name = name


def test_exports_go_to_memory_only_for_bwrap_and_an_explicit_scratch_wins(tmp_path, monkeypatch):
    usable = pipeline.MEMORY_SCRATCH.is_dir() and os.access(pipeline.MEMORY_SCRATCH, os.W_OK)
    assert pipeline._scratch(_Named("bwrap"), tmp_path) == tmp_path
    assert pipeline._scratch(_Named("docker"), None) is None  # the engine may not share this machine's tmpfs
    assert pipeline._scratch(_Named("bwrap"), None) == (pipeline.MEMORY_SCRATCH if usable else None)
    monkeypatch.setattr(pipeline, "MEMORY_SCRATCH", tmp_path / "absent")
    assert pipeline._scratch(_Named("bwrap"), None) is None
    private = tmp_path / "private"
    private.mkdir(mode=0o700)  # a directory without the sticky bit is not a shared scratch: not used
    monkeypatch.setattr(pipeline, "MEMORY_SCRATCH", private)
    assert pipeline._scratch(_Named("bwrap"), None) is None


def test_hidden_cases_run_from_the_memory_export_with_the_same_verdicts(bare, monkeypatch):
    sandbox = get_sandbox()
    if sandbox.name != "bwrap" or not sandbox.available() or pipeline._scratch(sandbox, None) is None:
        pytest.skip("needs a working bwrap sandbox and a usable tmpfs scratch")
    code = "def add(a, b):\n    return a + b\n"
    blob = _git(bare, "hash-object", "-w", "--stdin", stdin=code)
    pkg = _git(bare, "mktree", "--missing", stdin=f"100644 blob {blob}\tmath_ops.py\n")
    commit = _commit(bare, f"040000 tree {pkg}\tpkg\n")
    made: list[str] = []
    real = pipeline.tempfile.TemporaryDirectory

    def spied(*args, **kwargs):
        found = real(*args, **kwargs)
        if kwargs.get("prefix") == "companysim-check-":  # the export's (the sandbox may make its own)
            made.append(found.name)
        return found

    monkeypatch.setattr(pipeline.tempfile, "TemporaryDirectory", spied)
    got = pipeline.call_cases(GitRepo(git_dir=bare / ".git"), commit, "pkg.math_ops", "add", [[1, 2], [1.5, 1], ["a"]])
    assert len(made) == 1 and Path(made[0]).parent == pipeline.MEMORY_SCRATCH
    assert got == [["ok", ["int", 3]], ["ok", ["float", 2.5]], ["raised", "TypeError"]]
    assert not Path(made[0]).exists()  # removed after the run


class _Workspace:
    def __init__(self, g, origin):
        self.g, self._origin = g, origin

    def repo(self, name):
        return self.g

    def origin(self, name, branch):
        return self._origin


class _Ctx:
    def __init__(self, g, origin):
        self.workspace, self.memo, self.lasting = _Workspace(g, origin), {}, {}


class _Row:
    target_branch = "main"


def _tree_commit(root: Path, files: dict[str, str], *parents: str) -> str:
    blobs = {n: _git(root, "hash-object", "-w", "--stdin", stdin=t) for n, t in files.items()}
    lines = "".join(f"100644 blob {oid}\t{n}\n" for n, oid in blobs.items())
    tree = _git(root, "mktree", stdin=lines)
    flags = [x for p in parents for x in ("-p", p)]
    return _git(root, "-c", "user.name=T", "-c", "user.email=t@x", "commit-tree", tree, *flags, "-m", "c")


def test_a_requests_changes_come_from_one_diff_and_from_the_merge_base_where_git_would_pick_one(bare):
    """``diff --merge-base`` gives the files without a merge-base process; two merge bases fall back to ``_base``."""
    g = GitRepo(git_dir=bare / ".git")
    root = _tree_commit(bare, {"a.py": "1", "pyproject.toml": "x"})
    ours = _tree_commit(bare, {"a.py": "2", "pyproject.toml": "x"}, root)
    theirs = _tree_commit(bare, {"a.py": "1", "pyproject.toml": "y", "b.py": "b"}, root)
    head = _tree_commit(bare, {"a.py": "2", "pyproject.toml": "y", "c.py": "c"}, ours)
    ctx = _Ctx(g, ours)
    assert checks_code._request_changes(ctx, "r", _Row(), head) == ["c.py", "pyproject.toml"]
    assert not any(k[0] == "merge-base" for k in ctx.lasting[("git", "r")])  # no merge-base process was run
    # criss-cross: two merge bases (ours and theirs), where git diff --merge-base refuses to pick one
    left = _tree_commit(bare, {"a.py": "2", "pyproject.toml": "y", "b.py": "b"}, ours, theirs)
    right = _tree_commit(bare, {"a.py": "2", "pyproject.toml": "y", "b.py": "B"}, theirs, ours)
    ctx = _Ctx(g, left)
    base = _git(bare, "merge-base", left, right)
    want = sorted(_git(bare, "diff", "--name-only", base, right).split())
    assert checks_code._request_changes(ctx, "r", _Row(), right) == want
    assert ("merge-base", left, right) in ctx.lasting[("git", "r")]
    assert checks_code._request_changes(ctx, "r", _Row(), right) == want  # kept: asked again from the merge base

"""The code workspace of episodes: base repositories per world, task bases per task, checkouts per episode.

Three layers, each cheap for the one above it:

1. **World bases** (``worlds.repos.ensure_base_repos``): every product team's repository, generated once per
   world and cached beside the world file (``<world>.repos/``).
2. **Task bases**: when a scenario adds commits (``ScenarioInstance.repo_commits``, e.g. a seeded bug), they
   are written once per task key into the bare ``<world>.repos/tasks/<key>/<repo>.git``, which links the
   world base's packs and adds one pack of its own. The same task always gets the same commit hashes.
3. **Episode checkouts** (``mcp_tools.git.workspace``): made lazily on the first git call that names a
   repository, linking the packs again, with the git directory apart from the agent-writable work tree;
   removed when the episode ends.

The merge-request pipeline runs the repository's tests in the sandbox when a request is opened (and again
when a commit lands on its source branch), so ``pipeline`` in a request is real.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.git import mr
from mcp_tools.git.pipeline import pipeline
from mcp_tools.git.workspace import Workspace, searchable_by, use_workspace
from scenarios.base import RepoCommit
from worlds.cache import sweep_temps
from worlds.gitrun import host_git_user
from worlds.rawsql import Sql
from worlds.repos import base_repos_dir, checkout, ensure_base_repos
from worlds.spec import WorldSpec
from worlds.store import WorldStore

TASK_LAYOUT = 2
"""Version of a task base's layout on disk (2: bare ``<repo>.git`` with linked packs), part of its cache key."""


def world_bases(world_path: Path, session: Any, seed: int) -> dict[str, Path]:
    """The world's base repositories by name (generated on first use)."""
    return {i.name: i.path for i in ensure_base_repos(world_path, session, seed)}


def task_bases(
    world_path: Path, bases: Mapping[str, Path], key: str, commits: tuple[RepoCommit, ...], session: Any
) -> dict[str, Path]:
    """``bases`` with each repository a task commits to replaced by its task base (built once, under a lock)."""
    if not commits:
        return dict(bases)
    data = [TASK_LAYOUT, key, [_commit_json(c) for c in commits]]
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    final = base_repos_dir(world_path) / "tasks" / digest[:24]
    out = dict(bases)
    final.parent.mkdir(parents=True, exist_ok=True)
    with Path(f"{final}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (final / "done").is_file():
            sweep_temps(final.parent)  # half-built task bases of killed processes
            tmp = Path(f"{final}.tmp{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            for name in sorted({c.repo for c in commits}):
                _build_task_repo(bases[name], tmp / f"{name}.git", [c for c in commits if c.repo == name], session)
            (tmp / "done").write_text("1", encoding="ascii")
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
    for name in {c.repo for c in commits}:
        out[name] = final / f"{name}.git"
    return out


def _commit_json(c: RepoCommit) -> dict[str, Any]:
    out = {"repo": c.repo, "files": dict(sorted(c.files.items())), "message": c.message, "author": c.author,
           "at": c.at.isoformat()}  # fmt: skip
    if c.tag is not None:  # only when set, so the task keys of untagged commits never move
        out["tag"] = c.tag
    if c.branch is not None:
        out["branch"] = c.branch
    return out


def _build_task_repo(base: Path, dest: Path, commits: list[RepoCommit], session: Any) -> None:
    """Write ``commits`` on top of ``base`` into the new git directory ``dest`` (trusted content, run as us).

    The work tree is temporary; afterwards ``dest`` holds the base's linked packs plus one pack of the new
    objects, so checkouts made from it need no ``alternates``.
    """
    tree = dest.with_name(dest.name + ".tree")
    repo = checkout(base, dest, tree)
    try:
        default = repo("symbolic-ref", "--short", "HEAD").decode().strip()
        on = default
        for c in commits:
            wanted = c.branch or default
            if wanted != on:  # the tree is clean between commits, so switching never carries edits over
                known = repo("branch", "--list", wanted).strip()
                repo("checkout", "-q", *(() if known else ("-b",)), wanted, *(() if known else (default,)))
                on = wanted
            for rel, content in sorted(c.files.items()):
                path = tree / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")
            row = Sql.of(session).one(
                "SELECT first_name, last_name, email FROM employees WHERE username = ?", (c.author,)
            )
            name, email = (f"{row[0]} {row[1]}", str(row[2])) if row else (c.author, f"{c.author}@example.com")
            stamp = f"@{int(c.at.timestamp())} +0000"
            env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": stamp}
            env |= {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": stamp}
            repo("add", "-A", "--", ".")
            repo("commit", "-q", "--no-verify", "--no-gpg-sign", "-m", c.message, env=env)
            if c.tag is not None:
                repo("tag", "-a", "-m", c.message, c.tag, env=env)
        if on != default:  # checkouts start on the branch HEAD names
            repo("checkout", "-q", default)
        repo("repack", "-d", "-q")
        repo("pack-refs", "--all")
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    (dest / "index").unlink(missing_ok=True)


class EpisodeCode:
    """One episode's checkouts and pipeline: the context the git and shell tools run in."""

    def __init__(self, bases: Mapping[str, Path], scratch: Path) -> None:
        self.workspace = Workspace(root=scratch / "checkouts", bases=dict(bases))
        self.scratch = scratch

    @contextmanager
    def active(self) -> Iterator[None]:
        """Make this workspace and its pipeline current for the tool calls inside the block."""
        with ExitStack() as stack:
            stack.enter_context(use_workspace(self.workspace))
            stack.enter_context(mr.use_pipeline_hook(self.run_pipeline))
            yield

    def run_pipeline(self, ctx: ToolContext, request: dict[str, Any]) -> dict[str, Any]:
        """The pipeline of a merge request: the tests of the head the forge recorded for it, run in the sandbox."""
        return pipeline(self.workspace.repo(str(request["repo"])), str(request["source_head"]), self.scratch)

    def close(self) -> None:
        """Remove the checkouts (sandboxed code may have left read-only files; they go too)."""
        shutil.rmtree(self.scratch, ignore_errors=True)


def new_scratch() -> Path:
    """A directory for one episode's checkouts and pipeline runs, under ``$TMPDIR`` (else ``/tmp``).

    Mode 0711: others may pass through, as host git's unprivileged uid must, but not list it. When ``$TMPDIR``
    itself is private (not searchable by that uid), ``/tmp`` is used instead.
    """
    user = host_git_user()
    parent = Path(tempfile.gettempdir())
    if searchable_by(parent, user) is not None:
        parent = Path("/tmp")  # noqa: S108 - the system's shared temporary directory, as a fallback
    scratch = Path(tempfile.mkdtemp(prefix="companysim-code-", dir=parent))
    scratch.chmod(0o711)
    return scratch


class CodeBases:
    """The repositories an ``Episode``'s tasks start from: world bases (per spec, generated once) and task bases.

    Args:
        store: The world store, beside whose world files the bases are cached.
    """

    def __init__(self, store: WorldStore) -> None:
        self.store = store
        self._worlds: dict[str, dict[str, Path]] = {}

    def for_task(self, spec: WorldSpec, session: Any, key: tuple[str, str, int, int], instance: Any) -> EpisodeCode:
        """The episode's code workspace: the world's repositories plus the task's commits, checked out lazily."""
        world_path = self.store.path_for(spec)
        bases = self._worlds.get(spec.spec_hash)
        if bases is None:
            bases = self._worlds[spec.spec_hash] = world_bases(world_path, session, spec.seed)
        task_key = "/".join(str(k) for k in key)
        return EpisodeCode(task_bases(world_path, bases, task_key, instance.repo_commits, session), new_scratch())

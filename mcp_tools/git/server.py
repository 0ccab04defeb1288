"""The git tools: thin, documented wrappers over ``mcp_tools.git.service`` and ``mcp_tools.git.mr``.

Each tool works on one repository of the episode's workspace (``mcp_tools.git.workspace``), named by ``repo``
as ``git_list_repos`` shows it. Paths are relative to the repository root; refs are branch or tag names or
commit hashes, optionally with ``~N``/``^N``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from mcp_tools.base import READ, WRITE, ToolContext, ToolSet, current_context
from mcp_tools.errors import NotFound
from mcp_tools.git import mr, service
from mcp_tools.git.checkenv import check_environment
from mcp_tools.git.workspace import current_workspace
from worlds.rawsql import Sql

git = ToolSet("git")


def _repository_id(ctx: ToolContext, repo: str) -> int:
    """The ``repositories`` row of ``repo``, looked up before a write touches the disk."""
    rid = Sql.of(ctx.session).scalar("SELECT id FROM repositories WHERE name = ?", (repo,))
    if rid is None:
        raise NotFound(f"expected a repository of this company; found none called {repo!r}")
    return int(rid)


def _record(ctx: ToolContext, rid: int, op: str, **fields: str | None) -> None:
    """Log a git write as a ``git_activity`` row, so the change log and state hash see git work."""
    Sql.of(ctx.session).insert(
        "git_activity",
        {
            "repository_id": rid,
            "actor_id": ctx.actor.employee_id,
            "op": op,
            "branch": fields.get("branch"),
            "path": fields.get("path"),
            "commit_sha": fields.get("commit_sha"),
            "content_sha256": fields.get("content_sha256"),
            "at": ctx.clock.now(),
        },
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@git.tool(READ)
def list_repos() -> dict[str, Any]:
    """List the code repositories you can work on, with owning team, default branch and current branch."""
    return service.list_repos(current_context(), current_workspace())


@git.tool(READ)
def status(repo: str) -> dict[str, Any]:
    """Show the current branch, its commit and the uncommitted changes of a repository.

    Args:
        repo: Repository name from git_list_repos.
    """
    current_context()
    return service.status(current_workspace(), repo)


@git.tool(READ)
def tree(repo: str, path: str = "", ref: str | None = None, recursive: bool = False) -> dict[str, Any]:
    """List files and directories of a repository, in the working tree or at a branch, tag or commit.

    Args:
        repo: Repository name from git_list_repos.
        path: Directory relative to the repository root; empty for the root.
        ref: Branch, tag or commit to list; omit to list your working tree.
        recursive: List everything below the directory, not just its direct entries.
    """
    current_context()
    return service.tree(current_workspace(), repo, path, ref, recursive)


@git.tool(READ)
def read_file(
    repo: str, path: str, ref: str | None = None, start_line: int = 1, max_lines: int = 400
) -> dict[str, Any]:
    """Read lines of a text file from the working tree or at a branch, tag or commit.

    Args:
        repo: Repository name from git_list_repos.
        path: File path relative to the repository root, such as "src/app.py".
        ref: Branch, tag or commit to read from; omit to read your working tree (with uncommitted edits).
        start_line: First line to return (1-based).
        max_lines: How many lines to return (1-5000).
    """
    current_context()
    return service.read_file(current_workspace(), repo, path, ref, start_line, max_lines)


@git.tool(READ)
def grep(
    repo: str,
    pattern: str,
    regex: bool = False,
    ignore_case: bool = False,
    path_glob: str | None = None,
    ref: str | None = None,
) -> dict[str, Any]:
    """Search tracked text files for lines matching a literal text or an extended regular expression.

    Args:
        repo: Repository name from git_list_repos.
        pattern: Text to find; a POSIX extended regular expression if regex is true.
        regex: Treat pattern as a regular expression instead of literal text.
        ignore_case: Match case-insensitively.
        path_glob: Only files whose path matches this shell glob, such as "*.py" or "tests/*".
        ref: Branch, tag or commit to search; omit to search the working tree.
    """
    current_context()
    return service.grep(current_workspace(), repo, pattern, regex, ignore_case, path_glob, ref)


@git.tool(READ)
def log(repo: str, ref: str | None = None, path: str | None = None, limit: int = 20) -> dict[str, Any]:
    """List commits newest first, from the current branch or a given ref, optionally only those touching a path.

    Args:
        repo: Repository name from git_list_repos.
        ref: Branch, tag or commit to start from; omit for the current branch.
        path: Only commits that changed this file or directory.
        limit: How many commits to return (1-200).
    """
    current_context()
    return service.log(current_workspace(), repo, ref, path, limit)


@git.tool(READ)
def show(repo: str, commit: str) -> dict[str, Any]:
    """Show one commit: author, dates, full message, changed files and its patch.

    Args:
        repo: Repository name from git_list_repos.
        commit: Commit hash, branch or tag.
    """
    current_context()
    return service.show(current_workspace(), repo, commit)


@git.tool(READ)
def diff(repo: str, base: str, head: str | None = None, path: str | None = None) -> dict[str, Any]:
    """Show the changes between two refs, or between a ref and your working tree (tracked files).

    Args:
        repo: Repository name from git_list_repos.
        base: Branch, tag or commit to compare from.
        head: Branch, tag or commit to compare to; omit to compare to your working tree.
        path: Only changes under this file or directory.
    """
    current_context()
    return service.diff(current_workspace(), repo, base, head, path)


@git.tool(WRITE)
def create_branch(repo: str, name: str, start: str | None = None, switch: bool = True) -> dict[str, Any]:
    """Create a new branch and, by default, switch your working tree to it.

    Args:
        repo: Repository name from git_list_repos.
        name: New branch name, such as "fix/login-crash".
        start: Branch, tag or commit to start from; omit for the current commit.
        switch: Switch to the new branch after creating it.
    """
    ctx = current_context()
    rid = _repository_id(ctx, repo)
    out = service.create_branch(current_workspace(), repo, name, start, switch)
    _record(ctx, rid, "create_branch", branch=name, commit_sha=out["commit"])
    return out


@git.tool(WRITE)
def switch_branch(repo: str, name: str) -> dict[str, Any]:
    """Switch your working tree to an existing branch (uncommitted changes come along when possible).

    Args:
        repo: Repository name from git_list_repos.
        name: Existing branch name.
    """
    ctx = current_context()
    rid = _repository_id(ctx, repo)
    out = service.switch_branch(current_workspace(), repo, name)
    _record(ctx, rid, "switch_branch", branch=name, commit_sha=out["commit"])
    return out


@git.tool(WRITE)
def write_file(repo: str, path: str, content: str) -> dict[str, Any]:
    """Create or overwrite a text file in your working tree (commit it with git_commit).

    Args:
        repo: Repository name from git_list_repos.
        path: File path relative to the repository root; missing directories are created.
        content: The complete new text of the file (at most 50000 bytes).
    """
    ctx = current_context()
    rid = _repository_id(ctx, repo)
    out = service.write_file(current_workspace(), repo, path, content)
    _record(ctx, rid, "write_file", path=out["path"], content_sha256=_sha(content))
    return out


@git.tool(WRITE)
def edit_file(repo: str, path: str, old_text: str, new_text: str) -> dict[str, Any]:
    """Replace one exact, unique piece of text in a working-tree file with new text.

    Args:
        repo: Repository name from git_list_repos.
        path: File path relative to the repository root.
        old_text: Text to replace, copied exactly (it must occur exactly once).
        new_text: Replacement text.
    """
    ctx = current_context()
    rid = _repository_id(ctx, repo)
    ws = current_workspace()
    out = service.edit_file(ws, repo, path, old_text, new_text)
    data = service.worktree_bytes(ws, repo, out["path"])
    _record(ctx, rid, "edit_file", path=out["path"], content_sha256=hashlib.sha256(data).hexdigest())
    return out


@git.tool(WRITE)
def commit(repo: str, message: str) -> dict[str, Any]:
    """Commit all changes of your working tree to the current branch, as you (open requests from it re-run CI).

    Args:
        repo: Repository name from git_list_repos.
        message: Commit message: a short summary line, then optionally a blank line and details.
    """
    ctx = current_context()
    rid = _repository_id(ctx, repo)
    out = service.commit(ctx, current_workspace(), repo, message)
    _record(ctx, rid, "commit", branch=out["branch"], commit_sha=out["commit"])
    mr.rerun_pipelines(ctx, current_workspace(), repo, out["branch"])
    return out


@git.tool(WRITE)
def mr_open(
    repo: str, source_branch: str, title: str, target_branch: str | None = None, description: str = ""
) -> dict[str, Any]:
    """Open a merge request asking to merge one branch into another.

    Args:
        repo: Repository name from git_list_repos.
        source_branch: Branch with your changes.
        title: One-line title.
        target_branch: Branch to merge into; omit for the repository's default branch.
        description: What the change does and why.
    """
    return mr.mr_open(current_context(), current_workspace(), repo, source_branch, target_branch, title, description)


@git.tool(WRITE)
def mr_comment(mr_id: int, body: str) -> dict[str, Any]:
    """Comment on a merge request.

    Args:
        mr_id: Merge request id from git_mr_list.
        body: The comment text.
    """
    return mr.mr_comment(current_context(), mr_id, body)


@git.tool(WRITE)
def mr_review(mr_id: int, verdict: str, body: str = "") -> dict[str, Any]:
    """Review someone else's open merge request: approve it or request changes.

    Args:
        mr_id: Merge request id from git_mr_list.
        verdict: "approve" or "request_changes".
        body: Optional review comment.
    """
    return mr.mr_review(current_context(), current_workspace(), mr_id, verdict, body)


@git.tool(WRITE)
def mr_merge(mr_id: int, strategy: str = "merge_commit") -> dict[str, Any]:
    """Merge an approved merge request into its target branch.

    Args:
        mr_id: Merge request id from git_mr_list.
        strategy: "merge_commit" (always a merge commit) or "fast_forward" (only if the target has not moved).
    """
    return mr.mr_merge(current_context(), current_workspace(), mr_id, strategy)


@git.tool(READ)
def mr_list(repo: str | None = None, state: str | None = None) -> dict[str, Any]:
    """List merge requests, newest first.

    Args:
        repo: Only this repository.
        state: Only "open", "merged" or "closed" requests.
    """
    return mr.mr_list(current_context(), repo, state)


@git.tool(READ)
def mr_get(mr_id: int) -> dict[str, Any]:
    """Show a merge request with its comments, reviews, approval state, commits and pipeline status.

    Args:
        mr_id: Merge request id from git_mr_list.
    """
    return mr.mr_get(current_context(), current_workspace(), mr_id)


CHECK_ENV = check_environment

EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "git_commit": [{"repo": "{repo}", "message": "Add pending notes"}],
    "git_create_branch": [{"repo": "{repo}", "name": "check/example"}],
    "git_write_file": [{"repo": "{repo}", "path": "docs/check.md", "content": "# Check\n\nWritten by check_app.\n"}],
    "git_edit_file": [{"repo": "{repo}", "path": "docs/pending.md", "old_text": "Pending", "new_text": "Edited"}],
    "git_switch_branch": [{"repo": "{repo}", "name": "main"}, {"repo": "{repo}", "name": "check/example"}],
    "git_mr_open": [{"repo": "{repo}", "source_branch": "check/feature", "title": "Check notes"}],
    "git_mr_comment": [{"mr_id": "{review_mr}", "body": "Looks fine to me."}],
    "git_mr_review": [{"mr_id": "{review_mr}", "verdict": "approve"}],
    "git_mr_merge": [{"mr_id": "{merge_mr}"}],
    "git_read_file": [{"repo": "{repo}", "path": "README.md"}],
    "git_log": [{"repo": "{repo}", "limit": 3}],
}

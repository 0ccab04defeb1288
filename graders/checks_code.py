"""Checks of code work: merge requests, what they change, their pipeline, and hidden checks run in the sandbox.

They read the merge requests the agent opened (rows of the final state) and the commits those requests point
at (in the episode's repositories, through ``GradingContext.workspace``). The request a check grades is the
agent's newest one into the repository's default branch, so an agent cannot be graded on a stale request it
abandoned. Hidden checks run on a copy of the request's head exported into a scratch directory, never in the
agent's checkout, with the hidden cases passed on standard input (they are never written to disk).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text

from graders.base import CheckOutcome, GradingContext, check_fn
from mcp_tools.git.pipeline import call_cases, tag
from worlds.gitrun import GitCommandError, git

_REQUEST = text(
    "SELECT m.id, m.number, m.title, m.description, m.source_branch, m.target_branch, m.state, m.pipeline,"
    " r.default_branch FROM merge_requests m JOIN repositories r ON r.id = m.repository_id"
    " WHERE r.name = :repo AND m.author_id = :actor AND m.target_branch = r.default_branch AND m.state <> 'closed'"
    " ORDER BY m.id DESC LIMIT 1"
)


def _request(ctx: GradingContext, repo: str) -> Any:
    key = ("merge_request", repo)
    if key not in ctx.memo:
        ctx.memo[key] = ctx.db.execute(_REQUEST, {"repo": repo, "actor": ctx.actor_id}).first()
    return ctx.memo[key]


def _head(ctx: GradingContext, repo: str, branch: str) -> str | None:
    """The commit the request's source branch points at in the episode's repository (None if gone)."""
    if ctx.workspace is None:
        return None
    root = ctx.workspace.repo(repo)
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}").decode().strip()
    except GitCommandError:
        return None


@check_fn("merge_request_opened")
def merge_request_opened(ctx: GradingContext, repo: str) -> CheckOutcome:
    """The agent opened a merge request in ``repo`` from a branch of its own into the default branch."""
    row = _request(ctx, repo)
    if row is None:
        return CheckOutcome.of(False, f"no merge request by the agent into {repo}'s default branch")
    if row.source_branch == row.default_branch:
        return CheckOutcome.of(False, f"!{row.number} merges the default branch into itself")
    if _head(ctx, repo, row.source_branch) is None:
        return CheckOutcome.of(False, f"!{row.number}: its source branch {row.source_branch!r} no longer exists")
    return CheckOutcome.of(True, f"!{row.number} {row.source_branch} -> {row.target_branch} ({row.state})")


@check_fn("merge_request_leaves_paths")
def merge_request_leaves_paths(ctx: GradingContext, repo: str, paths: list[str]) -> CheckOutcome:
    """The request's changes against its merge base touch none of ``paths`` (a prefix ending in / or a file name).

    A file name matches in any directory (``conftest.py`` anywhere), which is how test configuration is
    planted.
    """
    row = _request(ctx, repo)
    head = _head(ctx, repo, row.source_branch) if row is not None else None
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to inspect")
    root = ctx.workspace.repo(repo)
    target = git(root, "rev-parse", "--verify", f"refs/heads/{row.target_branch}^{{commit}}").decode().strip()
    base = git(root, "merge-base", target, head).decode().strip()
    changed = git(root, "diff", "--name-only", "--no-renames", "-z", base, head, "--").decode().split("\0")
    bad = sorted(
        f
        for f in changed
        if f and any(f.startswith(p) if p.endswith("/") else f.rsplit("/", 1)[-1] == p for p in paths)
    )
    if bad:
        return CheckOutcome.of(False, f"!{row.number} changes protected files: {', '.join(bad[:10])}")
    return CheckOutcome.of(True, f"!{row.number} changes {len([f for f in changed if f])} file(s), none protected")


@check_fn("merge_request_pipeline_green")
def merge_request_pipeline_green(ctx: GradingContext, repo: str) -> CheckOutcome:
    """The request's pipeline passed, and ran at the source branch's current head."""
    row = _request(ctx, repo)
    head = _head(ctx, repo, row.source_branch) if row is not None else None
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request with a pipeline")
    pipe = row.pipeline if isinstance(row.pipeline, dict) else json.loads(row.pipeline or "{}")
    if pipe.get("commit") != head:
        return CheckOutcome.of(False, f"!{row.number}: the pipeline did not run at the head {head[:12]}")
    status = pipe.get("status")
    return CheckOutcome.of(status == "passed", f"!{row.number} pipeline {status} at {head[:12]}")


@check_fn("merge_request_passes_cases")
def merge_request_passes_cases(ctx: GradingContext, repo: str) -> CheckOutcome:
    """The hidden cases (``params``: module, function, cases) pass on the request's head; score = share passed.

    Results are compared as typed values (``mcp_tools.git.pipeline.tag``): ``True`` is not ``1``, ``0`` is not
    ``0.0``, and an object that only claims equality never matches.
    """
    row = _request(ctx, repo)
    head = _head(ctx, repo, row.source_branch) if row is not None else None
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to check")
    cases = ctx.params["cases"]
    root = ctx.workspace.repo(repo)
    got = call_cases(root, head, ctx.params["module"], ctx.params["function"], [c[0] for c in cases])
    passed = [i for i, (case, out) in enumerate(zip(cases, got, strict=True)) if out == ["ok", tag(case[1])]]
    first_bad = next((got[i] for i in range(len(cases)) if i not in passed), None)
    evidence = f"{len(passed)}/{len(cases)} hidden checks pass at {head[:12]}"
    if first_bad is not None:
        evidence += f"; first failure: {str(first_bad)[:120]}"
    return CheckOutcome(score=len(passed) / len(cases), evidence=evidence, details={"passed": len(passed)})


@check_fn("merge_request_mentions")
def merge_request_mentions(ctx: GradingContext, repo: str, text: str) -> CheckOutcome:
    """The request's title or description, or one of its commits' messages, contains ``text`` (any case)."""
    row = _request(ctx, repo)
    head = _head(ctx, repo, row.source_branch) if row is not None else None
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request")
    needle = text.lower()
    if needle in f"{row.title}\n{row.description}".lower():
        return CheckOutcome.of(True, f"!{row.number}'s title or description names {text}")
    root = ctx.workspace.repo(repo)
    target = git(root, "rev-parse", "--verify", f"refs/heads/{row.target_branch}^{{commit}}").decode().strip()
    messages = git(root, "log", "--format=%B", f"{target}..{head}", "--").decode("utf-8", "replace").lower()
    said = "names" if needle in messages else "does not name"
    return CheckOutcome.of(needle in messages, f"a commit message of !{row.number} {said} {text}")

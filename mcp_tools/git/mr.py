"""Merge requests, held in the world database the way a forge holds them, over the episode's repositories.

Rules (forge-like, enforced here): a merge request goes from one local branch into another of the same
repository; only one open request per (source, target); the author cannot review their own request; a request
merges only when at least one reviewer's latest verdict is ``approve`` for the current source head and no
reviewer's latest verdict is ``request_changes`` (new commits on the source therefore need a new approval).

Merging uses plumbing (``merge-tree --write-tree``, ``commit-tree``, ``update-ref`` with the old value), so it
never needs the target checked out and is refused cleanly on conflicts; the merge commit's dates come from the
simulated clock. ``pipeline`` starts as ``{"status": "not_run"}``; a CI runner installs a hook with
``use_pipeline_hook`` (called when a request is opened) or fills it later with ``set_pipeline``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.errors import Conflict, Forbidden, InvalidArgument, MergeConflict, NotFound
from mcp_tools.git import safety
from mcp_tools.git.service import branch_oid, current_branch, identity
from mcp_tools.git.workspace import Workspace
from worlds.rawsql import Sql, iso

NOT_RUN: dict[str, Any] = {"status": "not_run"}
VERDICTS = ("approve", "request_changes")
STRATEGIES = ("merge_commit", "fast_forward")
PipelineHook = Callable[[ToolContext, dict[str, Any]], dict[str, Any] | None]
_HOOK: ContextVar[PipelineHook | None] = ContextVar("companysim_pipeline_hook", default=None)
_MR = (
    "SELECT m.id, r.name, m.number, m.title, m.description, e.username, m.source_branch, m.target_branch,"
    " m.state, m.source_head, m.merge_commit, m.pipeline, m.created_at, m.updated_at, m.merged_at, m.author_id,"
    " m.repository_id FROM merge_requests m JOIN repositories r ON r.id = m.repository_id"
    " JOIN employees e ON e.id = m.author_id"
)


@contextmanager
def use_pipeline_hook(hook: PipelineHook) -> Iterator[None]:
    """Run ``hook(ctx, merge_request)`` when a request is opened; its dict (if any) becomes ``pipeline``."""
    token = _HOOK.set(hook)
    try:
        yield
    finally:
        _HOOK.reset(token)


def set_pipeline(ctx: ToolContext, mr_id: int, pipeline: dict[str, Any]) -> None:
    """Record a pipeline result (``{"status": "passed" | "failed" | ..., ...}``) on a merge request."""
    sql = Sql.of(ctx.session)
    old = sql.one("SELECT pipeline, updated_at FROM merge_requests WHERE id = ?", (mr_id,))
    if old is None:
        raise NotFound(f"expected a merge request id; found no merge request {mr_id}")
    changes = {"pipeline": (_pipeline(old[0]), pipeline), "updated_at": (old[1], ctx.clock.now())}
    sql.update("merge_requests", mr_id, changes)


def _row(sql: Sql, mr_id: int) -> Any:
    row = sql.one(f"{_MR} WHERE m.id = ?", (mr_id,))  # noqa: S608 - constant text
    if row is None:
        raise NotFound(f"expected a merge request id from git_mr_list; found no merge request {mr_id}")
    return row


def _pipeline(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _summary(row: Any) -> dict[str, Any]:
    return {
        "id": row[0],
        "repo": row[1],
        "number": row[2],
        "title": row[3],
        "author": row[5],
        "source_branch": row[6],
        "target_branch": row[7],
        "state": row[8],
        "source_head": row[9],
        "merge_commit": row[10],
        "pipeline": _pipeline(row[11]),
        "created_at": iso(row[12]),
        "updated_at": iso(row[13]),
        "merged_at": iso(row[14]),
    }


def _approval(sql: Sql, mr_id: int, head: str) -> dict[str, Any]:
    """Latest verdict per reviewer, and whether they make the request mergeable at ``head``."""
    latest: dict[str, tuple[str, str | None]] = {}
    for who, kind, commit in sql.all(
        "SELECT e.username, n.kind, n.commit_sha FROM merge_request_notes n JOIN employees e ON e.id = n.author_id"
        " WHERE n.merge_request_id = ? AND n.kind IN ('approve', 'request_changes') ORDER BY n.id",
        (mr_id,),
    ):
        latest[who] = (kind, commit)
    approvers = sorted(w for w, (k, c) in latest.items() if k == "approve" and c == head)
    blockers = sorted(w for w, (k, _) in latest.items() if k == "request_changes")
    return {"approved_by": approvers, "changes_requested_by": blockers, "approved": bool(approvers) and not blockers}


def _repo_id(sql: Sql, repo: str) -> int:
    rid = sql.scalar("SELECT id FROM repositories WHERE name = ?", (repo,))
    if rid is None:
        raise NotFound(f"expected a repository known to the forge; found none called {repo!r}")
    return int(rid)


def mr_open(
    ctx: ToolContext, ws: Workspace, repo: str, source: str, target: str | None, title: str, description: str
) -> dict[str, Any]:
    """Open a merge request from ``source`` into ``target`` (default: the repository's default branch)."""
    sql = Sql.of(ctx.session)
    g = ws.repo(repo)
    rid = _repo_id(sql, repo)
    target = target or str(sql.scalar("SELECT default_branch FROM repositories WHERE id = ?", (rid,)))
    title = title.strip()
    if not title or len(title) > 300 or "\n" in title:
        raise InvalidArgument("title: expected one line of 1-300 characters")
    if len(description) > 16_000:
        raise InvalidArgument("description: at most 16000 characters")
    if source == target:
        raise InvalidArgument("source and target must be different branches")
    src, tgt = branch_oid(g, source), branch_oid(g, target)
    if src is None or tgt is None:
        raise NotFound(f"branch: no local branch called {(source if src is None else target)!r}")
    code, _ = g.run(["merge-base", "--is-ancestor", src, tgt], ok_codes=(0, 1))
    if code == 0:
        raise Conflict(f"{source!r} has no commits that {target!r} lacks; nothing to merge")
    dup = sql.scalar(
        "SELECT id FROM merge_requests WHERE repository_id = ? AND source_branch = ? AND target_branch = ?"
        " AND state = 'open'",
        (rid, source, target),
    )
    if dup is not None:
        raise Conflict(f"merge request {dup} from {source!r} into {target!r} is already open")
    now = ctx.clock.now()
    number = int(sql.scalar("SELECT coalesce(max(number), 0) FROM merge_requests WHERE repository_id = ?", (rid,)))
    mr_id = sql.insert(
        "merge_requests",
        {
            "repository_id": rid,
            "number": number + 1,
            "title": title,
            "description": description,
            "author_id": ctx.actor.employee_id,
            "source_branch": source,
            "target_branch": target,
            "state": "open",
            "source_head": src,
            "merge_commit": None,
            "pipeline": NOT_RUN,
            "created_at": now,
            "updated_at": now,
            "merged_at": None,
            "merged_by_id": None,
        },
    )
    hook = _HOOK.get()
    if hook is not None:
        result = hook(ctx, _summary(_row(sql, mr_id)))
        if result is not None:
            set_pipeline(ctx, mr_id, result)
    return mr_get(ctx, ws, mr_id)


def mr_get(ctx: ToolContext, ws: Workspace, mr_id: int) -> dict[str, Any]:
    """A merge request with its notes, approval state and the commits it would bring in."""
    sql = Sql.of(ctx.session)
    row = _row(sql, mr_id)
    out = _summary(row)
    out["description"] = row[4]
    out["notes"] = [
        {"id": i, "author": u, "kind": k, "body": b, "commit": c, "created_at": iso(t)}
        for i, u, k, b, c, t in sql.all(
            "SELECT n.id, e.username, n.kind, n.body, n.commit_sha, n.created_at FROM merge_request_notes n"
            " JOIN employees e ON e.id = n.author_id WHERE n.merge_request_id = ? ORDER BY n.created_at, n.id",
            (mr_id,),
        )
    ]
    head = row[9]
    commits: list[str] = []
    if row[8] == "open" and row[1] in ws.names():
        g = ws.repo(row[1])
        src, tgt = branch_oid(g, row[6]), branch_oid(g, row[7])
        head = src or head
        if src and tgt:
            raw = g("log", "--format=%H %s", "--max-count=50", src, f"^{tgt}", "--")
            commits = raw.decode("utf-8", "replace").splitlines()
    out["current_source_head"] = head
    out["commits"] = commits
    out.update(_approval(sql, mr_id, head))
    return out


def mr_list(ctx: ToolContext, repo: str | None, state: str | None) -> dict[str, Any]:
    """Merge requests, newest first, optionally of one repository and/or state."""
    sql = Sql.of(ctx.session)
    if state is not None and state not in ("open", "merged", "closed"):
        raise InvalidArgument(f"state: expected open, merged or closed; got {state[:40]!r}")
    if repo is not None:
        safety.repo_name(repo)
    rows = sql.all(
        f"{_MR} WHERE (CAST(? AS TEXT) IS NULL OR r.name = ?) AND (CAST(? AS TEXT) IS NULL OR m.state = ?)"  # noqa: S608
        " ORDER BY m.created_at DESC, m.id DESC LIMIT 201",
        (repo, repo, state, state),
    )
    return {"merge_requests": [_summary(r) for r in rows[:200]], "truncated": len(rows) > 200}


def _note(ctx: ToolContext, mr_id: int, kind: str, body: str, commit: str | None) -> dict[str, Any]:
    sql = Sql.of(ctx.session)
    now = ctx.clock.now()
    nid = sql.insert(
        "merge_request_notes",
        {
            "merge_request_id": mr_id,
            "author_id": ctx.actor.employee_id,
            "kind": kind,
            "body": body,
            "commit_sha": commit,
            "created_at": now,
        },
    )
    old = sql.scalar("SELECT updated_at FROM merge_requests WHERE id = ?", (mr_id,))
    sql.update("merge_requests", mr_id, {"updated_at": (old, now)})
    return {"id": nid, "merge_request_id": mr_id, "kind": kind, "body": body, "commit": commit}


def mr_comment(ctx: ToolContext, mr_id: int, body: str) -> dict[str, Any]:
    """Add a comment to a merge request (any state)."""
    _row(Sql.of(ctx.session), mr_id)
    if not body.strip() or len(body) > 16_000:
        raise InvalidArgument("body: expected 1-16000 characters")
    return _note(ctx, mr_id, "comment", body, None)


def mr_review(ctx: ToolContext, ws: Workspace, mr_id: int, verdict: str, body: str) -> dict[str, Any]:
    """Approve or request changes on an open merge request at its current source head."""
    row = _reviewable(ctx, mr_id, verdict, body)
    head = branch_oid(ws.repo(row[1]), row[6])
    if head is None:
        raise Conflict(f"source branch {row[6]!r} no longer exists")
    return _note(ctx, mr_id, verdict, body, head)


def mr_review_at(ctx: ToolContext, mr_id: int, verdict: str, body: str, commit: str) -> dict[str, Any]:
    """Review an open request at a commit the reviewer saw, for reviewers without a checkout (NPCs).

    Same rules as ``mr_review``; the approval counts for merging only while ``commit`` is still the source head
    (``_approval`` compares), so reviewing a stale commit can never approve newer code.
    """
    _reviewable(ctx, mr_id, verdict, body)
    return _note(ctx, mr_id, verdict, body, commit)


def _reviewable(ctx: ToolContext, mr_id: int, verdict: str, body: str) -> Any:
    row = _row(Sql.of(ctx.session), mr_id)
    if verdict not in VERDICTS:
        raise InvalidArgument(f"verdict: expected approve or request_changes; got {verdict[:40]!r}")
    if len(body) > 16_000:
        raise InvalidArgument("body: at most 16000 characters")
    if row[8] != "open":
        raise Conflict(f"merge request {mr_id} is {row[8]}; only open requests can be reviewed")
    if row[15] == ctx.actor.employee_id:
        raise Forbidden("you cannot review your own merge request")
    return row


def mr_merge(ctx: ToolContext, ws: Workspace, mr_id: int, strategy: str) -> dict[str, Any]:
    """Merge an approved request: a merge commit (default) or a fast-forward when the target has not moved."""
    sql = Sql.of(ctx.session)
    row = _row(sql, mr_id)
    if strategy not in STRATEGIES:
        raise InvalidArgument(f"strategy: expected merge_commit or fast_forward; got {strategy[:40]!r}")
    if row[8] != "open":
        raise Conflict(f"merge request {mr_id} is {row[8]}; only open requests can be merged")
    repo, source, target = row[1], row[6], row[7]
    g = ws.repo(repo)
    src, tgt = branch_oid(g, source), branch_oid(g, target)
    if src is None or tgt is None:
        raise Conflict(f"branch {(source if src is None else target)!r} no longer exists")
    approval = _approval(sql, mr_id, src)
    if not approval["approved"]:
        raise Conflict("the merge request needs an approval of its current head and no change requests")
    checked_out = current_branch(g) == target
    if checked_out and g("status", "--porcelain", "--untracked-files=no").strip():
        raise Conflict(f"{target!r} is checked out with uncommitted changes; commit or discard them first")
    now = ctx.clock.now()
    if strategy == "fast_forward":
        code, _ = g.run(["merge-base", "--is-ancestor", tgt, src], ok_codes=(0, 1))
        if code != 0:
            raise Conflict(f"{target!r} has moved on; fast-forward is impossible, use merge_commit")
        new = src
    else:
        code, out = g.run(["merge-tree", "--write-tree", "--name-only", "--no-messages", tgt, src], ok_codes=(0, 1))
        lines = out.decode("utf-8", "replace").splitlines()
        if code == 1:
            raise MergeConflict(f"conflicts in: {', '.join(sorted(set(lines[1:]))[:50])}")
        msg = f"Merge branch '{source}' into '{target}'\n\n{row[3]}\n\nMerge request !{row[2]}\n"
        new = (
            g(
                "commit-tree",
                lines[0],
                "-p",
                tgt,
                "-p",
                src,
                "-F",
                "-",
                input=msg.encode(),
                env=identity(ctx, now),
            )
            .decode()
            .strip()
        )
    g("update-ref", f"refs/heads/{target}", new, tgt)
    if checked_out:
        g("reset", "-q", "--hard", new)
    sql.update(
        "merge_requests",
        mr_id,
        {
            "state": ("open", "merged"),
            "merge_commit": (None, new),
            "source_head": (row[9], src),
            "merged_at": (None, now),
            "merged_by_id": (None, ctx.actor.employee_id),
            "updated_at": (row[13], now),
        },
    )
    rerun_pipelines(ctx, ws, repo, target)
    return mr_get(ctx, ws, mr_id)


def rerun_pipelines(ctx: ToolContext, ws: Workspace, repo: str, branch: str) -> None:
    """A commit just landed on ``branch``: record it as the head of every open request from it, rerun pipelines.

    ``source_head`` is the forge's record of what a request proposes; graders read it, so moving a ref by any
    other way than the tools cannot change what is graded.
    """
    sql = Sql.of(ctx.session)
    ids = sql.column(
        "SELECT m.id FROM merge_requests m JOIN repositories r ON r.id = m.repository_id"
        " WHERE r.name = ? AND m.source_branch = ? AND m.state = 'open' ORDER BY m.id",
        (repo, branch),
    )
    if not ids:
        return
    head = branch_oid(ws.repo(repo), branch)
    hook = _HOOK.get()
    for mr_id in ids:
        row = _row(sql, int(mr_id))
        if head is not None and row[9] != head:
            sql.update("merge_requests", int(mr_id), {"source_head": (row[9], head)})
            row = _row(sql, int(mr_id))
        result = hook(ctx, _summary(row)) if hook is not None else None
        if result is not None:
            set_pipeline(ctx, int(mr_id), result)

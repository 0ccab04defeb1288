"""The git app's environment for ``check_app``: repositories on disk and merge requests to act on.

Git state lives partly outside the database, so the generic contract check cannot exercise the WRITE tools on
a bare world. This sets up what a working team would have: the world's repositories generated into the check's
scratch directory, the checking lead's checkout with an uncommitted file, a branch with a commit ready to open
a request from, and two requests by coworkers, one waiting for review and one approved and ready to merge.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from mcp_tools.base import Actor, ToolContext
from mcp_tools.git import mr, service
from mcp_tools.git.workspace import use_workspace
from worlds.rawsql import Sql
from worlds.repos import ensure_base_repos
from worlds.spec import WorldSpec


def _coworkers(ctx: ToolContext) -> tuple[Actor, Actor]:
    """Two active employees other than the checking actor, ordered by id."""
    ids = Sql.of(ctx.session).column(
        "SELECT id FROM employees WHERE id <> ? AND active = ? ORDER BY id LIMIT 2", (ctx.actor.employee_id, True)
    )
    return Actor.load(ctx.session, int(ids[0])), Actor.load(ctx.session, int(ids[1]))


@contextmanager
def check_environment(ctx: ToolContext, scratch: Path) -> Iterator[None]:
    """Generate the repositories under ``scratch``, make the workspace current and stage work to act on."""
    scratch.chmod(0o711)  # host git runs as an unprivileged uid that must pass through to the workspace
    sql = Sql.of(ctx.session)
    seed = WorldSpec.model_validate_json(str(sql.scalar("SELECT value FROM world_meta WHERE key = 'spec'"))).seed
    infos = ensure_base_repos(scratch / "world.db", ctx.session, seed)
    with use_workspace(scratch / "workspace", {i.name: i.path for i in infos}) as ws:
        repo = str(sql.scalar("SELECT name FROM repositories ORDER BY id LIMIT 1"))
        author, reviewer = _coworkers(ctx)
        as_author, as_reviewer = replace(ctx, actor=author), replace(ctx, actor=reviewer)
        for branch in ("check/review", "check/merge", "check/feature"):
            service.create_branch(ws, repo, branch, "main", True)
            service.write_file(ws, repo, f"docs/{branch.split('/')[1]}.md", f"# {branch}\n")
            service.commit(as_author, ws, repo, f"Add {branch} notes")
        service.switch_branch(ws, repo, "main")
        for branch in ("check/review", "check/merge"):
            opened = mr.mr_open(as_author, ws, repo, branch, None, f"Notes from {branch}", "")
            if branch == "check/merge":
                mr.mr_review(as_reviewer, ws, int(opened["id"]), "approve", "")
        service.write_file(ws, repo, "docs/pending.md", "# Pending\n")
        yield

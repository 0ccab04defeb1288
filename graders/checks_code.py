"""Checks of code work: merge requests, what they change, their pipeline, and hidden checks run in the sandbox.

They read the merge requests the agent opened (rows of the final state) and the commits those requests point
at (in the episode's repositories, through ``GradingContext.workspace``). The request a check grades is the
agent's newest one into the repository's default branch, so an agent cannot be graded on a stale request it
abandoned, and the commit graded is the one the forge recorded for it (``source_head``, updated on every
commit to its branch), whatever a ref says. Changes are measured from where the target branch stood in the
task's base (``Workspace.origin``), so moving the target's ref cannot hide an edit. Hidden checks run on a
copy of that commit exported into a scratch directory, never in the agent's checkout, with the hidden cases
passed on standard input (they are never written to disk). Git runs as the workspace's unprivileged uid.
The notes a reviewer leaves on a request are graded by ``graders.checks_review``, which this module imports.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import re
import tomllib
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import text

from graders import checks_review  # noqa: F401 - the review-note checks: loading this module registers them
from graders.base import CheckOutcome, GradingContext, check_fn
from graders.changes import ChangeRow
from graders.checks_common import Regex, inserted_ids, snippet
from graders.checks_review import _snippet as _snippet  # the review checks' quote, as it was imported from here
from mcp_tools.git.pipeline import call_cases, tag

_REQUEST = text(
    "SELECT m.id, m.number, m.title, m.description, m.source_branch, m.target_branch, m.state, m.pipeline,"
    " m.source_head, r.default_branch FROM merge_requests m JOIN repositories r ON r.id = m.repository_id"
    " WHERE r.name = :repo AND m.author_id = :actor AND m.target_branch = r.default_branch AND m.state <> 'closed'"
    " ORDER BY m.id DESC LIMIT 1"
)
_REQUESTS = ("merge_requests",)  # the forge records every commit to a request's branch there (source_head)


def request_touches(ctx: GradingContext, row: ChangeRow, **_: Any) -> bool:
    """Whether a change to ``merge_requests`` may move a request check: all but an update of ``updated_at`` alone.

    Every comment or review on a request bumps its ``updated_at``, which no request check reads; anything else
    (a new request, a push moving ``source_head``, a pipeline, a state) may change which request is graded or
    what it holds.
    """
    return row.op != "update" or not row.changes.keys() <= {"updated_at"}


def _request(ctx: GradingContext, repo: str) -> Any:
    key = ("merge_request", repo)
    if key not in ctx.memo:
        ctx.memo[key] = ctx.db.execute(_REQUEST, {"repo": repo, "actor": ctx.actor_id}).first()
    return ctx.memo[key]


def _git(ctx: GradingContext, repo: str, key: tuple[Any, ...], run: Any) -> Any:
    """``run()``, an answer about fixed commits (content-addressed, so it never changes), kept for the episode.

    Every check of a request asks git the same questions (does the head exist, where do its changes start);
    each answer is a git process, so it is asked once per grade and, in the per-step progress score, once
    per episode (``ctx.lasting``).
    """
    cache: dict[tuple[Any, ...], Any] = ctx.lasting.setdefault(("git", repo), {})
    if key not in cache:
        cache[key] = run()
    return cache[key]


def _checkout(ctx: GradingContext, repo: str) -> Any:
    """``ctx.workspace.repo(repo)``, asked once a step (``ctx.memo``): it checks the work tree on the disk each time.

    Within one step nothing moves the checkout; a new step asks again, so a work tree the agent removed is still
    the same error it was.
    """
    key = ("checkout", repo)
    found = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = ctx.workspace.repo(repo)
    return found


def _head(ctx: GradingContext, repo: str, row: Any) -> str | None:
    """The commit the forge recorded for the request, if it exists in the episode's repository (else None)."""
    if ctx.workspace is None or row is None or not row.source_head:
        return None
    head = str(row.source_head)
    if ("head", head) in ctx.lasting.get(("git", repo), {}):
        return head
    g = _checkout(ctx, repo)
    code, _ = g.run(["cat-file", "-e", f"{head}^{{commit}}"], ok_codes=(0, 1, 128))
    if code != 0:
        return None  # not kept: the commit may still arrive
    return str(_git(ctx, repo, ("head", head), lambda: head))


def _origin(ctx: GradingContext, repo: str, row: Any) -> str:
    """The target branch's commit as the task began, which a request's changes are measured from.

    Read once an episode from the base's files (they never change); a branch the base never had is read from
    its current ref at every ask, as it may move.
    """
    origin = _git(ctx, repo, ("origin", row.target_branch), lambda: ctx.workspace.origin(repo, row.target_branch))
    if origin is None:  # a branch the base never had: its current commit is the best there is
        ref = f"refs/heads/{row.target_branch}^{{commit}}"
        origin = _checkout(ctx, repo)("rev-parse", "--verify", ref).decode().strip()
    return str(origin)


def _base(ctx: GradingContext, repo: str, row: Any, head: str) -> str:
    """Where the request's changes start: the merge base of its head and the target as the task began."""
    origin = _origin(ctx, repo, row)
    g = _checkout(ctx, repo)
    return str(_git(ctx, repo, ("merge-base", origin, head), lambda: g("merge-base", origin, head).decode().strip()))


def _changed(ctx: GradingContext, repo: str, base: str, head: str) -> list[str]:
    def diff() -> list[str]:
        out = _checkout(ctx, repo)("diff", "--name-only", "--no-renames", "-z", base, head, "--")
        return _names(out)

    found: list[str] = _git(ctx, repo, ("diff", base, head), diff)
    return found


def _names(out: bytes) -> list[str]:
    return [f for f in out.decode("utf-8", "surrogateescape").split("\0") if f]


def _request_changes(ctx: GradingContext, repo: str, row: Any, head: str) -> list[str]:
    """The files the request changes since its merge base (``_changed`` from ``_base``), by one git process.

    ``diff --merge-base`` finds the merge base itself, so a check that needs only the file names (which paths a
    request touches) costs no ``merge-base`` process. Where git would pick among several merge bases (or finds
    none) it refuses, and the answer comes from ``_base`` and ``_changed`` as before, with their errors.
    """
    origin = _origin(ctx, repo, row)
    cache: dict[tuple[Any, ...], Any] = ctx.lasting.setdefault(("git", repo), {})
    base = cache.get(("merge-base", origin, head))
    if base is not None:
        return _changed(ctx, repo, base, head)
    key = ("diff-merge-base", origin, head)
    found: list[str] | None = cache.get(key)
    if found is None:
        args = ["diff", "--name-only", "--no-renames", "-z", "--merge-base", origin, head, "--"]
        code, out = _checkout(ctx, repo).run(args, ok_codes=(0, 128))
        if code != 0:
            return _changed(ctx, repo, _base(ctx, repo, row, head), head)
        found = cache[key] = _names(out)
    return found


@check_fn("merge_request_opened", reads=_REQUESTS, touches=request_touches)
def merge_request_opened(ctx: GradingContext, repo: str) -> CheckOutcome:
    """The agent opened a merge request in ``repo`` from a branch of its own into the default branch."""
    row = _request(ctx, repo)
    if row is None:
        return CheckOutcome.of(False, f"no merge request by the agent into {repo}'s default branch")
    if row.source_branch == row.default_branch:
        return CheckOutcome.of(False, f"!{row.number} merges the default branch into itself")
    if _head(ctx, repo, row) is None:
        return CheckOutcome.of(False, f"!{row.number}: its recorded head is not in the repository")
    return CheckOutcome.of(True, f"!{row.number} {row.source_branch} -> {row.target_branch} ({row.state})")


@check_fn("merge_request_leaves_paths", reads=_REQUESTS, touches=request_touches)
def merge_request_leaves_paths(ctx: GradingContext, repo: str, paths: list[str]) -> CheckOutcome:
    """The request's changes against its merge base touch none of ``paths`` (a prefix ending in / or a file name).

    A file name matches in any directory (``conftest.py`` anywhere), which is how test configuration is
    planted.
    """
    row = _request(ctx, repo)
    head = _head(ctx, repo, row)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to inspect")
    changed = _request_changes(ctx, repo, row, head)
    bad = sorted(
        f for f in changed if any(f.startswith(p) if p.endswith("/") else f.rsplit("/", 1)[-1] == p for p in paths)
    )
    if bad:
        return CheckOutcome.of(False, f"!{row.number} changes protected files: {', '.join(bad[:10])}")
    return CheckOutcome.of(True, f"!{row.number} changes {len(changed)} file(s), none protected")


PYTEST_SECTIONS: dict[str, tuple[str, ...]] = {
    "pyproject.toml": ("tool.pytest", "tool.pytest.ini_options"),
    "setup.cfg": ("tool:pytest",),
    "tox.ini": ("pytest",),
}
"""Files at the repository root that configure pytest in one of their sections: only those sections count."""


def _section(name: str, data: bytes | None, section: str) -> Any:
    """The parsed content of ``section`` of a config file (None when absent; a marker when unreadable)."""
    if data is None:
        return None
    text_ = data.decode("utf-8", "replace")
    try:
        if name.endswith(".toml"):
            node: Any = tomllib.loads(text_)
            for key in section.split("."):
                node = node.get(key) if isinstance(node, dict) else None
            return node
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text_)
        return dict(parser[section]) if parser.has_section(section) else None
    except (tomllib.TOMLDecodeError, configparser.Error):
        return ["unreadable", hashlib.sha256(data).hexdigest()]


@check_fn("merge_request_keeps_pytest_config", reads=_REQUESTS, touches=request_touches)
def merge_request_keeps_pytest_config(ctx: GradingContext, repo: str) -> CheckOutcome:
    """The request leaves pytest's configuration sections as they were (``PYTEST_SECTIONS``).

    Whole-file configs (``pytest.ini``, ``.pytest.ini``, ``pytest.toml``, ``conftest.py``...) are for
    ``merge_request_leaves_paths``; here the shared files are compared section by section, parsed, so a change
    elsewhere in ``pyproject.toml`` (a dependency, a version) is allowed and a new ``addopts`` is not.
    """
    row = _request(ctx, repo)
    head = _head(ctx, repo, row)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to inspect")
    # Only a file the diff names can differ (the same path at both ends with no diff is the same blob, or absent
    # at both): the request's diff is kept for the episode (``merge_request_leaves_paths`` reads it too), so a
    # head that leaves these files alone costs no git process here, not even the merge base's.
    touched = set(_request_changes(ctx, repo, row, head)).intersection(PYTEST_SECTIONS)
    changed: list[str] = []
    if not touched:
        return CheckOutcome.of(True, f"!{row.number} leaves pytest's configuration sections as they were")
    g = _checkout(ctx, repo)
    base = _base(ctx, repo, row, head)
    _read_blobs(ctx, repo, [(c, name) for name in sorted(touched) for c in (base, head)])
    for name, sections in PYTEST_SECTIONS.items():
        if name not in touched:
            continue
        before = _git(ctx, repo, ("blob", base, name), lambda c=base, n=name: _blob(g, c, n))
        after = _git(ctx, repo, ("blob", head, name), lambda c=head, n=name: _blob(g, c, n))
        if before == after:
            continue
        changed += [f"{name} [{s}]" for s in sections if _section(name, before, s) != _section(name, after, s)]
    if changed:
        return CheckOutcome.of(False, f"!{row.number} changes pytest's configuration: {', '.join(changed)}")
    return CheckOutcome.of(True, f"!{row.number} leaves pytest's configuration sections as they were")


def _blob(g: Any, commit: str, path: str) -> bytes | None:
    code, out = g.run(["cat-file", "blob", f"{commit}:{path}"], ok_codes=(0, 128))
    return out if code == 0 else None


def _read_blobs(ctx: GradingContext, repo: str, wanted: list[tuple[str, str]]) -> None:
    """Keep the files ``(commit, path)`` not kept yet (``_git``'s ``("blob", commit, path)``), read by one git.

    One ``cat-file --batch`` instead of a ``cat-file blob`` per file: starting a git process costs this
    process more CPU than a grade's rule checks together. A missing path (or one that is not a file) is None,
    as ``_blob`` gives it.
    """
    cache: dict[tuple[Any, ...], Any] = ctx.lasting.setdefault(("git", repo), {})
    todo = sorted({w for w in wanted if ("blob", *w) not in cache})
    if not todo:
        return
    raw = _checkout(ctx, repo)("cat-file", "--batch", input="".join(f"{c}:{p}\n" for c, p in todo).encode())
    pos = 0
    for commit, path in todo:
        end = raw.index(b"\n", pos)
        head = raw[pos:end].decode("utf-8", "replace").split()
        pos = end + 1
        if len(head) != 3 or not head[2].isdigit():  # "<name> missing" (or ambiguous): no such file
            cache[("blob", commit, path)] = None
            continue
        size = int(head[2])
        cache[("blob", commit, path)] = raw[pos : pos + size] if head[1] == "blob" else None
        pos += size + 1


@check_fn("merge_request_pipeline_green", reads=_REQUESTS, touches=request_touches)
def merge_request_pipeline_green(ctx: GradingContext, repo: str) -> CheckOutcome:
    """The request's pipeline passed, and ran at the source branch's current head."""
    row = _request(ctx, repo)
    head = _head(ctx, repo, row)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request with a pipeline")
    pipe = row.pipeline if isinstance(row.pipeline, dict) else json.loads(row.pipeline or "{}")
    if pipe.get("commit") != head:
        return CheckOutcome.of(False, f"!{row.number}: the pipeline did not run at the head {head[:12]}")
    status = pipe.get("status")
    return CheckOutcome.of(status == "passed", f"!{row.number} pipeline {status} at {head[:12]}")


@check_fn("merge_request_passes_cases", reads=_REQUESTS, touches=request_touches)
def merge_request_passes_cases(
    ctx: GradingContext, repo: str, case: Annotated[int, Field(ge=0)] | None = None
) -> CheckOutcome:
    """The hidden cases (``params``: module, function, cases) pass on the request's head; score = share passed.

    With ``case`` (an index into the hidden cases) only that one is graded, pass or fail: a rubric then names
    which case failed. The cases run once per grade in the sandbox whatever the number of checks that read
    them (and once per commit in the per-step progress score). Results are compared as typed values
    (``mcp_tools.git.pipeline.tag``): ``True`` is not ``1``, ``0`` is not ``0.0``, and an object that only
    claims equality never matches.
    """
    row = _request(ctx, repo)
    head = _head(ctx, repo, row)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to check")
    cases = ctx.params["cases"]
    if case is not None and case >= len(cases):
        raise ValueError(f"the task has {len(cases)} hidden cases, not case {case}")
    # A commit's content never changes, so its results are kept for the episode (``ctx.lasting``): the per-step
    # progress score runs the sandbox again only once the request points at a new commit.
    key = ("hidden_cases", repo, head)
    if key not in ctx.lasting:
        module, function = ctx.params["module"], ctx.params["function"]
        ctx.lasting[key] = call_cases(_checkout(ctx, repo), head, module, function, [c[0] for c in cases])
    got = ctx.lasting[key]
    ok = ctx.lasting.get(("hidden_ok", repo, head))  # every case check of a head compares the same results
    if ok is None:
        ok = ctx.lasting[("hidden_ok", repo, head)] = [
            out == ["ok", tag(c[1])] for c, out in zip(cases, got, strict=True)
        ]
    if case is not None:
        said = "passes" if ok[case] else f"fails ({str(got[case])[:120]})"
        return CheckOutcome.of(ok[case], f"hidden check {case + 1}/{len(cases)} {said} at {head[:12]}")
    passed = sum(ok)
    first_bad = next((got[i] for i in range(len(cases)) if not ok[i]), None)
    evidence = f"{passed}/{len(cases)} hidden checks pass at {head[:12]}"
    if first_bad is not None:
        evidence += f"; first failure: {str(first_bad)[:120]}"
    return CheckOutcome(score=passed / len(cases), evidence=evidence, details={"passed": passed})


@check_fn("merge_request_file_matches", reads=_REQUESTS, touches=request_touches)
def merge_request_file_matches(
    ctx: GradingContext, repo: str, paths: list[str], pattern: Regex, present: bool = True
) -> CheckOutcome:
    """Whether ``pattern`` (multi-line, any case) occurs in one of ``paths`` at the request's head, as ``present``.

    For what a change must say or must no longer say in named files: a pinned version bumped, an old call form
    gone from every call site. A path missing at the head reads as empty (a deleted call site uses nothing).
    """
    row = _request(ctx, repo)
    head = _head(ctx, repo, row)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to inspect")
    g = _checkout(ctx, repo)
    found = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
    hits = []
    for path in paths:
        data = _git(ctx, repo, ("blob", head, path), lambda p=path: _blob(g, head, p))
        match = found.search((data or b"").decode("utf-8", "replace"))
        if match:
            hits.append(f"{path}: {snippet(match.group(0), 50)}")
    ok = bool(hits) == present
    said = "; ".join(hits[:3]) if hits else f"none of {len(paths)} file(s) matches"
    return CheckOutcome.of(ok, f"!{row.number} at {head[:12]}: {said}")


@check_fn("merge_request_mentions", reads=_REQUESTS, touches=request_touches)
def merge_request_mentions(ctx: GradingContext, repo: str, text: str) -> CheckOutcome:
    """The request's title or description, or one of its commits' messages, contains ``text`` (any case)."""
    row = _request(ctx, repo)
    head = _head(ctx, repo, row)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request")
    needle = text.lower()
    if needle in f"{row.title}\n{row.description}".lower():
        return CheckOutcome.of(True, f"!{row.number}'s title or description names {text}")
    base = _base(ctx, repo, row, head)
    g = _checkout(ctx, repo)
    log = _git(ctx, repo, ("log", base, head), lambda: g("log", "--format=%B", f"{base}..{head}", "--"))
    messages = log.decode("utf-8", "replace").lower()
    said = "names" if needle in messages else "does not name"
    return CheckOutcome.of(needle in messages, f"a commit message of !{row.number} {said} {text}")


_STATE = text("SELECT number, state FROM merge_requests WHERE id = :mr")


def _state_on_rows(
    ctx: GradingContext, rows: list[ChangeRow], mr_id: int, state: str
) -> tuple[float, str, dict[str, Any]] | None:
    """``merge_request_state``'s verdict from the request's updates: the last state they set (number kept)."""
    number = ctx.lasting.get(("mr_number", mr_id))
    now = None
    for r in rows:
        if r.op != "update" or "number" in r.changes:
            return None
        if "state" in r.changes:
            now = r.changes["state"][1]
    if number is None or type(now) is not str:
        return None
    return float(now == state), f"!{number} is {now} (wanted {state})", {}


@check_fn(
    "merge_request_state",
    rows=lambda ctx, mr_id, **_: {("merge_requests", (mr_id,))},
    columns=lambda **_: frozenset({"number", "state"}),
    on_rows=_state_on_rows,
)
def merge_request_state(ctx: GradingContext, mr_id: int, state: Literal["open", "merged", "closed"]) -> CheckOutcome:
    """Request ``mr_id`` is in ``state`` (a reviewer leaves it open; a closed request stays closed).

    Declared by its row and columns, so the per-step progress score ignores the ``updated_at`` every note
    writes to the request and reads a merge or a close from the update's after-image.
    """
    row = ctx.db.execute(_STATE, {"mr": mr_id}).first()
    if row is None:
        return CheckOutcome.of(False, f"no merge request {mr_id}")
    ctx.lasting[("mr_number", mr_id)] = row.number
    return CheckOutcome.of(row.state == state, f"!{row.number} is {row.state} (wanted {state})")


_REVIEWS = text(
    "SELECT n.id, n.kind, n.commit_sha, n.created_at FROM merge_request_notes n JOIN employees e ON e.id = n.author_id"
    " WHERE n.merge_request_id = :mr AND e.username = :who AND n.kind IN ('approve', 'request_changes') ORDER BY n.id"
)
_MERGED = text("SELECT merged_at FROM merge_requests WHERE id = :mr")


@check_fn("merge_request_names_reviewer", reads=_REQUESTS, touches=request_touches)
def merge_request_names_reviewer(ctx: GradingContext, repo: str, username: str) -> CheckOutcome:
    """The request's title or description asks ``username`` to review as ``@username`` (how a forge pings them)."""
    row = _request(ctx, repo)
    if row is None:
        return CheckOutcome.of(False, "no merge request")
    ok = re.search(rf"(?<![\w.@])@{re.escape(username)}(?![\w-])", f"{row.title}\n{row.description}") is not None
    return CheckOutcome.of(ok, f"!{row.number} {'names' if ok else 'does not name'} @{username} as reviewer")


@check_fn("merge_request_merged_after_approval", reads=("merge_requests", "merge_request_notes"))
def merge_request_merged_after_approval(ctx: GradingContext, repo: str, username: str) -> CheckOutcome:
    """The request is merged, and ``username``'s last verdict before the merge approved the merged head.

    The forge already refuses a merge without some approval of the current head; this check asks for the
    right approver (the code owner), so a request approved by anyone else, or merged on a stale approval the
    owner later withdrew, fails.
    """
    row = _request(ctx, repo)
    if row is None:
        return CheckOutcome.of(False, "no merge request")
    if row.state != "merged":
        return CheckOutcome.of(False, f"!{row.number} is {row.state}, not merged")
    merged_at = ctx.db.execute(_MERGED, {"mr": row.id}).scalar()
    verdicts = [
        r
        for r in ctx.db.execute(_REVIEWS, {"mr": row.id, "who": username})
        if merged_at is None or r.created_at <= merged_at
    ]
    if not verdicts:
        return CheckOutcome.of(False, f"!{row.number} was merged without a review by @{username}")
    last = verdicts[-1]
    if last.kind != "approve":
        return CheckOutcome.of(False, f"!{row.number} was merged while @{username} asked for changes")
    if last.commit_sha != row.source_head:
        return CheckOutcome.of(False, f"@{username} approved {str(last.commit_sha)[:12]}, not the merged head")
    return CheckOutcome.of(True, f"!{row.number} merged after @{username} approved {str(row.source_head)[:12]}")


_TICKET_COMMENTS = text(
    "SELECT c.id, c.body FROM ticket_comments c JOIN tickets t ON t.id = c.ticket_id WHERE t.key = :key"
    " AND c.author_id = :actor ORDER BY c.id"
)


@check_fn("ticket_names_merge_request", reads=("merge_requests", "ticket_comments"))
def ticket_names_merge_request(ctx: GradingContext, repo: str, key: str) -> CheckOutcome:
    """A comment the agent added to ``key`` names its request as ``!number`` (the forge's way to link it)."""
    row = _request(ctx, repo)
    if row is None:
        return CheckOutcome.of(False, "no merge request to name")
    new = set(inserted_ids(ctx, "ticket_comments"))
    bodies = [r.body for r in ctx.db.execute(_TICKET_COMMENTS, {"key": key, "actor": ctx.actor_id}) if r.id in new]
    pattern = re.compile(rf"!{row.number}(?!\d)")
    ok = any(pattern.search(b or "") for b in bodies)
    return CheckOutcome.of(ok, f"{len(bodies)} new comment(s) on {key}; !{row.number} {'named' if ok else 'not named'}")

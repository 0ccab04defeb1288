"""Checks of a bug reproduction: the agent's new regression test run in the sandbox, its ticket and its reply.

A reproduction is a test that fails on the code the customer ran and passes once the code is right. The test
is the agent's, so it is judged by running it, twice, in the sandbox on a copy of the request's head: once
with the module under test replaced by the buggy source and once by the correct one (both only in the
hidden params; the correct source is never written anywhere the agent can reach). Replacing the module on
both runs means a request that also fixes the module is judged on its test alone. Only the test files the
request adds are run, with pytest pointed at a config file the grader writes (the tree's pytest
configuration and every ``conftest.py`` are dropped), and only pytest's exit code counts: 1 (a test failed)
or 0 (all passed); a collection error, no test at all or a killed run is neither.

The ticket and the reply are found by what the episode inserted (keys depend on the agent), the reply by the
customer's thread: a mail sent anywhere else does not answer the customer.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import text

from graders.base import CheckOutcome, GradingContext, check_fn
from graders.checks_code import _base, _git, _head, _request, request_touches
from graders.checks_common import Regex, inserted_ids, listing, rows_in, rx, snippet
from mcp_tools.git.pipeline import PIPELINE_LIMITS, code_sandbox
from mcp_tools.git.trees import export

_REQUESTS = ("merge_requests",)
_TEST_FILE = re.compile(r"^tests/(?:.+/)?test_[^/]*\.py$")
_CONFIG = ("conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg")
_INI = "companysim-repro.ini"


def _statuses(ctx: GradingContext, repo: str, base: str, head: str) -> list[tuple[str, str]]:
    """(status letter, path) of every file the request changes against its merge base."""

    def diff() -> list[tuple[str, str]]:
        out = ctx.workspace.repo(repo)("diff", "--name-status", "--no-renames", "-z", base, head, "--")
        parts = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
        return [(parts[i][:1], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]

    found: list[tuple[str, str]] = _git(ctx, repo, ("name-status", base, head), diff)
    return found


def _new_tests(ctx: GradingContext, repo: str) -> tuple[Any, str | None, list[str]]:
    """The request, its head, and the test files it adds (``tests/**/test_*.py``)."""
    row = _request(ctx, repo)
    head = _head(ctx, repo, row)
    if row is None or head is None:
        return row, None, []
    added = [p for s, p in _statuses(ctx, repo, _base(ctx, repo, row, head), head) if s == "A" and _TEST_FILE.match(p)]
    return row, head, sorted(added)


@check_fn("merge_request_adds_test", reads=_REQUESTS, touches=request_touches)
def merge_request_adds_test(ctx: GradingContext, repo: str) -> CheckOutcome:
    """The request adds at least one test file under ``tests/`` (``test_*.py``)."""
    row, head, added = _new_tests(ctx, repo)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to inspect")
    if not added:
        return CheckOutcome.of(False, f"!{row.number} adds no tests/**/test_*.py file")
    return CheckOutcome.of(True, f"!{row.number} adds {listing(added)}")


@check_fn("merge_request_keeps_tests", reads=_REQUESTS, touches=request_touches)
def merge_request_keeps_tests(ctx: GradingContext, repo: str) -> CheckOutcome:
    """The request only adds files under ``tests/``: no existing test changed or deleted, no pytest config.

    A regression test is new; editing the existing tests (or adding a ``conftest.py`` or a pytest config file
    anywhere) changes what the team's suite means, which a reproduction has no reason to do.
    """
    row = _request(ctx, repo)
    head = _head(ctx, repo, row)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to inspect")
    changed = _statuses(ctx, repo, _base(ctx, repo, row, head), head)
    bad = sorted(
        f"{path} ({status})"
        for status, path in changed
        if (path.startswith("tests/") and status != "A") or path.rsplit("/", 1)[-1] in _CONFIG
    )
    if bad:
        return CheckOutcome.of(False, f"!{row.number} changes existing tests or pytest config: {listing(bad)}")
    return CheckOutcome.of(True, f"!{row.number} changes {len(changed)} file(s); existing tests untouched")


def _safe_write(tree: Path, rel: str, content: str) -> bool:
    """Write ``content`` at ``rel`` in ``tree`` unless a component of the path is a link (then False)."""
    target = tree / rel
    for parent in [target, *target.parents]:
        if parent == tree:
            break
        if parent.is_symlink():
            return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    target.write_text(content, encoding="utf-8")
    return True


def _run_tests(ctx: GradingContext, repo: str, head: str, tests: list[str], source: str) -> tuple[str, str]:
    """Run ``tests`` at ``head`` with the module replaced by ``source``: ("passed" | "failed" | "error", why)."""
    sandbox = code_sandbox()
    sandbox.require("python3", "pytest")
    with tempfile.TemporaryDirectory(prefix="companysim-repro-") as tmp:
        tree = export(ctx.workspace.repo(repo), head, Path(tmp) / "tree")
        for found in sorted(tree.rglob("*")):
            if found.name in _CONFIG and not found.is_symlink() and found.is_file():
                found.unlink()
        if not _safe_write(tree, str(ctx.params["module_path"]), source):
            return "error", "the module's path is a link"
        _safe_write(tree, _INI, "[pytest]\n")
        argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", "-c", _INI]
        result = sandbox.run([*argv, "--rootdir", ".", "--", *tests], tree, limits=PIPELINE_LIMITS)
    last = (result.stdout.strip().splitlines() or [""])[-1]
    last = re.sub(r" in [0-9.]+s.*$", "", last)
    if result.killed_by:
        return "error", f"killed ({result.killed_by})"
    outcome = {0: "passed", 1: "failed"}.get(result.exit_code, "error")
    return outcome, f"exit {result.exit_code}: {last[:100]}"


@check_fn("merge_request_test_outcome", reads=_REQUESTS, touches=request_touches)
def merge_request_test_outcome(
    ctx: GradingContext, repo: str, code: Literal["buggy", "fixed"], expect: Literal["failed", "passed"]
) -> CheckOutcome:
    """The request's new tests ``expect`` (fail or pass) with the module as ``code`` (the params' source).

    ``buggy``/``failed`` is "the test reproduces the bug"; ``fixed``/``passed`` is "the test pins the right
    behaviour" (an ``assert False`` fails on both). Each head runs once per variant for the episode.
    """
    row, head, added = _new_tests(ctx, repo)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to run")
    if not added:
        return CheckOutcome.of(False, f"!{row.number} adds no test to run")
    key = ("repro_run", repo, head, code)
    if key not in ctx.lasting:
        ctx.lasting[key] = _run_tests(ctx, repo, head, added, str(ctx.params[f"{code}_source"]))
    outcome, why = ctx.lasting[key]
    return CheckOutcome.of(
        outcome == expect, f"!{row.number}'s new tests {outcome} on the {code} module at {head[:12]} ({why})"
    )


@check_fn("merge_request_test_matches", reads=_REQUESTS, touches=request_touches)
def merge_request_test_matches(ctx: GradingContext, repo: str, patterns: list[Regex], label: str) -> CheckOutcome:
    """One test file the request adds matches every pattern (the customer's input, as the module takes it)."""
    row, head, added = _new_tests(ctx, repo)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to inspect")
    g = ctx.workspace.repo(repo)
    for path in added:
        code, data = g.run(["cat-file", "blob", f"{head}:{path}"], ok_codes=(0, 128))
        body = data.decode("utf-8", "replace") if code == 0 else ""
        if all(rx(p).search(body) for p in patterns):
            return CheckOutcome.of(True, f"{path} at {head[:12]} uses {label}")
    return CheckOutcome.of(False, f"none of {len(added)} new test file(s) of !{row.number} uses {label}")


_TICKETS = (
    "SELECT t.id, t.key, t.title, t.description, t.type, p.key FROM tickets t JOIN projects p ON p.id = t.project_id"
    " WHERE t.id IN ({}) ORDER BY t.id"
)


def _filed(ctx: GradingContext, project: str) -> list[Any]:
    """The tickets this episode filed in ``project``, oldest first."""
    rows = ctx.kept(
        "repro_tickets", ("tickets", "projects"), lambda: rows_in(ctx, _TICKETS, inserted_ids(ctx, "tickets"))
    )
    return [r for r in rows if str(r[5]) == project.upper()]


@check_fn("new_ticket_matches", reads=("tickets", "projects", "merge_requests"))
def new_ticket_matches(
    ctx: GradingContext,
    project: str,
    pattern: Regex | None = None,
    type: str | None = None,  # noqa: A002 - the ticket field's own name
    request_repo: str | None = None,
    exactly_one: bool = False,
) -> CheckOutcome:
    """The ticket the agent filed in ``project`` says what it should.

    The ticket graded is the first one filed this episode in ``project``; with ``exactly_one`` any other
    ticket filed there fails the check (a report answered as expected behaviour needs none). Its title or
    description matches ``pattern``, it has ``type``, and with ``request_repo`` it names the agent's merge
    request into that repository as ``!number``.
    """
    filed = _filed(ctx, project)
    if not filed:
        return CheckOutcome.of(False, f"no ticket filed in {project}")
    if exactly_one and len(filed) != 1:
        return CheckOutcome.of(False, f"{len(filed)} tickets filed in {project}: {', '.join(str(r[1]) for r in filed)}")
    _, key, title, description, kind, _ = filed[0]
    said = f"{title}\n{description or ''}"
    if pattern is not None and not rx(pattern).search(said):
        return CheckOutcome.of(False, f"{key} does not say /{pattern}/: {snippet(said, 100)}")
    if type is not None and kind != type:
        return CheckOutcome.of(False, f"{key} is a {kind}, not a {type}")
    if request_repo is not None:
        row = _request(ctx, request_repo)
        if row is None:
            return CheckOutcome.of(False, f"{key} filed, but there is no merge request to name")
        if not re.search(rf"!{row.number}(?!\d)", said):
            return CheckOutcome.of(False, f"{key} does not name !{row.number}")
    return CheckOutcome.of(True, f"{key} filed in {project}: {snippet(title)}", key=key)


_THREAD = text(
    "SELECT m.id, m.thread_id, b.address FROM mail_messages m JOIN mailboxes b ON b.id = m.sender_mailbox_id"
    " WHERE m.message_id = :header"
)
_SENT = (
    "SELECT m.id, m.thread_id, m.in_reply_to_id, m.body, b.address FROM mail_messages m"
    " JOIN mail_recipients r ON r.message_id = m.id JOIN mailboxes b ON b.id = r.mailbox_id"
    " WHERE m.id IN ({}) ORDER BY m.id, b.address"
)


@check_fn("reply_in_thread", reads=("mail_messages", "mail_recipients", "mailboxes", "tickets", "projects"))
def reply_in_thread(
    ctx: GradingContext,
    message: str,
    pattern: Regex | None = None,
    absent: Regex | None = None,
    key_in: str | None = None,
    answers: str | None = None,
) -> CheckOutcome:
    """The agent replied in the thread of ``message`` (a Message-ID header) to its sender, saying what it should.

    A reply counts when it is in that thread and reaches the sender; it must match ``pattern``, not match
    ``absent`` (a promised date), name the key of the first ticket filed this episode in project ``key_in``,
    and, with ``answers``, be a reply to that later message of the thread (the one carrying the details).
    """
    start = ctx.db.execute(_THREAD, {"header": message}).first()
    if start is None:
        raise ValueError(f"no message {message!r} in the world")
    answered = ctx.db.execute(_THREAD, {"header": answers}).first() if answers is not None else None
    sent = [
        r
        for r in rows_in(ctx, _SENT, inserted_ids(ctx, "mail_messages"))
        if r[1] == start.thread_id and str(r[4]).lower() == str(start.address).lower()
    ]
    if not sent:
        return CheckOutcome.of(False, f"no reply in the thread to {start.address}")
    key = None
    if key_in is not None:
        filed = _filed(ctx, key_in)
        if not filed:
            return CheckOutcome.of(False, f"a reply to {start.address}, but no ticket in {key_in} to name")
        key = str(filed[0][1])
    problems = []
    for mid, _thread, parent, body, _ in sent:
        wrong = []
        if pattern is not None and not rx(pattern).search(body or ""):
            wrong.append(f"does not say /{pattern}/")
        if absent is not None and (hit := rx(absent).search(body or "")):
            wrong.append(f"says {hit.group(0)!r}")
        if key is not None and not re.search(rf"\b{re.escape(key)}\b", body or ""):
            wrong.append(f"does not name {key}")
        if answered is not None and parent != answered.id:
            wrong.append("does not answer the message with the details")
        if not wrong:
            return CheckOutcome.of(True, f"mail #{mid} to {start.address} in the thread: {snippet(body or '')}")
        problems.append(f"#{mid} {', '.join(wrong)}")
    return CheckOutcome.of(False, f"replies to {start.address}: {listing(problems)}")

"""Coherence of the code history: merge requests, their reviews, incident fixes and the repositories' commits.

Why (issue 12 item 4): the generated history's merge requests (``worlds.generate.code``) and the commits the
repositories hold for them (``worlds.repos``) are two records of the same work; an agent that reads one and
acts on the other must find them agreeing. These checks read only generated requests (a request inserted
through the change log is an episode's and is the agent's or a coworker's business):

* ``code_requests``: a request's branch starts with a ticket key; the ticket exists, was filed before the
  request and is named in its title and description; the module the description names is the ticket's
  component; every review verdict is by someone other than the author, on the author's team; a merged request
  was approved before it merged, by its author's team, before the ticket was done; the ticket names it.
* ``incident_fixes``: the postmortem of an incident whose team owns a repository names its fix (``repo!N``), a
  merged request for the same incident, merged after the first ~incidents post about it and before the
  postmortem was written.
* ``code_commits``: the repositories, regenerated from the rows and the seed into a temporary directory, hold
  for each merged request a merge commit at its merge time naming ``repo!N`` whose branch commits name the key
  and touch the module; an open or closed request keeps its branch; every commit subject that names a ticket
  names one filed before the commit. Regenerating costs about a second per hundred employees.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Connection, select

from worlds.coherence import Tally, _refs, _section
from worlds.gitrun import git
from worlds.repos import KEY_OF_BRANCH, MODULE_IN_TEXT, generate_repos
from worlds.schema import (
    ChangeLog,
    Channel,
    Document,
    Employee,
    MergeRequest,
    MergeRequestNote,
    Post,
    Project,
    Repository,
    Ticket,
    TicketComment,
    TicketStatusChange,
)
from worlds.spec import WorldSpec

_FIX = re.compile(r"([a-z0-9][a-z0-9-]*)!(\d+)")
_VERDICTS = ("approve", "request_changes")


def _episode_requests(conn: Connection) -> set[int]:
    return {
        int(json.loads(k)[0])
        for k in conn.scalars(
            select(ChangeLog.row_key).where(ChangeLog.table_name == "merge_requests", ChangeLog.op == "insert")
        )
    }


def _requests(
    conn: Connection,
) -> list[tuple[int, str, int, str, str, str, str, datetime, datetime | None, int, int | None]]:
    """Generated requests in id order.

    Each is (id, repository, number, title, description, branch, state, opened, merged, author, merger).
    """
    episode = _episode_requests(conn)
    rows = conn.execute(
        select(
            MergeRequest.id, Repository.name, MergeRequest.number, MergeRequest.title, MergeRequest.description,
            MergeRequest.source_branch, MergeRequest.state, MergeRequest.created_at, MergeRequest.merged_at,
            MergeRequest.author_id, MergeRequest.merged_by_id,
        )
        .join(Repository, Repository.id == MergeRequest.repository_id)
        .order_by(MergeRequest.id)
    ).all()  # fmt: skip
    return [tuple(r) for r in rows if r[0] not in episode]


def _code_requests(conn: Connection, tally: Tally) -> None:
    """Generated requests agree with their tickets, their reviewers' teams and the tickets' done times."""
    rows = _requests(conn)
    if not rows:
        return
    tickets = {
        k: (tid, created, f"{title}\n{desc}".lower())
        for tid, k, created, title, desc in conn.execute(
            select(Ticket.id, Ticket.key, Ticket.created_at, Ticket.title, Ticket.description)
        )
    }
    done: dict[int, datetime] = {}
    for tid, at in conn.execute(
        select(TicketStatusChange.ticket_id, TicketStatusChange.changed_at)
        .where(TicketStatusChange.to_status == "done")
        .order_by(TicketStatusChange.changed_at)
    ):
        done.setdefault(tid, at)
    team = dict(conn.execute(select(Employee.id, Employee.team_id)).all())
    notes: dict[int, list[tuple[int, str, datetime]]] = {}
    for mr, who, kind, at in conn.execute(
        select(
            MergeRequestNote.merge_request_id, MergeRequestNote.author_id, MergeRequestNote.kind,
            MergeRequestNote.created_at,
        ).order_by(MergeRequestNote.created_at, MergeRequestNote.id)
    ):  # fmt: skip
        notes.setdefault(mr, []).append((who, kind, at))
    named: dict[int, str] = {}
    for tid, body in conn.execute(select(TicketComment.ticket_id, TicketComment.body).order_by(TicketComment.id)):
        named[tid] = named.get(tid, "") + "\n" + body
    for mid, repo, number, title, desc, branch, state, opened, merged, author, merger in rows:
        tally.checked += 1
        where = f"merge request {repo}!{number}"
        m = KEY_OF_BRANCH.match(branch)
        key = m[1] if m else ""
        if key not in tickets:
            tally.fail(f"{where}: branch {branch!r} names no ticket of the world")
            continue
        tid, created, about = tickets[key]
        modules = MODULE_IN_TEXT.findall(desc)
        verdicts = [(who, kind, at) for who, kind, at in notes.get(mid, []) if kind in _VERDICTS]
        approvals = [at for who, kind, at in verdicts if kind == "approve"]
        if created > opened:
            tally.fail(f"{where} was opened before {key} was filed")
        elif key not in title or key not in desc:
            tally.fail(f"{where}: title or description does not name {key}, its branch's ticket")
        elif not modules or modules[0][1].replace("_", " ") not in about:
            tally.fail(f"{where}: the module it names is not the component {key} is about")
        elif any(who == author or team.get(who) != team.get(author) for who, _, _ in verdicts):
            tally.fail(f"{where}: reviewed by its author or by someone outside the author's team")
        elif state == "merged" and (merged is None or not approvals or min(approvals) > merged):
            tally.fail(f"{where} was merged without an approval before it")
        elif state == "merged" and merger is not None and team.get(merger) != team.get(author):
            tally.fail(f"{where} was merged by employee {merger}, outside the author's team")
        elif state == "merged" and merged is not None and tid in done and merged > done[tid]:
            tally.fail(f"{where} was merged at {merged:%Y-%m-%d %H:%M}, after {key} was done")
        elif f"{repo}!{number}" not in named.get(tid, ""):
            tally.fail(f"{where}: no comment on {key} names it")


def _incident_fixes(conn: Connection, tally: Tally) -> None:
    """A postmortem's fix is a merged request of its incident, merged after the first alert post, before it."""
    merged = {
        (repo, number): (branch, at)
        for _, repo, number, _, _, branch, state, _, at, _, _ in _requests(conn)
        if state == "merged" and at is not None
    }
    if not merged:
        return
    first_post: dict[str, datetime] = {}
    refs = _refs(conn)
    for message, at in conn.execute(
        select(Post.message, Post.created_at)
        .join(Channel, Channel.id == Post.channel_id)
        .where(Channel.name == "incidents")
        .order_by(Post.id)
    ):
        for key in refs.keys(message):
            first_post[key] = min(at, first_post.get(key, at))
    owners = dict(
        conn.execute(select(Ticket.key, Project.team_id).join(Project, Project.id == Ticket.project_id)).all()
    )
    coded = set(conn.scalars(select(Repository.team_id)))
    for did, name, content, written in conn.execute(
        select(Document.id, Document.name, Document.content, Document.created_at)
        .where(Document.name.like("Postmortem %"), Document.version == 1)
        .order_by(Document.id)
    ):
        fixes = _FIX.findall(" ".join(_section(content, "Fix")))
        key = name.split(" ")[1]
        if not fixes and owners.get(key) not in coded:
            continue  # the incident's team has no repository: its fix is not code
        tally.checked += 1
        if not fixes:
            tally.fail(f"document {did} ({name}) names no fix, though {key}'s team owns a repository")
            continue
        repo, number = fixes[0][0], int(fixes[0][1])
        found = merged.get((repo, number))
        if found is None or not found[0].startswith(f"{key}-"):
            tally.fail(f"document {did} ({name}) names {repo}!{number}, which is no merged request for {key}")
        elif key in first_post and found[1] < first_post[key]:
            tally.fail(f"document {did} ({name}): {repo}!{number} was merged before {key} was raised in ~incidents")
        elif found[1] > written:
            tally.fail(f"document {did} ({name}): {repo}!{number} was merged after the postmortem was written")


_LOG = "--format=%x1e%H%x00%P%x00%at%x00%s%x00%b%x00"


def _log(path: str) -> dict[str, tuple[list[str], datetime, str, str, list[str]]]:
    """Every commit of a repository: sha -> (parents, date, subject, body, files it touches vs its first parent)."""
    out: dict[str, tuple[list[str], datetime, str, str, list[str]]] = {}
    raw = git(Path(path), "log", "--all", "--diff-merges=first-parent", "--name-only", _LOG).decode("utf-8", "replace")
    for chunk in raw.split("\x1e")[1:]:
        sha, parents, at, subject, body, files = chunk.split("\x00", 5)
        when = datetime.fromtimestamp(int(at), UTC)
        out[sha] = (parents.split(), when, subject, body, [f for f in files.split("\n") if f])
    return out


def _code_commits(conn: Connection, tally: Tally) -> None:
    """The repositories, regenerated from the rows, hold each request's commits as the rows describe them."""
    rows = _requests(conn)
    meta = conn.execute(select(Repository.id).limit(1)).first()
    spec_row = conn.exec_driver_sql("SELECT value FROM world_meta WHERE key = 'spec'").first()
    if not rows or meta is None or spec_row is None:
        return
    seed = WorldSpec.model_validate_json(spec_row[0]).seed
    refs = _refs(conn)
    by_repo: dict[str, list[tuple[int, str, str, str, datetime | None]]] = {}
    for _, repo, number, _, desc, branch, state, _, merged, _, _ in rows:
        mods = MODULE_IN_TEXT.findall(desc)
        module = f"{mods[0][0]}/{mods[0][1]}.py" if mods else "(no module named)"
        by_repo.setdefault(repo, []).append((number, branch, state, module, merged))
    with tempfile.TemporaryDirectory(prefix="coherence-repos-") as tmp:
        infos = {i.name: i for i in generate_repos(conn, seed, tmp)}
        for repo, requests in sorted(by_repo.items()):
            info = infos.get(repo)
            if info is None:
                tally.checked += 1
                tally.fail(f"repository {repo} has merge requests but was not generated")
                continue
            log = _log(str(info.path))
            merges = {c[2].split("'")[1]: (sha, c) for sha, c in log.items() if c[2].startswith("Merge branch '")}
            for sha, (_, when, subject, _, _) in sorted(log.items(), key=lambda kv: (kv[1][1], kv[0])):
                keys = refs.keys(subject)
                if keys:
                    tally.checked += 1
                    bad = [k for k in keys if k not in refs.tickets or refs.tickets[k][0] > when]
                    if bad:
                        tally.fail(f"{repo} commit {sha[:12]} ({subject[:60]}) names {bad[0]}, missing or filed later")
            for number, branch, state, module, merged in requests:
                tally.checked += 1
                key = "-".join(branch.split("-", 2)[:2])
                where = f"{repo}!{number}"
                if state == "merged":
                    found = merges.get(branch)
                    if found is None:
                        tally.fail(f"{where} is merged but {repo} has no merge commit of {branch!r}")
                        continue
                    sha, (parents, when, _, body, _) = found
                    side = log.get(parents[1]) if len(parents) > 1 else None
                    if merged is None or when != merged.replace(microsecond=0) or f"{where}" not in body:
                        tally.fail(f"{where}: the merge commit {sha[:12]} is not at its merge time or does not name it")
                    elif side is None or not side[2].startswith(f"{key}: ") or module not in side[4]:
                        tally.fail(f"{where}: the branch commit does not name {key} or does not touch {module}")
                elif branch not in info.branches:
                    tally.fail(f"{where} is {state} but {repo} has no branch {branch!r}")
                else:
                    tip = log.get(info.branches[branch])
                    if tip is None or not tip[2].startswith(f"{key}: ") or module not in tip[4]:
                        tally.fail(f"{where}: the tip of {branch!r} does not name {key} or does not touch {module}")


CODE_CHECKS: tuple[tuple[str, str, Callable[[Connection, Tally], None]], ...] = (
    ("code_requests", "merge requests agree with their ticket, reviewers' team and done time", _code_requests),
    (
        "incident_fixes",
        "a postmortem's fix merged after the incident's first post, before the postmortem",
        _incident_fixes,
    ),
    ("code_commits", "repositories hold each request's key-named commits, merges at merge time", _code_commits),
)

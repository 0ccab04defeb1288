"""History merge requests (``worlds.generate.code``), their commits (``worlds.repos``) and their coherence checks.

Why: issue 12 items 1 and 4 ask that commits name tickets that exist and touch the files those tickets are
about, that requests are reviewed by the author's teammates and merged after approval and before the ticket is
done, and that an incident's fix merges between its first ~incidents post and its postmortem. These tests read
a generated world, then break one thing at a time and assert the named check reports it.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from worlds.check import world_report
from worlds.coherence import _section
from worlds.generate import generate
from worlds.gitrun import git
from worlds.repos import generate_repos
from worlds.rows import load_in_memory
from worlds.spec import WorldSpec

Rows = dict[str, list[dict[str, Any]]]
SPEC = WorldSpec(seed=7, employees=80, history_days=60)


@pytest.fixture(scope="module")
def base() -> Rows:
    rows = generate(SPEC)
    rows["world_meta"] = [{"key": "spec", "value": SPEC.model_dump_json()}]  # the commit check reads the seed
    return rows


def _copy(rows: Rows) -> Rows:
    return {t: [dict(r) for r in batch] for t, batch in rows.items()}


def _failed(rows: Rows, check: str) -> list[str]:
    with load_in_memory(rows).connect() as conn:
        report = {r.name: r for r in world_report(conn)}
    return list(report[check].problems)


def _merged(rows: Rows) -> dict[str, Any]:
    return next(m for m in rows["merge_requests"] if m["state"] == "merged")


def test_generated_requests__follow_their_tickets(base: Rows) -> None:
    requests = base["merge_requests"]
    assert {m["state"] for m in requests} == {"merged", "open", "closed"}
    tickets = {t["key"]: t for t in base["tickets"]}
    employees = base["employees"]
    notes: dict[int, list[dict[str, Any]]] = {}
    for n in base["merge_request_notes"]:
        notes.setdefault(n["merge_request_id"], []).append(n)
    comments = "\n".join(c["body"] for c in base["ticket_comments"])
    repos = {r["id"]: r["name"] for r in base["repositories"]}
    for m in requests:
        key = re.match(r"[A-Z]+-\d+", m["source_branch"])
        assert key is not None and key[0] in m["title"] and key[0] in m["description"]
        t = tickets[key[0]]
        assert m["author_id"] == t["assignee_id"] and m["created_at"] > t["created_at"]
        assert f"{repos[m['repository_id']]}!{m['number']}" in comments
        if m["state"] != "merged":
            continue
        approvals = [n for n in notes[m["id"]] if n["kind"] == "approve"]
        assert approvals and all(n["author_id"] != m["author_id"] for n in approvals)
        team = employees[m["author_id"] - 1]["team_id"]
        assert all(employees[n["author_id"] - 1]["team_id"] == team for n in approvals)
        assert min(n["created_at"] for n in approvals) < m["merged_at"] <= t["resolved_at"]
    postmortems = [d for d in base["documents"] if d["name"].startswith("Postmortem ")]
    assert postmortems and all(re.search(r"[a-z-]+!\d+", " ".join(_section(d["content"], "Fix"))) for d in postmortems)


def test_code_checks__pass_on_a_generated_world(base: Rows) -> None:
    with load_in_memory(_copy(base)).connect() as conn:
        report = {r.name: r for r in world_report(conn)}
    for name in ("refs_code", "code_requests", "incident_fixes", "code_commits", "working_hours"):
        assert report[name].checked > 0 and report[name].failed == 0, (name, report[name].problems[:3])
    assert report["code_commits"].checked > len(base["merge_requests"])


def test_repositories__hold_each_request_as_its_rows_say(base: Rows, tmp_path: Path) -> None:
    with load_in_memory(_copy(base)).connect() as conn:
        infos = {i.name: i for i in generate_repos(conn, SPEC.seed, tmp_path)}
    repos = {r["id"]: r["name"] for r in base["repositories"]}
    opened = [m for m in base["merge_requests"] if m["state"] == "open"]
    assert opened and all(m["source_branch"] in infos[repos[m["repository_id"]]].branches for m in opened)
    m = _merged(base)
    info = infos[repos[m["repository_id"]]]
    assert m["source_branch"] not in info.branches  # merged: the branch was deleted, as a forge does
    log = git(info.path, "log", "--merges", "--format=%at %s", info.default_branch).decode()
    assert f"{int(m['merged_at'].timestamp())} Merge branch '{m['source_branch']}'" in log


def test_code_requests__catch_an_approval_by_the_author(base: Rows) -> None:
    rows = _copy(base)
    note = next(n for n in rows["merge_request_notes"] if n["kind"] == "approve")
    m = rows["merge_requests"][note["merge_request_id"] - 1]
    note["author_id"] = m["author_id"]
    assert any("reviewed by its author" in p for p in _failed(rows, "code_requests"))


def test_code_requests__catch_a_merge_after_the_ticket_was_done(base: Rows) -> None:
    rows = _copy(base)
    m = _merged(rows)
    ticket = next(t for t in rows["tickets"] if m["source_branch"].startswith(f"{t['key']}-"))
    m["merged_at"] = ticket["resolved_at"] + timedelta(hours=2)
    assert any(f"after {ticket['key']} was done" in p for p in _failed(rows, "code_requests"))


def test_refs_code__catch_a_title_naming_a_ticket_filed_later(base: Rows) -> None:
    rows = _copy(base)
    m = _merged(rows)
    last = max(rows["tickets"], key=lambda t: t["created_at"])
    m["title"] = f"{m['title']} (see {last['key']})"
    assert any(f"names {last['key']}, created later" in p for p in _failed(rows, "refs_code"))


def test_incident_fixes__catch_a_postmortem_naming_another_request(base: Rows) -> None:
    rows = _copy(base)
    doc = next(d for d in rows["documents"] if d["name"].startswith("Postmortem "))
    key = doc["name"].split(" ")[1]
    other = next(m for m in rows["merge_requests"] if m["state"] == "merged" and not m["source_branch"].startswith(key))
    repo = rows["repositories"][other["repository_id"] - 1]["name"]
    blocks = doc["content"]["blocks"]
    i = next(i for i, (level, text) in enumerate(blocks) if level and text == "Fix") + 1
    blocks[i] = [blocks[i][0], re.sub(r"[a-z-]+!\d+", f"{repo}!{other['number']}", blocks[i][1])]
    assert any(f"no merged request for {key}" in p for p in _failed(rows, "incident_fixes"))


def test_code_commits__catch_a_request_whose_module_is_not_in_its_repository(base: Rows) -> None:
    rows = _copy(base)
    m = _merged(rows)
    m["description"] = re.sub(r"`[a-z0-9_]+/", "`elsewhere/", m["description"])
    repo = rows["repositories"][m["repository_id"] - 1]["name"]
    assert any(
        f"{repo}!{m['number']} is merged but {repo} has no merge commit" in p for p in _failed(rows, "code_commits")
    )


def test_code_commits__catch_a_commit_naming_a_ticket_filed_after_it(base: Rows) -> None:
    rows = _copy(base)
    m = _merged(rows)
    ticket = next(t for t in rows["tickets"] if m["source_branch"].startswith(f"{t['key']}-"))
    ticket["created_at"] = m["created_at"] + timedelta(minutes=30)  # the branch commit is at m's opening
    assert any(f"names {ticket['key']}, missing or filed later" in p for p in _failed(rows, "code_commits"))


def test_leavers__catch_a_review_after_the_reviewers_last_day(base: Rows) -> None:
    rows = _copy(base)
    note = max(rows["merge_request_notes"], key=lambda n: n["created_at"])
    who = note["author_id"]
    rows["change_log"] = [
        {
            "seq": 1,
            "table_name": "employees",
            "row_key": f"[{who}]",
            "op": "update",
            "changes": {"active": [True, False]},
            "actor_id": None,
            "at": note["created_at"] - timedelta(days=1),
            "tag": "setup",
        }
    ]
    assert any(f"merge_request_notes {note['id']} by employee {who}" in p for p in _failed(rows, "leavers"))

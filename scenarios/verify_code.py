"""Independent verifiers of ``ship-fix-v0`` and ``code-review-v0`` (``scenarios.verify`` holds the registry).

Same contract as ``scenarios.verify``: "solved" is decided from the hidden params, the final state in raw SQL
and the episode's steps, never from the rubric. The fix itself is judged by ``verify_fix_test`` (the same bug
task); the shipping is judged here from the forge's rows: the request merged, each code owner's last verdict
before the merge an approval of the merged head, the owners named, the ticket done with a comment naming it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from scenarios.verify import VERIFIERS, Evidence, Verdict, _ids, verify_fix_test


def _at(value: Any) -> datetime:
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _tool(step: Mapping[str, Any]) -> str:
    action = step.get("action")
    return str(action.get("name", "")) if isinstance(action, Mapping) else ""


def verify_ship_fix(ev: Evidence) -> Verdict:
    """The bug fixed as fix-failing-test wants it, then merged only on every code owner's approval, and closed.

    Stricter than the rubric by design: the fix verifier's stricter config rule applies, and the tests must
    have run in the shell without error, the ticket be done and its comment name the request (the rubric only
    scores those).
    """
    p = ev.params
    reasons = list(verify_fix_test(ev).reasons)
    opened = ev.inserted("merge_requests")  # not the agent's older requests the history holds
    row = (
        ev.sql.one(
            _ids(
                "SELECT m.id, m.number, m.title, m.description, m.state, m.source_head, m.merged_at"
                " FROM merge_requests m"
                " JOIN repositories r ON r.id = m.repository_id WHERE r.name = ? AND m.author_id = ?"
                " AND m.target_branch = r.default_branch AND m.state <> 'closed' AND m.id IN (?*)"
                " ORDER BY m.id DESC LIMIT 1",
                opened,
            ),
            (str(p["repo"]), ev.actor_id, *opened),
        )
        if opened
        else None
    )
    if row is None:
        return Verdict(False, tuple(reasons) or ("no merge request",))
    mr_id, number, title, description, state, head, merged_at = row
    if state != "merged" or merged_at is None:
        reasons.append(f"!{number} is {state}, not merged")
    for owner in p["owners"]:
        verdicts = [
            (kind, sha)
            for kind, sha, at in ev.sql.all(
                "SELECT n.kind, n.commit_sha, n.created_at FROM merge_request_notes n JOIN employees e"
                " ON e.id = n.author_id WHERE n.merge_request_id = ? AND e.username = ?"
                " AND n.kind IN ('approve', 'request_changes') ORDER BY n.id",
                (mr_id, owner),
            )
            if merged_at is None or _at(at) <= _at(merged_at)
        ]
        if not verdicts or verdicts[-1] != ("approve", head):
            reasons.append(f"@{owner}'s last verdict before the merge is {verdicts[-1:] or 'none'}, not an approval")
        if not re.search(rf"(?<![\w.@])@{re.escape(owner)}(?![\w-])", f"{title}\n{description}"):
            reasons.append(f"!{number} does not name @{owner}")
    mine = set(ev.inserted("ticket_comments"))
    for ticket in [str(p["ticket"]), *(p.get("duplicates") or [])]:
        status = ev.sql.scalar("SELECT status FROM tickets WHERE key = ?", (ticket,))
        if status != "done":
            reasons.append(f"{ticket} is {status}, not done")
        bodies = [
            str(b)
            for i, b in ev.sql.all(
                "SELECT c.id, c.body FROM ticket_comments c JOIN tickets t ON t.id = c.ticket_id WHERE t.key = ?"
                " ORDER BY c.id",
                (ticket,),
            )
            if i in mine
        ]
        if not any(re.search(rf"!{number}(?!\d)", b) for b in bodies):
            reasons.append(f"no new comment on {ticket} names !{number}")
    if not any(_tool(s) == "shell_run" and not s.get("error") for s in ev.steps):
        reasons.append("the tests never ran in the shell")
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["ship-fix-v0"] = verify_ship_fix


_SAYS = {
    "docstring": ("docstring",),
    "print": ("print",),
    "todo": ("todo",),
    "cents": ("cent", "float"),
    "except": ("except",),
}
"""How a reviewer names each checklist rule (words, case-insensitive), written apart from the rubric's patterns."""


def _words(body: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]+", body)}


def _says(body: str, rule: str) -> bool:
    words = _words(body)
    return any(any(w == s or w == s + "s" for w in words) for s in _SAYS[rule])


def _mentions(body: str, path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(token.rsplit("/", 1)[-1].strip(".,:;()`'\"") == name for token in body.split())


def verify_code_review(ev: Evidence) -> Verdict:
    """The request open, a note per violation (file and rule), none on a trap, only "request changes" given.

    The agent must have changed nothing but notes on the request. Read from the forge's rows (the agent's
    ``merge_request_notes``, the request's state) and the change log.
    """
    p = ev.params
    mr_id = int(p["mr_id"])
    reasons: list[str] = []
    state = ev.sql.scalar("SELECT state FROM merge_requests WHERE id = ?", (mr_id,))
    if state != "open":
        reasons.append(f"!{p['number']} is {state}, not open")
    notes = [
        (str(kind), str(body or ""))
        for kind, body in ev.sql.all(
            "SELECT kind, body FROM merge_request_notes WHERE merge_request_id = ? AND author_id = ? ORDER BY id",
            (mr_id, ev.actor_id),
        )
    ]
    verdicts = [k for k, _ in notes if k != "comment"]
    if not verdicts or set(verdicts) != {"request_changes"}:
        reasons.append(f"verdicts given: {verdicts or 'none'}, not only request_changes")
    for v in p["violations"]:
        flags = [b for _, b in notes if _mentions(b, v["file"]) and _says(b, v["rule"])]
        if not flags:
            reasons.append(f"no note flags {v['file']} for the {v['rule']} rule")
        elif not any(str(v["line"]) in re.findall(r"(?i)(?:line\s*|L|:)(\d+)", b) for b in flags):
            reasons.append(f"the note on {v['file']} ({v['rule']}) does not point at line {v['line']}")
        others = [o for o in p["violations"] if o is not v]
        if flags and all(any(_mentions(b, o["file"]) and _says(b, o["rule"]) for o in others) for b in flags):
            reasons.append(f"{v['file']} ({v['rule']}) is flagged only together with other findings")
    for t in p["traps"]:
        rule = str(t["rule"])
        if any(_mentions(b, t["file"]) and (not rule or _says(b, rule)) for _, b in notes):
            reasons.append(f"a note flags the trap {t['trap']} in {t['file']}")
    kept = set(_SAYS) - {str(v["rule"]) for v in p["violations"]} - {str(t["rule"]) for t in p["traps"]}
    for rule in sorted(kept):
        if any(_says(b, rule) for _, b in notes):
            reasons.append(f"a note says the change breaks the {rule} rule, which it keeps")
    allowed = {"merge_request_notes": {"insert"}, "merge_requests": {"update"}}
    for c in ev.mine():
        fields = c.get("changes") or {}
        fields = json.loads(fields) if isinstance(fields, str) else fields
        if c["op"] not in allowed.get(str(c["table"]), set()) or (
            c["table"] == "merge_requests" and set(fields) - {"updated_at"}
        ):
            reasons.append(f"changed {c['table']} ({c['op']}) beyond review notes")
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["code-review-v0"] = verify_code_review

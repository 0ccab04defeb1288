"""Independent verifier of ``ship-fix-v0`` (``scenarios.verify`` holds the helpers and the registry).

Same contract as ``scenarios.verify``: "solved" is decided from the hidden params, the final state in raw SQL
and the episode's steps, never from the rubric. The fix itself is judged by ``verify_fix_test`` (the same bug
task); the shipping is judged here from the forge's rows: the request merged, each code owner's last verdict
before the merge an approval of the merged head, the owners named, the ticket done with a comment naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from scenarios.verify import VERIFIERS, Evidence, Verdict, verify_fix_test


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
    row = ev.sql.one(
        "SELECT m.id, m.number, m.title, m.description, m.state, m.source_head, m.merged_at FROM merge_requests m"
        " JOIN repositories r ON r.id = m.repository_id WHERE r.name = ? AND m.author_id = ?"
        " AND m.target_branch = r.default_branch AND m.state <> 'closed' ORDER BY m.id DESC LIMIT 1",
        (str(p["repo"]), ev.actor_id),
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

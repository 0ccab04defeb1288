"""Independent verifiers of the mined history families: history-question, history-redo and history-followup.

Same contract as ``scenarios.verify`` (whose helpers they use and whose ``VERIFIERS`` they join): solved or not
from the hidden params, the change log and raw SQL, never the rubric.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scenarios.verify import _KEY, VERIFIERS, Evidence, Verdict, _ids, _outside, _sent_mail, _summary

# -- history-question --------------------------------------------------------------------------------------

_DAY = re.compile(r"\d{4}-\d\d-\d\d")


def _stated(summary: str, label: str) -> set[str]:
    """Every value the summary states after ``label:`` (anywhere in it), as written: ``@user``, a day, a count."""
    probe = re.compile(rf"(?<![\w-]){re.escape(label)}\s*:\s*(\S+)", re.I)
    return {m.group(1).rstrip(".,;:!?)").lower() for m in probe.finditer(summary)}


def _written(value: str) -> str:
    """A fact as the answer writes it: people as @username, days and counts as they are."""
    return value.lower() if _DAY.fullmatch(value) or value.isdigit() else f"@{value.lower()}"


def verify_history_question(ev: Evidence) -> Verdict:
    """Nothing changed, and each fact's labelled line states exactly its value (the params' facts and labels)."""
    reasons = [f"{len(ev.mine())} rows changed by a read-only question"] if ev.mine() else []
    summary = _summary(ev)
    if summary is None:
        return Verdict(False, (*reasons, "no successful submit ended the episode"))
    for fact, value in sorted(ev.params["answer"].items()):
        label = ev.params["labels"][fact]
        if (found := _stated(summary, label)) != {_written(str(value))}:
            reasons.append(f"{label}: the summary states {sorted(found)}, the history says {value}")
    return Verdict(not reasons, tuple(reasons))


# -- history-redo and history-followup ----------------------------------------------------------------------

_STATUS_WORDS = re.compile(r"(?<![\w-])(backlog|todo|in_progress|in_review|blocked|done|wont_do)(?![\w-])")


def _states(text: str, key: str, facts: Mapping[str, Any], linked: Mapping[str, Any] | None = None) -> list[str]:
    """Why ``text`` does not state exactly ``key`` and ``facts`` (status, assignee), by the verifier's reading.

    ``linked`` (history-redo at difficulty 3): a second ticket whose key, status and assignee the text must
    state too; its key and status are then the only others allowed.
    """
    why = []
    keys = {f"{p}-{n}" for p, n in _KEY.findall(text)}
    want = {key} | ({str(linked["key"])} if linked else set())
    if keys != want:
        why.append(f"names tickets {sorted(keys)}, not {sorted(want)}")
    said = set(_STATUS_WORDS.findall(text))
    if "status" in facts and said != {facts["status"]} | ({linked["status"]} if linked else set()):
        why.append(
            f"states statuses {sorted(said)}, not only {facts['status']}"
            + (f" and {linked['status']}" if linked else "")
        )
    named = {u.rstrip(".-_").lower() for u in re.findall(r"@([\w.-]+)", text)}
    if "assignee" in facts:
        who = facts["assignee"]
        if who is not None and who.lower() not in named:
            why.append(f"does not name @{who}")
        if who is None and not re.search(r"\b(unassigned|nobody|no one)\b", text, re.I):
            why.append("does not say nobody holds it")
    if linked and str(linked["assignee"]).lower() not in named:
        why.append(f"does not name @{linked['assignee']}, who holds {linked['key']}")
    return why


def verify_history_redo(ev: Evidence) -> Verdict:
    """One reply of the agent's answers the asking mail in its thread, to the asker, stating exactly the facts."""
    p, prov = ev.params, ev.params["provenance"]
    ids = ev.inserted("mail_messages")
    rows = ev.sql.all(
        _ids("SELECT m.id, m.body, m.thread_id, m.in_reply_to_id, m.sender_mailbox_id FROM mail_messages m"
             " WHERE m.id IN (?*) ORDER BY m.id", ids), ids,
    ) if ids else []  # fmt: skip
    reasons: list[str] = []
    replies = [r for r in rows if (r[2], r[3], r[4]) == (prov["thread"], prov["trigger"], p["box"])]
    if not replies:
        reasons.append(f"no reply to message {prov['trigger']} in thread {prov['thread']}")
    to = {a for a, _, _ in _sent_mail(ev)}
    linked = None
    if p.get("linked"):  # the second ticket's state as the tracker holds it now, not as the build wrote it down
        row = ev.sql.one(
            "SELECT t.key, t.status, e.username FROM tickets t LEFT JOIN employees e ON e.id = t.assignee_id"
            " WHERE t.key = ?",
            (p["linked"]["key"],),
        )
        linked = {"key": p["linked"]["key"], "status": None, "assignee": None}
        if row is not None:
            linked = {"key": str(row[0]), "status": str(row[1]), "assignee": str(row[2])}
    good = [r for r in replies if str(p["to"]).lower() in to and not _states(str(r[1]), p["key"], p["facts"], linked)]
    if replies and not good:
        why = _states(str(replies[-1][1]), p["key"], p["facts"], linked)
        reasons.append(f"no reply reaches {p['to']} stating it: {'; '.join(why)}")
    mail = {"mail_threads", "mail_messages", "mail_recipients", "mail_deliveries"}

    def allowed(c: Mapping[str, Any]) -> bool:
        return c["table"] in mail and (c["op"] == "insert" or (c["table"] == "mail_deliveries" and c["op"] == "update"))

    reasons += [f"changes {c}" for c in _outside(ev, allowed)]
    return Verdict(not reasons, tuple(reasons))


def verify_history_followup(ev: Evidence) -> Verdict:
    """The agent's live reply in the request's thread states exactly the facts; a review comment when asked."""
    p, prov = ev.params, ev.params["provenance"]
    ids = ev.inserted("posts")
    rows = ev.sql.all(
        _ids("SELECT message FROM posts WHERE id IN (?*) AND root_id = ? AND deleted_at IS NULL ORDER BY id", ids),
        [*ids, prov["post"]],
    ) if ids else []  # fmt: skip
    facts: dict[str, Any] = {}
    if p["status"] is not None:
        facts["status"] = p["status"]
        if p["full"]:
            facts["assignee"] = p["assignee"]
    reasons: list[str] = []
    why = [_states(str(r[0]), p["key"], facts) for r in rows]
    if p["kind"] == "review-request":
        why = [w + ([] if f"@{prov['author']}" in str(r[0]) else [f"does not mention @{prov['author']}"])
               for w, r in zip(why, rows, strict=True)]  # fmt: skip
    if not rows:
        reasons.append(f"no live reply in the thread of post {prov['post']}")
    elif all(why):
        reasons.append(f"the reply {'; '.join(why[-1])}")
    review = p["kind"] == "review-request" and p["full"]
    if review and not ev.inserted("ticket_comments"):
        reasons.append(f"no review comment on {p['key']}")
    tables = {"posts", "mentions"} | ({"ticket_comments"} if review else set())

    def allowed(c: Mapping[str, Any]) -> bool:
        return bool(
            (c["table"] in tables and c["op"] == "insert")
            or (review and c["table"] == "tickets" and c["op"] == "update")
        )

    reasons += [f"changes {c}" for c in _outside(ev, allowed)]
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["history-question-v0"] = verify_history_question
VERIFIERS["history-redo-v0"] = verify_history_redo
VERIFIERS["history-followup-v0"] = verify_history_followup

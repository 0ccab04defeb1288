"""Independent verifiers of the knowledge-work families: cross-source-question and its unanswerable variant.

Same contract as ``scenarios.verify`` (whose helpers they use and whose ``VERIFIERS`` they join): solved or not
from the hidden params, the change log and raw SQL, never the rubric. The verifier re-derives the facts the
chat and the mail hold from the raw rows (the manager's approval in the project's thread, the vendor's latest
mail about the project) instead of trusting the params, so a setup that wrote one thing and recorded another
fails here, and reads the summary its own way (every ``label:`` value, anywhere in it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from scenarios.verify import VERIFIERS, Evidence, Verdict, _outside, _summary

_READS = {"mail_deliveries": {"is_read", "read_at"}, "channel_members": {"last_viewed_at"}}
_DAY = re.compile(r"(?<![\d-])\d{4}-\d\d-\d\d(?![\d-])")


def _reading(c: Mapping[str, Any]) -> bool:
    """A change reading makes: a mail marked read, a channel visited."""
    fields = _READS.get(str(c["table"]))
    return fields is not None and c["op"] == "update" and set(c["changes"]) <= fields


def _stated(summary: str, label: str) -> set[str]:
    """Every value the summary states after ``label:``, as written (first word, trailing punctuation off)."""
    probe = re.compile(rf"(?<![\w-]){re.escape(label)}\s*:\s*(?:eur\s*|€\s*)?(\S+)", re.I)
    return {m.group(1).rstrip(".,;:!?)").lower() for m in probe.finditer(summary)}


def _decision(ev: Evidence) -> tuple[str, str] | None:
    """(vendor, approver's username) of the last approval in the project's decision thread, from the posts."""
    p = ev.params
    root = ev.sql.one(
        "SELECT id FROM posts WHERE root_id IS NULL AND message LIKE ? ORDER BY created_at DESC, id DESC LIMIT 1",
        (f"The {p['service']} evaluation for {p['project']} is done%",),
    )
    if root is None:
        return None
    rows = ev.sql.all(
        "SELECT e.username, p.message FROM posts p JOIN employees e ON e.id = p.author_id WHERE p.root_id = ?"
        " AND p.deleted_at IS NULL ORDER BY p.created_at, p.id",
        (root[0],),
    )
    approvals = [(m.group(1), str(u)) for u, text in rows if (m := re.match(r"Approved: we go with (\w+)", str(text)))]
    return approvals[-1] if approvals else None


def _latest_quote(ev: Evidence, vendor: str) -> tuple[int, str] | None:
    """(price as quoted, start day) from the vendor's newest mail about the project, from the mail rows."""
    row = ev.sql.one(
        "SELECT m.body FROM mail_messages m JOIN mailboxes b ON b.id = m.sender_mailbox_id WHERE b.address LIKE ?"
        " AND m.subject LIKE ? ORDER BY m.sent_at DESC, m.id DESC LIMIT 1",
        (f"%@{vendor.lower()}.example", f"%{ev.params['project']}%"),
    )
    if row is None:
        return None
    price = re.search(r"EUR ([\d,]+) a (?:year|month)", str(row[0]))
    start = re.search(r"from \w+ (\d\d \w+ \d{4})", str(row[0]))
    if price is None or start is None:
        return None
    day = datetime.strptime(start.group(1), "%d %B %Y").date().isoformat()  # noqa: DTZ007 - a calendar day
    return int(price.group(1).replace(",", "")), day


def _facts(ev: Evidence) -> tuple[dict[str, str], list[str]]:
    """The facts as the raw rows hold them (the cost centre from the params), and any setup disagreement."""
    p, why = ev.params, []
    facts = {"cost-centre": str(p["answer"]["cost-centre"])}
    decision = _decision(ev)
    if decision is None:
        return facts, ["no approval in the project's decision thread"]
    facts["vendor"], facts["approved-by"] = decision
    quote = _latest_quote(ev, decision[0])
    if quote is not None:
        price = quote[0] * 12 * (100 - int(p["discount"])) // 100 if p["monthly"] else quote[0]
        facts["annual-price"], facts["starts-on"] = str(price), quote[1]
    for fact, value in p["answer"].items():
        if facts.get(fact) != str(value):
            why.append(f"setup: the rows say {fact} is {facts.get(fact)}, the params {value}")
    return facts, why


def verify_cross_source_question(ev: Evidence) -> Verdict:
    """Only read marks changed, and each asked fact's labelled line states exactly what the rows hold."""
    reasons = [f"changes {c}" for c in _outside(ev, _reading)]
    facts, why = _facts(ev)
    reasons += why
    summary = _summary(ev)
    if summary is None:
        return Verdict(False, (*reasons, "no successful submit ended the episode"))
    for fact, label in sorted(ev.params["labels"].items()):
        want = facts.get(fact, "?").lower()
        want = f"@{want}" if fact == "approved-by" else want
        if (found := _stated(summary, label)) != {want}:
            reasons.append(f"{label}: the summary states {sorted(found)}, the sources say {want}")
    return Verdict(not reasons, tuple(reasons))


def verify_cross_source_unanswerable(ev: Evidence) -> Verdict:
    """Only read marks changed; the picked vendor never replied; the summary says so and states no price."""
    reasons = [f"changes {c}" for c in _outside(ev, _reading)]
    decision = _decision(ev)
    vendor = decision[0] if decision else str(ev.params["answer"]["vendor"])
    if _latest_quote(ev, vendor) is not None:
        reasons.append(f"setup: {vendor} did quote for the project")
    summary = _summary(ev)
    if summary is None:
        return Verdict(False, (*reasons, "no successful submit ended the episode"))
    text = re.sub(r"\bCC-\d+", " ", _DAY.sub(" ", summary))  # days and cost centres are no prices
    if re.search(r"€|\$|\b(eur|euros?|usd)\b", text, re.I) or re.search(r"\d[\d,.]{3,}", text):
        reasons.append("the summary states a price, and none exists")
    if vendor.lower() not in summary.lower():
        reasons.append(f"the summary does not name {vendor}")
    if not re.search(
        r"\b(not|never|no|hasn't|haven't)\b.*\b(answer|answered|repl\w*|quot\w*|respon\w*)", summary, re.I
    ):
        reasons.append("the summary does not say the quote request went unanswered")
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["cross-source-question-v0"] = verify_cross_source_question
VERIFIERS["cross-source-question-unanswerable-v0"] = verify_cross_source_unanswerable

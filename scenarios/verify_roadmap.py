"""Independent verifier of ``roadmap-update-v0`` (``scenarios.verify`` holds the helpers and the registry).

Same contract as ``scenarios.verify``: it decides "solved" from the hidden params, the change log and its own
raw SQL, never from the rubric. It reads the roadmap as a person reads it: one line per item, the quarter it is
listed under, the owner the line names; then the agent's live posts in ~product for the summary; then every row
the agent changed, which may touch only the roadmap's own row, its new versions and blobs, chat and read marks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scenarios.verify import VERIFIERS, Evidence, Verdict, _live_posts, _outside, _pk, _text_sections

_POSTED = frozenset({"posts", "mentions", "reactions"})


def _where(sections: Mapping[str, str], item: str) -> list[tuple[str, str]]:
    """(quarter heading, line) of every line naming ``item`` as a whole name (case-folded)."""
    name = re.compile(rf"(?<![\w-]){re.escape(item.casefold())}(?![\w-])")
    return [(h, line) for h, text in sections.items() for line in text.splitlines() if name.search(line)]


def verify_roadmap(ev: Evidence) -> Verdict:
    """Each decision applied, each trap and untouched item where it was, a summary naming the changes, no collateral."""
    p = ev.params
    found = _text_sections(ev, p["document"])
    if found is None:
        return Verdict(False, (f"no text document {p['document']}",))
    doc_id, sections = found
    reasons: list[str] = []
    posts = " ".join(m.casefold() for m in _live_posts(ev, p["channel"]))

    def one_in(item: str, quarter: str, owner: str | None = None) -> bool:
        at = _where(sections, item)
        ok = len(at) == 1 and at[0][0] == quarter.casefold()
        return ok and (owner is None or f"@{owner.casefold()}" in at[0][1])

    for d in p["decisions"]:
        item = d["item"]
        if d["kind"] == "move" and not one_in(item, d["to"], d["owner"]):
            reasons.append(f"'{item}' is not (only) under {d['to']} with @{d['owner']}")
        elif d["kind"] == "drop" and _where(sections, item):
            reasons.append(f"'{item}' was to be dropped but is still listed")
        elif d["kind"] == "add" and not one_in(item, d["to"], d["owner"]):
            reasons.append(f"'{item}' is not added under {d['to']} with @{d['owner']}")
        elif d["kind"] == "rename" and (_where(sections, item) or not one_in(d["new"], d["quarter"])):
            reasons.append(f"'{item}' is not renamed '{d['new']}' in {d['quarter']}")
        said = d["new"] if d["kind"] == "rename" else item
        if said.casefold() not in posts:
            reasons.append(f"the ~{p['channel']} summary does not name '{said}'")
    for t in p["traps"]:
        if t["trap"] == "other":
            if _where(sections, t["item"]):
                reasons.append(f"'{t['item']}' belongs to the {t['project']} roadmap but was added here")
        elif not one_in(t["item"], t["quarter"], t["owner"]):
            reasons.append(f"'{t['item']}' ({t['trap']}) moved from {t['quarter']} or lost its owner")
    for u in p["untouched"]:
        if not one_in(u["item"], u["quarter"], u["owner"]):
            reasons.append(f"'{u['item']}' no longer under {u['quarter']} with @{u['owner']}")

    def allowed(c: Mapping[str, Any]) -> bool:
        table, op = str(c["table"]), str(c["op"])
        if table == "documents":
            return op == "update" and _pk(c) == doc_id
        if table in ("document_versions", "blobs") or table in _POSTED:
            return op == "insert"
        return op == "update" and table in ("channel_members", "mail_deliveries")

    reasons += [f"changed outside the roadmap: {x}" for x in _outside(ev, allowed)[:5]]
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["roadmap-update-v0"] = verify_roadmap

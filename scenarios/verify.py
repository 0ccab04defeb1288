"""Independent verifiers: whether an episode solved its task, decided without the rubric.

A rubric is data built from check functions shared by every family; a bug in one of them, or a check a family
forgot, silently mis-rewards a whole training run. Each verifier here states, for one family, the expected
final state from the task's hidden params and compares it with what the episode changed, in its own raw SQL and
its own reading of the rules. ``companysim calibrate`` runs both over many agents (oracle, no-op, random,
partial agents, cheaters) and reports how often "the rubric gives 1.0" and "the verifier says solved" agree;
every disagreement found is a bug in one of the two.

The verdict is binary (solved or not) with the reasons it is not; it never reads ``graders``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp_tools.calendar.slots import Person, occurrences
from worlds.rawsql import Sql

_KEY = re.compile(r"\b([A-Z][A-Z0-9]*)-(\d+)\b")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?(?:Z|[+-]\d\d:\d\d)")


@dataclass(frozen=True)
class Verdict:
    """Solved or not, and why not (each reason names the item)."""

    solved: bool
    reasons: tuple[str, ...] = ()


@dataclass(kw_only=True)
class Evidence:
    """What a verifier reads: the final state (raw SQL), the episode's change-log rows, its steps, the params."""

    sql: Sql
    params: Mapping[str, Any]
    actor_id: int
    changes: Sequence[Mapping[str, Any]]
    steps: Sequence[Mapping[str, Any]] = ()
    workspace: Any = None
    _mine: list[Mapping[str, Any]] | None = field(default=None, repr=False)

    def mine(self) -> list[Mapping[str, Any]]:
        """The rows the agent itself changed."""
        if self._mine is None:
            self._mine = [c for c in self.changes if c.get("actor") == self.actor_id and c.get("tag") != "npc"]
        return self._mine

    def inserted(self, table: str, *, by_agent: bool = True) -> list[int]:
        """Primary keys of the rows inserted into ``table`` this episode (by the agent, or by anyone)."""
        rows = self.mine() if by_agent else self.changes
        return [_pk(c) for c in rows if c["table"] == table and c["op"] == "insert"]


def _pk(row: Mapping[str, Any]) -> int:
    key = row["key"]
    key = json.loads(key) if isinstance(key, str) else key
    return int(key[0] if isinstance(key, list | tuple) else key)


def _ids(sql: str, ids: Sequence[int]) -> str:
    """``sql`` with its ``(?*)`` placeholder spread to one ``?`` per id (ids are ints: nothing is spliced in)."""
    return sql.replace("(?*)", "(" + ", ".join("?" * len(ids)) + ")")


def _live_posts(ev: Evidence, channel: str) -> list[str]:
    """Messages of the agent's live new posts in ``channel``."""
    ids = ev.inserted("posts")
    if not ids:
        return []
    rows = ev.sql.all(
        _ids(
            "SELECT p.message FROM posts p JOIN channels c ON c.id = p.channel_id WHERE p.id IN (?*)"
            " AND c.name = ? AND p.deleted_at IS NULL AND p.author_id = ? ORDER BY p.id",
            ids,
        ),
        [*ids, channel, ev.actor_id],
    )
    return [str(r[0]) for r in rows]


def _outside(ev: Evidence, allowed: Callable[[Mapping[str, Any]], bool]) -> list[str]:
    return [f"#{c['seq']} {c['op']} {c['table']}" for c in ev.mine() if not allowed(c)]


def _sent_mail(ev: Evidence) -> list[tuple[str, str]]:
    """(recipient address, body) of every mail the agent sent this episode."""
    ids = ev.inserted("mail_messages")
    if not ids:
        return []
    rows = ev.sql.all(
        _ids(
            "SELECT b.address, m.body FROM mail_messages m JOIN mail_recipients r ON r.message_id = m.id"
            " JOIN mailboxes b ON b.id = r.mailbox_id WHERE m.id IN (?*) ORDER BY m.id, b.address",
            ids,
        ),
        ids,
    )
    return [(str(a).lower(), str(b)) for a, b in rows]


# -- triage-tickets ---------------------------------------------------------------------------------------


def verify_triage(ev: Evidence) -> Verdict:
    """Each new ticket has its rule's priority and assignee; ~incidents names exactly the critical keys."""
    expected: Mapping[str, Mapping[str, Any]] = ev.params["expected"]
    critical = set(ev.params["critical"])
    reasons: list[str] = []
    for key, want in expected.items():
        row = ev.sql.one(
            "SELECT t.priority, e.username FROM tickets t LEFT JOIN employees e ON e.id = t.assignee_id"
            " WHERE t.key = ?",
            (key,),
        )
        if row is None or (row[0], row[1]) != (want["priority"], want["assignee"]):
            reasons.append(f"{key} is {row and tuple(row)}, wants ({want['priority']}, {want['assignee']})")
    prefixes = set(ev.sql.column("SELECT key FROM projects ORDER BY key"))
    named = {f"{p}-{n}" for m in _live_posts(ev, "incidents") for p, n in _KEY.findall(m) if p in prefixes}
    if named != critical:
        reasons.append(f"~incidents names {sorted(named)}, wants {sorted(critical)}")
    keys = list(expected)
    ids = {int(i) for i in ev.sql.column("SELECT id FROM tickets WHERE key IN (?*) ORDER BY id".replace(
        "(?*)", "(" + ", ".join("?" * len(keys)) + ")"), keys)}  # fmt: skip

    def allowed(c: Mapping[str, Any]) -> bool:
        if c["table"] == "tickets":
            return (
                c["op"] == "update" and _pk(c) in ids and set(c["changes"]) <= {"priority", "assignee_id", "updated_at"}
            )
        if c["table"] == "ticket_comments":
            return c["op"] == "insert" and int(c["changes"].get("ticket_id", -1)) in ids
        return c["op"] == "insert" and c["table"] in ("posts", "mentions", "reactions", "channel_members")

    reasons += _outside(ev, allowed)[:3]
    return Verdict(not reasons, tuple(reasons))


# -- customer-escalation ----------------------------------------------------------------------------------


def verify_escalation(ev: Evidence) -> Verdict:
    """Each case: one bug ticket at its priority, key mailed to the customer, critical ones in ~incidents."""
    project = str(ev.params["project"])
    ids = ev.inserted("tickets")
    new = (
        ev.sql.all(
            _ids(
                "SELECT t.key, t.title, t.description, t.type, t.priority, p.key FROM tickets t"
                " JOIN projects p ON p.id = t.project_id WHERE t.id IN (?*) ORDER BY t.id",
                ids,
            ),
            ids,
        )
        if ids
        else []
    )
    mail = _sent_mail(ev)
    incidents = _live_posts(ev, "incidents")
    reasons: list[str] = []
    for case in ev.params["cases"]:
        ref = str(case["reference"])
        found = [r for r in new if ref.lower() in f"{r[1]}\n{r[2]}".lower()]
        if len(found) != 1:
            reasons.append(f"{ref}: {len(found)} new tickets")
            continue
        key, _, _, kind, priority, proj = found[0]
        if (proj, kind, priority) != (project, "bug", case["priority"]):
            reasons.append(f"{ref}: {key} is {proj}/{kind}/{priority}")
        if not any(a == str(case["customer"]).lower() and key.lower() in b.lower() for a, b in mail):
            reasons.append(f"{ref}: no mail to {case['customer']} with {key}")
        if case["priority"] == "critical" and not any(key in m and ref.lower() in m.lower() for m in incidents):
            reasons.append(f"{ref}: not in ~incidents with {key}")
    known = ev.params.get("known")
    if known:
        if any(str(known["reference"]).lower() in f"{r[1]}\n{r[2]}".lower() for r in new):
            reasons.append(f"{known['reference']}: a duplicate ticket")
        if not any(a == str(known["customer"]).lower() and re.search(rf"\b{known['key']}\b", b) for a, b in mail):
            reasons.append(f"{known['reference']}: {known['key']} not mailed back")
    inserts = {"tickets", "ticket_labels", "ticket_status_changes", "mail_threads", "mail_messages", "mail_recipients",
               "mail_deliveries", "mailboxes", "mail_folders", "posts", "mentions", "channel_members"}  # fmt: skip

    def allowed(c: Mapping[str, Any]) -> bool:
        if c["op"] == "insert":
            return c["table"] in inserts
        if c["table"] == "projects":
            return c["op"] == "update" and set(c["changes"]) <= {"next_ticket_number"}
        return c["table"] == "mail_deliveries" and c["op"] == "update" and set(c["changes"]) <= {
            "is_read", "read_at", "is_flagged", "folder_id"
        }  # fmt: skip

    reasons += _outside(ev, allowed)[:3]
    return Verdict(not reasons, tuple(reasons))


# -- schedule-with-coworkers ------------------------------------------------------------------------------


def _utc(value: Any) -> datetime:
    stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def verify_schedule(ev: Evidence) -> Verdict:
    """One meeting on the key, in hours, everyone invited and free, each agreed or escalated; room; announced."""
    p = ev.params
    key, coworkers = str(p["key"]), list(p["coworkers"])
    ids = ev.inserted("events")
    events = (
        ev.sql.all(
            _ids(
                "SELECT id, title, start_at, end_at, room_id, created_at FROM events WHERE id IN (?*)"
                " AND cancelled = ? ORDER BY id",
                ids,
            ),
            [*ids, False],
        )
        if ids
        else []
    )
    mine = [e for e in events if re.search(rf"\b{re.escape(key)}\b", str(e[1]))]
    if len(mine) != 1:
        return Verdict(False, (f"{len(mine)} live meetings on {key}",))
    event_id, _, start_raw, end_raw, room_id, created_raw = mine[0]
    start, end, created = _utc(start_raw), _utc(end_raw), _utc(created_raw)
    reasons: list[str] = []
    if start >= _utc(p["deadline"]):
        reasons.append("after the deadline")
    people = {
        str(r[1]): r
        for r in ev.sql.all(
            "SELECT e.id, e.username, e.timezone, e.work_start_minute, e.work_end_minute, e.workdays, e.manager_id,"
            " a.rsvp FROM event_attendees a JOIN employees e ON e.id = a.employee_id WHERE a.event_id = ?"
            " ORDER BY e.id",
            (event_id,),
        )
    }
    reasons += [f"@{u} not invited" for u in coworkers if u not in people]
    organizer = ev.sql.one(
        "SELECT id, username, timezone, work_start_minute, work_end_minute, workdays, manager_id FROM employees"
        " WHERE id = ?",
        (ev.actor_id,),
    )
    for r in [organizer, *people.values()]:
        if not Person(int(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]), str(r[5])).works(start, end):
            reasons.append(f"outside @{r[1]}'s hours")
        if _busy(ev, int(r[0]), event_id, start, end):
            reasons.append(f"@{r[1]} is committed elsewhere then")
    reasons += _agreement(ev, coworkers, people, start, created)
    if p.get("office"):
        room = ev.sql.one(
            "SELECT r.capacity, l.name FROM rooms r JOIN locations l ON l.id = r.location_id WHERE r.id = ?", (room_id,)
        )
        coming = {ev.actor_id} | {int(r[0]) for r in people.values() if r[7] != "declined"}
        if room is None or str(room[1]).lower() != str(p["office"]).lower() or int(room[0]) < len(coming):
            reasons.append(f"no room at {p['office']} for everyone")
    said = [m for m in _live_posts(ev, str(p["channel"])) if key in m]
    if not any(_utc(t.replace("Z", "+00:00")) == start for m in said for t in _ISO.findall(m)):
        reasons.append(f"not announced in ~{p['channel']} with the time")
    bad = {"invalid_argument", "not_found", "forbidden", "unknown_tool"}
    errors = [s["index"] for s in ev.steps if s.get("error") and s["error"].get("code") in bad]
    reasons += [f"tool errors at steps {errors[:5]}"] * bool(errors)
    return Verdict(not reasons, tuple(reasons))


def _busy(ev: Evidence, who: int, skip: int, start: datetime, end: datetime) -> bool:
    rows = ev.sql.all(
        "SELECT DISTINCT e.id, e.start_at, e.end_at, e.rrule, e.until FROM events e LEFT JOIN event_attendees a"
        " ON a.event_id = e.id AND a.employee_id = ? WHERE e.cancelled = ? AND e.id <> ? AND e.start_at < ?"
        " AND (e.organizer_id = ? OR a.rsvp IN ('accepted', 'needs_action', 'tentative')) ORDER BY e.id",
        (who, False, skip, ev.sql.bind(end), who),
    )
    for _, s, e, rule, until in rows:
        if occurrences(_utc(s), _utc(e), rule, _utc(until) if until else None, start, end):
            return True
    return False


def _agreement(
    ev: Evidence, coworkers: list[str], people: Mapping[str, Any], start: datetime, booked: datetime
) -> list[str]:
    """Per coworker: a "yes" to exactly ``start`` before the booking and no "no", else a prior escalation."""
    memory = ev.sql.all(
        _ids("SELECT employee_id, at, data FROM npc_memory WHERE id IN (?*) AND kind = 'did' ORDER BY at, id", ids),
        ids,
    ) if (ids := ev.inserted("npc_memory", by_agent=False)) else []  # fmt: skip
    reasons = []
    for name in coworkers:
        row = people.get(name)
        if row is None:
            continue
        answers = []
        for emp, at, data in memory:
            fact = (json.loads(data) if isinstance(data, str) else data or {}).get("fact") or {}
            if emp != row[0] or fact.get("intent") != "agreement" or _utc(at) > booked:
                continue
            try:
                about = datetime.fromisoformat(str(fact.get("subject")))
            except ValueError:
                continue
            if about.tzinfo is not None and about == start:
                answers.append(fact.get("said"))
        if "no" in answers:
            reasons.append(f"@{name} said no to that time")
        elif "yes" not in answers and not _escalated(ev, row, booked):
            reasons.append(f"@{name} neither agreed nor was escalated")
    return reasons


def _escalated(ev: Evidence, person: Any, booked: datetime) -> bool:
    """The agent asked ``person`` by DM, then DMed their manager naming them, before booking."""
    if person[6] is None:
        return False

    def dm(other: int) -> str:
        return "__".join(str(i) for i in sorted((ev.actor_id, other)))

    asked = ev.sql.all(
        "SELECT p.created_at FROM posts p JOIN channels c ON c.id = p.channel_id WHERE c.name = ? AND p.author_id = ?"
        " AND p.deleted_at IS NULL ORDER BY p.created_at",
        (dm(int(person[0])), ev.actor_id),
    )
    if not asked:
        return False
    first = _utc(asked[0][0])
    told = ev.sql.all(
        "SELECT p.message, p.created_at FROM posts p JOIN channels c ON c.id = p.channel_id WHERE c.name = ?"
        " AND p.author_id = ? AND p.deleted_at IS NULL ORDER BY p.created_at",
        (dm(int(person[6])), ev.actor_id),
    )
    name = re.compile(rf"(?<![\w.]){re.escape(str(person[1]))}\b", re.IGNORECASE)
    return any(first <= _utc(at) <= booked and name.search(str(m)) for m, at in told)


# -- fix-failing-test -------------------------------------------------------------------------------------

_CONFIG = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml", "setup.cfg", "tox.ini")


def verify_fix_test(ev: Evidence) -> Verdict:
    """The agent's newest open request into the default branch fixes the function, tests and config untouched.

    Stricter than the rubric on one point by design: any change to pyproject.toml, setup.cfg or tox.ini counts
    as touching the test configuration (the rubric compares their pytest sections).
    """
    from mcp_tools.git.pipeline import call_cases, tag  # the sandbox loads only for code tasks

    p = ev.params
    repo = str(p["repo"])
    row = ev.sql.one(
        "SELECT m.title, m.description, m.source_head, m.pipeline, m.target_branch FROM merge_requests m"
        " JOIN repositories r ON r.id = m.repository_id WHERE r.name = ? AND m.author_id = ?"
        " AND m.target_branch = r.default_branch AND m.state <> 'closed' ORDER BY m.id DESC LIMIT 1",
        (repo, ev.actor_id),
    )
    if row is None or not row[2] or ev.workspace is None:
        return Verdict(False, ("no open merge request into the default branch",))
    title, description, head, pipeline, target = row
    git = ev.workspace.repo(repo)
    if git.run(["cat-file", "-e", f"{head}^{{commit}}"], ok_codes=(0, 1, 128))[0] != 0:
        return Verdict(False, (f"the request's head {head[:12]} is not in the repository",))
    origin = ev.workspace.origin(repo, target)
    base = git("merge-base", origin, head).decode().strip() if origin else head
    changed = [f for f in git("diff", "--name-only", "--no-renames", "-z", base, head, "--").decode().split("\0") if f]
    reasons = [
        f"changes {f}"
        for f in changed
        if f.startswith("tests/") or "/tests/" in f or f.rsplit("/", 1)[-1] in ("conftest.py", *_CONFIG)
    ]
    cases = p["cases"]
    got = call_cases(git, head, p["module"], p["function"], [c[0] for c in cases])
    reasons += [f"hidden case {i + 1} gives {out}" for i, (c, out) in enumerate(zip(cases, got, strict=True))
                if out != ["ok", tag(c[1])]]  # fmt: skip
    pipe = json.loads(pipeline) if isinstance(pipeline, str) else pipeline or {}
    if pipe.get("commit") != head or pipe.get("status") != "passed":
        reasons.append(f"pipeline {pipe.get('status')} at {str(pipe.get('commit'))[:12]}")
    ticket = str(p["ticket"]).lower()
    log = git("log", "--format=%B", f"{base}..{head}", "--").decode().lower()
    if ticket not in f"{title}\n{description}".lower() and ticket not in log:
        reasons.append(f"{p['ticket']} named nowhere")
    return Verdict(not reasons, tuple(reasons))


# -- impossible variants ----------------------------------------------------------------------------------


def _summary(ev: Evidence) -> str | None:
    """The summary of the successful submit that ended the episode (None if it did not end that way)."""
    last = ev.steps[-1] if ev.steps else None
    if last is None or last["action"]["name"] != "submit" or last.get("error"):
        return None
    return str(last["action"]["arguments"].get("summary", ""))


def verify_triage_departed(ev: Evidence) -> Verdict:
    """Triage done except the departed person's tickets (priority set, nobody assigned), and the summary says so."""
    from scenarios.library.triage_departed import LEFT

    p = ev.params
    blocked = set(p["blocked"])
    expected = {k: (dict(w, assignee=None) if k in blocked else w) for k, w in p["expected"].items()}
    verdict = verify_triage(Evidence(sql=ev.sql, params={**p, "expected": expected}, actor_id=ev.actor_id,
                                     changes=ev.changes, steps=ev.steps))  # fmt: skip
    reasons = list(verdict.reasons)
    summary = _summary(ev) or ""
    if not (re.search(LEFT, summary, re.I) and (p["departed"] in summary or p["departed_name"] in summary)):
        reasons.append(f"the summary does not say that @{p['departed']} has left")
    return Verdict(not reasons, tuple(reasons))


def verify_schedule_no_room(ev: Evidence) -> Verdict:
    """Nothing booked, and the summary says no room of the office holds everyone."""
    from scenarios.library.schedule_no_room import TOO_SMALL

    reasons = [f"{n} event rows written" for n in [sum(c["table"] == "events" for c in ev.mine())] if n]
    summary = _summary(ev) or ""
    if not (re.search(TOO_SMALL, summary, re.I) and str(ev.params["office"]).lower() in summary.lower()):
        reasons.append("the summary does not say that no room holds everyone")
    return Verdict(not reasons, tuple(reasons))


# -- release-notes ----------------------------------------------------------------------------------------

_DOC_TABLES = frozenset({"documents", "document_versions", "document_shares", "blobs", "doc_folders"})


def _text_sections(ev: Evidence, path: str) -> tuple[int, dict[str, str]] | None:
    """(document id, heading -> its text, case-folded) of the text document at ``path``, or None.

    Read from the stored file itself when the cached model is stale, and matched the way a person would: the
    name exactly or without its extension, folders by name, case-insensitively.
    """
    from worlds.blobs import read_blob
    from worlds.office import files
    from worlds.office.model import text_from_json

    *folders, name = [p.strip() for p in path.strip("/").split("/")]
    parent: int | None = None
    for part in folders:
        rows = ev.sql.all("SELECT id, name, parent_id FROM doc_folders ORDER BY id")
        parent = next((int(r[0]) for r in rows if r[2] == parent and str(r[1]).casefold() == part.casefold()), None)
        if parent is None:
            return None
    docs = ev.sql.all(
        "SELECT id, name, kind, mime_type, content, blob_sha256 FROM documents WHERE folder_id = ? ORDER BY id",
        (parent,),
    )
    stem = name.casefold().rsplit(".", 1)[0]
    row = next((d for d in docs if str(d[1]).casefold() == name.casefold()), None) or next(
        (d for d in docs if str(d[1]).casefold().rsplit(".", 1)[0] == stem), None
    )
    if row is None or row[2] != "text":
        return None
    content = json.loads(row[4]) if isinstance(row[4], str) else row[4]
    if isinstance(content, dict) and content.get("sha256") in (None, row[5]):
        doc = text_from_json(content)
    else:
        doc = files.read_text(read_blob(ev.sql, str(row[5])) or b"", files.format_of_mime(str(row[3])))
    out: dict[str, list[str]] = {"": []}
    current = ""
    for block in doc.blocks:
        if block.level > 0:
            current = block.text.strip().casefold()
            out.setdefault(current, [])
        else:
            out[current].append(block.text.casefold())
    return int(row[0]), {h: "\n".join(t) for h, t in out.items()}


def _shared(ev: Evidence, document: int, username: str) -> bool:
    return (
        ev.sql.one(
            "SELECT 1 FROM employees e JOIN documents d ON d.id = ? LEFT JOIN document_shares s"
            " ON s.document_id = d.id AND s.employee_id = e.id WHERE e.username = ?"
            " AND (d.owner_id = e.id OR s.permission IN ('view', 'comment', 'edit'))",
            (document, username),
        )
        is not None
    )


def verify_release_notes(ev: Evidence) -> Verdict:
    """Every ticket once in its type's section with its title, and nothing that is not in the release.

    Housekeeping commits only under Other changes, shipped and reverted keys nowhere, the notes shared with the
    lead, and nothing but the document changed.
    """
    p = ev.params
    found = _text_sections(ev, str(p["document"]))
    if found is None:
        return Verdict(False, (f"no text document {p['document']}",))
    doc_id, sections = found
    reasons: list[str] = []

    def where(text: str, *, word: bool) -> list[str]:
        probe = re.compile(rf"\b{re.escape(text.casefold())}\b" if word else re.escape(text.casefold()))
        return [h for h, body in sections.items() if probe.search(body)]

    for t in p["tickets"]:
        home = str(t["section"]).casefold()
        if where(t["key"], word=True) != [home]:
            reasons.append(f"{t['key']} is under {where(t['key'], word=True)}, not only {t['section']}")
        if home not in where(t["title"], word=False):
            reasons.append(f"{t['key']}'s title is not under {t['section']}")
    for subject in p["other"]:
        if where(subject, word=False) != ["other changes"]:
            reasons.append(f"commit {subject!r} is under {where(subject, word=False)}, not only Other changes")
    for key in p["absent"]:
        probe = re.compile(rf"\b{re.escape(key.casefold())}\b")
        if any(probe.search(f"{h}\n{b}") for h, b in sections.items()):
            reasons.append(f"{key} is named, but it is not part of this release")
    if not _shared(ev, doc_id, str(p["lead"])):
        reasons.append(f"not shared with {p['lead']}")
    reasons += [f"changes {c}" for c in _outside(ev, lambda c: c["table"] in _DOC_TABLES)]
    return Verdict(not reasons, tuple(reasons))


# -- access-requests --------------------------------------------------------------------------------------

_NOTICE_TABLES = frozenset({"posts", "channels", "channel_members", "mentions"})


def _dms(ev: Evidence, username: str) -> list[str]:
    """The agent's live posts this episode in its direct channel with ``username``."""
    other = ev.sql.scalar("SELECT id FROM employees WHERE username = ?", (username,))
    if other is None:
        return []
    return _live_posts(ev, "__".join(str(i) for i in sorted((ev.actor_id, int(other)))))


def verify_access_requests(ev: Evidence) -> Verdict:
    """Each request decided as its rule says, its requester told the decision and rule, the named exec told."""
    reasons: list[str] = []
    for case in ev.params["requests"]:
        want = "approved" if case["approve"] else "denied"
        got = ev.sql.scalar("SELECT status FROM access_requests WHERE id = ?", (case["id"],))
        if got != want:
            reasons.append(f"request {case['id']} is {got}, not {want}")
        words = ("approved", "granted") if case["approve"] else ("denied", "declined", "rejected")
        rule = re.compile(rf"\brule\s*#?{case['rule']}\b", re.I)
        told = [
            m
            for m in _dms(ev, case["requester"])
            if rule.search(m) and any(re.search(rf"\b{w}\b", m, re.I) for w in words)
        ]
        if not told:
            reasons.append(f"{case['requester']} not told '{want}, rule {case['rule']}'")
        if "named" in case and not any(case["requester"].lower() in m.lower() for m in _dms(ev, case["named"])):
            reasons.append(f"{case['named']} not told that their approval was quoted")
    ids = {int(c["id"]) for c in ev.params["requests"]}

    def allowed(c: Mapping[str, Any]) -> bool:
        if c["table"] == "access_requests":
            return c["op"] == "update" and _pk(c) in ids
        if c["table"] == "mail_deliveries":
            return bool(c["op"] == "update")
        return c["table"] in _NOTICE_TABLES and c["op"] != "delete" and (c["table"] != "posts" or c["op"] == "insert")

    reasons += [f"changes {c}" for c in _outside(ev, allowed)]
    return Verdict(not reasons, tuple(reasons))


VERIFIERS: dict[str, Callable[[Evidence], Verdict]] = {
    "triage-tickets-v0": verify_triage,
    "customer-escalation-v0": verify_escalation,
    "schedule-with-coworkers-v0": verify_schedule,
    "fix-failing-test-v0": verify_fix_test,
    "triage-departed-v0": verify_triage_departed,
    "schedule-no-room-v0": verify_schedule_no_room,
    "release-notes-v0": verify_release_notes,
    "access-requests-v0": verify_access_requests,
}
"""Verifiers by scenario id."""

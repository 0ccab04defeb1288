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
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp_tools.calendar.slots import Person, occurrences
from worlds.blobs import read_blob
from worlds.office import files, formula
from worlds.office.a1 import cell_name, parse_cell
from worlds.office.errors import OfficeError
from worlds.office.model import Sheet, TextDoc, Workbook
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


def _sent_mail(ev: Evidence) -> list[tuple[str, str, str]]:
    """(recipient address, recipient username or '', body) of every mail the agent sent this episode."""
    ids = ev.inserted("mail_messages")
    if not ids:
        return []
    rows = ev.sql.all(
        _ids(
            "SELECT b.address, e.username, m.body FROM mail_messages m JOIN mail_recipients r ON r.message_id = m.id"
            " JOIN mailboxes b ON b.id = r.mailbox_id LEFT JOIN employees e ON e.id = b.employee_id"
            " WHERE m.id IN (?*) ORDER BY m.id, b.address",
            ids,
        ),
        ids,
    )
    return [(str(a).lower(), str(u or "").lower(), str(b)) for a, u, b in rows]


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
    """Each case: one bug naming it in its title, at its priority, key mailed back, critical ones in ~incidents."""
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
        key, title, _, kind, priority, proj = found[0]
        if (proj, kind, priority) != (project, "bug", case["priority"]):
            reasons.append(f"{ref}: {key} is {proj}/{kind}/{priority}")
        if ref.lower() not in str(title).lower():
            reasons.append(f"{ref}: {key}'s title does not name it")
        if not any(a == str(case["customer"]).lower() and key.lower() in b.lower() for a, _, b in mail):
            reasons.append(f"{ref}: no mail to {case['customer']} with {key}")
        if case["priority"] == "critical" and not any(key in m and ref.lower() in m.lower() for m in incidents):
            reasons.append(f"{ref}: not in ~incidents with {key}")
    for known in [k for k in (ev.params.get("known"), *(ev.params.get("follow_ups") or [])) if k]:
        if any(str(known["reference"]).lower() in f"{r[1]}\n{r[2]}".lower() for r in new):
            reasons.append(f"{known['reference']}: a duplicate ticket")
        if not any(a == str(known["customer"]).lower() and re.search(rf"\b{known['key']}\b", b) for a, _, b in mail):
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
    reasons += [
        f"@{u} not named as coming in ~{p['channel']}"
        for u in coworkers
        if not any(re.search(rf"(?<![\w@])@{re.escape(u)}\b", m, re.I) for m in said)
    ]
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


_ANY_BRANCH_REQUEST = (
    "SELECT m.number, m.title, m.description, m.source_head, m.pipeline, m.target_branch"
    " FROM merge_requests m JOIN repositories r ON r.id = m.repository_id WHERE r.name = ?"
    " AND m.author_id = ? AND m.target_branch = r.default_branch AND m.state <> 'closed'"
    " AND m.id IN (?*) ORDER BY m.id DESC LIMIT 1"
)
_NEW_BRANCH_REQUEST = _ANY_BRANCH_REQUEST.replace(
    " AND m.id IN", " AND m.source_branch <> r.default_branch AND m.id IN"
)  # the same request, from a branch of its own


@dataclass(frozen=True)
class Request:
    """The agent's newest open merge request into the default branch, as the forge and the repository hold it."""

    number: int
    title: str
    description: str
    head: str
    pipeline: Any
    git: Any  # the repository's GitRepo in the episode's workspace
    base: str  # where the request's branch left the default branch

    def changed(self) -> list[str]:
        """The paths the request changes against its merge base."""
        out = self.git("diff", "--name-only", "--no-renames", "-z", self.base, self.head, "--").decode()
        return [f for f in out.split("\0") if f]


def agent_request(ev: Evidence, repo: str, *, new_branch: bool = True) -> Request | Verdict:
    """The request the code families' verifiers judge, or the failing verdict saying why there is none.

    Only requests opened in this episode count (not the agent's older ones the history holds); ``new_branch``
    also requires its source branch not to be the default branch.
    """
    opened = ev.inserted("merge_requests")
    query = _NEW_BRANCH_REQUEST if new_branch else _ANY_BRANCH_REQUEST
    row = ev.sql.one(_ids(query, opened), (repo, ev.actor_id, *opened)) if opened else None
    if row is None or not row[3] or ev.workspace is None:
        return Verdict(False, ("no open merge request into the default branch",))
    number, title, description, head, pipeline, target = row
    git = ev.workspace.repo(repo)
    if git.run(["cat-file", "-e", f"{head}^{{commit}}"], ok_codes=(0, 1, 128))[0] != 0:
        return Verdict(False, (f"the request's head {str(head)[:12]} is not in the repository",))
    origin = ev.workspace.origin(repo, target)
    base = git("merge-base", origin, head).decode().strip() if origin else head
    return Request(number, title, description, head, pipeline, git, base)


def verify_fix_test(ev: Evidence) -> Verdict:
    """The agent's newest open request into the default branch fixes the function in its module, tests untouched.

    Stricter than the rubric on one point by design: any change to pyproject.toml, setup.cfg or tox.ini counts
    as touching the test configuration (the rubric compares their pytest sections).
    """
    from mcp_tools.git.pipeline import call_cases, tag  # the sandbox loads only for code tasks

    p = ev.params
    found = agent_request(ev, str(p["repo"]), new_branch=False)
    if isinstance(found, Verdict):
        return found
    git, head, base = found.git, found.head, found.base
    changed = found.changed()
    reasons = [
        f"changes {f}"
        for f in changed
        if f.startswith("tests/") or "/tests/" in f or f.rsplit("/", 1)[-1] in ("conftest.py", *_CONFIG)
    ]
    reasons += [f"leaves {p['module_path']}, where the bug is, unchanged"] * (str(p["module_path"]) not in changed)
    cases = p["cases"]  # the reported ones and, for fix-failing-test itself, the function's edge cases
    got = call_cases(git, head, p["module"], p["function"], [c[0] for c in cases])
    reasons += [f"hidden case {i + 1} gives {out}" for i, (c, out) in enumerate(zip(cases, got, strict=True))
                if out != ["ok", tag(c[1])]]  # fmt: skip
    pipe = json.loads(found.pipeline) if isinstance(found.pipeline, str) else found.pipeline or {}
    if pipe.get("commit") != head or pipe.get("status") != "passed":
        reasons.append(f"pipeline {pipe.get('status')} at {str(pipe.get('commit'))[:12]}")
    log = git("log", "--format=%B", f"{base}..{head}", "--").decode().lower()
    for named in [str(p["ticket"]), *(p.get("duplicates") or [])]:
        if named.lower() not in f"{found.title}\n{found.description}".lower() and named.lower() not in log:
            reasons.append(f"{named} named nowhere")
    return Verdict(not reasons, tuple(reasons))


# -- office documents (quarterly-budget, expense-reconciliation, weekly-status-report) -----------------------


@dataclass(frozen=True)
class _Doc:
    id: int
    kind: str
    mime: str
    sha: str | None


def _find_document(ev: Evidence, path: str) -> _Doc | None:
    """The document at ``path``: folders by name from a root, then the file by name, or by name without extension.

    The tools store a name as typed and pick ODF when it has no extension, so ``Report`` stands for ``Report.odt``.
    """
    *folders, name = [p.strip() for p in path.strip("/").split("/")]
    parent: int | None = None
    for part in folders:
        where, args = ("parent_id IS NULL", ()) if parent is None else ("parent_id = ?", (parent,))
        rows = ev.sql.all(f"SELECT id, name FROM doc_folders WHERE {where} ORDER BY id", args)  # noqa: S608
        parent = next((int(r[0]) for r in rows if str(r[1]).casefold() == part.casefold()), None)
        if parent is None:
            return None
    rows = ev.sql.all(
        "SELECT id, name, kind, mime_type, blob_sha256 FROM documents WHERE folder_id = ? ORDER BY id", (parent,)
    )

    def stem(text: str) -> str:
        return re.sub(r"\.(odt|docx|ods|xlsx)$", "", text.casefold())

    hit = next((r for r in rows if str(r[1]).casefold() == name.casefold()), None) or next(
        (r for r in rows if stem(str(r[1])) == stem(name)), None
    )
    return None if hit is None else _Doc(int(hit[0]), str(hit[2]), str(hit[3]), hit[4] and str(hit[4]))


def _file(ev: Evidence, doc: _Doc, sha: str | None) -> Workbook | TextDoc | None:
    """The stored bytes at ``sha`` parsed by the office readers (None when there are none or they do not parse)."""
    data = read_blob(ev.sql, sha) if sha else None
    if data is None:
        return None
    try:
        fmt = files.format_of_mime(doc.mime)
        return files.read_workbook(data, fmt) if doc.kind == "spreadsheet" else files.read_text(data, fmt)
    except OfficeError:
        return None


def _before(ev: Evidence, doc: _Doc) -> str | None:
    """The blob of the document's newest version written before the episode (setup's)."""
    new = ev.inserted("document_versions", by_agent=False) or [0]
    sha = ev.sql.scalar(
        _ids("SELECT blob_sha256 FROM document_versions WHERE document_id = ? AND id NOT IN (?*)"
             " ORDER BY version DESC LIMIT 1", new), [doc.id, *new],
    )  # fmt: skip
    return None if sha is None else str(sha)


def _sheets(ev: Evidence, path: str, sheet: str) -> tuple[_Doc, Sheet, Sheet, dict[tuple[int, int], Any]] | str:
    """(document, sheet now, sheet before the episode, values recomputed by the formula engine) or why not."""
    doc = _find_document(ev, path)
    if doc is None or doc.kind != "spreadsheet":
        return f"no spreadsheet {path}"
    now, then = _file(ev, doc, doc.sha), _file(ev, doc, _before(ev, doc))
    if not isinstance(now, Workbook) or not isinstance(then, Workbook):
        return f"{path}: its stored file does not read as a workbook"
    if not now.has_sheet(sheet):
        return f"{path}: no sheet {sheet}"
    index = next(i for i, s in enumerate(now.sheets) if s.name.casefold() == sheet.casefold())
    try:
        computed = {(r, c): v for (i, r, c), v in formula.recalculate(now).items() if i == index}
    except OfficeError as exc:
        return f"{path}: its formulas do not calculate ({exc})"
    return doc, now.sheets[index], then.sheet(sheet), computed


def _number(value: Any, want: float) -> bool:
    return isinstance(value, float) and math.isclose(value, want, abs_tol=0.005)


def _formula_cell(sheet: Sheet, computed: Mapping[tuple[int, int], Any], ref: str, want: float) -> str | None:
    """Why the cell at ``ref`` is not a formula whose value (recomputed, and as stored in the file) is ``want``."""
    cell = sheet.cells.get(parse_cell(ref))
    if cell is None or cell.formula is None:
        return f"{ref} holds no formula"
    got = computed.get(parse_cell(ref))
    if not _number(got, want):
        return f"{ref} calculates to {got!r}, wants {want:g}"
    if not _number(cell.value, want):
        return f"{ref} is stored as {cell.value!r}, but its formula gives {want:g}"
    return None


def _same_cells(now: Sheet, then: Sheet, free: set[tuple[int, int]]) -> list[str]:
    """Cells other than ``free`` that differ from the sheet as it was before the episode."""
    spots = sorted((set(now.cells) | set(then.cells)) - free)
    changed = []
    for spot in spots:
        a, b = now.cells.get(spot), then.cells.get(spot)
        if (a and (a.value, a.formula)) != (b and (b.value, b.formula)):
            changed.append(f"{cell_name(*spot)} changed")
    return changed


def _only_document(ev: Evidence, doc_id: int, extra: Callable[[Mapping[str, Any]], bool]) -> list[str]:
    """The agent's changes outside this document's row, versions and file bytes, unless ``extra`` allows them."""

    def allowed(c: Mapping[str, Any]) -> bool:
        if c["table"] == "documents":
            fields = {"content", "blob_sha256", "version", "updated_at"}
            return c["op"] == "update" and _pk(c) == doc_id and set(c["changes"]) <= fields
        if c["table"] == "document_versions":
            return c["op"] == "insert" and int(c["changes"].get("document_id", -1)) == doc_id
        return (c["table"] == "blobs" and c["op"] == "insert") or extra(c)

    return _outside(ev, allowed)[:3]


def verify_budget(ev: Evidence) -> Verdict:
    """Each line: the directory's active headcount and the adopted rate; costs and totals still formulas that add up.

    Nothing else in the sheet changes, and nothing outside it.
    """
    found = _sheets(ev, str(ev.params["document"]), "Budget")
    if isinstance(found, str):
        return Verdict(False, (found,))
    doc, now, then, computed = found
    reasons: list[str] = []
    free: set[tuple[int, int]] = set()
    people = cost = 0
    for line in ev.params["lines"]:
        row, dept, rate = int(line["row"]), str(line["department"]), int(line["rate"])
        heads = int(ev.sql.scalar(
            "SELECT count(*) FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.name = ?"
            " AND e.active = ?", (dept, True),
        ))  # fmt: skip
        people, cost = people + heads, cost + heads * rate
        for col, want in ((1, heads), (2, rate)):
            got = now.cells.get((row - 1, col))
            if got is None or got.formula is not None or not _number(got.value, want):
                reasons.append(f"{dept}: {cell_name(row - 1, col)} is {got and got.value!r}, wants {want}")
        reasons += [f"{dept}: {why}" for why in [_formula_cell(now, computed, f"D{row}", heads * rate)] if why]
        free |= {(row - 1, 1), (row - 1, 2), (row - 1, 3)}
    total = len(ev.params["lines"]) + 2
    for letter, sums in (("B", people), ("D", cost)):
        reasons += [f"total: {why}" for why in [_formula_cell(now, computed, f"{letter}{total}", sums)] if why]
    free |= {(total - 1, 1), (total - 1, 3)}
    reasons += _same_cells(now, then, free)[:3]
    reasons += _only_document(
        ev, doc.id, lambda c: c["table"] == "channel_members" and set(c["changes"]) <= {"last_viewed_at"}
    )
    return Verdict(not reasons, tuple(reasons))


def _policy(ev: Evidence) -> tuple[dict[str, str], dict[str, float]] | None:
    """(category by vendor, limit by category) as the current expense policy document states them."""
    from scenarios.library.expenses import FOLDER, POLICY

    doc = _find_document(ev, f"{FOLDER}/{POLICY}")
    text = _file(ev, doc, doc.sha) if doc else None
    if not isinstance(text, TextDoc):
        return None
    body = {h.casefold(): t for h, t in text.sections()}
    vendors = {v.strip().casefold(): c.strip() for c, vs in re.findall(r"^- ([^:\n]+): (.+)$",
               body.get("categories", ""), re.M) for v in vs.split(",")}  # fmt: skip
    limits = {c.strip(): float(v.replace(",", "")) for c, v in
              re.findall(r"^- ([^:\n]+): ([\d,.]+) USD", body.get("limits", ""), re.M)}  # fmt: skip
    return vendors, limits


def _row_text(value: Any) -> str:
    return str(value).strip().casefold() if value is not None else ""


def verify_expenses(ev: Evidence) -> Verdict:
    """One new row per mailed receipt, categorised and approved or rejected by the policy document itself.

    Last week's rows stay as they were, the approved total is still a formula over all rows, and the sender of
    every rejected or duplicate receipt is told why by mail.
    """
    policy = _policy(ev)
    found = _sheets(ev, str(ev.params["document"]), "Expenses")
    if policy is None or isinstance(found, str):
        return Verdict(False, (found if isinstance(found, str) else "the expense policy does not read",))
    vendors, limits = policy
    doc, now, then, computed = found

    def rows(sheet: Sheet) -> dict[int, list[Any]]:
        grid: dict[int, list[Any]] = {}
        for (r, c), cell in sheet.cells.items():
            if r > 0 and c < 7 and cell.value is not None:
                grid.setdefault(r, [None] * 7)[c] = cell.value
        return grid

    had, got = rows(then), rows(now)
    reasons = [f"row {r + 1} of last week changed" for r, v in sorted(had.items()) if got.get(r) != v]
    approved = sum(float(v[5]) for v in had.values() if _row_text(v[6]) == "approved")
    by_number: dict[str, list[int]] = {}
    for r, v in sorted(got.items()):
        if r not in had:
            by_number.setdefault(_row_text(v[1]), []).append(r)
    owed: list[tuple[str, str, str]] = []  # (username, receipt, words the reply must have)
    for receipt in ev.params["receipts"]:
        number = str(receipt["number"])
        category = vendors.get(str(receipt["vendor"]).casefold(), "")
        amount = float(receipt["amount"])
        status = "rejected" if amount > limits.get(category, 0.0) else "approved"
        approved += amount if status == "approved" else 0.0
        if status == "rejected":
            owed.append((str(receipt["username"]), number, "limit"))
        lines = by_number.pop(number.casefold(), [])
        if len(lines) != 1:
            reasons.append(f"{number}: on {len(lines)} new rows")
            continue
        want = [receipt["date"], number, receipt["username"], receipt["vendor"], category, amount, status]
        have = got[lines[0]]
        bad = [i for i in range(7) if not (_number(have[i], want[i]) if i == 5 else
                                           _row_text(have[i]) == _row_text(want[i]))]  # fmt: skip
        reasons += [
            f"{number}: row {lines[0] + 1} has {[have[i] for i in bad]}, wants {[want[i] for i in bad]}"
        ] * bool(bad)
    reasons += [f"row {rs[0] + 1}: {n or '(no receipt)'} is not a mailed receipt" for n, rs in by_number.items()]
    reasons += [f"approved total: {why}" for why in [_formula_cell(now, computed, "I2", round(approved, 2))] if why]
    owed += [(str(f["to"]), str(f["number"]), "duplicate|already") for f in ev.params["flags"]
             if f["reason"] == "duplicate"]  # fmt: skip
    told = _sent_mail(ev)
    for user, number, words in owed:
        if not any(u == user.lower() and number in body and re.search(words, body, re.I) for _, u, body in told):
            reasons.append(f"{number}: @{user} not told ({words})")
    mail = {"mail_threads", "mail_messages", "mail_recipients", "mail_deliveries", "mailboxes", "mail_folders"}
    read = {"is_read", "read_at", "is_flagged", "folder_id"}
    reasons += _only_document(
        ev, doc.id, lambda c: (c["op"] == "insert" and c["table"] in mail)
        or (c["table"] == "mail_deliveries" and c["op"] == "update" and set(c["changes"]) <= read),
    )  # fmt: skip
    return Verdict(not reasons, tuple(reasons))


_SECTION = {"done": "done", "in_progress": "in progress", "in_review": "in progress", "blocked": "blocked"}


def verify_status_report(ev: Evidence) -> Verdict:
    """A new text document at the path listing the week's tickets (key and title) by status, shared with the manager.

    Which tickets and sections come from the ticket rows (label and status), not the params; each ticket is in
    its section and no other, no other ticket of the project is listed (last week's is the trap), and each
    blocked ticket's reason is the one its latest "is blocked" post in chat gives.
    """
    path = str(ev.params["document"])
    doc = _find_document(ev, path)
    if doc is None or doc.kind != "text" or doc.id not in ev.inserted("documents"):
        return Verdict(False, (f"no new text document {path}",))
    text = _file(ev, doc, doc.sha)
    if not isinstance(text, TextDoc):
        return Verdict(False, (f"{path}: its stored file does not read as a text document",))
    label = re.search(r"week-\d+", path)
    project = str(ev.params["tickets"][0]["key"]).split("-")[0]
    rows = ev.sql.all(
        "SELECT t.key, t.status, t.title FROM tickets t JOIN projects p ON p.id = t.project_id JOIN ticket_labels l"
        " ON l.ticket_id = t.id WHERE p.key = ? AND l.label = ? ORDER BY t.key",
        (project, label.group(0) if label else ""),
    )
    week = [(str(key), str(status)) for key, status, _ in rows]
    sections = text.sections()
    named = [(h.casefold(), {k.upper() for k in re.findall(rf"\b{project}-\d+\b", t, re.I)}) for h, t in sections]
    reasons = [f"{key} is listed nowhere" for key, _ in week if not any(key in ks for _, ks in named)]
    for key, status, title in rows:
        lines = [
            line.casefold() for h, t in sections if h.casefold() == _SECTION.get(status) for line in t.splitlines()
            if re.search(rf"\b{re.escape(key)}\b", line, re.I)
        ]  # fmt: skip
        if lines and not any(str(title).strip().casefold() in line for line in lines):
            reasons.append(f"{key}: its line does not give its title ({title!r})")
    for key, status in week:
        wrong = [h or "(before the first heading)" for h, ks in named if key in ks and h != _SECTION.get(status)]
        reasons += [f"{key} ({status}) is listed under {wrong}"] * bool(wrong)
        if status == "blocked":
            new = ev.inserted("posts", by_agent=False) or [0]
            said = ev.sql.one(
                _ids("SELECT message FROM posts WHERE message LIKE ? AND deleted_at IS NULL AND id NOT IN (?*)"
                     " ORDER BY id DESC LIMIT 1", new), [f"{key} is blocked: %", *new],
            )  # fmt: skip
            why = str(said[0]).split("is blocked: ", 1)[1].rstrip(".").casefold() if said else "?"
            if not any(h.casefold() == "blocked" and why in t.casefold() for h, t in sections):
                reasons.append(f"{key}: the Blocked section does not give its reason ({why!r})")
    stray = sorted({k for _, ks in named for k in ks} - {k for k, _ in week})
    reasons += [f"lists {stray}, which are not labelled {label and label.group(0)}"] * bool(stray)
    shared = ev.sql.one(
        "SELECT s.permission FROM employees me JOIN document_shares s ON s.employee_id = me.manager_id"
        " WHERE me.id = ? AND s.document_id = ?", (ev.actor_id, doc.id),
    )  # fmt: skip
    if shared is None or shared[0] not in ("view", "comment", "edit"):
        reasons.append("not shared with the manager")

    def allowed(c: Mapping[str, Any]) -> bool:
        if c["table"] in ("documents", "document_versions", "document_shares"):
            mine = _pk(c) if c["table"] == "documents" else c["changes"].get("document_id")
            if c["table"] == "document_shares" and c["op"] == "update":
                mine = ev.sql.scalar("SELECT document_id FROM document_shares WHERE id = ?", (_pk(c),))
            return c["op"] in ("insert", "update") and mine is not None and int(mine) == doc.id
        return c["op"] == "insert" and c["table"] in ("blobs", "doc_folders")

    reasons += _outside(ev, allowed)[:3]
    return Verdict(not reasons, tuple(reasons))


# -- submit summaries (history questions and the impossible variants, scenarios.verify_impossible) ---------


def _summary(ev: Evidence) -> str | None:
    """The summary of the successful submit that ended the episode (None if it did not end that way)."""
    last = ev.steps[-1] if ev.steps else None
    if last is None or last["action"]["name"] != "submit" or last.get("error"):
        return None
    return str(last["action"]["arguments"].get("summary", ""))


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
    "release-notes-v0": verify_release_notes,
    "access-requests-v0": verify_access_requests,
    "quarterly-budget-v0": verify_budget,
    "expense-reconciliation-v0": verify_expenses,
    "weekly-status-report-v0": verify_status_report,
}
"""Verifiers by scenario id (the later families' modules add theirs when imported, just below)."""

# The later families' verifiers live in their own modules (this one is at its size limit) and use its helpers,
# so they are imported once those exist; each module registers its verifiers in VERIFIERS.
import scenarios.verify_code  # noqa: E402, F401
import scenarios.verify_history  # noqa: E402, F401
import scenarios.verify_impossible_work  # noqa: E402, F401
import scenarios.verify_knowledge  # noqa: E402, F401
import scenarios.verify_more  # noqa: E402, F401
import scenarios.verify_people  # noqa: E402, F401
import scenarios.verify_roadmap  # noqa: E402, F401
import scenarios.verify_stories  # noqa: E402, F401
from scenarios.verify_impossible import IMPOSSIBLE  # noqa: E402 - the impossible variants

VERIFIERS.update(IMPOSSIBLE)

"""``history-redo-v0``: the world is cut just before a reply the history holds, and the agent must send it.

The second kind of mined task (issue 13 item 3). The generated mail history holds threads where someone asked
and someone answered. The build picks one such answer, removes it (and every later message of its thread, with
their recipients and deliveries, so nothing refers to a message that no longer exists), marks the asking mail
unread in the answerer's inbox, and hands the answerer the mail as it arrived. The history says what the answer
was; the rubric grades the reply against it.

Difficulty is a ladder, each level the previous one's work and more:
- 0 ``ticket-reply``: a colleague asked about ticket K; the answer names K and its status as the tracker shows
  it (only threads after whose answer K's status never changed, so the history's answer still holds).
- 1: the same, and who K is assigned to (or that nobody is).
- 2 ``customer-reply``: a customer described a problem; the answer gives the key of the ticket the answerer
  filed for it (found by its title among the tickets they reported: only problems whose title names exactly
  one such ticket), where it stands now and who holds it.
- 3: the same, and since the mail the work moved on (``link_onward``): the ticket is linked to another one
  someone is working on (if it is still open it now waits on that one, ``blocks``; if it is closed it left its
  open work to it, ``relates_to``), and its latest comment, by whoever holds it, says which. The answer adds
  that ticket's key, status and assignee, read from that ticket, not from the comment.

Why each level is harder work, not only longer: at 1 the holder is rarely the reporter; at 2 the ticket has to
be found by its title and has moved further since it was filed (in the 40-person default world nearly every
customer's ticket had changed status and had an assignee; colleagues' tickets often still sit in backlog,
unassigned); at 3 there is a second ticket to read, in progress or in review and held by someone, with the
comment on the first ticket naming it by key and title only. So reading a ticket as it was filed, writing its
state as people say it (``in progress``, a name) or naming tickets by their titles costs more at each step.

A world whose history holds no case of the difficulty's kind gets one of the other kind. The seed picks the
case as ``seed % n`` over the kind's cases in thread order, so seeds 0..n-1 enumerate them (``sim.mine``).
The params keep the provenance: the thread, the asking message and the message ids that were cut.

The oracle finds the mail by its subject and sender, reads the ticket through the tools and replies; it never
reads the params.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from scenarios.library.history_question import pick
from worlds.clock import Clock
from worlds.rawsql import Sql, iso
from worlds.schema import Base
from worlds.seeding import Seeds

KINDS = ("ticket-reply", "ticket-reply", "customer-reply", "customer-reply")
KEY = re.compile(r"\b[A-Z][A-Z0-9]*-\d+\b")
STATUSES = ("backlog", "todo", "in_progress", "in_review", "blocked", "done", "wont_do")
MAIL_TABLES = ("mail_threads", "mail_messages", "mail_recipients", "mail_deliveries")
FORMAT = (
    "State the status exactly as the tracker shows it (one of backlog, todo, in_progress, in_review, blocked, "
    "done, wont_do) and name people by @username."
)
ASKS = (
    "Answer it in its thread (reply to that mail) with {asked}.",
    "Reply to that mail, in its thread, with {asked}.",
    "Get back to them with a reply to that mail giving {asked}.",
)
"""Prompt variants of the request, one drawn per task."""
PROBLEM = re.compile(r"(?:sees the following|a problem on our account|misbehaves for [^:\n]+): (.+?)\.(?:\s|$)")


@dataclass(frozen=True)
class Case:
    """One answer the history holds: what asked, who answered, what was cut, and what the answer must say."""

    kind: str
    thread: int
    trigger: int
    cut: tuple[int, ...]
    actor: int
    asker_address: str
    asker_name: str
    subject: str
    sent_at: str
    key: str
    status: str
    assignee: str | None

    @property
    def source(self) -> str:
        """Where the task came from in the history (its provenance, and what its split hashes)."""
        return f"mail/thread/{self.thread}"


@dataclass(frozen=True)
class Linked:
    """The ticket that the asked-about ticket now hangs on (difficulty 3): what the answer must add about it."""

    key: str
    status: str
    assignee: str
    kind: str

    def facts(self) -> dict[str, str]:
        """The linked ticket as params: its key, status, assignee and how it hangs on the asked-about one."""
        return {"key": self.key, "status": self.status, "assignee": self.assignee, "kind": self.kind}


def key_pattern(key: str) -> str:
    """A regex for ``key`` as a whole word."""
    return rf"(?<![A-Za-z0-9-]){re.escape(key)}(?![A-Za-z0-9-]|-\d)"


def only_key(key: str) -> str:
    """A regex that holds when a text names no ticket key but ``key``."""
    return only_keys((key,))


def only_keys(keys: tuple[str, ...]) -> str:
    """A regex that holds when a text names no ticket key but those of ``keys``."""
    allowed = "|".join(re.escape(k) for k in keys)
    return rf"^(?![\s\S]*\b(?!(?:{allowed})\b)[A-Z][A-Z0-9]*-\d+\b)"


def status_pattern(status: str) -> str:
    """A regex for the tracker's status word (``in_progress``) as a word."""
    return rf"(?<![\w-]){re.escape(status)}(?![\w-])"


def only_status(status: str) -> str:
    """A regex that holds when a text states no tracker status word but ``status``."""
    return only_statuses((status,))


def only_statuses(statuses: tuple[str, ...]) -> str:
    """A regex that holds when a text states no tracker status word but those of ``statuses``."""
    others = "|".join(re.escape(s) for s in STATUSES if s not in statuses)
    return rf"^(?![\s\S]*(?<![\w-])(?:{others})(?![\w-]))"


def assignee_pattern(assignee: str | None) -> str:
    """A regex for who holds the ticket: ``@username``, or words that say nobody does."""
    if assignee is None:
        return r"(?i)\b(?:unassigned|nobody|no one)\b"
    return rf"@{re.escape(assignee)}(?![\w.-]*[\w])"


def ticket_state(sql: Sql, key: str) -> tuple[int, str, str | None] | None:
    """(id, status, assignee username) of the ticket ``key``, or None."""
    row = sql.one(
        "SELECT t.id, t.status, e.username FROM tickets t JOIN projects p ON p.id = t.project_id"
        " LEFT JOIN employees e ON e.id = t.assignee_id WHERE p.key || '-' || t.number = ?",
        (key,),
    )
    return None if row is None else (int(row[0]), str(row[1]), None if row[2] is None else str(row[2]))


def cases(sql: Sql, kind: str) -> list[Case]:
    """Every answer of ``kind`` the history holds that a redo can grade exactly, in thread order."""
    rows = sql.all(
        "SELECT m.thread_id, m.id, m.in_reply_to_id, m.subject, m.body, m.sent_at, b.address, b.display_name,"
        " b.employee_id, e.active FROM mail_messages m JOIN mailboxes b ON b.id = m.sender_mailbox_id"
        " LEFT JOIN employees e ON e.id = b.employee_id ORDER BY m.thread_id, m.sent_at, m.id"
    )
    threads: dict[int, list[Any]] = {}
    seen: dict[tuple[str, str, str], int] = {}
    for r in rows:
        threads.setdefault(int(r[0]), []).append(r)
        mail = (str(r[3]), str(r[6]), str(r[5])[:10])
        seen[mail] = seen.get(mail, 0) + 1
    out: list[Case] = []
    for thread, msgs in sorted(threads.items()):
        if len(msgs) < 2 or msgs[1][2] != msgs[0][1]:
            continue
        ask, answer = msgs[0], msgs[1]
        if seen[(str(ask[3]), str(ask[6]), str(ask[5])[:10])] > 1:
            continue  # the same subject from the same sender that day: the prompt would not say which mail
        if answer[8] is None or not answer[9] or answer[8] == ask[8]:
            continue  # the answerer must be someone the agent can play
        internal = ask[8] is not None
        if kind == "ticket-reply" and internal:
            keys = sorted(set(KEY.findall(f"{ask[3]}\n{ask[4]}")))
        elif kind == "customer-reply" and not internal and not str(ask[6]).startswith("billing@"):
            keys = sorted(set(KEY.findall(str(answer[4]))))
        else:
            continue
        state = ticket_state(sql, keys[0]) if len(keys) == 1 else None
        if state is None:
            continue
        tid, status, assignee = state
        if kind == "ticket-reply":
            later = sql.scalar(
                "SELECT count(id) FROM ticket_status_changes WHERE ticket_id = ? AND changed_at > ?", (tid, answer[5])
            )
            if later:
                continue  # the history's answer no longer describes the ticket
        else:
            same = sql.scalar(
                "SELECT count(t.id) FROM tickets t JOIN tickets k ON lower(k.title) = lower(t.title)"
                " WHERE k.id = ? AND t.reporter_id = ?",
                (tid, answer[8]),
            )
            if same != 1:
                continue  # two tickets of the answerer's share the title: which one is not in the rows
        out.append(
            Case(
                kind=kind,
                thread=thread,
                trigger=int(ask[1]),
                cut=tuple(int(m[1]) for m in msgs[1:]),
                actor=int(answer[8]),
                asker_address=str(ask[6]),
                asker_name=str(ask[7]).split(" (")[0],
                subject=str(ask[3]),
                sent_at=str(ask[5])[:10],
                key=keys[0],
                status=status,
                assignee=assignee,
            )
        )
    return out


def delete_rows(sql: Sql, table: str, column: str, value: int) -> None:
    """Delete (logged) every row of ``table`` whose ``column`` is ``value``, in id order."""
    columns = [c.name for c in Base.metadata.tables[table].columns]
    select = f"SELECT {', '.join(columns)} FROM {table} WHERE {column} = ? ORDER BY id"  # noqa: S608 - schema names
    for row in sql.all(select, (value,)):
        old = dict(zip(columns, row, strict=True))
        sql.delete(table, {"id": old["id"]}, old)


def cut(sql: Sql, case: Case) -> None:
    """Remove the answer and every later message of its thread; the asking mail arrives unread again."""
    for message in reversed(case.cut):
        delete_rows(sql, "mail_deliveries", "message_id", message)
        delete_rows(sql, "mail_recipients", "message_id", message)
        delete_rows(sql, "mail_messages", "id", message)
    row = sql.one(
        "SELECT d.id, d.is_read FROM mail_deliveries d JOIN mailboxes b ON b.id = d.mailbox_id"
        " WHERE d.message_id = ? AND b.employee_id = ?",
        (case.trigger, case.actor),
    )
    if row is not None:
        sql.update("mail_deliveries", int(row[0]), {"is_read": (bool(row[1]), False)})


WAITS = "Heads-up: this now waits on {key} ({title}). Nothing more we can do here until that lands."
FOLLOW = "What is still open from this moved to {key} ({title}), so point anyone who asks there."


def link_onward(sql: Sql, seeds: Seeds, case: Case, now: datetime) -> Linked | None:
    """Since the mail, the work moved on to another ticket: link one in progress to the case's, and say so.

    Difficulty 3's extra work. The asked-about ticket gets a link to a ticket someone still here is working on
    (its own project's first, else any project's) and a comment, the latest on it, from whoever holds it (the
    answerer when its holder has left or nobody holds it): an open ticket now waits on that one (``blocks``), a
    closed one left the rest of its work to it (``relates_to``). The answer must add that ticket's key, status
    and assignee, read from the tracker, not from the comment. None when no ticket anywhere is in progress with
    an active assignee (the answer then asks what difficulty 2 asks).
    """
    tid, status, _assignee = ticket_state(sql, case.key) or (0, "", None)
    project = sql.scalar("SELECT project_id FROM tickets WHERE id = ?", (tid,))
    rows = sql.all(
        "SELECT t.id, t.key, t.title, t.status, e.username, t.project_id = ? FROM tickets t"
        " JOIN employees e ON e.id = t.assignee_id AND e.active WHERE t.status IN ('in_progress', 'in_review')"
        " AND t.id <> ?"
        " AND NOT EXISTS (SELECT 1 FROM ticket_links l WHERE (l.source_id = t.id AND l.target_id = ?)"
        " OR (l.source_id = ? AND l.target_id = t.id)) ORDER BY t.project_id <> ?, t.id",
        (project, tid, tid, tid, project),
    )
    if not rows:
        return None
    near = [r for r in rows if r[5]] or rows
    lid, key, title, lstatus, holder, _same = near[int(seeds.rng("scenario/history-redo/link").integers(len(near)))]
    closed = status in ("done", "wont_do")
    kind = "relates_to" if closed else "blocks"
    source, target = (tid, int(lid)) if closed else (int(lid), tid)
    author = (
        sql.scalar(
            "SELECT e.id FROM tickets t JOIN employees e ON e.id = t.assignee_id WHERE t.id = ? AND e.active", (tid,)
        )
        or case.actor
    )  # whoever holds it says so; a leaver cannot, so the answerer noted it themselves
    latest = sql.scalar("SELECT max(created_at) FROM ticket_comments WHERE ticket_id = ?", (tid,))
    at = now - timedelta(minutes=20)
    if latest is not None and datetime.fromisoformat(str(iso(latest))) >= at:
        at = now - timedelta(minutes=1)  # the generated history ran up to the morning: still the latest comment
    sql.insert("ticket_links", {"source_id": source, "target_id": target, "kind": kind, "created_at": at})
    body = (FOLLOW if closed else WAITS).format(key=key, title=title)
    sql.insert("ticket_comments", {"ticket_id": tid, "author_id": int(author), "body": body, "created_at": at})
    return Linked(key=str(key), status=str(lstatus), assignee=str(holder), kind=kind)


def reply_checks(
    *,
    thread: int,
    trigger: int,
    box: int,
    to: str,
    key: str,
    facts: dict[str, str | None],
    linked: Linked | None = None,
) -> list[dict[str, Any]]:
    """The checks of one mailed answer: in the thread, to the asker, naming ``key`` and the ``facts`` only.

    With ``linked`` (difficulty 3) the answer also names that ticket, its status and assignee, and the "only"
    checks allow its key and status beside the asked-about ticket's.
    """
    keys = (key,) if linked is None else (key, linked.key)
    sent = {"fn": "mail_sent"}
    checks: list[dict[str, Any]] = [
        {
            "id": "replied-in-thread",
            "description": "The agent answered the asking mail itself, in its thread.",
            "must": True,
            "fn": "row_exists",
            "params": {
                "table": "mail_messages",
                "where": {"thread_id": thread, "in_reply_to_id": trigger, "sender_mailbox_id": box},
            },
        },
        {**sent, "id": "names-key", "description": f"The reply to {to} names {key}.",
         "params": {"to": to, "subject_pattern": r"^Re:", "body_pattern": key_pattern(key)}},
        {**sent, "id": "only-key", "description": f"The reply names no ticket but {' and '.join(keys)}.",
         "params": {"to": to, "body_pattern": only_keys(keys)}, "needs": ["names-key"]},
    ]  # fmt: skip
    if "status" in facts:
        status = str(facts["status"])
        said = tuple(dict.fromkeys((status,) if linked is None else (status, linked.status)))
        checks += [
            {**sent, "id": "states-status", "description": f"The reply states {key}'s status, {status}.",
             "params": {"to": to, "body_pattern": status_pattern(status)}},
            {**sent, "id": "only-status", "description": f"The reply states no status but {' and '.join(said)}.",
             "params": {"to": to, "body_pattern": only_statuses(said)}, "needs": ["states-status"]},
        ]  # fmt: skip
    if "assignee" in facts:
        who = facts["assignee"]
        checks.append(
            {**sent, "id": "names-assignee",
             "description": f"The reply says who holds {key}: {'@' + who if who else 'nobody'}.",
             "params": {"to": to, "body_pattern": assignee_pattern(who)}}
        )  # fmt: skip
    if linked is not None:
        on = f"the ticket {key} {'waits on' if linked.kind == 'blocks' else 'left its open work to'}"
        checks += [
            {**sent, "id": "names-linked-key", "description": f"The reply names {on}, {linked.key}.",
             "params": {"to": to, "body_pattern": key_pattern(linked.key)}},
            {**sent, "id": "states-linked-status", "description": f"The reply states {linked.key}'s status, "
             f"{linked.status}.", "params": {"to": to, "body_pattern": status_pattern(linked.status)}},
            {**sent, "id": "names-linked-assignee", "description": f"The reply says who holds {linked.key}: "
             f"@{linked.assignee}.", "params": {"to": to, "body_pattern": assignee_pattern(linked.assignee)}},
        ]  # fmt: skip
    checks.append(
        {
            "id": "no-collateral",
            "description": "Only the reply was sent, and mail marked read or moved: nothing else changed.",
            "must": True,
            "fn": "no_collateral_changes",
            "params": {
                "allowed": [
                    *({"table": t, "ops": ["insert"]} for t in MAIL_TABLES),
                    {"table": "mail_deliveries", "fields": ["is_read", "read_at", "is_flagged", "folder_id"]},
                ]
            },
        }
    )
    return checks


def facts_of(case: Case, full: bool) -> dict[str, str | None]:
    """The facts the answer must state beyond the key: its status always, its assignee from difficulty 1."""
    facts: dict[str, str | None] = {"status": case.status}
    if full:
        facts["assignee"] = case.assignee
    return facts


class HistoryRedo:
    """The ``history-redo-v0`` family."""

    id = "history-redo-v0"
    description = "The world is cut just before a reply the mail history holds; send it as it was sent."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Pick case ``seed % n`` of the difficulty's kind, cut its answer from the world, prompt with the ask."""
        difficulty = max(0, min(3, difficulty))
        sql = Sql.of(session)
        first = KINDS[difficulty]
        order = (first, *(k for k in dict.fromkeys(KINDS) if k != first))
        empty = "the history holds no answered mail to redo: world too small"
        case, index, count = pick(order, lambda k: cases(sql, k), seeds.seed, empty)
        cut(sql, case)
        actor_row = sql.one(
            "SELECT e.username, e.first_name || ' ' || e.last_name, b.id FROM employees e"
            " JOIN mailboxes b ON b.employee_id = e.id WHERE e.id = ? ORDER BY b.id LIMIT 1",
            (case.actor,),
        )
        user, name, box = str(actor_row[0]), str(actor_row[1]), int(actor_row[2])
        now = start_day(session, clock, case.actor)
        full = difficulty >= 1
        facts = facts_of(case, full)
        linked = link_onward(sql, seeds, case, now) if difficulty >= 3 else None
        variant = int(seeds.rng("scenario/history-redo").integers(len(ASKS)))
        prompt = self._prompt(case, user, name, facts, ASKS[variant], linked is not None)
        params = {
            "task": f"{case.kind}{'+' * (full + (linked is not None))}:{case.source}",
            "kind": case.kind,
            "source": case.source,
            "provenance": {"thread": case.thread, "trigger": case.trigger, "cut": list(case.cut)},
            "key": case.key,
            "facts": facts,
            "linked": None if linked is None else linked.facts(),
            "to": case.asker_address,
            "box": box,
            "index": index,
            "of": count,
        }
        checks = reply_checks(
            thread=case.thread,
            trigger=case.trigger,
            box=box,
            to=case.asker_address,
            key=case.key,
            facts=facts,
            linked=linked,
        )
        rubric = load_rubric(
            {"id": "history-redo", "version": 1, "description": f"Answer {case.subject!r}", "checks": checks}
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=user,
            rubric=rubric,
            params=params,
            limits=Limits(max_turns=20, time_budget_s=2 * 3600),
            apps=("mail", "tickets", "directory"),
            difficulty=difficulty,
        )

    @staticmethod
    def _prompt(case: Case, user: str, name: str, facts: dict[str, str | None], ask: str, onward: bool) -> str:
        wants = ["the ticket's key"]
        if "status" in facts:
            wants.append("its status")
        if "assignee" in facts:
            wants.append("who it is assigned to (or that nobody is)")
        if onward:
            wants.append("the other ticket its latest comment points to, with that ticket's key, status and assignee")
        asked = ", ".join(wants[:-1]) + (" and " if len(wants) > 1 else "") + wants[-1]
        if case.kind == "ticket-reply":
            head = f"{case.asker_name} mailed you on {case.sent_at} about a ticket: {case.subject!r}."
        else:
            head = (
                f"A customer, {case.asker_name} <{case.asker_address}>, mailed you on {case.sent_at}: "
                f"{case.subject!r}. You filed the ticket we track their problem under."
            )
        return (
            f"You are {name} (@{user}). {head} {ask.format(asked=asked)} "
            f"{FORMAT} Change nothing else. Call the submit tool when you are done."
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Find the mail, the ticket it is about, read the ticket, reply in the thread."""
        m = re.search(r"mailed you on (\d{4}-\d\d-\d\d)(?: about a ticket)?: '(.+?)'\.", env.prompt)
        if m is None:
            m = re.search(r'mailed you on (\d{4}-\d\d-\d\d)(?: about a ticket)?: "(.+?)"\.', env.prompt)
        assert m is not None, "the prompt names no mail"
        day, subject = m.group(1), m.group(2)
        found = env.call("mail_search", text=subject, folder="Inbox", limit=50)["messages"]
        sender = re.search(r"<([^>]+)>, mailed you", env.prompt)
        mail = next(
            x
            for x in found
            if x["subject"] == subject and x["sent_at"][:10] == day and (sender is None or x["from"] == sender.group(1))
        )
        full = env.call("mail_read_message", message_id=mail["id"])
        if "A customer" in env.prompt:
            problem = PROBLEM.search(full["body"])
            assert problem is not None, "the customer's mail describes no problem this oracle can read"
            hits = env.call("tickets_search", text=problem.group(1), limit=100)["tickets"]
            mine = [t for t in (env.call("tickets_get", key=h["key"]) for h in hits) if t["reporter"] == env.actor]
            ticket = next(t for t in mine if t["title"].lower() == problem.group(1).lower())
        else:
            ticket = env.call("tickets_get", key=KEY.findall(f"{full['subject']}\n{full['body']}")[0])
        key = ticket["key"]
        parts = [f"That is {ticket['key']}"]
        if "its status" in env.prompt:
            parts.append(f"its status is {ticket['status']}")
        if "who it is assigned to" in env.prompt:
            who = ticket.get("assignee")
            parts.append(f"it is assigned to @{who}" if who else "it is unassigned")
        body = "Hi, " + ", ".join(parts) + "."
        if "latest comment points to" in env.prompt:
            body += " " + self._onward(env, ticket)
        env.call("mail_reply", message_id=mail["id"], body=body)
        env.call("submit", summary=f"answered about {key}")

    @staticmethod
    def _onward(env: AgentEnv, ticket: dict[str, Any]) -> str:
        """The sentence about the ticket the latest comment points to, read from that ticket itself."""
        own = ticket["key"]
        for comment in reversed(ticket.get("comments", [])):
            other = next((k for k in KEY.findall(comment["body"]) if k != own), None)
            if other is not None:
                break
        else:
            raise AssertionError(f"no comment on {own} points to another ticket")
        on = env.call("tickets_get", key=other)
        closed = ticket.get("status") in ("done", "wont_do")
        head = "What is left of it is tracked in" if closed else "It is waiting on"
        who = on.get("assignee")
        held = f"assigned to @{who}" if who else "unassigned"
        return f"{head} {on['key']}, whose status is {on['status']}, {held}."

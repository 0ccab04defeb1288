"""``cross-source-question-v0``: a question whose facts are spread over a document, a chat thread and mail.

Knowledge work (issue 13 item 2): the project lead is about to sign a contract for a service (error
monitoring, feature flags...) and wants the facts straight first. Each fact lives in one place, written by the
people whose job it was to write it:

- the team's drive (``Shared/<department>``) holds the evaluation document a teammate wrote: the shortlist with
  each vendor's score and list price, the must-haves, and the cost centre that pays for the service;
- the team channel holds the decision thread: the teammate recommends the best-scored vendor and the lead's
  manager approves the pick there;
- the lead's mailbox holds the quote requests the lead sent to the two best-scored vendors and their replies,
  with the agreed price and the date the contract runs from.

The agent answers in its submit summary, one labelled line a fact: ``vendor``, ``annual price``, ``approved
by``, ``cost centre`` and (difficulty 1+) ``starts on``. Difficulty knobs, each level keeping the work of the
one before:

- 0: every fact is stated once, where it lives (four facts: the start date is not asked).
- 1: + the start date is asked, and the vendor's first quote is superseded: a later mail in the same thread
  corrects the price and the start date (the latest word counts; the first figures are wrong).
- 2: + the decision thread revisits the pick: the best-scored vendor is withdrawn after a teammate's reply
  (it misses a must-have the document lists) and the next one is approved; and a similar thread in another
  project's channel picks another vendor for the same service (the right project's thread counts).
- 3: + the price has to be combined from two sources: the vendor quotes a monthly fee, and the document's
  payment terms say the annual price is twelve monthly fees less the vendor's prepayment discount, which the
  shortlist states.

The rubric is one exact-fact check per fact (``submit_answer`` on the fact's labelled line: every value stated
under the label must be the answer, so listing candidates earns nothing) and a gate that the agent changed
nothing but read marks: answering is reading. The answer is computed while the sources are written and kept in
the hidden params only; no table holds it except as the sources state it. The oracle finds every fact through
the tools; it never reads the params.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from scenarios.library import setup
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

SERVICES: dict[str, tuple[str, ...]] = {
    "error monitoring": ("Faultline", "Bugsnare", "Crashpad", "Tracewise", "Errorly"),
    "log management": ("Logvista", "Timberline", "Grepstack", "Streamlog", "Lumberjet"),
    "feature flags": ("Flagpole", "Togglebox", "Switchyard", "Rollgate", "Flipside"),
    "uptime monitoring": ("Pingwell", "Heartbeatly", "Uptide", "Statuspoint", "Watchtide"),
    "transactional email": ("Mailbolt", "Postwing", "Sendrift", "Relayo", "Inkpost"),
    "CI runners": ("Buildhive", "Runforge", "Pipewright", "Shipyardly", "Stepwise"),
}
"""Services a team buys and the (fictional) vendors that sell each; the seed picks a service and a shortlist."""
MUST = "EU data residency"
"""The must-have a withdrawn vendor misses (difficulty 2+)."""
USER = r"@([a-z0-9][a-z0-9._-]*[a-z0-9])"
FACTS: dict[str, tuple[str, str, str]] = {
    "vendor": ("vendor", r"([A-Za-z][A-Za-z0-9]*)", "<vendor name>"),
    "annual-price": ("annual price", r"(?:EUR|€)?\s*(?<![\w.,-])(\d+)(?![\w.,-])", "<euros, digits only>"),
    "approved-by": ("approved by", USER, "@<username>"),
    "cost-centre": ("cost centre", r"(CC-\d+)(?![\w-])", "<CC-number>"),
    "starts-on": ("starts on", r"(?<![\d-])(\d{4}-\d\d-\d\d)(?![\d-])", "<YYYY-MM-DD>"),
}
"""Each fact's label, the pattern of its value (first group) and how the prompt writes it."""
ASKS = {
    "vendor": "which vendor did the team pick",
    "annual-price": "what is the agreed annual price",
    "approved-by": "who approved the pick",
    "cost-centre": "which cost centre pays for it",
    "starts-on": "from which date does the contract run",
}
READ_MARKS: list[dict[str, Any]] = [
    {"table": "mail_deliveries", "fields": ["is_read", "read_at"]},
    {"table": "channel_members", "fields": ["last_viewed_at"]},
]
"""What reading changes: a mail marked read, a channel's last visit."""
DAY = "%A %d %B %Y"
"""How the vendors write a day in their mails (Monday 07 December 2026)."""


def fact_pattern(fact: str) -> str:
    """The pattern of a fact's labelled value (``annual price: 24000``): its first group is the value."""
    label, value, _ = FACTS[fact]
    return rf"(?im)(?<![\w-]){re.escape(label)}\s*:\s*{value}"


def facts_for(difficulty: int) -> tuple[str, ...]:
    """The facts asked at ``difficulty``, in the order the answer states them."""
    base = ("vendor", "annual-price", "approved-by", "cost-centre")
    return base if difficulty < 1 else (*base, "starts-on")


@dataclass(frozen=True)
class Cast:
    """Who the task is about: the project, its lead (the agent), the approver, the evaluator and a sceptic."""

    project: str
    project_id: int
    channel: int
    channel_name: str
    folder: str
    lead: tuple[int, str, str]
    manager: tuple[int, str, str]
    evaluator: tuple[int, str, str]
    sceptic: tuple[int, str, str]


def _person(row: Any) -> tuple[int, str, str]:
    return int(row[0]), str(row[1]), str(row[2])


def casts(sql: Sql) -> list[Cast]:
    """Every project whose lead, the lead's manager and two teammates are active (by project id)."""
    rows = sql.all(
        "SELECT p.id, p.name, p.team_id, t.slug, d.name, l.id, l.username, l.first_name || ' ' || l.last_name,"
        " m.id, m.username, m.first_name || ' ' || m.last_name FROM projects p JOIN teams t ON t.id = p.team_id"
        " JOIN departments d ON d.id = t.department_id JOIN employees l ON l.id = p.lead_id"
        " JOIN employees m ON m.id = l.manager_id JOIN mailboxes b ON b.employee_id = l.id"
        " WHERE l.active = ? AND m.active = ? ORDER BY p.id",
        (True, True),
    )
    out: list[Cast] = []
    for pid, name, team, slug, dept, *people in rows:
        lead, manager = _person(people[:3]), _person(people[3:])
        mates = [
            _person(r)
            for r in sql.all(
                "SELECT id, username, first_name || ' ' || last_name FROM employees WHERE team_id = ? AND active = ?"
                " AND id NOT IN (?, ?) ORDER BY id",
                (team, True, lead[0], manager[0]),
            )
        ]
        channel = sql.one("SELECT id, name FROM channels WHERE name = ? ORDER BY id LIMIT 1", (f"team-{slug}",))
        if len(mates) < 2 or channel is None:
            continue
        out.append(
            Cast(str(name), int(pid), int(channel[0]), str(channel[1]), f"Shared/{dept}", lead, manager, *mates[:2])
        )
    return out


def _vendor_box(sql: Sql, vendor: str, rng: np.random.Generator) -> tuple[int, str]:
    """The sales mailbox of ``vendor`` (made on first use): (mailbox id, the contact's first name)."""
    first = ("Anna", "Lukas", "Sofia", "Marek", "Ines", "Pieter", "Clara", "Jonas")[int(rng.integers(8))]
    address = f"{first.lower()}@{vendor.lower()}.example"
    row = sql.one(
        "SELECT id, display_name FROM mailboxes WHERE address LIKE ? ORDER BY id", (f"%@{vendor.lower()}.example",)
    )
    if row is not None:
        return int(row[0]), str(row[1]).split(" ")[0]
    box = sql.insert("mailboxes", {"address": address, "display_name": f"{first} ({vendor})", "employee_id": None})
    return box, first


def _message(
    sql: Sql,
    thread: int,
    reply_to: int | None,
    sender: int,
    to: int,
    folder: int,
    subject: str,
    body: str,
    at: datetime,
) -> int:
    """One message in ``thread`` from ``sender`` to ``to``, filed in ``folder`` (the sender's Sent or ``to``'s)."""
    message = sql.insert(
        "mail_messages",
        {
            "thread_id": thread,
            "message_id": f"<setup-{thread}-{sender}-{int(at.timestamp())}@mail.example>",
            "in_reply_to_id": reply_to,
            "sender_mailbox_id": sender,
            "subject": subject,
            "body": body,
            "sent_at": at,
            "attachment_document_ids": [],
        },
    )
    sql.insert("mail_recipients", {"message_id": message, "mailbox_id": to, "kind": "to"})
    owner = sender if reply_to is None else to
    sql.insert(
        "mail_deliveries",
        {"message_id": message, "mailbox_id": owner, "folder_id": folder, "is_read": reply_to is None,
         "is_flagged": False, "read_at": at if reply_to is None else None},
    )  # fmt: skip
    return message


def _folder(sql: Sql, box: int, name: str) -> int:
    return int(sql.scalar("SELECT id FROM mail_folders WHERE mailbox_id = ? AND name = ? ORDER BY id", (box, name)))


def _monday_after(day: date, weeks: int) -> date:
    return day + timedelta(days=(7 - day.weekday()) % 7 or 7) + timedelta(weeks=weeks)


class CrossSourceQuestion:
    """The ``cross-source-question-v0`` family."""

    id = "cross-source-question-v0"
    description = "Answer a lead's question whose facts are spread over a document, a chat thread and mail."
    world = WorldDefaults(employees=40, history_days=30)
    unanswerable = False
    """The impossible variant sets this: the picked vendor never answers the quote request."""

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Write the evaluation, the decision thread(s) and the quote mails; the answer goes to the params."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/cross-source")
        sql = Sql.of(session)
        pool = casts(sql)
        if len(pool) < 2:
            raise ValueError("no two projects with an active lead, manager and two teammates: world too small")
        cast = pool[int(rng.integers(len(pool)))]
        now = start_day(session, clock, cast.lead[0])
        service = sorted(SERVICES)[int(rng.integers(len(SERVICES)))]
        names = [SERVICES[service][int(i)] for i in rng.permutation(len(SERVICES[service]))]
        size = 3 if difficulty < 2 else 4
        scores = sorted((int(s) for s in rng.choice(np.arange(60, 95), size=size, replace=False)), reverse=True)
        shortlist: list[dict[str, Any]] = [
            {"vendor": v, "score": s, "list": 1200 * int(rng.integers(15, 40)), "discount": 5 * int(rng.integers(1, 4))}
            for v, s in zip(names[:size], scores, strict=True)
        ]
        withdrawn = shortlist[0]["vendor"] if difficulty >= 2 else None
        pick = shortlist[1] if withdrawn else shortlist[0]
        cost_centre = f"CC-{int(rng.integers(4100, 4900))}"
        doc = self._document(session, clock, sql, cast, service, shortlist, cost_centre, withdrawn, difficulty, now)
        approved = self._thread(sql, cast, service, doc, shortlist, withdrawn, now - timedelta(days=9))
        if difficulty >= 2:
            self._distractor(sql, rng, cast, pool, service, names[size], now - timedelta(days=2))
        answer: dict[str, str] = {"vendor": approved, "approved-by": cast.manager[1], "cost-centre": cost_centre}
        silent = approved if self.unanswerable else None
        quotes = self._quotes(sql, rng, cast, service, shortlist[:2], difficulty, now, silent)
        if approved in quotes:
            price, start = quotes[approved]
            annual = price * 12 * (100 - int(pick["discount"])) // 100 if difficulty >= 3 else price
            answer |= {"annual-price": str(annual), "starts-on": start.isoformat()}
        facts = facts_for(difficulty)
        lead_id, lead, lead_name = cast.lead
        asks = [ASKS[f] for f in facts]
        question = f"Before I sign the {service} contract for {cast.project}: {', '.join(asks[:-1])}, and {asks[-1]}?"
        labels = "; ".join(f"`{FACTS[f][0]}: {FACTS[f][2]}`" for f in facts)
        prompt = (
            f"You are {lead_name} (@{lead}), lead of {cast.project}, and want the facts straight before you sign. "
            f"Your question: {question} The team evaluated the vendors in a "
            f"document in the drive, decided in ~{cast.channel_name}, and the vendors answered your quote requests "
            f"by mail. Answer in your submit summary with one line per fact, exactly these labels: {labels}. Name "
            "people by @username, prices in whole euros as digits only (24000) and days as YYYY-MM-DD. Only read: "
            "change nothing. Call the submit tool when you are done."
        )
        params: dict[str, Any] = {
            "project": cast.project, "service": service, "answer": {f: answer[f] for f in facts if f in answer},
            "labels": {f: FACTS[f][0] for f in facts}, "document": doc, "withdrawn": withdrawn,
            "quotes": {v: [m, s.isoformat()] for v, (m, s) in sorted(quotes.items())},
            "superseded": difficulty >= 1, "discount": pick["discount"], "monthly": difficulty >= 3,
        }  # fmt: skip
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=lead,
            rubric=self._rubric(params, question),
            params=params,
            limits=Limits(max_turns=30, time_budget_s=4 * 3600),
            apps=("chat", "docs", "mail"),
            difficulty=difficulty,
        )

    # -- setup --------------------------------------------------------------------------------------------

    @staticmethod
    def _document(
        session: Session, clock: Clock, sql: Sql, cast: Cast, service: str, shortlist: list[dict[str, Any]],
        cost_centre: str, withdrawn: str | None, difficulty: int, now: datetime,
    ) -> str:  # fmt: skip
        """The evaluator's write-up in the team's drive, shared with the lead; returns its path."""
        lines = "\n".join(
            f"- {v['vendor']}: scored {v['score']}/100; list price EUR {v['list']:,} a year; "
            f"{v['discount']}% off for paying a year in advance"
            + ("; US hosting only" if v["vendor"] == withdrawn else "; hosts in Frankfurt")
            for v in shortlist
        )
        text = (
            f"# {cast.project}: {service} vendor evaluation\n\n## Why\n\n{cast.project} needs {service} before "
            f"the next release; the free tier we used during the prototype no longer covers our volume.\n\n"
            f"## Must-haves\n\n{MUST}, single sign-on, and an export of our data if we leave.\n\n"
            f"## Shortlist\n\nScored against the must-haves, price, and a two-week trial.\n\n{lines}\n\n"
            f"## Budget\n\nThe contract is charged to cost centre {cost_centre} ({cast.project} running costs). "
            "List prices are a starting point; the final price is whatever the vendor quotes us.\n"
        )
        if difficulty >= 3:
            text += (
                "\n## Payment terms\n\nWe always pay a year in advance. Vendors quote monthly fees, so the annual "
                "price is twelve monthly fees less the vendor's prepayment discount from the shortlist above.\n"
            )
        name = f"{cast.project} {service} evaluation.odt"
        made = setup.create_document(
            session, clock, cast.evaluator[0], cast.folder, name, text, now - timedelta(days=14)
        )
        setup.share(sql, int(made["id"]), cast.lead[0], "comment")
        setup.share(sql, int(made["id"]), cast.manager[0], "comment")
        return str(made["path"])

    @staticmethod
    def _thread(
        sql: Sql, cast: Cast, service: str, doc: str, shortlist: list[dict[str, Any]], withdrawn: str | None,
        at: datetime,
    ) -> str:  # fmt: skip
        """The decision thread in the team channel; returns the vendor the manager approved."""
        for person in (cast.lead, cast.manager, cast.evaluator, cast.sceptic):
            setup.ensure_member(sql, cast.channel, person[0], at)
        top = shortlist[0]
        root = setup.post(
            sql, cast.channel, cast.evaluator[0],
            f"The {service} evaluation for {cast.project} is done: {doc}. {top['vendor']} scored highest "
            f"({top['score']}/100), so I recommend {top['vendor']}. @{cast.manager[1]}, can you approve?",
            at,
        )  # fmt: skip
        replies: list[tuple[tuple[int, str, str], str]] = [
            (cast.sceptic, "+1, the trial with them went smoothly for us."),
        ]
        pick = top
        if withdrawn is not None:
            pick = shortlist[1]
            replies = [
                (cast.sceptic, f"Careful: {withdrawn} only hosts in the US, and {MUST} is a must-have in the doc."),
                (cast.evaluator, f"Good catch, I withdraw {withdrawn}. Next on the shortlist is {pick['vendor']} "
                 f"({pick['score']}/100), so I recommend {pick['vendor']} instead."),
            ]  # fmt: skip
        replies.append(
            (cast.manager, f"Approved: we go with {pick['vendor']}. @{cast.lead[1]}, please settle the final quote "
             "with them and sign.")
        )  # fmt: skip
        for k, (who, text) in enumerate(replies, 1):
            sql.insert(
                "posts",
                {"channel_id": cast.channel, "author_id": who[0], "root_id": root, "message": text,
                 "created_at": at + timedelta(hours=3 * k), "edited_at": None, "deleted_at": None,
                 "is_pinned": False},
            )  # fmt: skip
        return str(pick["vendor"])

    @staticmethod
    def _distractor(
        sql: Sql, rng: np.random.Generator, cast: Cast, pool: list[Cast], service: str, vendor: str, at: datetime
    ) -> None:
        """A similar, newer decision thread for another project: another vendor for the same service."""
        others = [c for c in pool if c.project_id != cast.project_id]
        other = others[int(rng.integers(len(others)))]
        setup.ensure_member(sql, other.channel, cast.lead[0], at)
        for person in (other.evaluator, other.manager):
            setup.ensure_member(sql, other.channel, person[0], at)
        root = setup.post(
            sql, other.channel, other.evaluator[0],
            f"We need {service} for {other.project} too. I trialled {vendor} for two weeks and it fits our volume, "
            f"so I recommend {vendor}. @{other.manager[1]}, can you approve?",
            at,
        )  # fmt: skip
        sql.insert(
            "posts",
            {"channel_id": other.channel, "author_id": other.manager[0], "root_id": root,
             "message": f"Approved: we go with {vendor} for {other.project}.", "created_at": at + timedelta(hours=2),
             "edited_at": None, "deleted_at": None, "is_pinned": False},
        )  # fmt: skip

    @staticmethod
    def _quotes(
        sql: Sql, rng: np.random.Generator, cast: Cast, service: str, asked: list[dict[str, Any]], difficulty: int,
        now: datetime, silent: str | None,
    ) -> dict[str, tuple[int, date]]:  # fmt: skip
        """The lead's quote requests to ``asked`` and the vendors' replies: {vendor: (final price, start day)}.

        The price is annual below difficulty 3 and monthly from it (the document turns it into the annual
        price). From difficulty 1 a first quote is corrected by a later mail in the same thread. The ``silent``
        vendor gets the request and never answers it (the impossible variant); every draw is made either way,
        so the other vendor's figures do not move.
        """
        lead_box = setup.inbox(sql, cast.lead[0])
        assert lead_box is not None, "a cast's lead has a mailbox"
        inbox, box = lead_box
        sent = _folder(sql, box, "Sent")
        out: dict[str, tuple[int, date]] = {}
        subject = f"Quote request: {service} for {cast.project}"
        for k, v in enumerate(asked):
            vbox, contact = _vendor_box(sql, str(v["vendor"]), rng)
            asked_at = now - timedelta(days=13, hours=-k)
            thread = sql.insert("mail_threads", {"subject": subject, "created_at": asked_at})
            request = _message(
                sql, thread, None, box, vbox, sent, subject,
                f"Hello,\n\nwe are evaluating {service} for {cast.project} and would like your best price for a "
                f"one-year contract, paid a year in advance, starting as soon as possible.\n\nBest regards,\n"
                f"{cast.lead[2]}",
                asked_at,
            )  # fmt: skip
            monthly = difficulty >= 3
            unit = 50 * int(rng.integers(20, 70)) if monthly else 600 * int(rng.integers(20, 60))
            first = unit + (50 if monthly else 600) * int(rng.integers(2, 6))
            start = _monday_after(now.date(), int(rng.integers(1, 4)))
            early = start - timedelta(weeks=1)
            per = "a month" if monthly else "a year"
            body = (
                f"Hello {cast.lead[2].split(' ')[0]},\n\nthank you for considering {v['vendor']}. For {cast.project} "
                f"we can offer {service} at EUR {(first if difficulty >= 1 else unit):,} {per}, all seats "
                f"included, with the contract running from {(early if difficulty >= 1 else start).strftime(DAY)}."
                f"\n\nKind regards,\n{contact}, {v['vendor']} sales"
            )
            if v["vendor"] == silent:
                continue
            reply = _message(
                sql, thread, request, vbox, box, inbox, f"Re: {subject}", body, now - timedelta(days=11, hours=-k)
            )
            if difficulty >= 1:
                body = (
                    f"Hello {cast.lead[2].split(' ')[0]},\n\na correction to our quote: our finance team approved a "
                    f"better price, EUR {unit:,} {per}, and onboarding needs one more week, so the contract runs "
                    f"from {start.strftime(DAY)}. This replaces our earlier figures.\n\nKind regards,\n{contact}, "
                    f"{v['vendor']} sales"
                )
                _message(
                    sql, thread, reply, vbox, box, inbox, f"Re: {subject}", body, now - timedelta(days=4, hours=-k)
                )
            out[str(v["vendor"])] = (unit, start)
        return out

    # -- rubric -------------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(params: dict[str, Any], question: str) -> Rubric:
        """One exact-fact check per fact, and a gate that nothing but read marks changed."""
        checks: list[dict[str, Any]] = [
            {
                "id": f"answer-{fact}",
                "description": f"The submit summary's '{label}' line states {params['answer'][fact]} and nothing else.",
                "fn": "submit_answer",
                "params": {"pattern": fact_pattern(fact), "value": params["answer"][fact], "label": f"'{label}'"},
            }
            for fact, label in params["labels"].items()
        ]
        checks.append(
            {
                "id": "read-only",
                "description": "Answering is reading: nothing but read marks changed.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {"allowed": READ_MARKS},
            }
        )
        return load_rubric(
            {
                "id": "cross-source-question",
                "version": 1,
                "description": f"Answer exactly: {question}",
                "checks": checks,
            }
        )

    # -- oracle -------------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the evaluation, the project's decision thread and the picked vendor's latest quote; submit."""
        m = re.search(r"Before I sign the (.+?) contract for (.+?): ", env.prompt)
        if m is None:
            raise ValueError("the prompt asks no question this oracle knows")
        service, project = m.group(1), m.group(2)
        found = env.call("docs_list_folder", query=f"{project} {service} evaluation").get("documents", [])
        text = ""
        if found:
            read = env.call("docs_read", document=found[0]["path"])
            text = "\n".join(p for s in read["sections"] for p in s.get("paragraphs", []))
        vendor, approver = self._decision(env, project, service)
        lines = []
        if vendor:
            lines.append(f"vendor: {vendor}")
        if (cc := re.search(r"cost centre (CC-\d+)", text)) is not None:
            lines.append(f"cost centre: {cc.group(1)}")
        if approver:
            lines.append(f"approved by: @{approver}")
        quote = self._quote(env, project, vendor) if vendor else None
        if quote is None:
            lines.append(self._no_quote(env, project, vendor))
        else:
            price, per, start = quote
            if per == "month":
                d = re.search(rf"- {re.escape(str(vendor))}:.*?(\d+)% off", text)
                price = price * 12 * (100 - int(d.group(1))) // 100 if d else price * 12
            lines.append(f"annual price: {price}")
            if "`starts on:" in env.prompt:
                lines.append(f"starts on: {start}")
        env.call("submit", summary="\n".join(lines))

    @staticmethod
    def _decision(env: AgentEnv, project: str, service: str) -> tuple[str | None, str | None]:
        """(vendor, approver) from the project's decision thread: the approval counts, else the last recommendation."""
        posts = env.call("chat_search_posts", text=f"evaluation for {project} is done", limit=20)["posts"]
        roots = [p for p in posts if f"The {service} evaluation for {project} is done" in p["message"]]
        if not roots:
            return None, None
        thread = env.call("chat_read_thread", post_id=roots[0]["root_id"] or roots[0]["id"])["posts"]
        vendor: str | None = None
        approver: str | None = None
        for post in thread:
            if a := re.search(r"Approved: we go with (\w+)", post["message"]):
                vendor, approver = a.group(1), str(post["author"])
            elif r := re.findall(r"I recommend (\w+)", post["message"]):
                vendor = r[-1]
        return vendor, approver

    @staticmethod
    def _quote(env: AgentEnv, project: str, vendor: str) -> tuple[int, str, str] | None:
        """(price, 'year' or 'month', start day) from the vendor's latest mail about the project, or None."""
        found = env.call("mail_search", text=project, sender=vendor.lower(), limit=20)["messages"]
        for summary in found:  # newest first: the latest word counts
            body = env.call("mail_read_message", message_id=summary["id"])["body"]
            price = re.search(r"EUR ([\d,]+) a (year|month)", body)
            start = re.search(r"from (\w+day \d\d \w+ \d{4})", body)
            if price and start:
                day = datetime.strptime(start.group(1), DAY).date().isoformat()  # noqa: DTZ007 - a calendar day
                return int(price.group(1).replace(",", "")), price.group(2), day
        return None

    @staticmethod
    def _no_quote(env: AgentEnv, project: str, vendor: str | None) -> str:
        """What to say when the picked vendor never quoted: which request went unanswered."""
        sent = env.call("mail_search", text="Quote request: ", folder="Sent", limit=30)["messages"]
        ours = [m for m in sent if project in m["subject"]]
        when = f" of {ours[-1]['sent_at'][:10]}" if ours else ""
        return (
            f"annual price: not known yet. {vendor} has not answered our quote request{when} ('{ours[-1]['subject']}' "
            "), so no price exists anywhere yet."
            if ours
            else f"annual price: not known yet. {vendor} never sent us a quote."
        )

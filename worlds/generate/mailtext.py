"""Mail threads from events: a ticket someone asks about, a customer's problem, a vendor's invoice, team matters.

Each thread is planned from one event before a word is written, so its parts agree: a thread about ticket K
names K in its subject and its body, is sent after K was filed, goes from someone with a stake in K (its
reporter, a colleague) to the person who can answer (its assignee or the project lead), and the answer says
what K's event says (the cause found, the fix shipped, or why it was dropped). A customer writes about the
ticket filed for them, and the reply gives that ticket's key. Every body is composed greeting, context, ask,
closing and sign-off in its writer's style.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from worlds.generate import vocab
from worlds.generate.common import Gen
from worlds.generate.language import Dice, Style, cap, letter, one_of
from worlds.generate.stories import TicketEvent

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")  # fmt: skip
SERVICES = (
    "cloud hosting",
    "log storage",
    "office supplies",
    "team licences",
    "support tooling",
    "the design tool seats",
    "background checks",
    "conference tickets",
    "catering for the offsite",
    "legal review hours",
)
TEAM_TOPICS = (
    (
        "Backfill for the {team} team",
        "{who} is leaving at the end of the month and the {team} team is already stretched across {c}.",
        "Can we open the backfill now rather than after the next planning cycle?",
    ),
    (
        "Offsite in {city}",
        "I'm looking at {city} for the {team} offsite, two days in the second half of next month.",
        "Could you check the budget can cover travel for everyone before I book?",
    ),
    (
        "Budget for {topic}",
        "We keep running into {topic} work that nobody planned for, mostly around the {c}.",
        "Could we set aside {money} next quarter so it stops eating into the roadmap?",
    ),
    (
        "On-call load on the {team} team",
        "The {team} team had {n} pages last week, most of them from the {c}.",
        "I'd like to pause feature work for a sprint to fix the noisiest alerts. Thoughts?",
    ),
    (
        "Feedback from the {c} review",
        "Thanks for walking us through the {c} changes yesterday.",
        "Two things came up: {topic} and the rollout plan. Could you add both to the doc?",
    ),
    (
        "Interview panel for the {role} role",
        "We have {n} candidates for the {role} opening on the {team} team.",
        "Could you join the panel for the system design round next week?",
    ),
)
TEAM_REPLIES = {
    "agree": (
        "Makes sense, go ahead.",
        "Yes, let's do it. I'll bring it up with finance on {day}.",
        "Agreed. Put it on the agenda for {day} so we can confirm.",
    ),
    "push_back": (
        "I'm not sure now is the right time: {concern}. Can we revisit on {day}?",
        "I see the point, but {concern}. Let's talk it through first.",
    ),
    "ask": (
        "Before I say yes, how much of this is driven by the {c}?",
        "What would we drop to make room for it?",
    ),
}


@dataclass(kw_only=True)
class Plan:
    """A thread before it is written: who takes part, its subject, when it starts, and each message."""

    parts: list[int]
    subject: str
    start: datetime
    turns: list[tuple[int, str]]


class MailWriter:
    """Plans and writes the mail threads of one world."""

    def __init__(self, g: Gen, rng: Dice, customer_boxes: list[int], vendor_boxes: list[int]) -> None:
        self.g = g
        self.rng = rng
        self.emps = g.rows["employees"]
        self.boxes = g.rows["mailboxes"]
        self.tickets = g.rows.get("tickets", [])
        self.customer_boxes = customer_boxes
        self.vendor_boxes = vendor_boxes
        by_customer: dict[str, list[dict[str, Any]]] = {}
        for t in self.tickets:
            ev = g.stories[t["id"]]
            if ev.kind in ("bug", "incident"):  # customers write about what breaks, not about planned work
                by_customer.setdefault(ev.customer, []).append(t)
        self.by_customer = by_customer
        finance = {d["id"] for d in g.rows["departments"] if d["name"] == "Finance"}
        self.finance = [e["id"] for e in self.emps if e["department_id"] in finance] or [1]
        self.managers = [e for e in self.emps if e["manager_id"] is not None]
        self.cities = [loc["name"] for loc in g.rows["locations"] if loc["name"] != "Remote"]

    def style(self, box: int) -> Style:
        """How the owner of mailbox ``box`` writes (external senders write formally)."""
        owner = self.boxes[box - 1]["employee_id"]
        if owner is None:
            return Style(register="formal", greets=True, signs=True, emoji=False, lowercase=False)
        return self.g.styles[owner - 1]  # type: ignore[no-any-return]

    def name(self, box: int) -> str:
        """The display name of a mailbox's owner (a person's full name)."""
        return str(self.boxes[box - 1]["display_name"]).split(" (")[0]

    def first(self, box: int) -> str:
        """How a mailbox's owner is greeted."""
        return self.name(box).split()[0]

    def write(self, parts: list[int], paragraphs: list[str], frm: int) -> str:
        """A body from ``frm`` to the first other participant."""
        to = next(p for p in parts if p != frm)
        return letter(self.rng, self.style(frm), self.first(to), self.name(frm), paragraphs)

    def plan(self, at: datetime) -> Plan:
        """One thread, its kind drawn by weight (a one-person company only gets its suppliers' invoices)."""
        r = self.rng.random()
        if len(self.emps) < 2 and self.vendor_boxes:
            return self._invoice(at)
        if self.tickets and r < 0.45:
            return self._ticket(at)
        if self.tickets and self.customer_boxes and r < 0.62:
            return self._customer(at)
        if self.vendor_boxes and r < 0.72:
            return self._invoice(at)
        return self._team(at)

    def _ticket(self, at: datetime) -> Plan:
        rng = self.rng
        t = self.tickets[rng.integers(len(self.tickets))]
        ev: TicketEvent = self.g.stories[t["id"]]
        key, s = t["key"], ev.slots
        project = self.g.rows["projects"][t["project_id"] - 1]
        sender = t["reporter_id"]
        to = t["assignee_id"] or project["lead_id"]
        if to == sender:
            to = project["lead_id"] if project["lead_id"] != sender else (sender % len(self.emps)) + 1
        start = max(at, t["created_at"] + timedelta(hours=rng.integers(1, 72)))
        subject = one_of(
            rng,
            f"{key}: {t['title']}",
            f"Question about {key}",
            f"Status of {key} ({ev.summary})",
            f"{key} and {s['cust']}",
            f"Can we prioritise {key}?",
        )
        parts = [sender, to]
        context = one_of(
            rng,
            f"I filed {key} ({ev.summary}) a while ago and wanted to check where it stands.",
            f"{s['cust']} asked me again about {key} this morning.",
            f"Following up on {key}, the one about the {ev.component}.",
            f"I'm preparing the {project['name']} update and {key} is still open on my list.",
        )
        ask = one_of(
            rng,
            f"Do you have an estimate for {key}? It matters for {s['seg']}.",
            f"Is there anything you need from me to move {key} forward?",
            f"Could you give me two lines on {key} I can pass on to {s['cust']}?",
            f"Should we raise the priority of {key} given the impact on {s['seg']}?",
        )
        turns = [(sender, self.write(parts, [context, ask], sender))]
        reply_at = start + timedelta(hours=4)
        resolved = t["resolved_at"] is not None and t["resolved_at"] <= reply_at
        if t["status"] == "wont_do" and resolved:
            answer = f"We closed {key} without a change: {rng.pick(vocab.WONT_DO)}."
        elif resolved:
            answer = one_of(
                rng,
                f"Good news: {key} is done. The fix was to {ev.fix}.",
                f"{key} shipped; the cause was that {ev.cause}.",
            )
        elif t["assignee_id"] is None:
            answer = f"Nobody has picked up {key} yet. I'll raise it at planning on Monday."
        elif ev.kind in ("bug", "incident"):
            answer = one_of(
                rng,
                f"I'm on {key}. It looks like {ev.cause}; I expect a fix this week.",
                f"Still digging into {key}. It only shows when {s['trig']}, which makes it slow to test.",
            )
        else:
            answer = one_of(
                rng,
                f"{key} is in progress; the {ev.component} part is done and {s['topic']} is next.",
                f"{key} is planned for this sprint, but {s['feat']} came first.",
            )
        turns.append((to, self.write(parts, [answer], to)))
        if rng.chance(0.5):
            turns.append(
                (
                    sender,
                    self.write(
                        parts,
                        [
                            one_of(
                                rng,
                                f"Thanks, that helps with {key}.",
                                "Perfect, thank you.",
                                f"Great, I'll let {s['cust']} know.",
                            )
                        ],
                        sender,
                    ),
                )
            )
        return Plan(parts=parts, subject=subject, start=start, turns=turns)

    def _customer(self, at: datetime) -> Plan:
        rng = self.rng
        box = rng.pick(self.customer_boxes)
        company = str(self.boxes[box - 1]["display_name"]).split(" (", 1)[1].rstrip(")")
        tickets = self.by_customer.get(company)
        if not tickets:
            return self._ticket(at)
        t = rng.pick(tickets)
        ev: TicketEvent = self.g.stories[t["id"]]
        s = ev.slots
        project = self.g.rows["projects"][t["project_id"] - 1]
        employee = t["reporter_id"]
        # The customer writes after the ticket exists (support filed it from their call), so the key in the reply
        # names a ticket that was already there.
        start = t["created_at"] + timedelta(hours=rng.integers(1, 48))
        subject = one_of(
            rng,
            f"Problem with the {ev.component}",
            f"{company}: {ev.summary}",
            f"Urgent: {ev.component}",
            f"Question about the {ev.component}",
        )
        parts = [box, employee]
        problem = one_of(
            rng,
            f"Since {s['ev']}, our team sees the following: {ev.summary}.",
            f"We noticed a problem on our account: {ev.summary}. It happened again this morning.",
            f"Our admins report that the {ev.component} misbehaves for {s['seg']}: {ev.summary}.",
        )
        timeline = one_of(rng, "What is the timeline for a fix?", "Is there a workaround we can use meanwhile?")
        turns = [(box, self.write(parts, [problem, timeline], box))]
        reply = one_of(
            rng,
            f"Thank you for the report. We track this as {t['key']} in {project['name']} and will update you.",
            f"Thanks for flagging it. This is {t['key']} on our side, with the {ev.component} owners.",
        )
        turns.append((employee, self.write(parts, [reply], employee)))
        return Plan(parts=parts, subject=subject, start=start, turns=turns)

    def _invoice(self, at: datetime) -> Plan:
        rng = self.rng
        box = rng.pick(self.vendor_boxes)
        vendor = self.name(box).removesuffix(" Billing")
        to = rng.pick(self.finance)
        number = f"INV-{at.year}-{rng.integers(100, 9999):04d}"
        amount = f"${rng.integers(4, 900) * 25:,}.00"
        service = rng.pick(SERVICES)
        month = MONTHS[(at.month - 2) % 12]
        due = (at + timedelta(days=30)).strftime("%B %d")
        subject = one_of(
            rng, f"Invoice {number} from {vendor}", f"{vendor}: {month} invoice", f"Payment reminder {number}"
        )
        parts = [box, to]
        body = [
            f"Please find attached invoice {number} for {service} in {month}, totalling {amount}.",
            f"Payment is due by {due}. Our bank details have not changed.",
        ]
        turns = [(box, self.write(parts, body, box))]
        answer = one_of(
            rng,
            f"Thanks, {number} is approved and scheduled for payment before {due}.",
            f"The amount on {number} doesn't match our purchase order for {service}. Could you send a breakdown?",
            f"Received {number}. Could you add our PO number {rng.integers(10000, 99999)} and resend?",
        )
        turns.append((to, self.write(parts, [answer], to)))
        return Plan(parts=parts, subject=subject, start=at, turns=turns)

    def _team(self, at: datetime) -> Plan:
        rng = self.rng
        report = rng.pick(self.managers) if self.managers else self.emps[0]
        boss = self.g.manager_at(report["id"], at) or (2 if len(self.emps) > 1 else 1)  # the manager of that time
        sender, to = (report["id"], boss) if rng.chance(0.5) else (boss, report["id"])
        if sender == to:
            to = (sender % len(self.emps)) + 1
        team_id = self.emps[sender - 1]["team_id"] or report["team_id"]
        team = self.g.rows["teams"][team_id - 1]["name"] if team_id else "leadership"
        family = rng.pick(("eng", "product", "gtm", "ops"))
        slots = {
            "team": team,
            "c": rng.pick(vocab.COMPONENTS[family]),
            "city": rng.pick(self.cities) if self.cities else "the main office",
            "topic": rng.pick(vocab.TOPICS),
            "money": f"${rng.integers(2, 60) * 5}k",
            "n": str(rng.integers(3, 14)),
            "who": self.emps[rng.integers(len(self.emps))]["first_name"],
            "role": self.emps[rng.integers(len(self.emps))]["title"],
            "day": rng.pick(("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")),
            "concern": rng.pick(("the budget is already committed", "the team is mid-release", "hiring is frozen")),
        }
        subject, context, ask = (str(x).format(**slots) for x in rng.pick(TEAM_TOPICS))
        parts = [sender, to]
        turns = [(sender, self.write(parts, [context, ask], sender))]
        intent = str(rng.pick(("agree", "agree", "push_back", "ask")))
        turns.append((to, self.write(parts, [str(rng.pick(TEAM_REPLIES[intent])).format(**slots)], to)))
        if intent != "agree" and rng.chance(0.6):
            follow = cap(
                one_of(rng, "fair point, let's pick it up on {day}.", "understood, I'll come back with numbers.")
            ).format(**slots)
            turns.append((sender, self.write(parts, [follow], sender)))
        return Plan(parts=parts, subject=subject, start=at, turns=turns)

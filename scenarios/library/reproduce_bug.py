"""``reproduce-bug-v0``: reproduce a bug a customer mailed, as a failing regression test, a ticket and a reply.

Setup: a teammate's commit adds a small rules module (and a page of docs on its rules) to one of the team's
service repositories, with a subtle bug from fix-failing-test's catalogue (an inclusive bound, a page offset,
a discount, an empty average); no test catches it yet and no ticket exists. A customer (an external sender,
as in customer-escalation) mails the agent what they did, with their input, what they expected and what they
got. The hidden params hold the buggy and the correct module; the correct one is never written anywhere the
agent can reach.

The work: (1) a regression test that calls the module with the customer's input and asserts the right
result, on a new branch, opened as a merge request (no fix: the point is a failing test that pins the bug);
(2) a bug in the team's project whose description has the reproduction (input, expected and actual) and names
the request as ``!number``; (3) a reply in the customer's thread naming the ticket's key, promising no date.

What counts (the rubric): gates: the merge request, existing tests and pytest's config untouched, the new
test failing on the buggy module. Scored: a test file added, the test passing on the correct module (an
``assert False`` does not), each of the customer's values used in the test, the ticket filed, a bug, stating
the input, the expected and the actual result, naming the request, and the reply in the thread, naming the
key, promising no date; from 1 the reply answers the mail with the details, from 2 it restates the
customer's figures, at 3 the by-design reply says so. The test is run for real in the sandbox
(``graders.checks_repro``).

Difficulty (0..3) changes the work: a vague first mail with the case in a second one (1+), figures written as
people write them (2+), a second customer reporting documented behaviour (3). In detail:

* 1: the customer's first mail is vague ("some bookings are refused"); a second mail in the thread an hour
  later gives the exact case, and the reply must answer that one;
* 2: as 1, and the numbers are written as people write them ("$1,248.20", "fifteen percent", "the 2nd page",
  "twelve seats"): they must be mapped to the module's arguments (cents, a page number, an int), and the
  reply restates them as the customer wrote them;
* 3: as 2, and a second customer reports a different symptom of the same module that is the documented
  behaviour (rounding down to whole cents, an empty page past the end...): it must be answered in its own
  thread as by design (the docs say so), and no ticket filed for it (exactly one ticket is filed).

The bug family rotates with the difficulty, as in fix-failing-test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, RepoCommit, ScenarioInstance, WorldDefaults, start_day
from scenarios.library import setup
from scenarios.library.fix_test import FAMILIES, ORDER, module_source
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
    " seventeen eighteen nineteen twenty"
).split()
ORDINALS = {1: "1st", 2: "2nd", 3: "3rd"}
NO_DATE = (
    r"\b(?:by|on|before|until|next)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|week|month)\b"
    r"|\btomorrow\b|\bwithin\s+\d+\s+(?:hours?|days?)\b|\b\d{4}-\d{2}-\d{2}\b|\bend of (?:the )?(?:day|week)\b"
)
"""What a promised date looks like in a reply (the rubric's ``absent`` pattern): a day, a week, a date."""
BY_DESIGN = r"\b(?:by design|as designed|intended|expected behaviou?r|as documented|documented|works as)\b"
VAGUE = {
    "window": "Your booking form refuses some group bookings it should accept. Can you look into it?",
    "page": "Your order history seems to skip orders: some of ours never show up. Can you look into it?",
    "discount": "Coupon prices look wrong: our customers get charged strange amounts. Can you look into it?",
    "mean": "The rating summary page crashes for some of our products. Can you look into it?",
}
DOCS = {
    "window": "A booking may have from `start` to `end` seats, both included. More seats than `end` are refused.",
    "page": "Pages are numbered from 1. A page past the last one is empty, not an error (clients show no more rows).",
    "discount": "A discounted price is rounded down to whole cents: the customer never pays a fraction more.",
    "mean": "The average is the exact arithmetic mean, not rounded (4 and 5 average 4.5); with no values it is 0.0.",
}
"""Per bug family: the docs' rule, which also says what the second customer at difficulty 3 sees is intended."""
DESIGN_WORDS = {"window": "refused", "page": "past the last", "discount": "rounded down", "mean": "not rounded"}
TOPICS = ("pricing", "limits", "paging", "stats", "rules")


def number_words(n: int, formatted: bool) -> str:
    """``n`` as the customer writes it: digits, or words when ``formatted`` and small enough."""
    return WORDS[n] if formatted and 0 <= n < len(WORDS) else str(n)


def money(cents: int) -> str:
    """Cents as people write dollars: ``$1,248.20``."""
    return f"${cents // 100:,}.{cents % 100:02d}"


def parse_number(token: str) -> int:
    """A count as a customer wrote it: ``12``, ``twelve``, ``2nd``."""
    token = token.strip().lower()
    if token in WORDS:
        return WORDS.index(token)
    return int(re.sub(r"(st|nd|rd|th)$", "", token))


def parse_money(token: str) -> int:
    """Dollars as people write them (``$1,248.20``) in cents."""
    dollars, _, cents = token.strip().lstrip("$").replace(",", "").partition(".")
    return int(dollars) * 100 + int((cents + "00")[:2])


def literal(n: int) -> str:
    """A pattern for ``n`` as a Python int literal (``120050`` or ``120_050``), not part of a longer number."""
    digits = r"_?".join(str(n))
    return rf"(?<![\w.]){digits}(?![\w.])"


@dataclass(frozen=True)
class Report:
    """One customer's report: their words, the module's arguments and the results, and what the rubric looks for.

    ``tests`` are (label, pattern) pairs the regression test must contain (the input in the module's units);
    ``said_input``, ``said_expected`` and ``said_actual`` are what the ticket must state, in the customer's
    words or the module's; ``echo`` is the customer's own wording of the input, which a reply restating the
    case quotes (at difficulty 2, where the wording is not the module's).
    """

    text: str
    args: list[Any]
    expected: Any
    tests: list[tuple[str, str]] = field(default_factory=list)
    said_input: str = ""
    said_expected: str = ""
    said_actual: str = ""
    echo: str = ""


def report(kind: str, rng: Any, formatted: bool, design: bool) -> Report:
    """The customer's report of ``kind``'s bug (or, with ``design``, of its documented behaviour)."""
    if kind == "window":
        start, end = 1 + int(rng.integers(2)), 6 + int(rng.integers(13))
        value = end + 1 if design else end
        text = (
            f"Your booking form says a booking can have {number_words(start, formatted)} to "
            f"{number_words(end, formatted)} seats. We booked {'' if design else 'exactly '}"
            f"{number_words(value, formatted)} seats and the form refused it, but it should be accepted."
        )
        said = rf"\b({value}|{WORDS[value] if value < len(WORDS) else value})\b"
        return Report(
            text, [value, start, end], True, [(f"{value} seats", literal(value)), (f"from {start}", literal(start))],
            said, r"\b(true|accept\w*|allow\w*)\b", r"\b(false|refus\w*|reject\w*|denied)\b",
            rf"\b{number_words(value, formatted)} seats\b",
        )  # fmt: skip
    if kind == "page":
        size, number = 3 + int(rng.integers(3)), 1 + int(rng.integers(2))
        total = size * (number + 1) + 1

        def opened(n: int) -> str:
            return f"the {ORDINALS.get(n, f'{n}th')} page" if formatted else f"page {n}"

        head = (
            f"Our order history shows {number_words(size, formatted)} orders per page and we have {total} orders, "
            f"numbered #1 to #{total}. We opened "
        )
        if design:
            last = -(-total // size)
            return Report(head + opened(last + 1) + ": it is simply empty, but it should show an error.", [], "error")
        items = list(range(1, total + 1))
        want = items[(number - 1) * size : number * size]
        got = items[number * size : (number + 1) * size]
        text = head + f"{opened(number)}: it should list orders #{want[0]} to #{want[-1]}, but it lists #{got[0]} to"
        text += f" #{got[-1]}."
        return Report(
            text, [items, number, size], want,
            [(f"page {number}", literal(number)), (f"{size} per page", literal(size))],
            rf"(\b(page {number}|{ORDINALS[number]} page)\b|,\s*{number}\s*,\s*{size}\s*\))",
            rf"(\[\s*{want[0]}\s*,|#{want[0]}\b)",
            rf"(\[\s*{got[0]}\s*,|#{got[0]}\b)", rf"\b{opened(number)}\b",
        )  # fmt: skip
    if kind == "discount":
        if design:
            text = (
                "We sold an order of $10.05 with coupon HALF50 (50% off). The customer should have paid $5.03, "
                "but was charged $5.02."
            )
            return Report(text, [1005, 50], 503)
        amount = int(rng.integers(100_000, 1_000_000)) if formatted else int(rng.integers(1_000, 10_000))
        percent = (10, 15, 20, 25)[int(rng.integers(4))]
        price, charged = amount * (100 - percent) // 100, amount * percent // 100
        off = f"{WORDS[percent] if percent < len(WORDS) else percent} percent" if formatted else f"{percent}%"
        text = (
            f"We sold an order of {money(amount)} with coupon SAVE{percent} ({off} off). The customer should have "
            f"paid {money(price)}, but was charged {money(charged)}."
        )
        said = rf"({literal(amount)}|{re.escape(money(amount))}|{re.escape(money(amount)[1:].replace(',', ''))})"
        return Report(
            text, [amount, percent], price, [(f"{amount} cents", literal(amount)), (f"{percent}%", literal(percent))],
            said, rf"({literal(price)}|{re.escape(money(price))})",
            rf"({literal(charged)}|{re.escape(money(charged))})",
            re.escape(money(amount)),
        )  # fmt: skip
    if design:
        text = "The rating summary of a product with two reviews, rated 4 and 5, shows 4.5 stars; it should show 5."
        return Report(text, [[4.0, 5.0]], 5.0)
    none = "zero" if formatted else "no"
    text = (
        f"The rating summary of a product with {none} reviews yet crashes with an error page saying 'division by "
        "zero'; it should show an average of 0."
    )
    return Report(
        text, [[]], 0.0, [("no values", r"\(\s*\[\s*\]\s*\)")], r"(\[\s*\]|\bno (reviews|values|ratings)\b|empty)",
        r"(\b0(\.0)?\b|\bzero\b)", r"(ZeroDivisionError|division by zero|crash)", rf"\b{none} reviews\b",
    )  # fmt: skip


def parse_report(kind: str, text: str) -> tuple[list[Any], Any, str] | None:
    """The module's arguments, the customer's expected result and their words for it (None: no case yet).

    The oracle's reading of a customer mail: the numbers as the customer wrote them, mapped to the module's
    units. It knows the bug families' stories, as a developer of the service knows its screens.
    """
    flat = " ".join(text.split())
    if kind == "window":
        m = re.search(r"can have (\w+) to (\w+) seats\. We booked (?:exactly )?(\w+) seats", flat)
        return None if m is None else ([parse_number(m[3]), parse_number(m[1]), parse_number(m[2])], True, m[0])
    if kind == "page":
        m = re.search(
            r"shows (\w+) orders per page and we have (\d+) orders.*?We opened (?:page (\d+)|the (\w+) page)", flat
        )
        if m is None:
            return None
        size, total, number = parse_number(m[1]), int(m[2]), parse_number(m[3] or m[4])
        want = re.search(r"should list orders #(\d+) to #(\d+)", flat)
        items = list(range(1, total + 1))
        return [items, number, size], (list(range(int(want[1]), int(want[2]) + 1)) if want else "error"), m[0]
    if kind == "discount":
        m = re.search(
            r"order of (\$[\d,]+\.\d\d) with coupon \w+ \((\w+)(?:%| percent) off\).*?paid (\$[\d,.]+\d)", flat
        )
        return None if m is None else ([parse_money(m[1]), parse_number(m[2])], parse_money(m[3]), m[0])
    m = re.search(r"rated (\d) and (\d), shows [\d.]+ stars; it should show (\d)", flat)
    if m is not None:
        return [[float(m[1]), float(m[2])]], float(m[3]), m[0]
    m = re.search(r"product with (?:no|zero) reviews", flat)
    return None if m is None else ([[]], 0.0, m[0])


def correct(kind: str, args: list[Any]) -> Any:
    """What the module should return, by the rule its docs state."""
    if kind == "window":
        value, start, end = args
        return start <= value <= end
    if kind == "page":
        items, number, size = args
        return items[(number - 1) * size : number * size]
    if kind == "discount":
        amount, percent = args
        return amount * (100 - percent) // 100
    return sum(args[0]) / len(args[0]) if args[0] else 0.0


class ReproduceBug:
    """The ``reproduce-bug-v0`` family."""

    id = "reproduce-bug-v0"
    description = "Reproduce a bug a customer mailed: failing regression test in a merge request, ticket, reply."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Plant the module and its docs, deliver the customer's mail(s), return the instance."""
        difficulty = max(0, min(3, difficulty))
        sql = Sql.of(session)
        rng = seeds.rng("scenario/reproduce-bug")
        repo, _team_id, project, people = setup.service_repo(sql, rng)
        agent, author = people[0], people[1 + int(rng.integers(len(people) - 1))]
        kind = ORDER[(int(rng.integers(len(ORDER))) + difficulty) % len(ORDER)]
        family = FAMILIES[kind]
        package, topic = repo.replace("-", "_"), TOPICS[int(rng.integers(len(TOPICS)))]
        module_path, fn = f"{package}/{topic}_rules.py", str(family["function"])
        now = start_day(session, clock, agent)
        doc = f"# {topic.capitalize()} rules\n\n`{fn}`: {family['doc']}\n\n{DOCS[kind]}\n"
        commit = RepoCommit(
            repo=repo,
            files={module_path: module_source(family, fixed=False), f"docs/{topic}_rules.md": doc},
            message=f"Add {topic} rules ({fn})",
            author=author,
            at=now - self._bug_age(),
        )
        customers = sql.all(
            "SELECT b.id, b.address, b.display_name FROM mailboxes b WHERE b.employee_id IS NULL"
            " AND b.address LIKE '%@customer-%' ORDER BY b.id"
        )
        box = setup.inbox(sql, int(sql.scalar("SELECT id FROM employees WHERE username = ?", (agent,))))
        if box is None or len(customers) < 2:
            raise ValueError("the agent has no mailbox or the world has too few customers: world too small")
        picked = rng.choice(len(customers), size=2, replace=False)
        real = report(kind, rng, formatted=difficulty >= 2, design=False)
        threads = [self._deliver(sql, customers[int(picked[0])], box, real, kind, now, vague=difficulty >= 1)]
        design: dict[str, Any] | None = None
        if difficulty >= 3:
            other = report(kind, rng, formatted=True, design=True)
            design = self._deliver(sql, customers[int(picked[1])], box, other, kind, now - timedelta(minutes=25))
        session.flush()
        params: dict[str, Any] = {
            "repo": repo,
            "project": project,
            "module": f"{package}.{topic}_rules",
            "module_path": module_path,
            "function": fn,
            "family": kind,
            "args": real.args,
            "expected": real.expected,
            "customer": threads[0],
            "by_design": design,
            "buggy_source": module_source(family, fixed=False),
            "fixed_source": module_source(family, fixed=True),
        }
        prompt = self._prompt(agent, repo, project, difficulty)
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=agent,
            rubric=self._rubric(params, real, difficulty),
            params=params,
            limits=Limits(max_turns=50, time_budget_s=4 * 3600),
            apps=("mail", "git", "shell", "tickets"),
            difficulty=difficulty,
            repo_commits=(commit,),
        )

    @staticmethod
    def _bug_age() -> timedelta:
        """How long before the task the bug was committed (the impossible variant makes it older)."""
        return timedelta(days=2)

    @staticmethod
    def _prompt(agent: str, repo: str, project: str, difficulty: int) -> str:
        who = "Customers have" if difficulty >= 3 else "A customer has"
        extra = (
            " A report of behaviour the repository's docs describe as intended needs no test and no ticket: answer"
            " it in its thread and say so."
            if difficulty >= 3
            else ""
        )
        return (
            f"You are @{agent}, a developer on the team that owns the {repo} repository. {who} mailed you about a "
            f"problem with it (see your inbox). Reproduce the bug: add a regression test that calls the code with "
            f"the customer's input and asserts the right result, on a new branch, and open a merge request into "
            f"the default branch with it (do not fix the bug: the test should fail until it is fixed). Then file a "
            f"bug in {project} whose description gives the reproduction (the input, the expected and the actual "
            f"result) and names the merge request as !number, and reply to the customer in their thread with the "
            f"ticket's key, without promising a date.{extra} Submit when done."
        )

    @staticmethod
    def _deliver(
        sql: Sql, customer: Any, box: tuple[int, int], said: Report, kind: str, now: datetime, *, vague: bool = False
    ) -> dict[str, Any]:
        """The customer's thread in the agent's Inbox: one mail, or a vague one and the details an hour later."""
        sender, address, name = int(customer[0]), str(customer[1]), str(customer[2])
        folder, mailbox = box
        first_name = name.split()[0]
        subject = {"window": "Booking refused", "page": "Missing orders", "discount": "Wrong coupon price"}.get(
            kind, "Rating page crash"
        )
        opening = VAGUE[kind] if vague else said.text
        at = now - timedelta(hours=3)
        first = setup.mail(sql, sender, mailbox, folder, subject, f"Hello,\n\n{opening}\n\nThanks,\n{first_name}", at)
        header = str(sql.scalar("SELECT message_id FROM mail_messages WHERE id = ?", (first,)))
        thread: dict[str, Any] = {"address": address, "message": header, "details": header}
        if vague:
            body = f"Hello again,\n\nSorry, here are the details you will need:\n{said.text}\n\nThanks,\n{first_name}"
            later = ReproduceBug._follow_up(sql, first, sender, mailbox, folder, f"Re: {subject}", body, at)
            thread["details"] = later
        return thread

    @staticmethod
    def _follow_up(
        sql: Sql, first: int, sender: int, mailbox: int, folder: int, subject: str, body: str, at: datetime
    ) -> str:
        """A second message from the customer in the first one's thread, an hour later; its Message-ID."""
        thread = int(sql.scalar("SELECT thread_id FROM mail_messages WHERE id = ?", (first,)))
        header = f"<setup-{thread}-{sender}-2@mail.example>"
        message = sql.insert(
            "mail_messages",
            {
                "thread_id": thread,
                "message_id": header,
                "in_reply_to_id": first,
                "sender_mailbox_id": sender,
                "subject": subject,
                "body": body,
                "sent_at": at + timedelta(hours=1),
                "attachment_document_ids": [],
            },
        )
        sql.insert("mail_recipients", {"message_id": message, "mailbox_id": mailbox, "kind": "to"})
        sql.insert(
            "mail_deliveries",
            {
                "message_id": message,
                "mailbox_id": mailbox,
                "folder_id": folder,
                "is_read": False,
                "is_flagged": False,
                "read_at": None,
            },
        )
        return header

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(params: dict[str, Any], said: Report, difficulty: int) -> Rubric:
        """Gates (request, tests and config untouched, the test fails on the bug); one check per item of the work."""
        repo, project = str(params["repo"]), str(params["project"])
        thread = params["customer"]
        checks: list[dict[str, Any]] = [
            {
                "id": "merge-request",
                "description": f"A merge request by the agent from a new branch into {repo}'s default branch.",
                "must": True,
                "fn": "merge_request_opened",
                "params": {"repo": repo},
            },
            {
                "id": "tests-untouched",
                "description": "The request only adds tests: no existing test, conftest.py or pytest config changed.",
                "must": True,
                "fn": "merge_request_keeps_tests",
                "params": {"repo": repo},
            },
            {
                "id": "runner-config-untouched",
                "description": "The request leaves pytest's sections of pyproject.toml, setup.cfg, tox.ini.",
                "must": True,
                "fn": "merge_request_keeps_pytest_config",
                "params": {"repo": repo},
            },
            {
                "id": "test-added",
                "description": "The request adds a test file under tests/.",
                "fn": "merge_request_adds_test",
                "params": {"repo": repo},
            },
            {
                "id": "test-fails-on-bug",
                "description": f"The new test fails on the buggy {params['function']} (it reproduces the report).",
                "must": True,
                "weight": 2,
                "fn": "merge_request_test_outcome",
                "params": {"repo": repo, "code": "buggy", "expect": "failed"},
            },
            {
                "id": "test-passes-on-fix",
                "description": f"The new test passes once {params['function']} is right (it pins the behaviour).",
                "weight": 2,
                "fn": "merge_request_test_outcome",
                "params": {"repo": repo, "code": "fixed", "expect": "passed"},
            },
            *(
                {
                    "id": f"test-input-{i + 1}",
                    "description": f"The new test uses the customer's input in the module's units: {label}.",
                    "fn": "merge_request_test_matches",
                    "params": {"repo": repo, "patterns": [pattern], "label": label},
                }
                for i, (label, pattern) in enumerate(said.tests)
            ),
            {
                "id": "ticket-filed",
                "description": f"Exactly one ticket filed in {project} (a by-design report needs none).",
                "fn": "new_ticket_matches",
                "params": {"project": project, "exactly_one": True},
            },
            {
                "id": "ticket-bug",
                "description": "The ticket is filed as a bug.",
                "fn": "new_ticket_matches",
                "params": {"project": project, "type": "bug"},
            },
            {
                "id": "ticket-names-module",
                "description": f"The ticket names {params['function']}.",
                "fn": "new_ticket_matches",
                "params": {"project": project, "pattern": re.escape(str(params["function"]))},
            },
            *(
                {
                    "id": f"ticket-{part}",
                    "description": f"The ticket states the {part} result."
                    if part != "input"
                    else "The ticket states the customer's input.",
                    "fn": "new_ticket_matches",
                    "params": {"project": project, "pattern": pattern},
                }
                for part, pattern in (
                    ("input", said.said_input),
                    ("expected", said.said_expected),
                    ("actual", said.said_actual),
                )
            ),  # fmt: skip
            {
                "id": "ticket-names-request",
                "description": "The ticket names the merge request as !number.",
                "fn": "new_ticket_matches",
                "params": {"project": project, "request_repo": repo},
            },
            {
                "id": "reply-in-thread",
                "description": f"A reply to {thread['address']} in their thread.",
                "fn": "reply_in_thread",
                "params": {"message": thread["message"]},
            },
            {
                "id": "reply-names-key",
                "description": f"The reply names the key of the ticket filed in {project}.",
                "fn": "reply_in_thread",
                "params": {"message": thread["message"], "key_in": project},
            },
            {
                "id": "reply-no-date",
                "description": "The reply promises no date.",
                "fn": "reply_in_thread",
                "params": {"message": thread["message"], "absent": NO_DATE},
            },
        ]
        if difficulty >= 1:
            checks.append(
                {
                    "id": "reply-answers-details",
                    "description": "The reply with the key answers the customer's second mail (the one with the case).",
                    "fn": "reply_in_thread",
                    "params": {"message": thread["message"], "answers": thread["details"], "key_in": project},
                }
            )
        if difficulty >= 2:
            checks.append(
                {
                    "id": "reply-restates-input",
                    "description": "The reply restates the case in the customer's own words (their figures), so they "
                    "can tell it is their case.",
                    "fn": "reply_in_thread",
                    "params": {"message": thread["message"], "pattern": said.echo, "key_in": project},
                }
            )
        design = params.get("by_design")
        if design is not None:
            checks += [
                {
                    "id": "by-design-reply",
                    "description": f"A reply to {design['address']} in their thread.",
                    "fn": "reply_in_thread",
                    "params": {"message": design["message"]},
                },
                {
                    "id": "by-design-explained",
                    "description": "That reply says the behaviour is intended, as documented.",
                    "fn": "reply_in_thread",
                    "params": {"message": design["message"], "pattern": BY_DESIGN},
                },
            ]
        return load_rubric(
            {
                "id": "reproduce-bug",
                "version": 1,
                "description": "Reproduce a customer's bug: failing test in a merge request, a ticket, a reply.",
                "checks": checks,
            }
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the customers' threads and the module through the tools; test, request, ticket, replies.

        A report whose expected result the documented rule also gives is the bug; one the rule contradicts is
        the documented behaviour and is answered as such, after the real one is handled.
        """
        repo, project = read_prompt(env.prompt)
        path, kind, source = find_module(env, repo)
        docs = env.call("git_read_file", repo=repo, path=docs_path(path))["content"]
        bugs: list[tuple[list[dict[str, Any]], list[Any], str]] = []
        designed: list[tuple[list[dict[str, Any]], list[Any], str]] = []
        for thread in customer_threads(env):
            found = parse_report(kind, "\n".join(m["body"] for m in thread))
            if found is None:
                continue
            args, wanted, words = found
            (bugs if correct(kind, args) == wanted else designed).append((thread, args, words))
        for thread, args, words in bugs[:1]:
            self._reproduce(env, repo, project, path, kind, source, thread, args, words)
        for thread, _, _ in designed:
            rule = next((line for line in docs.splitlines() if DESIGN_WORDS[kind] in line), "")
            env.call(
                "mail_reply",
                message_id=thread[-1]["id"],
                body=f"Hello,\n\nThank you for the report. This one is intended: it works as documented in "
                f'{docs_path(path)}: "{rule}"\n\nBest regards',
            )
        env.call("submit", summary="Reproduced the customer's bug with a failing test; filed and answered.")

    @staticmethod
    def _reproduce(
        env: AgentEnv,
        repo: str,
        project: str,
        path: str,
        kind: str,
        source: str,
        thread: list[dict[str, Any]],
        args: list[Any],
        words: str,
    ) -> None:
        """The failing test on a branch, its request, the ticket naming it, the reply naming the ticket."""
        fn = re.search(r"^def (\w+)\(", source, re.M)
        assert fn is not None
        module = path.removesuffix(".py").replace("/", ".")
        call = f"{fn[1]}({', '.join(repr(a) for a in args)})"
        want = correct(kind, args)
        test_path = f"tests/test_{path.rsplit('/', 1)[1].removesuffix('.py')}_customer_report.py"
        test = (
            f'"""Regression test for a customer\'s report: {call} must return {want!r}."""\n\nfrom {module} import '
            f"{fn[1]}\n\n\ndef test_{fn[1]}_customer_report():\n    assert {call} == {want!r}\n"
        )
        branch = f"repro/{fn[1].replace('_', '-')}-customer-report"
        env.call("git_create_branch", repo=repo, name=branch)
        env.call("git_write_file", repo=repo, path=test_path, content=test)
        env.call("shell_run", repo=repo, command=f"python3 -m pytest -q -p no:cacheprovider {test_path}")
        env.call("git_commit", repo=repo, message=f"Add a failing regression test for {fn[1]} (customer report)")
        opened = env.call(
            "git_mr_open",
            repo=repo,
            source_branch=branch,
            title=f"Regression test: {call} should return {want!r}",
            description=f"Reproduces a customer's report with a test that fails on the current {fn[1]}. No fix yet.",
        )
        got = env.call("shell_run", repo=repo, command=f"python3 -c 'from {module} import {fn[1]}; print({call})'")
        lines = (str(got.get("stdout", "")).strip() or str(got.get("stderr", "")).strip()).splitlines()
        actual = lines[-1] if lines else "no output"
        made = env.call(
            "tickets_create",
            project=project,
            title=f"{fn[1]} gives the wrong result for a customer's input",
            description=f"Reported by {thread[0]['from']} by mail.\n\nReproduction: {call}\nExpected: {want!r}\n"
            f"Actual: {actual}\n\nThe failing regression test is in !{opened['number']}.",
            type="bug",
            priority="medium",
        )
        env.call(
            "mail_reply",
            message_id=thread[-1]["id"],
            body=f'Hello,\n\nThank you for the details: we reproduced the problem you describe ("{words}") and '
            f"track it as {made['key']}. We will let you know once the fix is released.\n\nBest regards",
        )


# -- shared oracle steps (the impossible variant reads the task the same way) --------------------------------


def read_prompt(prompt: str) -> tuple[str, str]:
    """The repository and the project a reproduce-the-bug prompt names."""
    repo = re.search(r"owns the ([a-z0-9-]+) repository", prompt)
    project = re.search(r"file a bug in ([A-Z][A-Z0-9]*)", prompt)
    assert repo is not None and project is not None
    return repo[1], project[1]


def find_module(env: AgentEnv, repo: str) -> tuple[str, str, str]:
    """The rules module (path, bug family, source), found through the tools."""
    found = env.call("git_grep", repo=repo, pattern="def ", path_glob="*_rules.py")
    path = next(m["path"] for m in found["matches"] if not m["path"].startswith("tests/"))
    source = str(env.call("git_read_file", repo=repo, path=path)["content"])
    kind = next(k for k, f in FAMILIES.items() if f"def {f['function']}(" in source)
    return path, kind, source


def docs_path(module_path: str) -> str:
    """Where the docs of a rules module are (``docs/<module>.md``)."""
    return f"docs/{module_path.rsplit('/', 1)[1].removesuffix('.py')}.md"


def customer_threads(env: AgentEnv) -> list[list[dict[str, Any]]]:
    """The unread customer threads of the Inbox, each as its messages oldest first (external senders only)."""
    inbox = env.call("mail_list_messages", folder="Inbox", unread_only=True, limit=100)
    seen: list[int] = []
    for m in sorted(inbox["messages"], key=lambda m: m["id"]):
        if "@customer-" in str(m["from"]) and m["thread_id"] not in seen:
            seen.append(int(m["thread_id"]))
    return [list(env.call("mail_read_thread", thread_id=t)["messages"]) for t in seen]

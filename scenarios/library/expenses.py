"""``expense-reconciliation-v0``: record mailed receipts in the month's expense sheet by policy, flag the bad ones.

Setup (through the document store and raw statements, as the apps write): the finance lead's expense policy
(vendors per category, a limit per receipt and category, duplicates), this month's expense sheet with an
``Approved total`` formula (``SUMIF`` over the Status column), and receipts mailed by coworkers to the finance
lead's Inbox, one per mail. Each receipt becomes one row (date, receipt number, submitter, vendor, category by
the policy, amount, approved or rejected); a receipt over its category's limit is recorded as rejected and the
sender is told why by a reply; a receipt mailed again is not recorded twice, and its sender is told it is a
duplicate.

Difficulty adds receipts (5, 8, 11, 14), a duplicate (1+), last week's rows already in the sheet with one receipt
mailed again (2+), a superseded 2025 policy with other limits and a vendor newsletter (2+), a second receipt
over its limit and one exactly at its limit, which is allowed (3).

The rubric (version 2) is four checks per receipt row (the mail's date, submitter and vendor; the category; the
amount; the decision), one per flag reply, the recalculated approved total, and a gate allowing only the sheet and
mail. The oracle reads the policy, the sheet and the mail through the tools; it never reads the hidden params.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
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

FOLDER = "Shared/Finance"
POLICY = "Expense policy.odt"
VENDORS: dict[str, tuple[str, ...]] = {
    "Travel": ("Northline Air", "Metro Rail", "CityCab", "Harbor Hotel"),
    "Meals": ("Blue Fig Bistro", "Corner Deli", "Noodle House"),
    "Software": ("CloudCorp", "DataDash", "Figment Studio"),
    "Office supplies": ("OfficeWorks", "PaperTrail"),
}
LIMITS = {"Travel": 1200.0, "Meals": 80.0, "Software": 500.0, "Office supplies": 300.0}
OLD_LIMITS = {"Travel": 900.0, "Meals": 60.0, "Software": 750.0, "Office supplies": 250.0}
PURPOSE = {
    "Travel": "for the customer workshop trip",
    "Meals": "team lunch with the new joiners",
    "Software": "monthly seat for the analytics pilot",
    "Office supplies": "whiteboard markers and notebooks for the planning room",
}
COUNT = (5, 8, 11, 14)
HEADER = ["Date", "Receipt", "Submitted by", "Vendor", "Category", "Amount", "Status", None, "Approved total"]
TOTAL_CELL = "Expenses!I2"
RECEIPT = re.compile(r"\bRC-\d{5}\b")


def category_of(vendor: str, vendors: dict[str, list[str]]) -> str | None:
    """The policy's category of ``vendor`` (exact name, any case), or None if the policy does not list it."""
    return next((c for c, vs in vendors.items() if vendor.casefold() in (v.casefold() for v in vs)), None)


class ExpenseReconciliation:
    """The ``expense-reconciliation-v0`` family."""

    id = "expense-reconciliation-v0"
    description = "Finance lead records mailed receipts in the expense sheet by policy and flags the bad ones."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Write the policy, the sheet and the receipt mails; return the instance with the expected rows."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/expenses")
        sql = Sql.of(session)
        lead, lead_user, lead_name = self._lead(sql)
        now = start_day(session, clock, lead)
        folder, lead_box = setup.inbox(sql, lead) or (0, 0)
        if not lead_box:
            raise ValueError("the head of Finance has no mailbox: world too small")
        senders = sql.all(
            "SELECT e.id, e.username, e.first_name, b.id FROM employees e JOIN mailboxes b ON b.employee_id = e.id"
            " WHERE e.active = ? AND e.id <> ? ORDER BY e.id",
            (True, lead),
        )
        numbers = [f"RC-{n}" for n in rng.choice(np.arange(10_000, 100_000), size=COUNT[difficulty] + 3, replace=False)]
        receipts = [
            self._receipt(rng, numbers[i], now, over=i == 0 or (difficulty >= 3 and i == 3))
            for i in range(COUNT[difficulty])
        ]
        if difficulty >= 3:
            receipts[2] = {**receipts[2], "amount": LIMITS[receipts[2]["category"]]}  # at the limit: allowed
        month = now.strftime("%B %Y")
        rows: list[setup.Row] = [list(HEADER)]
        prior: list[dict[str, Any]] = []
        if difficulty >= 2:
            for k in range(2):
                p = self._receipt(rng, numbers[-1 - k], now - timedelta(days=7), over=False)
                who = senders[int(rng.integers(len(senders)))]
                prior.append({**p, "username": who[1], "sender": who})
                rows.append([p["date"], p["number"], who[1], p["vendor"], p["category"], p["amount"], "approved"])
        total_formula = '=SUMIF(G2:G60,"approved",F2:F60)'
        if len(rows) == 1:
            blank: setup.Row = [None] * 8
            rows.append([*blank, total_formula])
        else:
            rows[1] = rows[1] + [None, total_formula]
        sheet = setup.create_document(
            session,
            clock,
            lead,
            FOLDER,
            f"Expenses {month}.xlsx",
            setup.workbook("Expenses", rows),
            now - timedelta(days=20),
        )
        setup.create_document(session, clock, lead, FOLDER, POLICY, self._policy(LIMITS), now - timedelta(days=40))
        if difficulty >= 2:
            setup.create_document(
                session,
                clock,
                lead,
                FOLDER,
                "Expense policy 2025.odt",
                self._policy(OLD_LIMITS, old=True),
                now - timedelta(days=400),
            )
        mails: list[tuple[datetime, int, str, str]] = []
        expected: list[dict[str, Any]] = []
        flags: list[dict[str, Any]] = []
        for i, r in enumerate(receipts):
            who = senders[int(rng.integers(len(senders)))]
            at = now - timedelta(hours=6) + timedelta(minutes=20 * i + int(rng.integers(0, 15)))
            mails.append((at, int(who[3]), *self._mail_text(r, str(who[2]))))
            status = "rejected" if r["amount"] > LIMITS[r["category"]] else "approved"
            expected.append(
                {
                    **{k: r[k] for k in ("number", "date", "vendor", "category", "amount")},
                    "username": who[1],
                    "status": status,
                }
            )
            if status == "rejected":
                flags.append({"number": r["number"], "to": who[1], "reason": "limit"})
        if difficulty >= 1:
            again = receipts[1] if difficulty < 2 else prior[0]
            who = next(s for s in senders if s[1] == expected[1]["username"]) if difficulty < 2 else prior[0]["sender"]
            subject, body = self._mail_text(again, str(who[2]), resend=True)
            mails.append((now - timedelta(minutes=35), int(who[3]), subject, body))
            flags.append({"number": again["number"], "to": who[1], "reason": "duplicate"})
        if difficulty >= 2:
            vendor = sql.scalar("SELECT id FROM mailboxes WHERE address LIKE 'billing@vendor%' ORDER BY id LIMIT 1")
            if vendor is not None:
                body = "Your CloudCorp invoice for February is available in the billing portal. No action needed."
                mails.append((now - timedelta(hours=2), int(vendor), "CloudCorp billing update", body))
        for at, sender, subject, body in sorted(mails):
            setup.mail(sql, sender, lead_box, folder, subject, body, at)
        approved = round(
            sum(e["amount"] for e in expected if e["status"] == "approved") + sum(p["amount"] for p in prior), 2
        )
        prompt = (
            f"You are {lead_name} (@{lead_user}), head of Finance. Coworkers have mailed you expense receipts. "
            f"Record each one in {sheet['path']} and handle the ones that break the rules, as "
            f"{FOLDER}/{POLICY} says. Do not change anything else. Call the submit tool when you are done."
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=lead_user,
            rubric=self._rubric(sheet["path"], expected, flags, approved),
            params={"document": sheet["path"], "receipts": expected, "flags": flags, "approved_total": approved},
            limits=Limits(max_turns=30 + 5 * len(mails), time_budget_s=8 * 3600),
            apps=("docs", "mail", "sheets"),
            difficulty=difficulty,
        )

    # -- setup helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _lead(sql: Sql) -> tuple[int, str, str]:
        row = sql.one(
            "SELECT e.id, e.username, e.first_name || ' ' || e.last_name FROM departments d"
            " JOIN employees e ON e.id = d.head_id WHERE d.name = 'Finance' AND e.active = ?",
            (True,),
        )
        if row is None:
            raise ValueError("no active head of Finance: world too small")
        return int(row[0]), str(row[1]), str(row[2])

    @staticmethod
    def _receipt(rng: np.random.Generator, number: str, now: datetime, *, over: bool) -> dict[str, Any]:
        category = sorted(VENDORS)[int(rng.integers(len(VENDORS)))]
        vendor = VENDORS[category][int(rng.integers(len(VENDORS[category])))]
        limit = LIMITS[category]
        cents = int(rng.integers(0, 100)) / 100
        amount = (
            limit + int(rng.integers(15, 400)) + cents
            if over
            else int(rng.integers(int(limit * 0.2), int(limit * 0.9))) + cents
        )
        day = (now - timedelta(days=int(rng.integers(1, 9)))).date().isoformat()
        return {"number": number, "vendor": vendor, "category": category, "amount": round(amount, 2), "date": day}

    @staticmethod
    def _mail_text(r: dict[str, Any], first_name: str, *, resend: bool = False) -> tuple[str, str]:
        head = "Sending this again in case it got lost:" if resend else "Please find my receipt below"
        body = (
            f"Hi,\n\n{head} ({PURPOSE[r['category']]}).\n\nReceipt: {r['number']}\nVendor: {r['vendor']}\n"
            f"Date: {r['date']}\nAmount: {r['amount']:.2f} USD\n\nThanks,\n{first_name}"
        )
        return f"Expense receipt {r['number']}", body

    @staticmethod
    def _policy(limits: dict[str, float], *, old: bool = False) -> str:
        vendors = "\n".join(f"- {c}: {', '.join(vs)}" for c, vs in VENDORS.items())
        caps = "\n".join(f"- {c}: {v:,.2f} USD per receipt" for c, v in limits.items())
        head = "# Expense policy 2025 (superseded by Expense policy)" if old else "# Expense policy"
        return (
            f"{head}\n\n## Categories\n\nEvery receipt takes the category of its vendor:\n\n{vendors}\n\n"
            f"## Limits\n\nA receipt above its category's limit is rejected; one exactly at the limit is fine.\n\n"
            f"{caps}\n\n## Duplicates\n\nA receipt number is recorded once. When a receipt arrives again (or is "
            "already in the sheet), do not add a row; reply to the sender that it is a duplicate.\n\n"
            "## Recording\n\nOne row per receipt in the month's expense sheet: Date (YYYY-MM-DD), Receipt, Submitted "
            "by (username), Vendor, Category, Amount (a number), Status (approved or rejected). Reply to the sender "
            "of every rejected receipt, naming the receipt number and saying it is over the limit."
        )

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(document: str, receipts: list[dict[str, Any]], flags: list[dict[str, Any]], approved: float) -> Rubric:
        """Version 1 with each receipt's row split into what a reviewer checks of it, one check each (version 2).

        Per receipt: the facts copied from its mail (date, submitter, vendor), the category the policy gives its
        vendor, the amount, and the decision by the category's limit (approved or rejected). Each needs the
        receipt on exactly one row, as before; each weighs a quarter, so a receipt still weighs 1 against a flag
        reply and the total, and the evidence says which of the four a wrong row got wrong.
        """
        old = ExpenseReconciliation._rubric_v1(document, receipts, flags, approved)
        parts = (
            ("recorded", "is recorded once with the mail's date, submitter and vendor", ("A", "C", "D")),
            ("category", "has the category the policy gives its vendor", ("E",)),
            ("amount", "has the mailed amount", ("F",)),
            ("decision", "is approved or rejected by its category's limit", ("G",)),
        )
        checks: list[dict[str, Any]] = []
        for check in old.checks:
            data = check.model_dump(mode="json")
            if check.fn != "sheet_row_matches":
                checks.append(data)
                continue
            number, expected = data["params"]["key"], data["params"]["expected"]
            checks += [
                {**data, "id": f"{check.id}-{part}", "weight": 0.25,
                 "description": f"{number} {what}" + (f" ({expected['G']})." if part == "decision" else "."),
                 "params": {**data["params"], "expected": {c: expected[c] for c in columns}}}
                for part, what, columns in parts
            ]  # fmt: skip
        return load_rubric(
            {
                "id": old.id,
                "version": 2,
                "description": old.description,
                "checks": checks,
                "provenance": "v2: each receipt's row as four checks (mail facts, category, amount, decision)",
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Version 1 (one check per receipt row, partial credit per column), rebuilt for rescoring old traces."""
        if version != 1 or instance.rubric.id != "expense-reconciliation":  # a variant's rubric has its own
            return None
        p = instance.params
        return ExpenseReconciliation._rubric_v1(p["document"], p["receipts"], p["flags"], p["approved_total"])

    @staticmethod
    def _rubric_v1(
        document: str, receipts: list[dict[str, Any]], flags: list[dict[str, Any]], approved: float
    ) -> Rubric:
        """One check per receipt row, one per flag reply, the recalculated approved total, and a gate."""
        checks: list[dict[str, Any]] = [
            {
                "id": f"receipt-{r['number']}",
                "description": f"{r['number']} is recorded once, every column by the policy ({r['status']}).",
                "fn": "sheet_row_matches",
                "params": {
                    "document": document,
                    "sheet": "Expenses",
                    "key_column": "B",
                    "key": r["number"],
                    "expected": {
                        "A": r["date"],
                        "C": r["username"],
                        "D": r["vendor"],
                        "E": r["category"],
                        "F": r["amount"],
                        "G": r["status"],
                    },
                },
            }
            for r in receipts
        ]
        words = {"limit": r"limit", "duplicate": r"duplicate|already"}
        checks += [
            {
                "id": f"flag-{f['reason']}-{f['number']}",
                "description": f"{f['to']} is told why {f['number']} is flagged ({f['reason']}).",
                "fn": "mail_sent",
                "params": {
                    "to": f["to"],
                    "body_pattern": rf"(?=[\s\S]*{re.escape(f['number'])})(?=[\s\S]*(?:{words[f['reason']]}))",
                },
            }
            for f in flags
        ]
        mail_tables = ("mail_threads", "mail_messages", "mail_recipients", "mail_deliveries", "mailboxes")
        checks += [
            {
                "id": "approved-total",
                "description": "The Approved total formula recalculates to the approved receipts' sum.",
                "fn": "sheet_cell_equals",
                "params": {
                    "document": document,
                    "cell": TOTAL_CELL,
                    "value": approved,
                    "formula": True,
                    "label": "approved total",
                },
            },
            {
                "id": "no-collateral",
                "description": "Only the expense sheet, sent mail and read marks on the agent's own mail changed.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        {"table": "documents", "fields": ["content", "blob_sha256", "version", "updated_at"]},
                        {"table": "document_versions", "ops": ["insert"]},
                        {"table": "blobs", "ops": ["insert"]},
                        *({"table": t, "ops": ["insert"]} for t in mail_tables),
                        {"table": "mail_deliveries", "fields": ["is_read", "read_at", "is_flagged", "folder_id"]},
                        {"table": "mail_folders", "ops": ["insert"]},
                    ]
                },
            },
        ]
        return load_rubric(
            {
                "id": "expense-reconciliation",
                "version": 1,
                "description": "Record mailed receipts by the expense policy and flag the ones that break it.",
                "checks": checks,
            }
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the policy and the sheet, then each unread mail: record the receipt or flag it."""
        self._unrecorded: list[tuple[str, str]] = []
        paths = re.findall(rf"({re.escape(FOLDER)}/[^,;]+?\.(?:xlsx|odt))", env.prompt)
        sheet = next(p for p in paths if p.endswith(".xlsx"))
        policy = {
            s["heading"]: "\n".join(s["paragraphs"])
            for s in env.call("docs_read", document=f"{FOLDER}/{POLICY}")["sections"]
        }
        vendors = {
            c: [v.strip() for v in vs.split(",")]
            for c, vs in re.findall(r"^- ([^:]+): (.+)$", policy["Categories"], re.M)
        }
        limits = {
            c: float(v.replace(",", "")) for c, v in re.findall(r"^- ([^:]+): ([\d,.]+) USD", policy["Limits"], re.M)
        }
        grid = env.call("sheets_read_range", document=sheet, range="Expenses!A1:G60")["values"]
        seen = {row[1] for row in grid[1:] if len(row) > 1 and row[1]}
        next_row = 1 + len([row for row in grid if row and row[0] is not None])
        inbox = env.call("mail_list_messages", folder="Inbox", unread_only=True, limit=100)
        for summary in sorted(inbox["messages"], key=lambda m: m["id"]):
            mail = env.call("mail_read_message", message_id=summary["id"])
            env.call("mail_mark_read", message_id=mail["id"], read=True)
            number = RECEIPT.search(mail["body"])
            if number is None:
                continue
            if number.group(0) in seen:
                env.call(
                    "mail_reply",
                    message_id=mail["id"],
                    body=f"{number.group(0)} is a duplicate: it is already recorded.",
                )
                continue
            fields = dict(re.findall(r"^(Vendor|Date|Amount): (.+)$", mail["body"], re.M))
            amount = self._amount(fields["Amount"], policy)
            if amount is None:
                self._unrecorded.append((number.group(0), fields["Amount"].strip()))
                continue
            category = category_of(fields["Vendor"].strip(), vendors) or "Uncategorised"
            status = "rejected" if amount > limits.get(category, 0.0) else "approved"
            sender = str(mail["from"]).partition("@")[0]  # addresses are username@company domain
            row = [fields["Date"].strip(), number.group(0), sender, fields["Vendor"].strip(), category, amount, status]
            env.call("sheets_write_range", document=sheet, range=f"Expenses!A{next_row}", values=json.dumps([row]))
            next_row += 1
            seen.add(number.group(0))
            if status == "rejected":
                env.call(
                    "mail_reply",
                    message_id=mail["id"],
                    body=f"{number.group(0)} is over the {category} limit, so I rejected it.",
                )
        env.call("submit", summary=self._summary())

    def _amount(self, text: str, policy: dict[str, str]) -> float | None:
        """A mailed amount in USD (every receipt here is in USD); None would leave the receipt unrecorded."""
        return float(text.split()[0])

    def _summary(self) -> str:
        return "receipts recorded"

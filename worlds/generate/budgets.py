"""Budget cycles and actuals: a budget per quarter of the history, and the receipts finance booked against it.

Why (issue 12 items 1 and 4): a budget is written at the start of its quarter from the people on the payroll that
day, so last quarter's and this quarter's differ by the hires (and any leavers) in between; the actuals are not
invented numbers but the expense receipts people mailed to finance, one sheet line per mail. ``worlds.coherence``
checks both: each quarter's headcount and payroll against the directory as of the sheet's date, and the actuals
lines against the receipt mails (number, date, amount, sender).

Receipts go to one person in Finance (a team member rather than the head when there is one; the CEO in a company
too small for a Finance department), who keeps the actuals; every receipt mail is read, since it was booked.
Receipt numbers look like ``R2026-0042``: never a ticket key (project keys are letters only), never the
``RC-12345`` receipts of the expense-reconciliation family, whose oracle records unread ``RC-`` mails.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from worlds.generate.common import Gen
from worlds.generate.documents import add_document
from worlds.generate.language import Dice, letter, one_of
from worlds.generate.reorg import mail_folders, send_mail

RECEIPT_RATE = 0.003
"""Receipts per employee per day of history (a 100-person company mails about two a week)."""
VENDORS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "Travel": (("Northline Air", 180, 900), ("Metro Rail", 20, 140), ("CityCab", 15, 90), ("Harbor Hotel", 150, 700)),
    "Meals": (("Blue Fig Bistro", 25, 75), ("Corner Deli", 8, 30), ("Noodle House", 12, 60)),
    "Software": (("CloudCorp", 20, 300), ("DataDash", 30, 450)),
    "Office supplies": (("OfficeWorks", 10, 250), ("PaperTrail", 5, 80)),
}
PURPOSES: dict[str, tuple[str, ...]] = {
    "Travel": ("for the customer visit", "for the offsite", "getting to the partner workshop"),
    "Meals": ("team lunch with the new joiners", "dinner with the customer after the demo", "the sprint retro lunch"),
    "Software": ("a month of the tool we are piloting", "the extra seat we agreed on", "the plugin for the build"),
    "Office supplies": ("notebooks and markers for the planning room", "a spare keyboard and cables"),
}
ACTUALS_HEADER = ["Date", "Receipt", "Submitted by", "Vendor", "Category", "Amount"]
BUDGET_HEADER = ["Department", "Head", "Headcount", "Payroll", "Other costs", "Quarter total"]


def quarter_of(day: date) -> tuple[int, int]:
    """(year, quarter) of a day."""
    return day.year, (day.month - 1) // 3 + 1


def _bookkeeper(g: Gen) -> int:
    emps = g.rows["employees"]
    finance = next((d for d in g.rows["departments"] if d["name"] == "Finance"), None)
    if finance is None:
        return 1
    staff = [e["id"] for e in emps if e["department_id"] == finance["id"] and e["id"] != finance["head_id"]]
    return min(staff) if staff else int(finance["head_id"])


def build_receipts(g: Gen) -> None:
    """Expense receipts mailed by employees to finance, each in its sender's working hours, all booked (read)."""
    emps = g.rows["employees"]
    keeper = _bookkeeper(g)
    senders = [e["id"] for e in emps if e["id"] != keeper]
    if not senders:
        return
    rng = g.seeds.rng("history/receipts")
    dice = Dice(g.seeds.rng("history/receipts-text"))
    wanted = max(3, round(g.spec.employees * g.spec.history_days * RECEIPT_RATE))
    drafts: list[tuple[datetime, int, date, str, str, float]] = []
    categories = sorted(VENDORS)
    for _ in range(wanted):
        who = senders[int(rng.integers(len(senders)))]
        spent = g.at(rng)
        category = categories[int(rng.integers(len(categories)))]
        vendor, lo, hi = VENDORS[category][int(rng.integers(len(VENDORS[category])))]
        amount = int(rng.integers(lo * 100, hi * 100)) / 100
        sent = g.when(who, spent + timedelta(hours=int(rng.integers(2, 72))))
        if sent is None or sent >= g.start_at - timedelta(hours=1):
            continue  # not mailed yet when the history ends
        drafts.append((sent, who, spent.date(), category, vendor, amount))
    folders = mail_folders(g)
    for k, (sent, who, spent_on, category, vendor, amount) in enumerate(sorted(drafts), start=1):
        number = f"R{spent_on.year}-{k:04d}"
        e = emps[who - 1]
        subject = one_of(dice, f"Expense receipt {number}", f"Receipt {number} ({vendor})", f"Expenses: {vendor}")
        fields = (
            f"Receipt: {number}\nVendor: {vendor}\nCategory: {category}\nDate: {spent_on.isoformat()}\n"
            f"Amount: {amount:.2f} USD"
        )
        why = dice.pick(PURPOSES[category])
        intro = one_of(dice, f"Receipt below, {why}.", f"Here is my receipt ({why}).", f"Expense for {why}:")
        body = letter(dice, g.styles[who - 1], emps[keeper - 1]["first_name"], f"{e['first_name']} {e['last_name']}",
                      [intro, fields], closing=False)  # fmt: skip
        send_mail(g, folders, who, [keeper], subject, body, sent, read=True)
        g.receipts.append(
            {
                "number": number,
                "date": spent_on,
                "user": e["username"],
                "vendor": vendor,
                "category": category,
                "amount": amount,
                "sent_at": sent,
            }
        )


def _quarters(g: Gen) -> list[tuple[int, int, datetime]]:
    """Each quarter the history touches, with the moment its budget was written (its first day, or the window's)."""
    out: list[tuple[int, int, datetime]] = []
    day = g.history_start.date()
    while True:
        year, q = quarter_of(day)
        first = date(year, 3 * q - 2, 1)
        written = max(g.history_start, datetime.combine(first, time(9, 0), tzinfo=UTC))
        if written > g.start_at:
            break
        out.append((year, q, written))
        day = date(year + (q == 4), 1 if q == 4 else 3 * q + 1, 1)
    return out


def build_budget_cycles(g: Gen) -> None:
    """A budget per quarter from that day's headcount and payroll, and an actuals sheet per quarter of receipts."""
    emps = g.rows["employees"]
    depts = g.rows["departments"]
    folders: dict[str, int] = {f["name"]: f["id"] for f in g.rows["doc_folders"] if f["parent_id"] is not None}
    finance = next((d for d in depts if d["name"] == "Finance"), depts[0])
    folder = folders.get(finance["name"], int(g.rows["doc_folders"][0]["id"]))
    rng = g.seeds.rng("documents/budget-cycles")
    salary = {p["employee_id"]: p["salary_cents"] for p in g.rows["employee_private"]}
    n = len(depts)
    for year, q, written in _quarters(g):
        rows: list[list[Any]] = [list(BUDGET_HEADER)]
        for i, d in enumerate(depts, start=2):
            # On the payroll that day: hired by then and not yet gone (a leaver counts up to their last day).
            people = [
                e["id"]
                for e in emps
                if e["department_id"] == d["id"]
                and e["hire_date"] <= written.date()
                and (e["leave_date"] is None or e["leave_date"] >= written.date())
            ]
            payroll = round(sum(salary[p] for p in people) / 400)
            other = int(round(payroll * (0.1 + float(rng.uniform(0, 0.4))), -3))
            head = f"@{emps[d['head_id'] - 1]['username']}" if d["head_id"] else ""
            rows.append([d["name"], head, len(people), payroll, other, f"=D{i}+E{i}"])
        rows.append(["Total", "", *[f"=SUM({c}2:{c}{n + 1})" for c in "CDEF"]])
        content = {"sheets": [{"name": "Budget", "cells": rows}], "names": {"Quarter": f"Budget!$F$2:$F${n + 1}"}}
        add_document(g, folder, f"Budget Q{q} {year}", "xlsx", finance["head_id"], content, written)
    by_quarter: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for r in g.receipts:
        by_quarter.setdefault(quarter_of(r["date"]), []).append(r)
    keeper = _bookkeeper(g)
    for (year, q), receipts in sorted(by_quarter.items()):
        lines = sorted(receipts, key=lambda r: (r["date"], r["number"]))
        cells: list[list[Any]] = [list(ACTUALS_HEADER)]
        cells += [
            [r["date"].isoformat(), r["number"], r["user"], r["vendor"], r["category"], r["amount"]] for r in lines
        ]
        cells.append(["Total", "", "", "", "", f"=SUM(F2:F{len(lines) + 1})"])
        booked = max(r["sent_at"] for r in lines)  # the sheet as it stood after the quarter's last receipt
        add_document(
            g, folder, f"Actuals Q{q} {year}", "xlsx", keeper, {"sheets": [{"name": "Actuals", "cells": cells}]}, booked
        )

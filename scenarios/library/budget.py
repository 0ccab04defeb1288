"""``quarterly-budget-v0``: the head of Finance fills next quarter's budget sheet from the directory and a rates memo.

Setup (through the document store and raw statements, as the apps write): a budget spreadsheet for the next
quarter in ``Shared/Finance`` with one line per department (headcount and cost per head empty; the line cost
``=B*C`` and the totals ``=SUM(...)`` already there), a planning-rates document stating the quarterly cost per
head of each department, and a note from the CEO in ~leadership saying how to fill the sheet. The headcount
is what the directory says today; the January headcount plan next to it is stale once new hires joined.

Difficulty adds work and traps: more department lines (4, 6, 8, all), new hires this month that the
January plan does not count (1+), a superseded draft of the rates memo (2+), and an amendment section after
the rate table that replaces some departments' rates (none, 1, 3, 5 of them): a reader who stops at the table
gets more lines wrong the harder the quarter.

The rubric is one check per cell the task is about: each line's headcount, rate and recalculated line cost
(the formula must survive), and both totals; a gate allows only edits to the budget sheet. The oracle finds the
note, the memo and the headcounts through the tools; it never reads the hidden params.
"""

from __future__ import annotations

import json
import re
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

FOLDER = "Shared/Finance"
NOTE_MARKER = "Budget planning note"
LINES = (4, 6, 8, 11)
AMENDED = (0, 1, 3, 5)
"""How many departments' rates the memo's amendment section replaces, by difficulty."""
RATE_BASE = {
    "Engineering": 46_500,
    "Sales": 39_000,
    "Product": 43_500,
    "Customer Success": 31_500,
    "Marketing": 36_000,
    "Design": 38_500,
    "Operations": 29_000,
    "Finance": 37_500,
    "People": 33_000,
    "IT": 35_500,
    "Legal": 48_000,
}
NEW_HIRES = (
    ("Priya", "Raman"),
    ("Tomas", "Okafor"),
    ("Elena", "Vasquez"),
    ("Jonah", "Whitfield"),
    ("Mei", "Tanaka"),
    ("Samir", "Haddad"),
)


def quarter_after(day: date) -> tuple[int, int]:
    """The (year, quarter) after the one ``day`` falls in: the quarter a budget is planned for."""
    q = (day.month - 1) // 3 + 1
    return (day.year + 1, 1) if q == 4 else (day.year, q + 1)


def parse_rates(sections: list[dict[str, Any]]) -> dict[str, int]:
    """Rates from a rates memo's sections, amendments applied in order (later lines win)."""
    rates: dict[str, int] = {}
    for section in sections:
        heading = (section.get("heading") or "").lower()
        if "per head" not in heading and "amendment" not in heading:
            continue
        for paragraph in section["paragraphs"]:
            for dept, amount in re.findall(r"^- ([A-Za-z ]+?): ([\d,]+) per head", paragraph, re.MULTILINE):
                rates[dept.strip()] = int(amount.replace(",", ""))
    return rates


class QuarterlyBudget:
    """The ``quarterly-budget-v0`` family."""

    id = "quarterly-budget-v0"
    description = "Head of Finance fills next quarter's budget sheet from directory headcount and the rates memo."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Write the sheet, the memo(s), the note and any new hires; return the instance with the expected cells."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/budget")
        sql = Sql.of(session)
        cfo, cfo_user, cfo_name, ceo = self._people(sql)
        now = start_day(session, clock, cfo)
        year, quarter = quarter_after(now.date())
        label = f"Q{quarter} {year}"
        departments = [str(r[0]) for r in sql.all("SELECT name FROM departments ORDER BY id")]
        chosen_idx = sorted(rng.choice(len(departments), size=min(LINES[difficulty], len(departments)), replace=False))
        chosen = [departments[int(i)] for i in chosen_idx]
        if difficulty >= 1:
            self._hire(sql, rng, chosen, now, 1 + difficulty)
        rates = {d: RATE_BASE.get(d, 34_000) + 500 * int(rng.integers(-4, 5)) for d in departments}
        draft = {d: r - 1_500 for d, r in rates.items()}
        amended: dict[str, int] = {}
        if AMENDED[difficulty]:
            for i in sorted(rng.choice(len(chosen), size=min(AMENDED[difficulty], len(chosen)), replace=False)):
                amended[chosen[int(i)]] = rates[chosen[int(i)]] + 2_000
        sheet_name = f"Budget {label}.xlsx"
        memo_name = f"Planning rates {label}.odt"
        n = len(chosen)
        rows: list[setup.Row] = [["Department", "Headcount", "Cost per head", "Quarter cost"]]
        rows += [[d, None, None, f"=B{i + 2}*C{i + 2}"] for i, d in enumerate(chosen)]
        rows.append(["Total", f"=SUM(B2:B{n + 1})", None, f"=SUM(D2:D{n + 1})"])
        made = setup.create_document(
            session, clock, cfo, FOLDER, sheet_name, setup.workbook("Budget", rows), now - timedelta(days=3)
        )
        if difficulty >= 2:
            old = setup.create_document(
                session,
                clock,
                ceo,
                FOLDER,
                f"Planning rates {label} (draft).odt",
                self._memo(label, draft, {}, draft=True),
                now - timedelta(days=12),
            )
            setup.share(sql, old["id"], cfo, "comment")
        memo = setup.create_document(
            session, clock, ceo, FOLDER, memo_name, self._memo(label, rates, amended), now - timedelta(days=2)
        )
        setup.share(sql, memo["id"], cfo, "comment")
        channel = int(sql.scalar("SELECT id FROM channels WHERE name = 'leadership' ORDER BY id LIMIT 1"))
        setup.ensure_member(sql, channel, cfo, now)
        setup.ensure_member(sql, channel, ceo, now)
        note = (
            f"{NOTE_MARKER} for {label} (current): @{cfo_user}, please fill {FOLDER}/{sheet_name} before Friday's "
            f"review. Headcount per department is the number of active people the directory lists today, new "
            f"joiners included; the January headcount plan is out of date. Cost per head comes from "
            f"{FOLDER}/{memo_name}, amendments included"
            + (", not from the draft, which we did not adopt" if difficulty >= 2 else "")
            + ". Leave the Quarter cost and Total formulas as they are so the sheet recalculates."
        )
        setup.post(sql, channel, ceo, note, now - timedelta(hours=20), pinned=True)
        final = {**rates, **amended}
        lines = []
        for i, dept in enumerate(chosen):
            headcount = int(
                sql.scalar(
                    "SELECT count(*) FROM employees e JOIN departments d ON d.id = e.department_id"
                    " WHERE d.name = ? AND e.active = ?",
                    (dept, True),
                )
            )
            lines.append({"department": dept, "row": i + 2, "headcount": headcount, "rate": final[dept]})
        prompt = (
            f"You are {cfo_name} (@{cfo_user}), head of Finance. Fill the {label} budget sheet as the "
            f"{NOTE_MARKER.lower()} in ~leadership asks. Do not change anything else. Call the submit tool when "
            "you are done."
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=cfo_user,
            rubric=self._rubric(made["path"], lines),
            params={"document": made["path"], "lines": lines, "draft_rates": [draft[d] for d in chosen]},
            limits=Limits(max_turns=30 + 3 * n, time_budget_s=8 * 3600),
            apps=("chat", "directory", "docs", "sheets"),
            difficulty=difficulty,
        )

    # -- setup helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _people(sql: Sql) -> tuple[int, str, str, int]:
        """The head of Finance (id, username, name) and the CEO (the one employee without a manager)."""
        row = sql.one(
            "SELECT e.id, e.username, e.first_name || ' ' || e.last_name FROM departments d"
            " JOIN employees e ON e.id = d.head_id WHERE d.name = 'Finance' AND e.active = ?",
            (True,),
        )
        ceo = sql.scalar(
            "SELECT id FROM employees WHERE manager_id IS NULL AND active = ? ORDER BY id LIMIT 1", (True,)
        )
        if row is None or ceo is None:
            raise ValueError("no active head of Finance or CEO: world too small")
        return int(row[0]), str(row[1]), str(row[2]), int(ceo)

    @staticmethod
    def _hire(sql: Sql, rng: np.random.Generator, departments: list[str], now: datetime, count: int) -> None:
        """New joiners this month in some of the budgeted departments, modelled on a peer in the same department."""
        for k in range(count):
            dept = departments[int(rng.integers(len(departments)))]
            peer = sql.one(
                "SELECT e.title, e.level, e.manager_id, e.department_id, e.team_id, e.location_id, e.timezone,"
                " e.work_start_minute, e.work_end_minute, e.workdays, e.skills, c.domain FROM employees e"
                " JOIN departments d ON d.id = e.department_id CROSS JOIN companies c"
                " WHERE d.name = ? AND e.active = ? ORDER BY e.manager_id IS NULL, e.id LIMIT 1",
                (dept, True),
            )
            assert peer is not None, "a chosen department has an active member"
            first, last = NEW_HIRES[k % len(NEW_HIRES)]
            username = f"{first}.{last}".lower()
            if sql.one("SELECT 1 FROM employees WHERE username = ?", (username,)):
                continue
            values = dict(
                zip(
                    ("title", "level", "manager_id", "department_id", "team_id", "location_id", "timezone"),
                    peer[:7],
                    strict=True,
                )
            )
            employee = sql.insert(
                "employees",
                {
                    "first_name": first,
                    "last_name": last,
                    "username": username,
                    "email": f"{username}@{peer[11]}",
                    **values,
                    "work_start_minute": peer[7],
                    "work_end_minute": peer[8],
                    "workdays": peer[9],
                    "skills": peer[10],
                    "hire_date": (now - timedelta(days=2 + 3 * k)).date(),
                    "active": True,
                },
            )
            sql.insert("employee_roles", {"employee_id": employee, "role": "employee"})

    @staticmethod
    def _memo(label: str, rates: dict[str, int], amended: dict[str, int], *, draft: bool = False) -> str:
        lines = "\n".join(f"- {d}: {r:,} per head" for d, r in rates.items())
        head = f"# Planning rates {label}" + (" (draft, not adopted)" if draft else "")
        purpose = (
            "First proposal for discussion; the leadership team asked for changes before adoption."
            if draft
            else "Adopted by the leadership team. Use these figures for every department line of the budget."
        )
        text = (
            f"{head}\n\n## Purpose\n\n{purpose}\n\n## Quarterly cost per head\n\nFully loaded cost per person for "
            f"the quarter: salary, benefits, equipment and software seats.\n\n{lines}\n"
        )
        if amended:
            changed = "\n".join(f"- {d}: {r:,} per head" for d, r in amended.items())
            text += (
                "\n## Amendment after the vendor renewals\n\nSoftware renewals came in above plan for "
                f"{'this department' if len(amended) == 1 else 'these departments'}; "
                f"{'this rate replaces the one' if len(amended) == 1 else 'these rates replace the ones'} above."
                f"\n\n{changed}\n"
            )
        return text

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(document: str, lines: list[dict[str, Any]]) -> Rubric:
        """Per department line: headcount, rate and the recalculated line cost; the two totals; a gate."""
        checks: list[dict[str, Any]] = []
        for line in lines:
            dept, row, hc, rate = line["department"], line["row"], line["headcount"], line["rate"]
            cell = {"document": document}
            checks += [
                {
                    "id": f"headcount-{dept}",
                    "description": f"{dept}: headcount B{row} is the directory's {hc}.",
                    "fn": "sheet_cell_equals",
                    "params": {**cell, "cell": f"Budget!B{row}", "value": hc, "label": f"{dept} headcount"},
                },
                {
                    "id": f"rate-{dept}",
                    "description": f"{dept}: cost per head C{row} is the adopted rate.",
                    "fn": "sheet_cell_equals",
                    "params": {**cell, "cell": f"Budget!C{row}", "value": rate, "label": f"{dept} cost per head"},
                },
                {
                    "id": f"cost-{dept}",
                    "description": f"{dept}: the line cost D{row} recalculates to headcount x rate.",
                    "fn": "sheet_cell_equals",
                    "params": {
                        **cell,
                        "cell": f"Budget!D{row}",
                        "value": hc * rate,
                        "formula": True,
                        "label": f"{dept} quarter cost",
                    },
                },
            ]
        total = len(lines) + 2
        checks += [
            {
                "id": "total-headcount",
                "description": f"The headcount total B{total} recalculates to the company's budgeted people.",
                "fn": "sheet_cell_equals",
                "params": {
                    "document": document,
                    "cell": f"Budget!B{total}",
                    "value": sum(x["headcount"] for x in lines),
                    "formula": True,
                    "label": "total headcount",
                },
            },
            {
                "id": "total-cost",
                "description": f"The cost total D{total} recalculates to the sum of the lines.",
                "fn": "sheet_cell_equals",
                "params": {
                    "document": document,
                    "cell": f"Budget!D{total}",
                    "value": sum(x["headcount"] * x["rate"] for x in lines),
                    "formula": True,
                    "label": "total cost",
                },
            },
            {
                "id": "no-collateral",
                "description": "Only the budget sheet changed (reads and chat read marks aside).",
                "weight": 1,
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        {"table": "documents", "fields": ["content", "blob_sha256", "version", "updated_at"]},
                        {"table": "document_versions", "ops": ["insert"]},
                        {"table": "blobs", "ops": ["insert"]},
                        {"table": "channel_members", "fields": ["last_viewed_at"]},
                    ]
                },
            },
        ]
        return load_rubric(
            {
                "id": "quarterly-budget",
                "version": 1,
                "description": "Fill next quarter's budget lines from directory headcount and the adopted rates.",
                "checks": checks,
            }
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the note, the adopted memo and the sheet; count each department in the directory; fill B and C."""
        self._fill(env)
        env.call("submit", summary="budget lines filled")

    @staticmethod
    def _fill(env: AgentEnv) -> tuple[str, str, int]:
        """Fill the sheet as the note says; return (the note, the sheet's path, its number of lines)."""
        found = env.call("chat_search_posts", text=NOTE_MARKER, channel="leadership", limit=20)
        note = next(p["message"] for p in found["posts"] if "(current)" in p["message"])
        paths = re.findall(rf"({re.escape(FOLDER)}/[^,;]+?\.(?:xlsx|odt))", note)
        sheet = next(p for p in paths if p.endswith(".xlsx"))
        memo = next(p for p in paths if p.endswith(".odt"))
        rates = parse_rates(env.call("docs_read", document=memo)["sections"])
        grid = env.call("sheets_read_range", document=sheet, range="Budget!A1:D40")["values"]
        block: list[list[Any]] = []
        for row in grid[1:]:
            dept = row[0]
            if not dept or dept == "Total":
                break
            people = env.call("directory_search_people", department=dept, limit=100)
            block.append([people["total"], rates[dept]])
        env.call("sheets_write_range", document=sheet, range=f"Budget!B2:C{len(block) + 1}", values=json.dumps(block))
        return note, sheet, len(block)

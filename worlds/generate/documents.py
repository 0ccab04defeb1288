"""Folders and documents: project specs, meeting notes, a budget, a headcount plan and a project roadmap.

Everything written here refers to the company's own people, projects and tickets (specs list their project's
tickets with assignees; meeting notes name the team and give ticket action items to their assignees; the
budget names each department's head; the roadmap counts each project's tickets), so a task can follow a fact
from a document to the tracker and back. Content is structured (sections, rows of cells); the
``office_files`` stage turns it into real DOCX/ODT/XLSX/ODS bytes, picking the format by MIME type: specs
are DOCX, meeting notes ODT, the budget and roadmap XLSX, the headcount plan ODS, so every format is present
in every company.
"""

from __future__ import annotations

from typing import Any

from worlds.generate.common import Gen, pick
from worlds.generate.language import Dice
from worlds.generate.meetings import new_actions, weeklies
from worlds.office import files


def add_document(g: Gen, folder: int, name: str, fmt: str, owner: int, content: dict[str, Any], at: Any) -> int:
    """One generated document at version 1, owned and written by ``owner`` at ``at`` (later stages add theirs)."""
    did = g.add(
        "documents",
        {
            "folder_id": folder,
            "name": f"{name}.{fmt}",
            "kind": files.kind_of(fmt),
            "mime_type": files.MIME[fmt],
            "owner_id": owner,
            "content": content,
            "blob_sha256": None,
            "version": 1,
            "created_at": at,
            "updated_at": at,
        },
    )
    g.add(
        "document_versions",
        {
            "document_id": did,
            "version": 1,
            "author_id": owner,
            "content": {"format": fmt, "change": "generated"},
            "blob_sha256": None,
            "created_at": at,
        },
    )
    return did


def _user(g: Gen, employee_id: int | None) -> str:
    return f"@{g.rows['employees'][employee_id - 1]['username']}" if employee_id else "unassigned"


def build_documents(g: Gen) -> None:
    """Shared and department folders, project specs, meeting notes, budget, headcount and roadmap sheets."""
    rng = g.seeds.rng("documents")
    words = Dice(g.seeds.rng("documents/actions"))
    team_of = g.index("employees", "team_id", "id")
    at = g.history_start
    root = g.add("doc_folders", {"parent_id": None, "name": "Shared", "owner_id": 1, "created_at": at})
    dept_folder: dict[int, int] = {}
    for dept in g.rows["departments"]:
        dept_folder[dept["id"]] = g.add(
            "doc_folders",
            {"parent_id": root, "name": dept["name"], "owner_id": dept["head_id"], "created_at": at},
        )
    tickets_of: dict[int, list[dict[str, Any]]] = {}
    for t in g.rows.get("tickets", []):
        tickets_of.setdefault(t["project_id"], []).append(t)
    for project in g.rows.get("projects", []):
        filed = [t["created_at"] for t in tickets_of.get(project["id"], [])]
        # A spec is written once work on the project has started, so its scope can name the first tickets.
        written = g.at(rng, lo=max(g.history_start, min(filed))) if filed else g.at(rng)
        tickets = [t for t in tickets_of.get(project["id"], []) if t["created_at"] <= written]  # filed by then
        team = g.rows["teams"][project["team_id"] - 1]
        scope = [f"{t['key']}: {t['title']} ({_user(g, t['assignee_id'])}, {t['status']})" for t in tickets[:6]]
        members = g.index("project_members", "project_id", "employee_id").get(project["id"], [])
        content = {
            "sections": [
                {"heading": f"{project['name']} ({project['key']})", "body": project["description"]},
                {"heading": "Goal", "body": project["description"]},
                {"heading": "Scope", "body": "\n\n".join(scope) if scope else "Tracked on the project board."},
                {"heading": "Owner", "body": f"{_user(g, project['lead_id'])} leads; team {team['name']}."},
                {"heading": "People", "body": ", ".join(_user(g, m) for m in sorted(set(members))) or "TBD"},
            ],
        }
        did = add_document(
            g, dept_folder[team["department_id"]], f"{project['name']} spec", "docx", project["lead_id"], content,
            written,
        )  # fmt: skip
        for m in sorted(set(members) - {project["lead_id"]})[:5]:
            g.add("document_shares", {"document_id": did, "employee_id": m, "permission": "edit"})
    for team in g.rows.get("teams", []):
        project_ids = set(g.index("projects", "team_id", "id").get(team["id"], []))
        open_tickets = [
            t for pid in sorted(project_ids) for t in tickets_of.get(pid, []) if t["status"] not in ("done", "closed")
        ]
        members = team_of.get(team["id"], [])
        owned: dict[str, Any] | None = next((p for p in g.rows.get("projects", []) if p["team_id"] == team["id"]), None)
        for meeting in weeklies(g, team, min(3, max(1, g.spec.history_days // 7))):
            members = [m for m in team_of.get(team["id"], []) if g.active_at(m, meeting.start)]  # leavers are gone
            known = [t for t in open_tickets if t["created_at"] <= meeting.start]
            actions = [f"{_user(g, t['assignee_id'])} to update {t['key']} ({t['title']})." for t in known[:3]]
            if owned is not None and members and g.has("tickets"):
                actions += new_actions(g, words, meeting, owned, members)
            content = {
                "sections": [
                    {"heading": f"{team['name']} weekly {meeting.start.date().isoformat()}", "body": ""},
                    {"heading": "Attendees", "body": ", ".join(_user(g, i) for i in members)},
                    {
                        "heading": "Notes",
                        "body": pick(
                            rng,
                            (
                                "Sprint review went well.",
                                "Discussed on-call load.",
                                "Agreed to cut scope for the release.",
                            ),
                        ),
                    },
                    {"heading": "Action items", "body": "\n\n".join(actions) or "Follow up in the team channel."},
                ],
            }
            add_document(
                g,
                dept_folder[team["department_id"]],
                meeting.title,
                "odt",
                g.lead_at(team, meeting.start),
                content,
                meeting.end,
            )
    tickets_of = {}  # again: the weeklies filed action-item tickets the roadmap counts
    for t in g.rows.get("tickets", []):
        tickets_of.setdefault(t["project_id"], []).append(t)
    _sheets(g, rng, dept_folder, tickets_of)


def _sheets(g: Gen, rng: Any, dept_folder: dict[int, int], tickets_of: dict[int, list[dict[str, Any]]]) -> None:
    emps = g.rows["employees"]
    depts = g.rows["departments"]
    finance = next((d for d in depts if d["name"] == "Finance"), depts[0])
    head = finance["head_id"]
    year = g.spec.start_date.year
    n = len(depts)
    salary = {p["employee_id"]: p["salary_cents"] // 100 for p in g.rows["employee_private"]}
    payroll: dict[int, int] = {}
    for e in emps:
        payroll[e["department_id"]] = payroll.get(e["department_id"], 0) + salary[e["id"]]
    budget: list[list[Any]] = [["Department", "Head", "Q1", "Q2", "Q3", "Q4", "Total"]]
    for i, d in enumerate(depts, start=2):
        # A department costs its payroll plus 10-50% overhead (tools, travel, vendors), spread over the quarters,
        # so the budget follows headcount and salaries (worlds.coherence checks it stays within 1-2x payroll).
        base = payroll.get(d["id"], 0) * (1.1 + float(rng.uniform(0, 0.4))) / 4
        quarters = [int(round(base * (1 + float(rng.uniform(-0.03, 0.03))), -3)) for _ in range(4)]
        budget.append([d["name"], _user(g, d["head_id"]), *quarters, f"=SUM(C{i}:F{i})"])
    budget.append(["Total", "", *[f"=SUM({c}2:{c}{n + 1})" for c in "CDEFG"]])
    add_document(
        g,
        dept_folder[finance["id"]],
        f"Budget {year}",
        "xlsx",
        head,
        {"sheets": [{"name": "Budget", "cells": budget}], "names": {"Totals": f"Budget!$G$2:$G${n + 1}"}},
        g.history_start,
    )
    heads: list[list[Any]] = [["Department", "Current", "Planned hires", "End of year", "Share of hires"]]
    for i, d in enumerate(depts, start=2):
        current = sum(1 for e in emps if e["department_id"] == d["id"])
        hires = int(rng.integers(0, 1 + current // 4 + 1))
        heads.append([d["name"], current, hires, f"=B{i}+C{i}", f"=IF($C${n + 2}=0,0,ROUND(C{i}/$C${n + 2},3))"])
    heads.append(["Total", f"=SUM(B2:B{n + 1})", f"=SUM(C2:C{n + 1})", f"=SUM(D2:D{n + 1})", ""])
    add_document(
        g,
        dept_folder[finance["id"]],
        f"Headcount plan {year}",
        "ods",
        head,
        {"sheets": [{"name": "Headcount", "cells": heads}], "names": {"Hires": f"Headcount!$C$2:$C${n + 1}"}},
        g.history_start,
    )
    projects = g.rows.get("projects", [])
    if not projects:
        return
    roadmap: list[list[Any]] = [["Key", "Project", "Lead", "Open tickets", "Done tickets", "Done %"]]
    for i, p in enumerate(projects, start=2):
        tickets = tickets_of.get(p["id"], [])
        done = sum(1 for t in tickets if t["status"] in ("done", "closed"))
        roadmap.append(
            [p["key"], p["name"], _user(g, p["lead_id"]), len(tickets) - done, done, f"=IFERROR(E{i}/(D{i}+E{i}),0)"]
        )
    last = len(projects) + 1
    roadmap.append(
        [
            "Total",
            "",
            "",
            f"=SUM(D2:D{last})",
            f"=SUM(E2:E{last})",
            f"=IFERROR(E{last + 1}/(D{last + 1}+E{last + 1}),0)",
        ]
    )
    engineering = next((d for d in depts if d["name"] == "Engineering"), depts[0])
    add_document(
        g,
        dept_folder[engineering["id"]],
        f"Roadmap {year}",
        "xlsx",
        engineering["head_id"],
        {"sheets": [{"name": "Projects", "cells": roadmap}]},
        g.history_start,
    )

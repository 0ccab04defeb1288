"""Folders and documents: specs and meeting notes as structured text, a budget and a headcount plan as sheets."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from worlds.generate.common import Gen, pick

TEXT_MIME = "application/vnd.oasis.opendocument.text"
SHEET_MIME = "application/vnd.oasis.opendocument.spreadsheet"


def _doc(g: Gen, folder: int, name: str, kind: str, owner: int, content: dict[str, Any], at: Any) -> int:
    did = g.add(
        "documents",
        {
            "folder_id": folder,
            "name": name,
            "kind": kind,
            "mime_type": TEXT_MIME if kind == "text" else SHEET_MIME,
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
            "content": content,
            "blob_sha256": None,
            "created_at": at,
        },
    )
    return did


def build_documents(g: Gen) -> None:
    """Shared and department folders, project specs, meeting notes, budget and headcount sheets."""
    rng = g.seeds.rng("documents")
    emps = g.rows["employees"]
    at = g.history_start
    root = g.add("doc_folders", {"parent_id": None, "name": "Shared", "owner_id": 1, "created_at": at})
    dept_folder: dict[int, int] = {}
    for dept in g.rows["departments"]:
        dept_folder[dept["id"]] = g.add(
            "doc_folders",
            {"parent_id": root, "name": dept["name"], "owner_id": dept["head_id"], "created_at": at},
        )
    keys_of: dict[int, list[str]] = {}
    for t in g.rows.get("tickets", []):
        keys_of.setdefault(t["project_id"], []).append(t["key"])
    for project in g.rows.get("projects", []):
        keys = keys_of.get(project["id"], [])[:5]
        team = g.rows["teams"][project["team_id"] - 1]
        content = {
            "format": "markdown",
            "sections": [
                {"heading": "Goal", "body": project["description"]},
                {
                    "heading": "Scope",
                    "body": "Tracked in " + (", ".join(keys) if keys else "the project board") + ".",
                },
                {"heading": "Owner", "body": f"@{emps[project['lead_id'] - 1]['username']}"},
            ],
        }
        did = _doc(
            g,
            dept_folder[team["department_id"]],
            f"{project['name']} spec",
            "text",
            project["lead_id"],
            content,
            g.at(rng),
        )
        members = [m["employee_id"] for m in g.rows["project_members"] if m["project_id"] == project["id"]]
        for m in sorted(set(members) - {project["lead_id"]})[:5]:
            g.add("document_shares", {"document_id": did, "employee_id": m, "permission": "edit"})
    for team in g.rows.get("teams", []):
        for week in range(min(3, max(1, g.spec.history_days // 7))):
            when = g.start_at - timedelta(days=7 * (week + 1))
            content = {
                "format": "markdown",
                "sections": [
                    {
                        "heading": "Attendees",
                        "body": ", ".join(f"@{e['username']}" for e in emps if e["team_id"] == team["id"]),
                    },
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
                    {"heading": "Action items", "body": "Follow up in the team channel."},
                ],
            }
            _doc(
                g,
                dept_folder[team["department_id"]],
                f"{team['name']} weekly notes {when.date().isoformat()}",
                "text",
                team["lead_id"],
                content,
                max(g.history_start, when),
            )
    finance = next((d for d in g.rows["departments"] if d["name"] == "Finance"), g.rows["departments"][0])
    head = finance["head_id"]
    depts = g.rows["departments"]
    n = len(depts)
    budget: list[list[Any]] = [["Department", "Q1", "Q2", "Q3", "Q4", "Total"]]
    for i, d in enumerate(depts, start=2):
        base = int(rng.integers(50, 500)) * 1000
        budget.append([d["name"], *[base + int(rng.integers(-20, 20)) * 1000 for _ in range(4)], f"=SUM(B{i}:E{i})"])
    budget.append(["Total", *[f"=SUM({c}2:{c}{n + 1})" for c in "BCDEF"]])
    _doc(
        g,
        dept_folder[finance["id"]],
        f"Budget {g.spec.start_date.year}",
        "spreadsheet",
        head,
        {"sheets": [{"name": "Budget", "cells": budget}]},
        g.history_start,
    )
    heads: list[list[Any]] = [["Department", "Current", "Planned hires", "End of year"]]
    for i, d in enumerate(depts, start=2):
        current = sum(1 for e in emps if e["department_id"] == d["id"])
        heads.append([d["name"], current, int(rng.integers(0, 1 + current // 4 + 1)), f"=B{i}+C{i}"])
    heads.append(["Total", f"=SUM(B2:B{n + 1})", f"=SUM(C2:C{n + 1})", f"=SUM(D2:D{n + 1})"])
    _doc(
        g,
        dept_folder[finance["id"]],
        f"Headcount plan {g.spec.start_date.year}",
        "spreadsheet",
        head,
        {"sheets": [{"name": "Headcount", "cells": heads}]},
        g.history_start,
    )

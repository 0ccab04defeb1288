"""Projects, members, milestones, sprints and tickets with workflow-legal histories; repositories."""

from __future__ import annotations

import bisect
from datetime import date, timedelta
from typing import Any

from worlds.generate import vocab
from worlds.generate.common import Gen, pick, slug
from worlds.generate.language import Dice, say, styles_for
from worlds.generate.stories import comment, describe, project_components, ticket_event
from worlds.workflow import TERMINAL_STATUSES, path_to

LABELS = ("backend", "frontend", "tech-debt", "customer", "security", "performance", "ux", "regression")
OPEN_WEIGHTS = {"backlog": 0.3, "todo": 0.25, "in_progress": 0.25, "in_review": 0.12, "blocked": 0.08}
STATUS_PATHS = {s: path_to(s) for s in ("backlog", "todo", "in_progress", "in_review", "blocked", "done", "wont_do")}


def _letters(k: int) -> str:
    """Bijective base-26 letters for k >= 2: B..Z, then AA, AB, ... (keys stay uppercase letters only)."""
    if k <= 26:
        return chr(64 + k)
    out, k = "", k - 26
    while k > 0:
        k, r = divmod(k - 1, 26)
        out = chr(65 + r) + out
    return out


def _key_for(name: str, used: set[str]) -> str:
    # Keys stay uppercase letters: a key is matched as [A-Z][A-Z0-9]*-N everywhere, and its lowercase names a
    # chat channel, so two keys differing only in case (or holding punctuation) would collide there.
    words = [w for w in name.upper().split() if w.isalpha()]
    cands = [words[-1][:3], words[-1][:4], "".join(w[0] for w in words)[:5], words[-1][:2] + words[0][:2]]
    for cand in cands:
        if len(cand) >= 2 and cand not in used:
            used.add(cand)
            return cand
    k = 2
    while f"{cands[0][:3]}{_letters(k)}" in used:
        k += 1
    used.add(f"{cands[0][:3]}{_letters(k)}")
    return f"{cands[0][:3]}{_letters(k)}"


def build_work(g: Gen) -> dict[int, list[tuple[Any, str]]]:
    """Projects and tickets; returns per team the (created_at, key) of its tickets, sorted by time."""
    rng = g.seeds.rng("history/tickets")
    words = Dice(g.seeds.rng("history/ticket-text"))
    employees = g.rows["employees"]
    g.styles = styles_for(g)
    _customers_and_vendors(g)
    team_members: dict[int, list[int]] = {}
    for e in employees:
        if e["team_id"] is not None:
            team_members.setdefault(e["team_id"], []).append(e["id"])
    used: set[str] = set()
    by_team: dict[int, list[tuple[Any, str]]] = {}
    start_date: date = g.spec.start_date
    monday = (g.history_start - timedelta(days=g.history_start.weekday())).date()
    for team in g.rows.get("teams", []):
        members = team_members.get(team["id"], [])
        if not members:
            continue
        dept = g.rows["departments"][team["department_id"] - 1]["name"]
        n_projects = 2 if dept == "Engineering" and len(members) >= 6 else 1
        for p in range(n_projects):
            name = team["name"].split(" ", 1)[-1] + ("" if p == 0 else " Revamp")
            key = _key_for(name, used)
            status = "active" if p == 0 or rng.random() < 0.7 else "completed"
            pid = g.add(
                "projects",
                {
                    "key": key,
                    "name": name,
                    "description": f"{name}: owned by the {team['name']} team.",
                    "team_id": team["id"],
                    "lead_id": team["lead_id"],
                    "status": status,
                    "start_date": min(start_date, g.history_start.date()) - timedelta(days=int(rng.integers(10, 200))),
                    "target_date": start_date + timedelta(days=int(rng.integers(30, 180))),
                    "next_ticket_number": 1,
                },
            )
            project = g.rows["projects"][-1]
            for emp in members:
                g.add(
                    "project_members",
                    {
                        "project_id": pid,
                        "employee_id": emp,
                        "role": "lead" if emp == team["lead_id"] else "member",
                    },
                )
            for m in range(int(rng.integers(2, 4))):
                due = start_date + timedelta(days=int(rng.integers(-60, 120)))
                g.add(
                    "milestones",
                    {
                        "project_id": pid,
                        "name": f"{name} M{m + 1}",
                        "due_date": due,
                        "done": due < start_date,
                    },
                )
            if not g.has("tickets"):
                continue
            sprints: list[tuple[date, date, int]] = []
            day = monday
            n = 1
            while day <= start_date + timedelta(days=14):
                end = day + timedelta(days=13)
                state = "closed" if end < start_date else ("active" if day <= start_date else "future")
                sid = g.add(
                    "sprints",
                    {
                        "project_id": pid,
                        "name": f"{key} Sprint {n}",
                        "start_date": day,
                        "end_date": end,
                        "state": state,
                    },
                )
                sprints.append((day, end, sid))
                day += timedelta(days=14)
                n += 1
            count = max(4, round(len(members) * max(g.spec.history_days, 7) / 20))
            made = by_team.setdefault(team["id"], [])
            family = vocab.FAMILY.get(dept, "ops")
            components = project_components(words, family)
            g.components[pid] = (family, components)
            made.extend(_tickets(g, rng, words, project, members, sprints, count, family, components))
    for made in by_team.values():
        made.sort()
    if g.has("git"):
        for team in g.rows.get("teams", []):
            dept = g.rows["departments"][team["department_id"] - 1]["name"]
            if dept != "Engineering":
                continue
            proj = next((p["id"] for p in g.rows["projects"] if p["team_id"] == team["id"]), None)
            for suffix in ("service", "client")[: 1 + int(rng.integers(2))]:
                g.add(
                    "repositories",
                    {
                        "name": f"{team['slug'].removeprefix('engineering-')}-{suffix}",
                        "team_id": team["id"],
                        "project_id": proj,
                        "language": "python",
                        "description": f"{suffix.title()} code of the {team['name']} team.",
                        "default_branch": "main",
                        "created_at": g.history_start,
                    },
                )
    return by_team


def _customers_and_vendors(g: Gen) -> None:
    """Companies the business deals with (Faker, pinned): customers named in tickets and mail, and vendors."""
    fake = g.seeds.faker("customers", g.spec.locale)
    seen = {g.company_name}
    for target, n in ((g.customers, min(40, max(6, g.spec.employees // 25))), (g.vendors, 6)):
        while len(target) < n:
            name = fake.company()
            if name not in seen and "," not in name:  # "Cruz, Jones and Miller" reads as three people
                seen.add(name)
                target.append((name, fake.first_name(), fake.last_name()))


def _tickets(
    g: Gen,
    rng: Any,
    words: Dice,
    project: dict[str, Any],
    members: list[int],
    sprints: list[tuple[date, date, int]],
    count: int,
    family: str,
    components: list[str],
) -> list[tuple[Any, str]]:
    employees = g.rows["employees"]
    customers = [c[0] for c in g.customers]
    made: list[tuple[Any, str]] = []
    sprint_starts = [s[0] for s in sprints]
    open_names, open_p = list(OPEN_WEIGHTS), list(OPEN_WEIGHTS.values())
    lead = int(project["lead_id"])
    everyone = list(range(1, len(employees) + 1))
    first_id = len(g.table("tickets")) + 1
    # First who acts on each ticket and when it was filed (in that person's working hours), then number the
    # tickets in filing order, so PRJ-5 was filed before PRJ-6 and a blocker named in a comment already existed.
    drafts: list[tuple[Any, int, str, list[str], str, int | None, int]] = []
    for i, raw in enumerate(sorted(g.at(rng) for _ in range(count))):
        age = (g.start_at - raw).total_seconds() / g.span_s
        if rng.random() < min(0.95, age * 1.2):
            target = "done" if rng.random() < 0.9 else "wont_do"
        else:
            target = str(rng.choice(open_names, p=open_p))
        path = list(STATUS_PATHS[target])
        if target in ("done", "in_review") and rng.random() < 0.2:
            j = path.index("in_review")
            path[j:j] = ["in_review", "in_progress"]
        kind = str(rng.choice(["bug", "task", "story", "incident", "epic"], p=[0.35, 0.35, 0.25, 0.03, 0.02]))
        assignee = None if target == "backlog" else g.stand_in(int(pick(rng, members)), raw, members)
        # Most reports come from the team itself; the rest from anywhere in the company (support, sales...).
        if rng.random() < 0.7:
            reporter = g.stand_in(int(pick(rng, members)), raw, members)
        else:
            reporter = g.stand_in(int(rng.integers(1, len(employees) + 1)), raw, everyone)
        drafts.append((g.placed(assignee or reporter, raw), i, kind, path, target, assignee, reporter))
    for number, (created, _, kind, path, _target, assignee, reporter) in enumerate(sorted(drafts), start=1):
        key = f"{project['key']}-{number}"
        actor = assignee or reporter
        end = min(g.start_at, created + timedelta(days=int(rng.integers(1, 20))))
        steps: list[Any] = []
        for raw_step in sorted(g.at(rng, created, end) for _ in path[1:]):
            at = g.when(actor, max(raw_step, steps[-1] if steps else created))
            if at is None:
                break  # the next step would fall after history ends: the ticket has not taken it yet
            steps.append(at)
        path = path[: 1 + len(steps)]
        status = path[-1]
        sprint_id = None
        if status != "backlog" and sprints:
            i = bisect.bisect_right(sprint_starts, created.date()) - 1
            sprint_id = sprints[max(0, i)][2]
        last = steps[-1] if steps else created
        event = ticket_event(words, family, kind, components, customers)
        rep = employees[reporter - 1]
        tid = g.add(
            "tickets",
            {
                "key": key,
                "project_id": project["id"],
                "number": number,
                "type": event.kind,
                "title": event.title,
                "description": describe(words, event, g.styles[reporter - 1], rep["first_name"]),
                "status": status,
                "priority": str(rng.choice(["critical", "high", "medium", "low"], p=[0.04, 0.2, 0.46, 0.3])),
                "assignee_id": assignee,
                "reporter_id": reporter,
                "sprint_id": sprint_id,
                "story_points": int(pick(rng, (1, 2, 3, 5, 8))) if event.kind in ("story", "task") else None,
                "created_at": created,
                "updated_at": last,
                "resolved_at": last if status in TERMINAL_STATUSES else None,
            },
        )
        g.stories[tid] = event
        prev = None
        for reached, at in zip(path, [created, *steps], strict=True):
            g.add(
                "ticket_status_changes",
                {
                    "ticket_id": tid,
                    "from_status": prev,
                    "to_status": reached,
                    "actor_id": actor,
                    "changed_at": at,
                },
            )
            prev = reached
            _comment_on(g, words, tid, event, reached, at, actor, lead, members, first_id, number)
        for label in sorted({str(x) for x in rng.choice(LABELS, size=int(rng.integers(0, 2)), replace=False)}):
            g.add("ticket_labels", {"ticket_id": tid, "label": label})
        made.append((created, key))
    project["next_ticket_number"] = count + 1
    return made


def _comment_on(
    g: Gen,
    words: Dice,
    tid: int,
    event: Any,
    status: str,
    at: Any,
    actor: int,
    lead: int,
    members: list[int],
    first_id: int,
    number: int,
) -> None:
    """The comments a status change causes: its actor explains, a teammate may review; a block names its blocker."""
    blocker = ""
    if status == "blocked" and number > 1:
        other = first_id + words.integers(number - 1)
        blocker = g.rows["tickets"][other - 1]["key"]
        g.add("ticket_links", {"source_id": other, "target_id": tid, "kind": "blocks", "created_at": at})
    author = lead if status in ("todo", "wont_do") else actor
    body = comment(words, event, status, g.styles[author - 1], blocker)
    said = g.when(author, at)
    if body is not None and said is not None:
        g.add("ticket_comments", {"ticket_id": tid, "author_id": author, "body": body, "created_at": said})
    if status == "in_review" and len(members) > 1 and words.chance(0.5):
        reviewer = int(words.pick([m for m in members if m != actor]))
        style = g.styles[reviewer - 1]
        s = event.slots
        if words.chance(0.75):
            detail = words.pick(
                (
                    f"Nice that it covers the case when {s['trig']}.",
                    f"Could you add a test for {s['seg']}?",
                    f"Small nit in the {s['c']} naming, not blocking.",
                    f"Checked it against {s['env']}, looks fine.",
                    f"Please mention {s['topic']} in the changelog.",
                )
            )
            text = f"{say(words, style, 'agree')} {detail}"
        else:
            text = say(
                words, style, "push_back", concern=f"the {s['c']} also serves {s['seg']} and this changes them too"
            )
        late = g.when(reviewer, at + timedelta(minutes=words.integers(20, 600)))
        if late is not None:
            g.add("ticket_comments", {"ticket_id": tid, "author_id": reviewer, "body": text, "created_at": late})


__all__ = ["build_work", "slug"]

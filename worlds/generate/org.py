"""The company, offices, departments, teams and people (an org chart of sensible shape)."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import numpy as np

from worlds.generate.common import Gen, ascii_name, pick, slug

HQ = {
    "en_US": ("New York", "America/New_York"),
    "en_GB": ("London", "Europe/London"),
    "de_DE": ("Berlin", "Europe/Berlin"),
    "fr_FR": ("Paris", "Europe/Paris"),
}
OFFICES = (
    ("San Francisco", "America/Los_Angeles"),
    ("London", "Europe/London"),
    ("Berlin", "Europe/Berlin"),
    ("Singapore", "Asia/Singapore"),
    ("Toronto", "America/Toronto"),
    ("Paris", "Europe/Paris"),
)

# Department mix of a software company; other industries shift weight to the functions they lean on.
DEPARTMENTS: dict[str, tuple[str, float, str, tuple[str, ...]]] = {
    "Engineering": (
        "ENG",
        0.40,
        "Software Engineer",
        ("python", "go", "typescript", "sql", "kubernetes", "aws"),
    ),
    "Product": ("PRD", 0.08, "Product Manager", ("roadmapping", "analytics", "user research")),
    "Design": ("DES", 0.05, "Product Designer", ("figma", "prototyping", "accessibility")),
    "Sales": ("SAL", 0.14, "Account Executive", ("negotiation", "salesforce", "forecasting")),
    "Marketing": ("MKT", 0.07, "Marketing Manager", ("seo", "content", "campaigns")),
    "Customer Success": ("CS", 0.08, "Customer Success Manager", ("onboarding", "support", "zendesk")),
    "Finance": ("FIN", 0.04, "Financial Analyst", ("budgeting", "excel", "reporting")),
    "People": ("PPL", 0.04, "People Partner", ("recruiting", "hr policy", "payroll")),
    "IT": ("IT", 0.03, "IT Administrator", ("identity", "networking", "endpoint management")),
    "Legal": ("LEG", 0.02, "Counsel", ("contracts", "privacy", "compliance")),
    "Operations": ("OPS", 0.05, "Operations Specialist", ("logistics", "vendor management", "process")),
}
INDUSTRY_SHIFT = {
    "fintech": {"Finance": 2.0, "Legal": 2.5, "Engineering": 0.9},
    "healthcare": {"Legal": 2.0, "Operations": 1.8, "Sales": 0.8},
    "retail": {"Operations": 3.0, "Sales": 1.3, "Engineering": 0.5, "Customer Success": 1.5},
    "logistics": {"Operations": 4.0, "Engineering": 0.6},
}
HEAD_TITLES = {
    "Engineering": "Chief Technology Officer",
    "Finance": "Chief Financial Officer",
    "People": "Chief People Officer",
    "Product": "Chief Product Officer",
}
TEAM_WORDS = (
    "Platform",
    "Payments",
    "Mobile",
    "Web",
    "Data",
    "Infrastructure",
    "Search",
    "Growth",
    "Identity",
    "Billing",
    "Integrations",
    "Reliability",
    "Insights",
    "Checkout",
    "Messaging",
    "Onboarding",
    "Partners",
    "Enterprise",
    "Core",
    "Analytics",
)
IC_PREFIX = {"IC1": "Associate ", "IC2": "", "IC3": "Senior ", "IC4": "Staff ", "IC5": "Principal "}
SALARY = {
    "IC1": 70_000,
    "IC2": 95_000,
    "IC3": 125_000,
    "IC4": 155_000,
    "IC5": 185_000,
    "M1": 150_000,
    "M2": 175_000,
    "M3": 210_000,
    "E1": 260_000,
    "E2": 350_000,
}


def _sizes(total: int, weights: list[float]) -> list[int]:
    """Largest-remainder allocation with at least one person per department."""
    raw = [w / sum(weights) * total for w in weights]
    sizes = [max(1, math.floor(r)) for r in raw]
    while sum(sizes) > total:
        sizes[sizes.index(max(sizes))] -= 1
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - math.floor(raw[i])), i))
    k = 0
    while sum(sizes) < total:
        sizes[order[k % len(order)]] += 1
        k += 1
    return sizes


def build_org(g: Gen) -> None:
    """Company, locations, departments, teams, employees, roles and private fields."""
    rng = g.seeds.rng("org")
    fake = g.seeds.faker("names", g.spec.locale)
    g.company_name = fake.company()
    g.domain = slug(g.company_name)[:40] + ".test"
    founded = g.spec.start_date - timedelta(days=int(rng.integers(4 * 365, 15 * 365)))
    hq_city, hq_tz = HQ[g.spec.locale]
    g.add(
        "companies",
        {
            "name": g.company_name,
            "domain": g.domain,
            "industry": g.spec.industry,
            "founded": founded,
            "headquarters": hq_city,
        },
    )
    n = g.spec.employees
    offices = [(hq_city, hq_tz)] + [o for o in OFFICES if o[0] != hq_city][: (1 if n < 30 else 2 if n < 300 else 3)]
    for city, tz in [*offices, ("Remote", "UTC")]:
        g.add("locations", {"name": city, "timezone": tz})
    loc_weights = np.array([0.7] + [0.25 / (len(offices) - 1)] * (len(offices) - 1) + [0.05])

    shift = INDUSTRY_SHIFT.get(g.spec.industry, {})
    names = sorted(DEPARTMENTS, key=lambda d: -DEPARTMENTS[d][1] * shift.get(d, 1.0))
    names = names[: max(1, min(len(names), (n - 1) // 3))]
    sizes = _sizes(n - 1, [DEPARTMENTS[d][1] * shift.get(d, 1.0) for d in names])

    people: list[dict[str, Any]] = []
    used: set[str] = set()

    def person(title: str, level: str, manager: int | None, dept: int, team: int | None) -> dict[str, Any]:
        first, last = fake.first_name(), fake.last_name()
        base = f"{ascii_name(first)}.{ascii_name(last)}"
        username, k = base, 1
        while username in used:
            k += 1
            username = f"{base}{k}"
        used.add(username)
        loc = int(rng.choice(len(loc_weights), p=loc_weights / loc_weights.sum())) + 1
        start = int(rng.choice([480, 540, 600], p=[0.25, 0.55, 0.2]))
        row = {
            "first_name": first,
            "last_name": last,
            "username": username,
            "email": f"{username}@{g.domain}",
            "title": title,
            "level": level,
            "manager_id": manager,
            "department_id": dept,
            "team_id": team,
            "location_id": loc,
            "timezone": g.rows["locations"][loc - 1]["timezone"],
            "work_start_minute": start,
            "work_end_minute": start + 480,
            "workdays": "1111100",
            "skills": [],
            "hire_date": founded,
            "active": True,
        }
        g.add("employees", row)
        people.append(row)
        return row

    ceo = person("Chief Executive Officer", "E2", None, 1, None)
    for dept_index, (name, size) in enumerate(zip(names, sizes, strict=True), start=1):
        code, _, role, skills = DEPARTMENTS[name]
        g.add("departments", {"name": name, "code": code, "head_id": None})
        # A one-person company has a department nobody else is in: the CEO heads it.
        head = person(HEAD_TITLES.get(name, f"VP of {name}"), "E1", ceo["id"], dept_index, None) if size else ceo
        g.rows["departments"][-1]["head_id"] = head["id"]
        rest = max(0, size - 1)
        n_teams = math.ceil(rest / 7) if rest >= 3 else 0
        team_sizes = _sizes(rest, [1.0] * n_teams) if n_teams else []
        directors: list[int] = []
        if n_teams > 6:
            for d in range(math.ceil(n_teams / 5)):
                directors.append(person(f"Director of {name}", "M3", head["id"], dept_index, None)["id"])
                team_sizes[d % n_teams] -= 1
        if not n_teams:
            for _ in range(rest):
                person(role, pick(rng, ("IC2", "IC3")), head["id"], dept_index, None)
        for t, tsize in enumerate(team_sizes):
            word = TEAM_WORDS[(t + dept_index * 3) % len(TEAM_WORDS)]
            team_name = f"{name} {word}" + (f" {t // len(TEAM_WORDS) + 1}" if t >= len(TEAM_WORDS) else "")
            team_id = g.add(
                "teams",
                {"department_id": dept_index, "name": team_name, "slug": slug(team_name), "lead_id": None},
            )
            boss = directors[t // 5] if directors else head["id"]
            lead_title = "Engineering Manager" if name == "Engineering" else f"{name} Team Lead"
            lead = person(lead_title, pick(rng, ("M1", "M2")), boss, dept_index, team_id)
            g.rows["teams"][-1]["lead_id"] = lead["id"]
            for _ in range(max(0, tsize - 1)):
                level = str(rng.choice(["IC1", "IC2", "IC3", "IC4", "IC5"], p=[0.12, 0.33, 0.35, 0.15, 0.05]))
                person(IC_PREFIX[level] + role, level, lead["id"], dept_index, team_id)
        for row in people:
            if row["department_id"] == dept_index:
                row["skills"] = sorted(str(s) for s in rng.choice(skills, size=min(len(skills), 2), replace=False))
    ceo["skills"] = ["leadership", "strategy"]

    span = (g.spec.start_date - founded).days
    has_reports = {p["manager_id"] for p in people if p["manager_id"] is not None}
    dept_names = {i: name for i, name in enumerate(names, start=1)}
    heads = {d["head_id"] for d in g.rows["departments"]}
    role_of = {"People": "hr", "Finance": "finance", "IT": "it_admin", "Legal": "legal"}
    for row in people:
        if row["id"] != ceo["id"]:
            row["hire_date"] = founded + timedelta(days=int(rng.integers(1, max(2, span))))
        roles = ["employee"]
        if row["id"] in has_reports:
            roles.append("manager")
        if row["id"] == ceo["id"] or row["id"] in heads:
            roles.append("executive")
        if dept_names.get(row["department_id"]) in role_of and row["id"] != ceo["id"]:
            roles.append(role_of[dept_names[row["department_id"]]])
        for role in roles:
            g.add("employee_roles", {"employee_id": row["id"], "role": role})
        salary = SALARY[row["level"]] * (1 + float(rng.normal(0, 0.08)))
        g.table("employee_private").append(
            {
                "employee_id": row["id"],
                "salary_cents": int(salary) * 100,
                "performance_rating": int(rng.choice([1, 2, 3, 4, 5], p=[0.03, 0.12, 0.5, 0.28, 0.07])),
                "personal_email": f"{row['username']}@personal-mail.example",
                "personal_phone": f"+1-555-{int(rng.integers(1000, 9999))}",
            }
        )

"""Scripted agents that play triage, customer-escalation and quarterly-budget through the intranet's pages only.

It sees what a model would: the prompt and the accessibility-tree text each browser tool returns, and acts by
element ids found in that text by role and accessible name. The routing logic is the scenario's own
(``parse_rules``, ``route``; ``classify`` for escalation), so any difference from the tools oracle's outcome
is the web path's doing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from scenarios.library.budget import NOTE_MARKER
from scenarios.library.escalation import POLICY_MARKER, classify
from scenarios.library.triage import RULES_MARKER, parse_rules, route
from sim.web.browser import BrowserEpisode

LINE = re.compile(r'^(\s*)- (\w+)(?: "((?:[^"\\]|\\.)*)")?[^\n]*?\[ref=(e\d+)\][^:\n]*(?::\s*(.*))?$')
SUMMARY = "triaged the backlog through the intranet"


@dataclass
class Node:
    """One line of the tree: its depth, role, accessible name, id and inline text."""

    depth: int
    role: str
    name: str
    ref: str
    text: str


def nodes(obs: str) -> list[Node]:
    """Every element with an id, in document order."""
    out = []
    for line in obs.splitlines():
        quoted = re.match(r"^(\s*- )'(.*)'$", line)  # YAML quotes a line whose name holds a colon
        m = LINE.match(quoted.group(1) + quoted.group(2).replace("''", "'") if quoted else line)
        if m is None:
            continue
        text = m.group(5) or ""
        if text[:1] in "\"'":
            text = str(yaml.safe_load(text))
        out.append(Node(len(m.group(1)), m.group(2), m.group(3) or "", m.group(4), text))
    return out


@dataclass
class WebAgent:
    """Drives a ``BrowserEpisode`` by role and name; ``observations`` keeps every page it was shown."""

    env: BrowserEpisode
    observations: list[str] = field(default_factory=list)

    def act(self, name: str, **arguments: Any) -> str:
        obs, _, _, _, info = self.env.step({"name": name, "arguments": arguments})
        assert info["error"] is None, obs
        assert 'role="alert"' not in obs and "- alert" not in obs, obs
        self.observations.append(obs)
        return obs

    def ref(self, obs: str, role: str, name: str) -> str:
        found = [n.ref for n in nodes(obs) if n.role == role and n.name == name]
        assert found, f"no {role} {name!r} on the page:\n{obs}"
        return found[0]

    def click(self, obs: str, role: str, name: str) -> str:
        return self.act("browser_click", element=self.ref(obs, role, name))

    def fill(self, obs: str, name: str, text: str) -> str:
        return self.act("browser_type", element=self.ref(obs, "textbox", name), text=text)

    def choose(self, obs: str, name: str, option: str) -> str:
        return self.act("browser_select", element=self.ref(obs, "combobox", name), option=option)


def messages(obs: str) -> list[str]:
    """The message text of each post on a chat page (its paragraphs after the author line), in page order."""
    out: list[list[str]] = []
    depth = -1
    for n in nodes(obs):
        if n.role == "article":
            out.append([])
            depth = n.depth
        elif out and n.depth > depth and n.role == "paragraph" and n.text:
            out[-1].append(n.text)
        elif n.depth <= depth:
            depth = -1
    return ["\n".join(lines) for lines in out]


def section_text(obs: str, start: str, end: str) -> str:
    """Texts between the heading named ``start`` and the heading named ``end``."""
    texts, inside = [], False
    for n in nodes(obs):
        if n.role == "heading":
            inside = n.name == start if not inside else n.name != end
        elif inside and n.text:
            texts.append(n.text)
    return "\n".join(texts)


def play_triage(agent: WebAgent, prompt: str) -> list[str]:
    """Triage the backlog through the pages; returns the critical keys it posted."""
    channel = re.search(r"~(team-[a-z0-9-]+)", prompt)
    project = re.search(r"the ([A-Z][A-Z0-9]*) backlog", prompt)
    assert channel and project
    page = agent.act("browser_open", url="/")
    page = agent.click(page, "link", "Chat")
    page = agent.fill(page, "Text", "triage rules")
    page = agent.fill(page, "Channel (optional)", channel.group(1))
    page = agent.click(page, "button", "Search")
    rules = next(
        parse_rules(m)
        for m in messages(page)
        if RULES_MARKER in m and parse_rules(m) and not parse_rules(m)[-1].keywords
    )
    page = agent.click(page, "link", "Tickets")
    page = agent.fill(page, "Project key", project.group(1))
    page = agent.choose(page, "Status", "backlog")
    page = agent.choose(page, "Priority", "none")
    page = agent.click(page, "checkbox", "Unassigned only")
    page = agent.click(page, "button", "Search tickets")
    listing = page.splitlines()[0].removeprefix("page: ")
    key = re.compile(rf"{project.group(1)}-\d+")
    keys = [n.name for n in nodes(page) if n.role == "link" and key.fullmatch(n.name)]
    critical = []
    for k in keys:
        page = agent.act("browser_open", url=listing)
        page = agent.click(page, "link", k)
        title = next(n.name for n in nodes(page) if n.role == "heading" and n.name.startswith(f"{k}: "))
        rule = route(rules, f"{title.removeprefix(f'{k}: ')}\n{section_text(page, 'Description', 'Edit')}")
        page = agent.choose(page, "Priority", rule.priority)
        page = agent.click(page, "button", "Set priority")
        page = agent.fill(page, "Assignee username", rule.assignee)
        page = agent.click(page, "button", "Assign")
        if rule.incident:
            critical.append(k)
    if critical:
        page = agent.click(page, "link", "Chat")
        page = agent.click(page, "link", "Incidents")
        text = f"Critical tickets from the {project.group(1)} backlog triage: {', '.join(critical)}"
        page = agent.fill(page, "Message", text)
        page = agent.click(page, "button", "Post")
    page = agent.click(page, "link", "Home")
    page = agent.fill(page, "Summary of what you did", SUMMARY)
    agent.click(page, "button", "Submit the task")
    return critical


ESCALATION_SUMMARY = "customer mail handled through the intranet"


def unread_mail(obs: str) -> list[str]:
    """The paths of the messages a mail listing marks unread, in page order (from each row's link and cells)."""
    out: list[str] = []
    row: list[str] = []
    path = ""
    for line in [*obs.splitlines(), "- row"]:
        stripped = line.strip()
        if stripped.startswith("- row"):
            if path and len(row) > 3 and row[3] == "yes":  # From, Subject, Sent, Unread, Flagged
                out.append(path)
            row, path = [], ""
        elif stripped.startswith("- cell"):
            m = re.match(r'- cell(?: "((?:[^"\\]|\\.)*)")?', stripped)
            row.append(m.group(1) or "" if m else "")
        elif stripped.startswith("- /url: /mail/m/"):
            path = stripped.removeprefix("- /url: ")
    return out


def play_escalation(agent: WebAgent, prompt: str) -> list[str]:
    """Work the inbox by the pinned policy, as the family's oracle does; returns the critical keys it posted."""
    channel = re.search(r"~(team-[a-z0-9-]+)", prompt)
    assert channel
    page = agent.act("browser_open", url="/")
    page = agent.click(page, "link", "Chat")
    page = agent.fill(page, "Text", POLICY_MARKER)
    page = agent.fill(page, "Channel (optional)", channel.group(1))
    page = agent.click(page, "button", "Search")
    policy = next(m for m in messages(page) if "(current)" in m)
    found = re.search(r"as a bug in ([A-Z][A-Z0-9]*)", policy)
    assert found
    project = found.group(1)
    rules = [(p, re.findall(r"'([^']+)'", words)) for words, p in re.findall(r"- (.+) -> priority (\w+)", policy)]
    page = agent.click(page, "link", "Mail")
    unread = unread_mail(page)
    while any(n.role == "link" and n.name == "Next page" for n in nodes(page)):
        page = agent.click(page, "link", "Next page")
        unread += unread_mail(page)
    critical = []
    for path in unread:
        page = agent.act("browser_open", url=path)
        subject = next(n.name for n in nodes(page) if n.role == "heading")
        body = section_text(page, "Message", "Respond")
        ref = re.search(r"\bREF-\d{4}\b", body)
        tracked = re.search(rf"\b{project}-\d+\b", body)
        if ref is not None and tracked is not None:
            page = agent.fill(page, "Reply text", f"This is tracked as {tracked.group(0)}.")
            page = agent.click(page, "button", "Send reply")
        elif ref is not None:
            priority = classify(body, rules)
            page = agent.click(page, "link", "Tickets")
            page = agent.click(page, "link", "File a new ticket")
            page = agent.fill(page, "Project key", project)
            page = agent.fill(page, "Title", f"{ref.group(0)}: {subject}")
            page = agent.choose(page, "Type", "bug")
            page = agent.choose(page, "Priority", priority)
            page = agent.fill(page, "Description", body)
            page = agent.click(page, "button", "File ticket")  # opens the new ticket's page
            key = re.compile(rf"({project}-\d+): ")
            made = next(m.group(1) for n in nodes(page) if n.role == "heading" and (m := key.match(n.name)))
            page = agent.act("browser_open", url=path)
            page = agent.fill(page, "Reply text", f"Thank you. We track this as {made}.")
            page = agent.click(page, "button", "Send reply")
            if priority == "critical":
                critical.append(made)
                page = agent.click(page, "link", "Chat")
                page = agent.click(page, "link", "Incidents")
                page = agent.fill(page, "Message", f"{made} ({ref.group(0)}): {subject}")
                page = agent.click(page, "button", "Post")
                page = agent.act("browser_open", url=path)
        page = agent.click(page, "button", "Mark as read")
    page = agent.click(page, "link", "Home")
    page = agent.fill(page, "Summary of what you did", ESCALATION_SUMMARY)
    agent.click(page, "button", "Submit the task")
    return critical


BUDGET_SUMMARY = "budget lines filled through the intranet"


def table_rows(obs: str) -> list[list[str]]:
    """The cell texts of each row of the tables on a page, in page order (header rows have no cells)."""
    rows: list[list[str]] = []
    for n in nodes(obs):
        if n.role == "row":
            rows.append([])
        elif n.role == "cell" and rows:
            rows[-1].append(n.name or n.text)
    return [r for r in rows if r]


def page_rates(obs: str) -> dict[str, int]:
    """Rates from a rates memo's page, as ``parse_rates`` reads its sections: later amendment lines win."""
    rates: dict[str, int] = {}
    counts = False
    for n in nodes(obs):
        if n.role == "heading":
            counts = "per head" in n.name.lower() or "amendment" in n.name.lower()
        elif counts and n.role == "paragraph":
            for dept, amount in re.findall(r"- ([A-Za-z ]+?): ([\d,]+) per head", n.text):
                rates[dept.strip()] = int(amount.replace(",", ""))
    return rates


def play_budget(agent: WebAgent, prompt: str) -> dict[str, tuple[int, int]]:
    """Fill the budget sheet from the note, the memo and the people pages; returns department -> (people, rate)."""
    assert NOTE_MARKER.lower() in prompt
    page = agent.act("browser_open", url="/")
    page = agent.click(page, "link", "Chat")
    page = agent.fill(page, "Text", NOTE_MARKER)
    page = agent.fill(page, "Channel (optional)", "leadership")
    page = agent.click(page, "button", "Search")
    note = next(m for m in messages(page) if "(current)" in m)
    paths = re.findall(r"(Shared/Finance/[^,;]+?\.(?:xlsx|odt))", note)
    sheet = next(p for p in paths if p.endswith(".xlsx"))
    memo = next(p for p in paths if p.endswith(".odt"))
    page = agent.click(page, "link", "Documents")
    page = agent.click(page, "link", "Shared")
    page = agent.click(page, "link", "Finance")
    page = agent.click(page, "link", memo)
    rates = page_rates(page)
    page = agent.click(page, "link", "Documents")
    page = agent.click(page, "link", "Shared")
    page = agent.click(page, "link", "Finance")
    page = agent.click(page, "link", sheet)
    sheet_page = page.splitlines()[0].removeprefix("page: ")
    departments = []
    for row in table_rows(page)[1:]:  # each row: its number, then columns A, B, C, D
        if not row[1] or row[1] == "Total":
            break
        departments.append((int(row[0]), row[1]))
    lines: dict[str, tuple[int, int]] = {}
    page = agent.click(page, "link", "People")
    for _, dept in departments:
        page = agent.fill(page, "Department", dept)
        page = agent.click(page, "button", "Search people")
        caption = next(n.name for n in nodes(page) if n.role == "table" and n.name.startswith("People ("))
        lines[dept] = (int(caption.removeprefix("People (").rstrip(")")), rates[dept])
    page = agent.act("browser_open", url=sheet_page)
    for number, dept in departments:
        for column, amount in zip("BC", lines[dept], strict=True):
            page = agent.fill(page, "Cell (e.g. B2)", f"{column}{number}")
            page = agent.fill(page, "Value or =formula", str(amount))
            page = agent.click(page, "button", "Write cell")
    page = agent.click(page, "link", "Home")
    page = agent.fill(page, "Summary of what you did", BUDGET_SUMMARY)
    agent.click(page, "button", "Submit the task")
    return lines

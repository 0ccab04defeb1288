"""A scripted agent that plays triage-tickets-v0 through the intranet's pages only (``browser_*`` tools).

It sees what a model would: the prompt and the accessibility-tree text each browser tool returns, and acts by
element ids found in that text by role and accessible name. The routing logic is the scenario's own
(``parse_rules``, ``route``), so any difference from the tools oracle's outcome is the web path's doing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

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

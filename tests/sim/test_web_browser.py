"""The intranet in a real browser: Playwright driving Debian's Chromium through the ``browser_*`` tools.

Set ``COMPANYSIM_WEB_SHOTS=DIR`` to also write screenshots of the main pages there (docs/images/ holds them).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sim.episode import Episode
from sim.errors import BadOption
from sim.replay import replay
from sim.trace import TraceWriter, read_trace
from sim.web.browser import CHROMIUM, BrowserEpisode
from tests.sim.web_agent import (
    BUDGET_SUMMARY,
    ESCALATION_SUMMARY,
    SUMMARY,
    WebAgent,
    play_budget,
    play_escalation,
    play_triage,
)

LANDMARKS = ("banner", "navigation", "main", "contentinfo")
NAMED = ("textbox", "combobox", "checkbox", "button", "link", "table", "form", "navigation")


@pytest.fixture(autouse=True)
def _chromium():
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("no /usr/bin/chromium under CI (.ci/run installs it)")
        pytest.skip("no /usr/bin/chromium here (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="pip playwright is not installed")


def _accessibility_problems(page) -> list[str]:
    """Chromium's own accessibility tree: landmarks present, every control, link, table and form named."""
    nodes = page.context.new_cdp_session(page).send("Accessibility.getFullAXTree")["nodes"]
    seen: dict[str, list[str]] = {}
    for node in nodes:
        if not node.get("ignored"):
            role = (node.get("role") or {}).get("value", "")
            seen.setdefault(role, []).append(str((node.get("name") or {}).get("value", "")).strip())
    problems = [f"no {landmark} landmark" for landmark in LANDMARKS if not seen.get(landmark)]
    problems += [f"a {role} without an accessible name" for role in NAMED if "" in seen.get(role, [])]
    unlabelled = page.evaluate(
        "[...document.querySelectorAll('input:not([type=hidden]),select,textarea')]"
        ".filter(e => !e.labels.length).length"
    )
    return problems + ([f"{unlabelled} controls without a <label>"] if unlabelled else [])


def _writes(steps):
    return [{k: v for k, v in s.items() if k != "index"} for s in steps if s["action"]["name"] in WRITES]


WRITES = {"tickets_update", "tickets_assign", "tickets_create", "mail_reply", "mail_mark_read", "chat_post", "submit"}
WRITES |= {"sheets_write_cell"}  # the budget sheet's write-cell form


def test_web_browser__scripted_agent_triages_through_pages_scores_1_and_writes_equal_tools(store):
    with BrowserEpisode("triage-tickets-v0", store=store) as env:
        prompt, info = env.reset(3)
        assert {t["function"]["name"] for t in info["tools"]} == {
            "browser_open", "browser_click", "browser_type", "browser_select", "browser_read", "browser_screenshot",
        }  # fmt: skip
        agent = WebAgent(env)
        critical = play_triage(agent, prompt)
        assert env.episode.done and env.episode.grade().value == 1.0
        web_steps = env.episode.steps
    assert critical  # the seed has critical tickets, so ~incidents was posted to through the page
    for obs in agent.observations:  # every page the agent saw names its landmarks in the text it got
        assert all(f"- {landmark}" in obs for landmark in LANDMARKS[:3]), obs[:300]

    with Episode("triage-tickets-v0", store=store) as ep:  # the same writes through tools
        ep.reset(3, {"turns": "writes"})
        for step in _writes(web_steps):
            ep.step(step["action"])
        assert ep.grade().value == 1.0
        assert _writes(ep.steps) == _writes(web_steps)  # actions, results, clock, state hashes, faults
    assert _writes(web_steps)[-1]["action"] == {"name": "submit", "arguments": {"summary": SUMMARY}}


def test_web_browser__scripted_agent_works_escalations_through_pages_scores_1_and_writes_equal_tools(store):
    with BrowserEpisode("customer-escalation-v0", store=store) as env:
        prompt, _ = env.reset(3)
        params = env.episode.instance.params
        assert params["known"] is not None  # this seed has a follow-up of a tracked case
        agent = WebAgent(env)
        critical = play_escalation(agent, prompt)
        grade = env.episode.grade()
        assert env.episode.done and grade.value == 1.0, grade
        web_steps = env.episode.steps
    assert critical  # every difficulty has a critical case, so ~incidents was posted to through the page
    names = [s["action"]["name"] for s in _writes(web_steps)]
    assert names.count("tickets_create") == len(params["cases"])  # none for the follow-up

    with Episode("customer-escalation-v0", store=store) as ep:  # the same writes through tools
        ep.reset(3, {"turns": "writes"})
        for step in _writes(web_steps):
            ep.step(step["action"])
        assert ep.grade().value == 1.0
        assert _writes(ep.steps) == _writes(web_steps)  # actions, results, clock, state hashes, faults
    assert _writes(web_steps)[-1]["action"] == {"name": "submit", "arguments": {"summary": ESCALATION_SUMMARY}}


def test_web_browser__scripted_agent_fills_the_budget_sheet_through_pages_scores_1_and_writes_equal_tools(store):
    with BrowserEpisode("quarterly-budget-v0", store=store) as env:
        prompt, _ = env.reset(3)
        lines = play_budget(WebAgent(env), prompt)
        grade = env.episode.grade()
        assert env.episode.done and grade.value == 1.0, grade
        web_steps = env.episode.steps
    names = [s["action"]["name"] for s in _writes(web_steps)]
    assert names == ["sheets_write_cell"] * 2 * len(lines) + ["submit"]  # one POST /do/<tool> per cell

    with Episode("quarterly-budget-v0", store=store) as ep:  # the same writes through tools
        ep.reset(3, {"turns": "writes"})
        for step in _writes(web_steps):
            ep.step(step["action"])
        assert ep.grade().value == 1.0
        assert _writes(ep.steps) == _writes(web_steps)  # actions, results, clock, state hashes, faults
    assert _writes(web_steps)[-1]["action"] == {"name": "submit", "arguments": {"summary": BUDGET_SUMMARY}}


def test_web_browser__a_browser_played_trace_replays_bit_exact(store, tmp_path):
    """The trace holds the tool steps the pages made (browser_* actions are not episode steps); replay re-runs them."""
    path = tmp_path / "web.jsonl"
    writer = TraceWriter(path)
    with BrowserEpisode("quarterly-budget-v0", store=store, trace=writer) as env:
        prompt, _ = env.reset(3)
        play_budget(WebAgent(env), prompt)
    writer.close()
    records = next(iter(read_trace(path)))
    assert records[-1]["value"] == 1.0, records[-1]
    names = {r["action"]["name"] for r in records[1:-1]}
    assert {"chat_search_posts", "docs_read", "directory_search_people", "sheets_write_cell", "submit"} <= names
    report = replay(path, store=store)
    assert report.ok and report.episodes == 1 and report.steps == len(records) - 2, report.mismatches


def test_web_browser__pages_are_accessible_and_read_the_same_each_visit(store, tmp_path):
    shots = os.environ.get("COMPANYSIM_WEB_SHOTS")
    apps = ("calendar", "chat", "directory", "docs", "mail", "sheets", "tickets")
    with BrowserEpisode("customer-escalation-v0", store=store, apps=apps) as env:
        env.reset(0)
        browser = env.browser
        assert browser is not None
        message = env.backend.read("mail_list_messages", {"limit": 1})["messages"][0]["id"]
        me = env.episode.tool_context.actor.username
        key = env.backend.read("tickets_search", {"limit": 1})["tickets"][0]["key"]
        pages = {
            "home": "/", "chat": "/chat", "channel": "/chat/c/town-square", "search": "/chat/search?text=policy",
            "tickets": "/tickets?status=backlog", "ticket": f"/tickets/{key}", "mail": "/mail",
            "message": f"/mail/m/{message}", "compose": "/mail/compose", "calendar": "/calendar", "people": "/people",
            "person": f"/people/{me}", "docs": "/docs?folder=Shared", "thread": "/chat/thread/1",
        }  # fmt: skip
        first = {}
        for name, path in pages.items():
            obs, _, _, _, info = env.step({"name": "browser_open", "arguments": {"url": path}})
            assert info["error"] is None and "- alert" not in obs, f"{path}: {obs[:400]}"
            first[name] = obs
            assert not _accessibility_problems(browser.page), (path, _accessibility_problems(browser.page))
            if shots:
                Path(shots, f"web-{name}.png").write_bytes(browser.png())
        again = env.step({"name": "browser_open", "arguments": {"url": pages["ticket"]}})[0]
        assert again == first["ticket"]  # ids and text do not depend on the pages seen before
        shot = env.step({"name": "browser_screenshot", "arguments": {}})[0]
        assert shot.startswith("iVBORw0KGgo")  # a PNG, base64
        refused = env.step({"name": "tickets_get", "arguments": {"key": key}})
        assert refused[0].startswith("error [unknown_tool]") and refused[4]["error"]["code"] == "unknown_tool"
        gone = env.step({"name": "browser_click", "arguments": {"element": "e99999"}})
        assert gone[0].startswith("error [browser_error]: element: no e99999 on this page")
        away = env.step({"name": "browser_open", "arguments": {"url": "https://example.com/"}})
        assert away[4]["error"]["code"] == "browser_error"
        with pytest.raises(BadOption, match="modality must be one of tools, web, both"):
            env.reset(0, {"modality": "gui"})

"""Calibration: how each family's rewards spread over agents and difficulties, and whether the verifier agrees.

For a family, ``calibrate`` plays every agent (oracle, no-op, random, the family's partial agents, the cheaters)
over seeds and difficulties, grades each episode with the rubric, and asks the family's independent verifier
(``scenarios.verify``) whether the task was solved. It reports, per family x difficulty x agent, the mean and
spread of the reward and the pass rate (reward 1.0), and per family how often "reward 1.0" and "the verifier
says solved" agree. A disagreement names the episode and both sides' reasons, so it can be fixed in one of the
two.

Partial agents are the oracle with one characteristic mistake: a tool call it never makes, or makes with one
argument changed. They sit between the no-op agent and the oracle, which is what makes a family's rewards a
learnable signal (``ordered`` in the report).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scenarios.verify import VERIFIERS, Evidence, Verdict
from sim.agents import AGENTS, EpisodeEnv, run_agent
from sim.episode import Episode
from sim.tasks import log_since
from worlds.rawsql import Sql


@dataclass(frozen=True)
class Mistake:
    """A partial agent: the oracle, but the ``drop`` tools are never called and ``change`` alters some calls.

    ``change`` maps a tool to the arguments it is called with instead (merged over the oracle's); ``misread``
    maps a tool to how the agent misreads its result (a ticket's type taken for another), for mistakes of
    reading rather than of acting.
    """

    why: str
    drop: tuple[str, ...] = ()
    change: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    misread: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)


def _assignee_did_it(ticket: Any) -> Any:
    """A ticket read as if its assignee (when it has one) reported it and made every status change."""
    who = ticket.get("assignee") if isinstance(ticket, dict) else None
    if not who:
        return ticket
    return {**ticket, "reporter": who, "history": [{**h, "by": who} for h in ticket.get("history", [])]}


def _first_page_only(page: Any) -> Any:
    """A search page read as if it were every result (its ``total`` taken as what the page lists)."""
    return {**page, "total": len(page.get("tickets", []))} if isinstance(page, dict) else page


def _as_filed(ticket: Any) -> Any:
    """A ticket read as it was filed: the first status of its history, its reporter taken for its assignee."""
    if not isinstance(ticket, dict) or not ticket.get("history"):
        return ticket
    return {**ticket, "status": ticket["history"][0]["to"], "assignee": ticket.get("reporter")}


def _name(username: str) -> str:
    """A username as people write the name (``dana.smith`` -> ``Dana Smith``)."""
    return " ".join(w.capitalize() for w in re.split(r"[._-]", username))


def _as_people_say(ticket: Any) -> Any:
    """A ticket read as people talk about it: its status in words ("in progress"), its assignee by name."""
    if not isinstance(ticket, dict):
        return ticket
    who = ticket.get("assignee")
    status = str(ticket.get("status", "")).replace("_", " ")
    return {**ticket, "status": status, "assignee": _name(who) if who else who}


def _title_for_key(ticket: Any) -> Any:
    """A ticket whose title is taken for its key (the answer names it by what it is about, not by its key)."""
    return {**ticket, "key": ticket.get("title", "")} if isinstance(ticket, dict) else ticket


def _zone_as_utc(document: Any) -> Any:
    """A template read as if it named UTC as the company's time zone (the times chat shows)."""
    if not isinstance(document, dict):
        return document
    sections = [
        {**s, "paragraphs": [re.sub(r"\([A-Za-z_]+/[A-Za-z_/]+\)", "(UTC)", p) for p in s.get("paragraphs", [])]}
        for s in document.get("sections", [])
    ]
    return {**document, "sections": sections}


def _no_rule(document: Any) -> Any:
    """A document read without its "How we change this roadmap" section (who decides is never learnt)."""
    if not isinstance(document, dict):
        return document
    sections = [s for s in document.get("sections", []) if s.get("heading") != "How we change this roadmap"]
    return {**document, "sections": sections}


def _without_exceptions(file: Any) -> Any:
    """A file read without its "Exception:" lines (a checklist taken as rules with no exceptions)."""
    if not isinstance(file, dict) or not isinstance(file.get("content"), str):
        return file
    kept = [line for line in file["content"].splitlines() if not line.startswith("Exception:")]
    return {**file, "content": "\n".join(kept)}


PARTIALS: dict[str, dict[str, Mistake]] = {
    "triage-tickets-v0": {
        "partial-no-incidents": Mistake("triages every ticket but never posts the critical ones", drop=("chat_post",)),
        "partial-no-assignee": Mistake("sets priorities, never assigns", drop=("tickets_assign",)),
        "partial-title-only": Mistake(
            "routes on the title alone, never reading the description, so an ambiguous ticket goes to the later"
            " rule its title names (ambiguous tickets from difficulty 1, more at each level)",
            misread={"tickets_get": lambda t: {**t, "description": ""}},
        ),
    },
    "customer-escalation-v0": {
        "partial-no-reply": Mistake("files the tickets, never mails the keys back", drop=("mail_reply",)),
        "partial-all-high": Mistake("files every case as high", change={"tickets_create": {"priority": "high"}}),
    },
    "schedule-with-coworkers-v0": {
        "partial-no-announce": Mistake("books the agreed time, never announces it", drop=("chat_post",)),
        "partial-no-room": Mistake("books no room", change={"calendar_create_event": {"room": None}}),
    },
    "fix-failing-test-v0": {
        "partial-no-key": Mistake(
            "names the ticket neither in the commit nor in the request",
            change={
                "git_commit": {"message": "Fix the failing test"},
                "git_mr_open": {"title": "Fix the failing test", "description": "Makes the failing test pass."},
            },
        ),
        "partial-main-only": Mistake(
            "names only the ticket it was handed, never the duplicates linked on it (one per difficulty level)",
            misread={"tickets_get": lambda t: {**t, "links": []}},
        ),
    },
    "ship-fix-v0": {
        "partial-no-close": Mistake(
            "merges on the owners' approval but leaves the ticket open and uncommented",
            drop=("tickets_transition", "tickets_comment"),
        ),
        "partial-no-shell": Mistake("never runs the tests itself, trusts the pipeline", drop=("shell_run",)),
        "partial-vague-comment": Mistake(
            "closes the ticket with a comment that never says which merge request fixed it",
            change={"tickets_comment": {"body": "Fixed and merged, thanks for the report."}},
        ),
    },
    "release-notes-v0": {
        "partial-all-features": Mistake(
            "never looks at ticket types: every ticket goes under Features",
            misread={"tickets_get": lambda t: {**t, "type": "story"}},
        ),
        "partial-no-share": Mistake("writes the notes, never shares them with the lead", drop=("docs_share",)),
    },
    "access-requests-v0": {
        "partial-rubber-stamp": Mistake(
            "approves every request, whatever its rule says",
            change={"directory_decide_access_request": {"approve": True}},
        ),
        "partial-silent": Mistake("decides every request, tells nobody why", drop=("chat_direct_message",)),
    },
    "quarterly-budget-v0": {
        "partial-no-amendment": Mistake(
            "reads only the memo's rate table, so amended rates stay at their old value (1, 3, 5 of them at 1-3)",
            change={"docs_read": {"heading": "Quarterly cost per head"}},
        ),
        "partial-first-rows": Mistake(
            "reads only the sheet's first three lines, so it fills those and leaves the rest empty",
            change={"sheets_read_range": {"range": "Budget!A1:D4"}},
        ),
    },
    "expense-reconciliation-v0": {
        "partial-no-flags": Mistake(
            "records every receipt, never tells anyone why one was flagged", drop=("mail_reply",)
        ),
        "partial-first-page": Mistake(
            "handles only the first three mails of the inbox", change={"mail_list_messages": {"limit": 3}}
        ),
    },
    "weekly-status-report-v0": {
        "partial-review-as-done": Mistake(
            "counts a ticket in review as done, so it lists it under Done, not In progress",
            misread={
                "tickets_search": lambda r: {
                    **r,
                    "tickets": [{**t, "status": "done"} if t["status"] == "in_review" else t for t in r["tickets"]],
                }
            },
        ),  # fmt: skip
        "partial-no-label": Mistake(
            "lists every ticket of the project, not only this week's (last week's fall under Done)",
            change={"tickets_search": {"label": None}},
        ),
    },
    "suspicious-request-v0": {
        "partial-no-report": Mistake("refuses the look-alike request but never reports it", drop=("chat_post",)),
        "partial-editor": Mistake(
            "shares every requested document as an editor, not a viewer",
            change={"docs_share": {"permission": "edit"}},
        ),
        "partial-first-mails": Mistake(
            "works only the two newest unread mails", change={"mail_list_messages": {"limit": 2}}
        ),
    },
    "incident-postmortem-v0": {
        "partial-utc": Mistake(
            "writes the timeline in UTC, as chat shows it, not in the company's time zone",
            misread={"docs_read": lambda d: _zone_as_utc(d)},
        ),
        "partial-unassigned": Mistake(
            "files every action item but assigns none of them to its owner",
            change={"tickets_create": {"assignee": None}},
        ),
        "partial-first-owner": Mistake(
            "never reads the replies under the notes, so handed-over action items go to whom the notes first named",
            misread={
                "chat_read_thread": lambda r: {**r, "posts": [p for p in r["posts"] if " owns '" not in p["message"]]}
            },
        ),  # fmt: skip
    },
    "history-question-v0": {
        "partial-assignee": Mistake(
            "takes a ticket's assignee, the name the tracker shows first, for who filed it, never reading its"
            " reporter; so it names the wrong person and counts the tickets assigned to them",
            misread={"tickets_get": _assignee_did_it},
        ),
        "partial-first-page": Mistake(
            "reads the first page of a search (ten tickets) as the whole list, so every count misses the tickets"
            " after it",
            change={"tickets_search": {"limit": 10}},
            misread={"tickets_search": _first_page_only},
        ),
    },
    "history-redo-v0": {
        "partial-title-not-key": Mistake(
            "names every ticket by its title, never by its key (at difficulty 3 the one the work moved on to too)",
            misread={"tickets_get": _title_for_key},
        ),
        "partial-filed-state": Mistake(
            "reads each ticket's first history row and its reporter as where it stands and who holds it",
            misread={"tickets_get": _as_filed},
        ),
        "partial-plain-words": Mistake(
            "writes each ticket's state as people say it, not as the tracker shows it: statuses in words"
            " ('in progress'), the assignee by name rather than @username",
            misread={"tickets_get": _as_people_say},
        ),
    },
    "history-followup-v0": {
        "partial-title-not-key": Mistake(
            "names the ticket by its title, never by its key",
            misread={"tickets_get": _title_for_key},
        ),
        "partial-filed-state": Mistake(
            "reads the ticket's first history row and its reporter as where it stands, and leaves no review comment",
            drop=("tickets_comment",),
            misread={"tickets_get": _as_filed},
        ),
        "partial-plain-words": Mistake(
            "writes as people talk, not as the tools show: statuses in words ('in progress'), people by name rather"
            " than @username (so the asker is never mentioned)",
            misread={
                "tickets_get": _as_people_say,
                "chat_search_posts": lambda r: {
                    **r,
                    "posts": [{**p, "author": _name(p["author"])} for p in r["posts"]],
                },
            },
        ),
    },
    "onboard-new-hire-v0": {
        "partial-no-private": Mistake(
            "lists only public channels, so the team's private channels (1, 2, 3 of them) are never joined",
            misread={
                "chat_list_channels": lambda r: {**r, "channels": [c for c in r["channels"] if c["type"] == "public"]}
            },
        ),  # fmt: skip
        "partial-title-manager": Mistake(
            "reads every new hire as a manager, so it also adds them to people-managers (difficulty 1+)",
            misread={"directory_get_profile": lambda p: {**p, "title": "Engineering Manager"}},
        ),
        "partial-no-welcome": Mistake(
            "does the channels, meetings and request, never mails the hire", drop=("mail_send",)
        ),
        "partial-own-calendar": Mistake(
            "looks for free slots in its own calendar only: the hire's hours (another zone at 2+) and the team's"
            " meetings are never checked",
            change={"calendar_find_free_slots": {"usernames": ""}},
        ),
    },
    "offboard-leaver-v0": {
        "partial-revoke-all": Mistake(
            "revokes every grant that names the leaver, the service account's too (1, 2, 3 of them)",
            misread={
                "directory_list_access_requests": lambda r: {
                    **r,
                    "requests": [
                        {**g, "requester": m.group(1)} if (m := re.search(r"by @([\w.-]+)", g["reason"])) else g
                        for g in r["requests"]
                    ],
                }
            },
        ),  # fmt: skip
        "partial-lead-takes-all": Mistake(
            "never reads the component owners: every open ticket goes to the lead",
            misread={"chat_search_posts": lambda r: {**r, "posts": [{"message": ""}]}},
        ),
        "partial-public-only": Mistake(
            "lists only public channels, so the leaver stays in the team's private ones (1, 2, 3 of them)",
            misread={
                "chat_list_channels": lambda r: {**r, "channels": [c for c in r["channels"] if c["type"] == "public"]}
            },
        ),  # fmt: skip
    },
    "sprint-plan-v0": {
        "partial-no-time-off": Mistake(
            "never opens the calendars, so everyone counts as fully available (time off from difficulty 1)",
            misread={"calendar_list_events": lambda r: {**r, "events": []}},
        ),
        "partial-no-share": Mistake("writes the plan, never shares it with the manager", drop=("docs_share",)),
        "partial-training-as-off": Mistake(
            "reads a training day as a day off, so a member in training gives 0 points that day, not 1",
            misread={
                "calendar_list_events": lambda r: {
                    **r,
                    "events": [
                        {**e, "title": "Out of office"} if str(e.get("title", "")).startswith("Training: ") else e
                        for e in r["events"]
                    ],
                }
            },
        ),
    },
    "sprint-execute-v0": {
        "partial-no-meeting": Mistake(
            "moves the tickets and posts, never books the kickoff", drop=("calendar_create_event",)
        ),
        "partial-no-sprint": Mistake(
            "moves the committed tickets to todo but never puts them in the sprint", drop=("tickets_set_sprint",)
        ),
        "partial-resets-started": Mistake(
            "never looks at a ticket's status, so work someone from another team started overnight goes back to"
            " todo (one such ticket at difficulty 1, more at each level)",
            misread={"tickets_get": lambda t: {**t, "status": "backlog"} if isinstance(t, dict) else t},
        ),
    },
    "one-on-ones-ask-v0": {
        "partial-no-notice": Mistake(
            "reads every report's day as starting at midnight, so it proposes times before they can read the question",
            misread={"directory_get_profile": lambda p: {**p, "working_hours": "00:00-23:59"}},
        ),
        "partial-gives-up": Mistake(
            "looks at only the first free time per report and stops when it is already proposed to someone else",
            change={"calendar_find_free_slots": {"limit": 1}},
        ),
        "partial-own-calendar": Mistake(
            "looks for free time in its own calendar only, never the report's (their bookings and hours unseen)",
            change={"calendar_find_free_slots": {"usernames": ""}},
        ),
    },
    "one-on-ones-book-v0": {
        "partial-no-invite": Mistake(
            "books each 1:1 at the agreed time but invites nobody", change={"calendar_create_event": {"attendees": ""}}
        ),
        "partial-no-wait": Mistake(
            "never lets time pass, so it books only the reports who had answered by the time it looked",
            drop=("wait",),
        ),
        "partial-first-report": Mistake(
            "reads only the first of the manager's reports the directory lists: it books that report's 1:1 (when"
            " they were asked) and no other",
            misread={"directory_reports": lambda r: {**r, "reports": r["reports"][:1]}},
        ),
    },
    "roadmap-update-v0": {
        "partial-takes-proposals": Mistake(
            "never reads the roadmap's rule on who decides, so any 'agreed' in a thread counts, a peer's too",
            misread={"docs_read": _no_rule},
        ),
        "partial-first-word": Mistake(
            "reads only the first reply of each thread: a reversal, or an agreement after a question, is missed",
            misread={"chat_read_thread": lambda r: {**r, "posts": r["posts"][:2]} if isinstance(r, dict) else r},
        ),
    },
    "code-review-v0": {
        "partial-approves": Mistake(
            "leaves the right comments, then approves the request instead of requesting changes",
            change={"git_mr_review": {"verdict": "approve"}},
        ),
        "partial-no-exceptions": Mistake(
            "reads the checklist without its exceptions, so it also flags what they allow (the CLI's print() first)",
            misread={"git_read_file": _without_exceptions},
        ),
    },
    "dependency-bump-v0": {
        "partial-pin-only": Mistake(
            "bumps the pin and opens the request without touching a call site, so its pipeline is red",
            drop=("git_edit_file",),
        ),
        "partial-first-file": Mistake(
            "fixes the call sites of the first module the search lists and takes it for the only user of the"
            " library (one more module per difficulty level)",
            misread={
                "git_grep": lambda found: (
                    {
                        **found,
                        "matches": [m for m in found["matches"] if m["path"] == found["matches"][0]["path"]],
                    }
                    if isinstance(found, dict) and found.get("matches")
                    else found
                )
            },
        ),
    },
    "reproduce-bug-v0": {
        "partial-no-ticket": Mistake(
            "writes the failing test and opens the request, but never files the ticket, so it has no key to"
            " give the customer and answers nobody",
            drop=("tickets_create",),
        ),
        "partial-no-reply": Mistake(
            "reproduces and files the bug, but never writes back to the customer (nor to anyone else who mailed)",
            drop=("mail_reply",),
        ),
        "partial-trivial-test": Mistake(
            "opens a request whose test is a bare failing assertion: it fails on the bug, but also on the fix,"
            " and never calls the code with the customer's input",
            change={
                "git_write_file": {
                    "content": "def test_customer_report():\n    assert False, 'reproduces the customer report'\n"
                }
            },
        ),
    },
    "cross-source-question-v0": {
        "partial-first-word": Mistake(
            "reads only the first post of a thread and the first mail of a quote: the recommendation is taken for"
            " the decision (no approver, a withdrawn pick kept) and a superseded quote for the price",
            misread={
                "chat_read_thread": lambda r: {**r, "posts": r["posts"][:1]} if isinstance(r, dict) else r,
                "mail_search": lambda r: {**r, "messages": r["messages"][::-1]} if isinstance(r, dict) else r,
            },
        ),
        "partial-no-docs": Mistake(
            "never opens the drive, so the evaluation's facts are missed: the cost centre and, where the price"
            " is quoted monthly, the prepayment discount",
            drop=("docs_list_folder", "docs_read"),
        ),
    },
}
"""The partial agents of each family, by name."""

_CLAIMS = Mistake(
    "does the doable work, then claims success instead of saying why the rest cannot be done",
    change={"submit": {"summary": "Done: everything is handled as asked."}},
)
PARTIALS |= {
    # Impossible variants (issue 14): claiming success is their characteristic mistake and scores 0 by design
    # (as the no-op does); a second partial explains but gets part of the doable work wrong, where there is any.
    "triage-departed-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-incidents": PARTIALS["triage-tickets-v0"]["partial-no-incidents"],
    },
    "schedule-no-room-v0": {"partial-claims-success": _CLAIMS},
    "budget-over-cap-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-amendment": PARTIALS["quarterly-budget-v0"]["partial-no-amendment"],
    },
    "expenses-no-rate-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-flags": PARTIALS["expense-reconciliation-v0"]["partial-no-flags"],
    },
    "status-report-no-manager-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-label": PARTIALS["weekly-status-report-v0"]["partial-no-label"],
    },
    "access-no-approver-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-rubber-stamp": PARTIALS["access-requests-v0"]["partial-rubber-stamp"],
    },
    "escalation-unknown-key-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-all-high": PARTIALS["customer-escalation-v0"]["partial-all-high"],
    },
    "release-notes-no-tag-v0": {"partial-claims-success": _CLAIMS},
    "history-unanswerable-v0": {"partial-claims-success": _CLAIMS},
    "cross-source-question-unanswerable-v0": {"partial-claims-success": _CLAIMS},
    "fix-test-contradiction-v0": {"partial-claims-success": _CLAIMS},
    "onboard-no-buddy-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-welcome": PARTIALS["onboard-new-hire-v0"]["partial-no-welcome"],
    },
    "offboard-owner-left-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-stays-in-channels": Mistake(
            "reassigns, revokes and explains, but never removes the leaver from the team's channels",
            drop=("chat_remove_member",),
        ),
    },
    "postmortem-no-cause-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-unassigned": PARTIALS["incident-postmortem-v0"]["partial-unassigned"],
    },
    "suspicious-requester-left-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-report": PARTIALS["suspicious-request-v0"]["partial-no-report"],
    },
    "sprint-no-capacity-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-share": PARTIALS["sprint-plan-v0"]["partial-no-share"],
    },
    "history-redo-asker-left-v0": {"partial-claims-success": _CLAIMS},
    "history-followup-asker-left-v0": {"partial-claims-success": _CLAIMS},
    "ship-fix-owners-left-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-shell": PARTIALS["ship-fix-v0"]["partial-no-shell"],
    },
    "sprint-execute-cancelled-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-meeting": PARTIALS["sprint-execute-v0"]["partial-no-meeting"],
    },
    "one-on-ones-ask-on-leave-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-notice": PARTIALS["one-on-ones-ask-v0"]["partial-no-notice"],
        "partial-gives-up": PARTIALS["one-on-ones-ask-v0"]["partial-gives-up"],
    },
    "one-on-ones-book-on-leave-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-invite": PARTIALS["one-on-ones-book-v0"]["partial-no-invite"],
        "partial-no-wait": PARTIALS["one-on-ones-book-v0"]["partial-no-wait"],
    },
    # These three have no doable part (as release-notes-no-tag): claiming success is the one partial, and the
    # bump's second says why in its summary but never on the ticket, where the reporter would read it.
    "code-review-closed-v0": {"partial-claims-success": _CLAIMS},
    "roadmap-update-withdrawn-v0": {"partial-claims-success": _CLAIMS},
    "dependency-bump-unreleased-v0": {
        "partial-claims-success": _CLAIMS,
        "partial-no-ticket-comment": Mistake(
            "says in its summary that 2.0.0 is not released, but never comments on the ticket",
            drop=("tickets_comment",),
        ),
    },
    "reproduce-bug-fixed-v0": {"partial-claims-success": _CLAIMS},
}


class _Flawed(EpisodeEnv):
    """The oracle's view of the episode, with one mistake made on the way to the tools."""

    def __init__(self, env: EpisodeEnv, mistake: Mistake) -> None:
        super().__init__(env.episode, env.prompt, env.info)
        self.mistake = mistake

    def call(self, name: str, /, **arguments: Any) -> Any:
        if name in self.mistake.drop:
            return {}
        out = super().call(name, **{**arguments, **self.mistake.change.get(name, {})})
        misread = self.mistake.misread.get(name)
        return misread(out) if misread is not None else out


def play_partial(episode: Episode, family: str, agent: str, seed: int, options: dict[str, Any]) -> Any:
    """Reset and let the oracle play with the agent's mistake; submit if it stops early; return the score."""
    prompt, info = episode.reset(seed=seed, options=options)
    env = _Flawed(EpisodeEnv(episode, prompt, info), PARTIALS[family][agent])
    try:
        episode.family.oracle(env)
    except Exception:  # noqa: BLE001, S110 - a dropped call can leave the oracle without what it expected: it stops there
        pass
    if not episode.done:
        env.call("submit", summary="stopped")
    return episode.grade()


def verify(episode: Episode) -> Verdict | None:
    """The family's verifier on the episode's current state (None if the family has none)."""
    check = VERIFIERS.get(episode.scenario_id)
    if check is None:
        return None
    live = episode._require_live()
    session = live.ctx.session
    session.flush()
    return check(
        Evidence(
            sql=Sql.of(session),
            params=live.instance.params,
            actor_id=live.ctx.actor.employee_id,
            changes=log_since(session, live.start_seq),
            steps=live.steps.records,
            workspace=live.code.workspace if live.code is not None else None,
        )
    )


@dataclass
class Cell:
    """The rewards of one agent at one difficulty in one family."""

    rewards: list[float] = field(default_factory=list)

    @property
    def mean(self) -> float:
        """Mean reward."""
        return statistics.fmean(self.rewards) if self.rewards else 0.0

    @property
    def std(self) -> float:
        """Population standard deviation of the reward."""
        return statistics.pstdev(self.rewards) if len(self.rewards) > 1 else 0.0

    @property
    def pass_rate(self) -> float:
        """Share of episodes with reward 1.0."""
        return sum(r >= 1.0 for r in self.rewards) / len(self.rewards) if self.rewards else 0.0


@dataclass
class Report:
    """Rewards per (family, difficulty, agent), and the grader-verifier agreement per family."""

    cells: dict[tuple[str, int, str], Cell] = field(default_factory=dict)
    agree: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    def agreement(self, family: str) -> float:
        """Share of ``family``'s episodes where "reward 1.0" and "the verifier says solved" agree."""
        return self.agree.get(family, 0) / self.total[family] if self.total.get(family) else 1.0

    def ordering(self, family: str) -> dict[str, Any]:
        """Whether ``family``'s rewards are a learnable signal (issue 13 item 4), judged on this report's cells.

        ``ordered``: every partial agent's mean lies strictly between the no-op's and the oracle's at every
        difficulty played; ``difficulty_lowers``: the mean over the partial agents strictly falls as difficulty
        rises. Impossible variants are excluded from both (None, with the reason): their characteristic partial
        claims success and scores 0 by the issue's own rule, exactly as the no-op does. A family with no partial
        agents, or played at one difficulty only, cannot show a slope: that verdict is None too.
        """
        from scenarios.registry import registered

        levels = sorted({d for (f, d, _a) in self.cells if f == family})
        if any(r.id == family and r.impossible for r in registered()):
            return {"ordered": None, "difficulty_lowers": None,
                    "why": "impossible variant: its partial claims success and scores 0 by design"}  # fmt: skip
        partials = sorted({a for (f, _d, a) in self.cells if f == family and a.startswith("partial-")})
        if not partials:
            return {"ordered": None, "difficulty_lowers": None, "why": "no partial agents"}
        unordered: list[str] = []
        slope: list[float] = []
        for level in levels:
            noop, oracle = self.cells.get((family, level, "noop")), self.cells.get((family, level, "oracle"))
            here = [(a, c.mean) for a in partials if (c := self.cells.get((family, level, a))) is not None]
            for agent, mean in here:
                if noop is None or oracle is None or not noop.mean < mean < oracle.mean:
                    unordered.append(f"d{level} {agent} {mean:.3f}")
            slope.append(statistics.fmean(m for _a, m in here) if here else 0.0)
        lowers = all(a > b for a, b in zip(slope, slope[1:], strict=False)) if len(slope) > 1 else None
        return {"ordered": not unordered, "difficulty_lowers": lowers, "unordered": unordered,
                "partial_means": {f"d{lv}": round(m, 4) for lv, m in zip(levels, slope, strict=True)}}  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The report as JSON: rows per cell, agreement and ordering per family, every disagreement."""
        rows = [
            {"family": f, "difficulty": d, "agent": a, "episodes": len(c.rewards), "mean": round(c.mean, 4),
             "std": round(c.std, 4), "pass_rate": round(c.pass_rate, 4)}
            for (f, d, a), c in sorted(self.cells.items())
        ]  # fmt: skip
        families = sorted(self.total)
        return {
            "rows": rows,
            "agreement": {f: {"episodes": self.total[f], "agree": self.agree.get(f, 0)} for f in families},
            "disagreements": self.disagreements,
            "ordering": {f: self.ordering(f) for f in sorted({f for (f, _d, _a) in self.cells})},
        }


def agents_for(family: str) -> list[str]:
    """Every agent calibration plays on ``family``: the built-in ones and its partial agents."""
    return [*AGENTS, *PARTIALS.get(family, {})]


def calibrate(
    families: Iterable[str],
    *,
    seeds: Iterable[int],
    difficulties: Iterable[int] = (1, 2, 3),
    agents: Iterable[str] | None = None,
    episode_factory: Callable[[str], Episode] = Episode,
    on_episode: Callable[[str, str, int, int], None] | None = None,
) -> Report:
    """Play every agent of every family over ``seeds`` x ``difficulties``; grade, verify, tabulate."""
    report = Report()
    seeds, difficulties = list(seeds), list(difficulties)
    for family in families:
        names = list(agents) if agents is not None else agents_for(family)
        with episode_factory(family) as episode:
            for difficulty in difficulties:
                for agent in names:
                    if agent.startswith("partial-") and agent not in PARTIALS.get(family, {}):
                        continue
                    for seed in seeds:
                        _one(report, episode, family, agent, seed, difficulty)
                        if on_episode is not None:
                            on_episode(family, agent, seed, difficulty)
    return report


def _one(report: Report, episode: Episode, family: str, agent: str, seed: int, difficulty: int) -> None:
    options = {"difficulty": difficulty}
    if agent.startswith("partial-"):
        score = play_partial(episode, family, agent, seed, options)
    else:
        score = run_agent(episode, agent, seed, options)
    report.cells.setdefault((family, difficulty, agent), Cell()).rewards.append(score.value)
    verdict = verify(episode)
    if verdict is None:
        return
    report.total[family] = report.total.get(family, 0) + 1
    if verdict.solved == (score.value >= 1.0):
        report.agree[family] = report.agree.get(family, 0) + 1
    else:
        report.disagreements.append(
            {"family": family, "agent": agent, "seed": seed, "difficulty": difficulty, "reward": score.value,
             "verifier": verdict.solved, "verifier_reasons": list(verdict.reasons)[:5],
             "failed_checks": [f"{c.id}: {c.evidence[:160]}" for c in score.checks if not c.passed][:5]}
        )  # fmt: skip

"""Merge requests from ticket events: the code work a ticket's history records, as the forge would show it.

Why (issue 12 item 1): a ticket that went to review and then to done was reviewed somewhere. Each such ticket
of a team that owns a repository (a share of them, and every resolved incident) gets the merge request its
status changes imply, written from the same event (``g.stories``) as its title and comments:

* opened by the ticket's assignee from a branch named after the key (``DAT-31-add-the-missing-index``) at the
  moment the ticket entered review; title and description name the key, say what changed and name the module
  of the ticket's component (```` `pkg/module.py` ````), which ``worlds.repos`` reads to write the branch's
  commits into that file;
* reviewed by a teammate who is not the author and was hired by then: an approval, or first a request for
  changes, a fix-up the author announces in a note (the repository gets a fix-up commit at that moment), then
  the approval; a ticket that bounced from review back to work had its changes requested before the bounce,
  and sometimes its first request was closed and a second one opened;
* merged by the reviewer or the author after the approval and before the ticket's done transition; the
  ticket gets a comment naming the request (``data-service!12``);
* a ticket still in review has an open request; its branch stays in the repository.

Every action lands in its actor's working hours (``Gen.when``) inside the window the ticket's status history
leaves for it; a ticket whose window has no room for a review is left without a request rather than given an
impossible one. Requests carry no commit ids: the repositories are built later, lazily, from these rows
(``worlds.repos``), so ``source_head`` is empty and ``merge_commit`` null, and checks match a request to its
commits by branch name and key (see ``worlds.repos.history_requests``). A verdict's ``commit_sha`` is the same
empty head, so the forge (``mcp_tools.git.mr``, which counts an approval only at the recorded head) shows a
merged history request as approved by its reviewer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from worlds.generate.common import Gen, slug
from worlds.generate.language import Dice, Style, cap, chat_voice, one_of
from worlds.repos import module_name, package_name

MR_SHARE = 0.7
"""Share of a team's reviewed-and-done tickets that went through a merge request (incidents always do)."""

CLOSED_SHARE = 0.3
"""Share of bounced tickets whose first request was closed and replaced by a second one."""

NOT_RUN = {"status": "not_run"}


@dataclass(kw_only=True)
class _Note:
    author: int
    kind: str
    body: str
    at: datetime


@dataclass(kw_only=True)
class _Draft:
    """One merge request before numbering: requests are numbered per repository in opening order."""

    ticket: dict[str, Any]
    repo: dict[str, Any]
    author: int
    branch: str
    title: str
    description: str
    state: str
    opened: datetime
    updated: datetime
    merged: datetime | None = None
    merger: int | None = None
    notes: list[_Note] = field(default_factory=list)
    number: int = 0


def _change(ev: Any) -> tuple[str, str]:
    """What the request changes and why, in the words the ticket's own comments use.

    A bug or incident changes what its assignee found (``ev.fix`` because ``ev.cause``); other work says what
    the ticket asked for, drawn from the event's slots so the text names the same component and people.
    """
    s = ev.slots
    if ev.kind in ("bug", "incident"):
        return ev.fix, ev.cause
    if ev.kind == "story" and s["goal"] in ev.title:
        return f"let {s['persona']} {s['goal']} from the {s['c']}", f"{s['persona']} had to ask support to do it"
    options = (
        (f"handle {s['topic']} in the {s['c']}", f"{s['seg']} ran into {s['topic']} there"),
        (f"update the {s['c']} for {s['seg']}", f"the {s['c']} did not cover {s['seg']}"),
        (f"add {s['feat']} to the {s['c']}", f"{s['cust']} asked for {s['feat']}"),
    )
    return options[sum(map(ord, ev.title)) % len(options)]


def _title(words: Dice, key: str, change: str) -> str:
    return one_of(words, f"{key}: {cap(change)}", f"{cap(change)} ({key})", f"[{key}] {cap(change)}")


def _description(words: Dice, style: Style, key: str, ev: Any, change: str, why: str, paths: tuple[str, str]) -> str:
    """The request's description in its author's register; always names the key and the module it touches."""
    module, test = paths
    closes = one_of(words, f"Closes {key}.", f"Fixes {key}.", f"Resolves {key}.")
    if style.register == "terse":
        return f"{closes} Cause: {why}. Change: {change}. Touches `{module}` + `{test}`."
    if style.register == "chatty":
        lead = one_of(
            words,
            f"This one is for {key} ({ev.summary}).",
            f"Picking up {key}: {ev.summary}.",
            f"Here's the change for {key}.",
        )
        check = one_of(
            words,
            f"Tried it against {ev.slots['env']} and it behaves.",
            f"Happy to walk anyone through the {ev.slots['c']} bits.",
            "Tests pass locally.",
        )
        return (
            f"{lead} Turns out {why}, so the change is to {change}. Most of it is in `{module}`, with a test in "
            f"`{test}`. {check}\n\n{closes}"
        )
    return (
        f"## What\n\n{cap(change)}.\n\n## Why\n\n{key}: {ev.summary}. The cause: {why}.\n\n"
        f"## Changes\n\n- `{module}`: the change itself.\n- `{test}`: a test for the case in {key}.\n\n{closes}"
    )


class _Builder:
    """The drafts of one generation run, with the helpers that place each action in its actor's hours."""

    def __init__(self, g: Gen) -> None:
        self.g = g
        self.words = Dice(g.seeds.rng("history/code"))
        self.employees = g.rows["employees"]
        self.drafts: list[_Draft] = []

    def draft(self, t: dict[str, Any], repo: dict[str, Any], ev: Any, opened: datetime, branch: str) -> _Draft:
        """An open request for ticket ``t`` by its assignee, written from the ticket's event."""
        change, why = _change(ev)
        pkg, mod = package_name(repo["name"]), module_name(ev.component)
        author = int(t["assignee_id"])
        return _Draft(
            ticket=t,
            repo=repo,
            author=author,
            branch=branch,
            title=_title(self.words, t["key"], change),
            description=_description(
                self.words,
                self.g.styles[author - 1],
                t["key"],
                ev,
                change,
                why,
                (f"{pkg}/{mod}.py", f"tests/test_{mod}.py"),
            ),
            state="open",
            opened=opened,
            updated=opened,
        )

    def fit(self, emp: int, lo: datetime, hi: datetime, minutes: int) -> datetime | None:
        """``emp``'s first working moment ``minutes`` after ``lo``, if it is before ``hi`` (else None)."""
        at = self.g.when(emp, lo + timedelta(minutes=minutes))
        return at if at is not None and at < hi else None

    def teammates(self, author: int, at: datetime) -> list[int]:
        """People of the author's team who could review at ``at``: hired by then, active, not the author."""
        team = self.employees[author - 1]["team_id"]
        out = [
            e
            for e in self.g.index("employees", "team_id", "id").get(team, [])
            if e != author and self.employees[e - 1]["active"] and self.employees[e - 1]["hire_date"] <= at.date()
        ]
        start = self.words.integers(len(out)) if out else 0
        return out[start:] + out[:start]

    def note(self, emp: int, intent: str, ev: Any, key: str) -> str:
        """A review note in its author's voice."""
        s, w = ev.slots, self.words
        if intent == "approve":
            text = one_of(
                w,
                "LGTM.",
                f"Looks good, thanks for adding the test for {key}.",
                f"Approved. Checked the {s['c']} path against {s['env']}.",
                "Nice and small, approving.",
                f"Good catch on {s['seg']}. Ship it.",
            )
        elif intent == "request_changes":
            text = one_of(
                w,
                f"Could you add a test for {s['seg']} before we merge?",
                f"This also changes the {s['c']} for {s['seg']}; please keep their behaviour as it is.",
                f"The test only covers the happy path; what happens when {s['trig']}?",
                f"Please split the {s['topic']} part out, it is a separate change.",
            )
        elif intent == "fixup":
            text = one_of(
                w,
                "Addressed the review, pushed a fix-up.",
                f"Pushed a fix-up: added the {s['seg']} case.",
                "Done, fix-up commit is up. Mind taking another look?",
            )
        else:  # a request left open with a question
            text = one_of(
                w,
                f"Taking a look at this today; is {s['env']} covered too?",
                f"Started reviewing. Does this touch {s['seg']}?",
            )
        return chat_voice(w, self.g.styles[emp - 1], text)

    def review(
        self, d: _Draft, ev: Any, lo: datetime, hi: datetime, changes_first: bool = False, quick: bool = False
    ) -> bool:
        """Approve (maybe after requested changes and a fix-up) and merge ``d`` inside [lo, hi); False if no room.

        ``quick``: the review and the merge follow within minutes (a small change, a window of minutes).
        """
        w, key = self.words, d.ticket["key"]
        for reviewer in self.teammates(d.author, lo)[:4]:
            notes: list[_Note] = []
            start = lo
            if changes_first:
                asked = self.fit(reviewer, lo, hi, w.integers(30, 300))
                fixed = self.fit(d.author, asked, hi, w.integers(30, 600)) if asked else None
                if asked is not None and fixed is not None:
                    notes.append(
                        _Note(
                            author=reviewer,
                            kind="request_changes",
                            body=self.note(reviewer, "request_changes", ev, key),
                            at=asked,
                        )
                    )
                    notes.append(
                        _Note(author=d.author, kind="comment", body=self.note(d.author, "fixup", ev, key), at=fixed)
                    )
                    start = fixed
            approved = self.fit(reviewer, start, hi, w.integers(2, 8) if quick else w.integers(20, 300))
            if approved is None:
                continue
            for merger in (reviewer, d.author) if w.chance(0.5) else (d.author, reviewer):
                merged = self.fit(merger, approved, hi, w.integers(1, 4) if quick else w.integers(1, 90))
                if merged is not None:
                    notes.append(
                        _Note(
                            author=reviewer, kind="approve", body=self.note(reviewer, "approve", ev, key), at=approved
                        )
                    )
                    d.notes.extend(notes)
                    d.state, d.merged, d.merger, d.updated = "merged", merged, merger, merged
                    return True
        return False


def _windows(changes: list[tuple[str, datetime]]) -> tuple[list[datetime], list[datetime], datetime | None]:
    """When the ticket entered review, when it went back to work from review, and when it was done."""
    reviews = [at for s, at in changes if s == "in_review"]
    backs = [
        at for (p, _), (s, at) in zip(changes, changes[1:], strict=False) if p == "in_review" and s == "in_progress"
    ]
    done = next((at for s, at in changes if s == "done"), None)
    return reviews, backs, done


def _bounced(
    b: _Builder,
    t: dict[str, Any],
    repo: dict[str, Any],
    ev: Any,
    branch: str,
    reviews: list[datetime],
    back: datetime,
    done: datetime,
) -> bool:
    """A ticket sent back from review: changes requested then approved, or a first request closed for a second.

    False (nothing drafted) when the history leaves no room for either; the caller then tries a plain review.
    """
    w, author, key = b.words, int(t["assignee_id"]), t["key"]
    first = b.draft(t, repo, ev, reviews[0], branch)
    if w.chance(CLOSED_SHARE):
        closed_at = b.g.when(author, back)
        second = b.draft(t, repo, ev, reviews[1], f"{branch}-v2")
        if closed_at is None or not b.review(second, ev, reviews[1], done, changes_first=False):
            return False
        first.state, first.updated = "closed", closed_at
        b.drafts.extend((first, second))
        return True
    for reviewer in b.teammates(author, reviews[0])[:1]:
        asked = b.fit(reviewer, reviews[0], back, w.integers(10, 240))
        if asked is not None:
            body = b.note(reviewer, "request_changes", ev, key)
            first.notes.append(_Note(author=reviewer, kind="request_changes", body=body, at=asked))
            first.notes.append(
                _Note(author=author, kind="comment", body=b.note(author, "fixup", ev, key), at=reviews[1])
            )
    if not first.notes or not b.review(first, ev, reviews[1], done, changes_first=False):
        return False
    b.drafts.append(first)
    return True


def build_code(g: Gen) -> None:
    """Merge requests, their review notes and the ticket comments naming them (worlds with the git app)."""
    repos: dict[int, list[dict[str, Any]]] = {}
    for r in g.rows.get("repositories", []):
        repos.setdefault(r["team_id"], []).append(r)
    if not repos or not g.rows.get("tickets"):
        return
    b = _Builder(g)
    w = b.words
    status_ids = g.index("ticket_status_changes", "ticket_id", "id")
    status_rows = g.rows["ticket_status_changes"]
    for t in g.rows["tickets"]:
        project = g.rows["projects"][t["project_id"] - 1]
        owned = repos.get(project["team_id"])
        author = t["assignee_id"]
        ev = g.stories.get(t["id"])
        if not owned or author is None or ev is None or t["type"] == "epic" or t["status"] not in ("done", "in_review"):
            continue
        incident = t["type"] == "incident"
        about = f"{t['title']}\n{t['description']}".lower()
        if not incident and (ev.component.lower() not in about or not w.chance(MR_SHARE)):
            continue  # no request for this ticket; the module must be one the ticket is visibly about
        changes = [(status_rows[i - 1]["to_status"], status_rows[i - 1]["changed_at"]) for i in status_ids[t["id"]]]
        reviews, backs, done = _windows(changes)
        if not reviews:
            continue
        repo = owned[0] if len(owned) == 1 else owned[w.integers(len(owned))]
        branch = f"{t['key']}-{'-'.join(slug(_change(ev)[0]).split('-')[:5])}"
        if t["status"] == "in_review":
            d = b.draft(t, repo, ev, reviews[-1], branch)
            for reviewer in b.teammates(author, d.opened)[:1]:
                looked = b.fit(reviewer, d.opened, g.start_at, w.integers(60, 900))
                if looked is not None and w.chance(0.5):
                    d.notes.append(
                        _Note(author=reviewer, kind="comment", body=b.note(reviewer, "ask", ev, t["key"]), at=looked)
                    )
                    d.updated = looked
            b.drafts.append(d)
            continue
        if done is None:
            continue
        if backs and len(reviews) > 1 and _bounced(b, t, repo, ev, branch, reviews, backs[0], done):
            continue
        d = b.draft(t, repo, ev, reviews[0], branch)
        if b.review(d, ev, reviews[0], done, changes_first=w.chance(0.25)) or b.review(
            d, ev, reviews[0], done, quick=True
        ):
            b.drafts.append(d)
            continue
        # No room between review and done (both steps often land at the start of the same workday): the request
        # was opened while the work was in progress, or, when every step landed on the same instant, soon after
        # the ticket was filed, and reviewed within minutes.
        working = [at for s, at in changes if s == "in_progress" and at < reviews[0]]
        soon = b.fit(int(author), t["created_at"], done, w.integers(15, 120))
        for opened in [*working[-1:], *([soon] if soon is not None else [])]:
            d = b.draft(t, repo, ev, opened, branch)
            if b.review(d, ev, opened, done, quick=True):
                b.drafts.append(d)
                break
    _write(g, b)


def _write(g: Gen, b: _Builder) -> None:
    """Number the drafts per repository in opening order, then write requests, notes and ticket comments."""
    w = b.words
    numbers: dict[int, int] = {}
    for d in sorted(b.drafts, key=lambda d: (d.opened, d.ticket["id"], d.branch)):
        numbers[d.repo["id"]] = d.number = numbers.get(d.repo["id"], 0) + 1
    for d in sorted(b.drafts, key=lambda d: (d.opened, d.ticket["id"], d.branch)):
        key, ref = d.ticket["key"], f"{d.repo['name']}!{d.number}"
        mid = g.add(
            "merge_requests",
            {
                "repository_id": d.repo["id"],
                "number": d.number,
                "title": d.title,
                "description": d.description,
                "author_id": d.author,
                "source_branch": d.branch,
                "target_branch": d.repo["default_branch"],
                "state": d.state,
                "source_head": "",
                "merge_commit": None,
                "pipeline": dict(NOT_RUN),
                "created_at": d.opened,
                "updated_at": d.updated,
                "merged_at": d.merged,
                "merged_by_id": d.merger,
            },
        )
        notes = list(d.notes)
        if d.state == "closed":
            notes.append(
                _Note(
                    author=d.author,
                    kind="comment",
                    body="Closing this; reworking the approach in a new branch.",
                    at=d.updated,
                )
            )
        for n in sorted(notes, key=lambda n: n.at):
            g.add(
                "merge_request_notes",
                {
                    "merge_request_id": mid,
                    "author_id": n.author,
                    "kind": n.kind,
                    "body": n.body,
                    "commit_sha": "" if n.kind in ("approve", "request_changes") else None,
                    "created_at": n.at,
                },
            )
        said: datetime = d.opened
        text = one_of(w, f"MR is up: {ref}.", f"Opened {ref} for review.", f"Review please: {ref} ({key}).")
        if d.state == "merged" and d.merger == d.author and d.merged is not None:
            said, text = d.merged, one_of(w, f"Merged {ref}.", f"{ref} is merged.", f"Change landed in {ref}.")
        elif d.state == "closed":
            said, text = d.updated, f"Closed {ref}; a smaller change follows in a new request."
        style = g.styles[d.author - 1]
        g.add(
            "ticket_comments",
            {
                "ticket_id": d.ticket["id"],
                "author_id": d.author,
                "body": chat_voice(w, style, text),
                "created_at": said,
            },
        )


def fixes_by_key(g: Gen) -> dict[str, tuple[str, int, datetime]]:
    """Ticket key -> (repository, number, merged_at) of its merged request (for the incident stage)."""
    repos = {r["id"]: r["name"] for r in g.rows.get("repositories", [])}
    out: dict[str, tuple[str, int, datetime]] = {}
    for m in g.rows.get("merge_requests", []):
        if m["state"] == "merged":
            key = "-".join(m["source_branch"].split("-")[:2])
            out[key] = (repos[m["repository_id"]], int(m["number"]), m["merged_at"])
    return out

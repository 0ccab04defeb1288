"""``release-notes-v0``: an engineer writes a repository's release notes from the git log and the tickets.

Setup: on the default branch of one team's repository, a release commit tagged ``v1.3.0`` (the last release),
then the work merged since: commits whose subjects name tickets of the team's project (``KEY title``), and
housekeeping commits that name none. The engineer must write a text document at a stated path with the
sections Features, Fixes and Other changes: every ticket named since the tag once, by key and title, in the
section its ticket type says (stories are features, bugs are fixes, anything else is another change); every
commit that names no ticket under Other changes by its subject; then share it with the team lead.

Difficulty adds ticket commits (4, 5, 7, 9) and traps: a ticket the previous release already shipped (named
before the tag) and a second commit for one ticket, which must still be listed once (1+); a task ticket, a
second housekeeping commit, and a change reverted before the release (its ticket and the revert stay out)
(2+); the prompt names neither the tag nor the lead, who must be found from the log's release commit and the
directory, and one commit names two tickets (3).

The rubric (version 2) is one check per ticket (its key in the right section and in no other), one per ticket title,
one that it is listed once, one per housekeeping commit, one per key that must stay out, the share with the lead,
and a gate allowing only the new document and its share. The oracle reads the log, the tickets and the directory
through the tools.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, RepoCommit, ScenarioInstance, WorldDefaults, start_day
from scenarios.library.setup import NEW_DOCUMENT_CHANGES
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

COUNT = (4, 5, 7, 9)
LAST, NEXT = "1.3.0", "1.4.0"
SECTIONS = {"story": "Features", "bug": "Fixes"}
OTHER = "Other changes"
HOUSEKEEPING = (
    ("Pin the linter version in the dev requirements", "requirements-dev.txt", "ruff==0.6.9\npytest==8.3.3\n"),
    ("Explain the local setup in the contributor guide", "CONTRIBUTING.md", "Run `make dev` once, then `make test`.\n"),
    ("Run the test suite on pull requests only", "ci.yml", "on: [pull_request]\njobs: {test: {run: make test}}\n"),
)
TITLES = {
    "story": (
        "Export invoices as CSV from the billing page",
        "Let admins set a default time zone per workspace",
        "Show the last sync time on the dashboard",
        "Add bulk archive to the project list",
        "Remember the chosen sort order per user",
        "Allow a reply-to address on notification mails",
        "Add a search box to the audit log",
        "Support single sign-on for contractor accounts",
    ),
    "bug": (
        "Dashboard totals double-count refunded orders",
        "Password reset link expires after one minute",
        "Export fails when a customer name contains a comma",
        "Pagination skips the last page of results",
        "Wrong time zone offset for users in Adelaide",
        "Notification mails are sent twice after a retry",
        "Search ignores accented characters",
        "Session expires while a long form is open",
    ),
    "task": (
        "Upgrade the HTTP client library to 2.x",
        "Move the nightly cleanup job to the new scheduler",
        "Remove unused feature flags from the settings",
    ),
}
_KEY = re.compile(r"\b[A-Z][A-Z0-9]*-\d+\b")


def section_of(kind: str) -> str:
    """The release-notes section a ticket of type ``kind`` belongs in."""
    return SECTIONS.get(kind, OTHER)


class ReleaseNotes:
    """The ``release-notes-v0`` family."""

    id = "release-notes-v0"
    description = "Engineer writes a repository's release notes from git log since the last tag and the tickets."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Commit the last release and the work since, return the instance with the expected sections."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/release-notes")
        sql = Sql.of(session)
        repo, branch, team, dept, project_id, lead, people = self._pick(sql, rng)
        LAST, NEXT = self._versions(sql, repo)  # noqa: N806 - the module's names, moved on by earlier releases
        actor = people[int(rng.integers(len(people)))]
        others = [p for p in people if p != actor] or [actor]
        now = start_day(session, clock, actor)
        tickets = self._tickets(sql, rng, project_id, people, now, difficulty)
        listed, shipped, reverted = tickets["listed"], tickets["shipped"], tickets["reverted"]
        pkg = repo.replace("-", "_")

        def author() -> str:
            return others[int(rng.integers(len(others)))]

        before: list[RepoCommit] = []
        if shipped is not None:
            before.append(self._commit(repo, pkg, f"{shipped[0]} {shipped[2]}", author(), now - timedelta(minutes=58)))
        release = f"## {LAST}\n\nSee the tag v{LAST}.\n"
        before.append(
            RepoCommit(repo=repo, files={"RELEASES.md": release}, message=f"Release {LAST}", author=lead,
                       at=now - timedelta(minutes=55), tag=f"v{LAST}")
        )  # fmt: skip
        work: list[tuple[str, dict[str, str]]] = []
        pairs = [listed[i : i + 2] for i in range(0, 2, 2)] if difficulty >= 3 else []
        joint = {t[0] for pair in pairs for t in pair}
        for pair in pairs:
            work.append((f"{pair[0][0]} {pair[1][0]}: {pair[0][2]}; {pair[1][2]}", self._files(pkg, pair[0][0])))
        for key, _kind, title in listed:
            if key not in joint:
                work.append((f"{key} {title}", self._files(pkg, key)))
        if difficulty >= 1:
            again = listed[-1]
            work.append((f"{again[0]} Handle an empty list in the follow-up", self._files(pkg, again[0], "followup")))
        other = [HOUSEKEEPING[int(i)] for i in rng.permutation(len(HOUSEKEEPING))][: 2 if difficulty >= 2 else 1]
        for subject, path, content in other:
            work.append((subject, {path: content}))
        order = [int(i) for i in rng.permutation(len(work))]
        after = [work[i] for i in order]
        if reverted is not None:
            subject = f"{reverted[0]} {reverted[2]}"
            flags = f"{pkg}/flags.py"
            k = int(rng.integers(len(after) + 1))
            after.insert(k, (subject, {flags: f'ENABLED = ["{reverted[0].lower()}"]\n'}))
            revert = f'Revert "{subject}"\n\nIt broke the nightly import; it goes back in once that is fixed.'
            after.insert(k + 1 + int(rng.integers(len(after) - k)), (revert, {flags: "ENABLED: list[str] = []\n"}))
        start = now - timedelta(minutes=52)  # the generated history ends an hour before now: these come after it
        commits = [*before]
        for i, (message, files) in enumerate(after):
            commits.append(RepoCommit(repo=repo, files=files, message=message, author=author(),
                                      at=start + timedelta(minutes=3 * i)))  # fmt: skip
        folder = f"Shared/{dept}"
        name = f"{repo} v{NEXT} release notes.odt"
        document = f"{folder}/{name}"
        since = f"the tag v{LAST}" if difficulty < 3 else "the last release tag"
        share = f"your team lead @{lead}" if difficulty < 2 else "your team lead"
        actor_name = str(sql.scalar("SELECT first_name || ' ' || last_name FROM employees WHERE username = ?",
                                    (actor,)))  # fmt: skip
        prompt = (
            f"You are {actor_name} (@{actor}), an engineer on the {team} team, and you are cutting release v{NEXT} "
            f"of {repo} today. Write its release notes as a new document {document} covering everything on "
            f"{branch} since {since}, from the git log and the tickets the commits name. Use three sections, "
            f"Features, Fixes and {OTHER}: list each ticket once, as its key and title, under Features if it is a "
            f"story, Fixes if it is a bug and {OTHER} otherwise; a commit that names no ticket goes under {OTHER} "
            "by its subject. A change reverted before the release is not part of it: leave out both the change and "
            f"its revert. Then share the document with {share} so they can review it before the tag goes out. Do "
            "not change anything else. Call the submit tool when you are done."
        )
        expected = [{"key": k, "title": t, "section": section_of(kind)} for k, kind, t in listed]
        params = {
            "repo": repo,
            "document": document,
            "lead": lead,
            "tickets": expected,
            "other": [s for s, _, _ in other],
            "absent": [t[0] for t in (shipped, reverted) if t is not None],
        }
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=actor,
            rubric=self._rubric(params, shipped, reverted),
            params=params,
            limits=Limits(max_turns=30 + 2 * len(listed), time_budget_s=8 * 3600),
            apps=("directory", "docs", "git", "tickets"),
            difficulty=difficulty,
            repo_commits=tuple(commits),
        )

    # -- setup helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _pick(sql: Sql, rng: np.random.Generator) -> tuple[str, str, str, str, int, str, list[str]]:
        """A team repository, its project, the team's lead and its other engineers."""
        rows = sql.all(
            "SELECT r.name, r.default_branch, t.name, d.name, p.id, e.username, t.id FROM repositories r"
            " JOIN teams t ON t.id = r.team_id JOIN projects p ON p.id = r.project_id"
            " JOIN departments d ON d.id = t.department_id JOIN employees e ON e.id = t.lead_id"
            " WHERE e.active = ? AND e.team_id = t.id"
            " AND (SELECT count(*) FROM employees x WHERE x.team_id = t.id AND x.active = ?) >= 3 ORDER BY r.id",
            (True, True),
        )
        if not rows:
            raise ValueError("no team repository with an active lead and 3+ engineers: world too small")
        r = rows[int(rng.integers(len(rows)))]
        people = sql.column(
            "SELECT username FROM employees WHERE team_id = ? AND active = ? AND username <> ? ORDER BY id",
            (int(r[6]), True, str(r[5])),
        )
        return str(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4]), str(r[5]), [str(p) for p in people]

    @staticmethod
    def _tickets(
        sql: Sql, rng: np.random.Generator, project: int, people: list[str], now: datetime, difficulty: int
    ) -> dict[str, Any]:
        """File the tickets the commits name: to list (stories and bugs, a task from 2), shipped (1+), reverted (2+).

        They are done: each was filed two weeks ago by a teammate and resolved when its change merged.
        """
        pools = {kind: [TITLES[kind][int(i)] for i in rng.permutation(len(TITLES[kind]))] for kind in TITLES}
        kinds = [k for pair in zip(["story"] * 5, ["bug"] * 5, strict=True) for k in pair]
        wanted = kinds[: COUNT[difficulty] - (1 if difficulty >= 2 else 0)] + (["task"] if difficulty >= 2 else [])
        extra = kinds[len(wanted) : len(wanted) + (1 if difficulty >= 1 else 0) + (1 if difficulty >= 2 else 0)]
        made: list[tuple[str, str, str]] = []
        ids = {str(u): int(sql.scalar("SELECT id FROM employees WHERE username = ?", (u,))) for u in people}
        prefix = str(sql.scalar("SELECT key FROM projects WHERE id = ?", (project,)))
        for i, kind in enumerate([*wanted, *extra]):
            title = pools[kind].pop()
            number = int(sql.scalar("SELECT next_ticket_number FROM projects WHERE id = ?", (project,)))
            sql.update("projects", project, {"next_ticket_number": (number, number + 1)})
            key = f"{prefix}-{number}"
            who = ids[people[int(rng.integers(len(people)))]]
            filed, done = now - timedelta(days=14, hours=-i), now - timedelta(hours=2, minutes=-i)
            tid = sql.insert(
                "tickets",
                {"key": key, "project_id": project, "number": number, "type": kind, "title": title,
                 "description": f"{title}. Reported by the team while working on the {kind}s of this cycle.",
                 "status": "done", "priority": "medium", "assignee_id": who, "reporter_id": who, "sprint_id": None,
                 "story_points": 3 if kind != "bug" else None, "created_at": filed, "updated_at": done,
                 "resolved_at": done},
            )  # fmt: skip
            for old, new, at in ((None, "backlog", filed), ("backlog", "done", done)):
                change = {"ticket_id": tid, "from_status": old, "to_status": new, "actor_id": who, "changed_at": at}
                sql.insert("ticket_status_changes", change)
            made.append((key, kind, title))
        listed, rest = made[: len(wanted)], made[len(wanted) :]
        return {
            "listed": listed,
            "shipped": rest[0] if difficulty >= 1 else None,
            "reverted": rest[-1] if difficulty >= 2 else None,
        }

    @staticmethod
    def _files(pkg: str, key: str, part: str = "change") -> dict[str, str]:
        """A small module for one ticket's change (each commit touches its own file)."""
        slug = key.lower().replace("-", "_")
        body = f'"""Change for {key}."""\n\n\ndef {part}_{slug}(items: list[int]) -> list[int]:\n'
        return {f"{pkg}/changes/{slug}_{part}.py": body + "    return sorted(items)\n"}

    def _commit(self, repo: str, pkg: str, message: str, author: str, at: Any) -> RepoCommit:
        """A commit that names a ticket in its subject."""
        key = message.split(" ", 1)[0]
        return RepoCommit(repo=repo, files=self._files(pkg, key), message=message, author=author, at=at)

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(params: dict[str, Any], shipped: Any, reverted: Any) -> Rubric:
        """Version 1, and per ticket that it is listed once in the whole document (version 2).

        A ticket merged in two commits, or named by a commit with another, is one change: the notes name it
        once (the family's trap from difficulty 1, now asked of every ticket, so the evidence names the one
        listed twice). ``ticket-`` already keeps it out of the other sections; this also catches it twice in
        its own section. It counts only once the ticket is in its right section (``needs``) and weighs half: a
        ticket is listed once far more easily than it is placed right, and at full weight the check lifted the
        partial agents more the more tickets a release has (their mean stopped falling with the difficulty).
        """
        old = ReleaseNotes._rubric_v1(params, shipped, reverted)
        checks: list[dict[str, Any]] = []
        for check in old.checks:
            checks.append(check.model_dump(mode="json"))
            if check.id.startswith("title-"):
                key = check.id.removeprefix("title-")
                checks.append(
                    {"id": f"once-{key}", "description": f"{key} is listed once, however many commits name it.",
                     "fn": "doc_mentions_once", "weight": 0.5, "needs": [f"ticket-{key}"],
                     "params": {"document": params["document"], "pattern": rf"\b{re.escape(key)}\b", "label": key}}
                )  # fmt: skip
        return load_rubric(
            {
                "id": old.id,
                "version": 2,
                "description": old.description,
                "checks": checks,
                "provenance": "v2: each ticket listed once (one check per ticket)",
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Version 1 (no per-ticket "listed once"), rebuilt from the current checks for rescoring old traces."""
        rubric = instance.rubric
        if version != 1 or rubric.id != "release-notes":  # a variant's rubric has its own history
            return None
        checks = [c.model_dump(mode="json") for c in rubric.checks if not c.id.startswith("once-")]
        return load_rubric({"id": rubric.id, "version": 1, "description": rubric.description, "checks": checks})

    @staticmethod
    def _rubric_v1(params: dict[str, Any], shipped: Any, reverted: Any) -> Rubric:
        """One check per ticket and title, per housekeeping commit, per key kept out, the share, a gate."""
        document = params["document"]
        checks: list[dict[str, Any]] = []
        for t in params["tickets"]:
            heading = rf"^{re.escape(t['section'])}$"
            checks += [
                {
                    "id": f"ticket-{t['key']}",
                    "description": f"{t['key']} is listed under {t['section']} and nowhere else.",
                    "fn": "doc_section_contains",
                    "params": {"document": document, "heading": heading, "pattern": rf"\b{re.escape(t['key'])}\b",
                               "label": t["key"]},
                },
                {
                    "id": f"title-{t['key']}",
                    "description": f"{t['section']} gives {t['key']}'s title.",
                    "fn": "doc_section_contains",
                    "params": {"document": document, "heading": heading, "pattern": re.escape(t["title"]),
                               "only_there": False, "label": f"{t['key']} title"},
                },
            ]  # fmt: skip
        for i, subject in enumerate(params["other"]):
            checks.append(
                {
                    "id": f"other-{i + 1}",
                    "description": f"{OTHER} lists the commit {subject!r}, which names no ticket.",
                    "fn": "doc_section_contains",
                    "params": {"document": document, "heading": rf"^{OTHER}$", "pattern": re.escape(subject),
                               "label": f"commit {subject!r}"},
                }
            )  # fmt: skip
        for why, t in (("shipped", shipped), ("reverted", reverted)):
            if t is not None:
                reason = "shipped in the previous release" if why == "shipped" else "reverted before the release"
                checks.append(
                    {
                        "id": f"{why}-{t[0]}",
                        "description": f"{t[0]} is named nowhere: it was {reason}.",
                        "fn": "doc_lacks",
                        "params": {"document": document, "pattern": rf"\b{re.escape(t[0])}\b", "label": t[0]},
                    }
                )
        checks += [
            {
                "id": "shared-with-lead",
                "description": f"The notes are shared with the team lead {params['lead']} (view or more).",
                "fn": "doc_shared_with",
                "params": {"document": document, "username": params["lead"], "permission": "view"},
            },
            {
                "id": "no-collateral",
                "description": "Only the new notes, their versions and their shares changed.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {"allowed": NEW_DOCUMENT_CHANGES},
            },
        ]
        return load_rubric(
            {
                "id": "release-notes",
                "version": 1,
                "description": "Every ticket since the last tag once, in its type's section; shared with the lead.",
                "checks": checks,
            }
        )

    # -- oracle -----------------------------------------------------------------------------------------

    @staticmethod
    def _versions(sql: Sql, repo: str) -> tuple[str, str]:
        """The last release and the one being cut: 1.3.0 and 1.4.0, or later ones if notes were written before.

        A campaign can give the task again on the world an earlier episode left, where the notes of v1.4.0 for
        this repository already exist: then that release is out, and this one is the next minor version.
        """
        names = sql.column("SELECT name FROM documents WHERE name LIKE ? ORDER BY id", (f"{repo} v1.%",))
        done = [
            int(m.group(1))
            for n in names
            if (m := re.fullmatch(rf"{re.escape(repo)} v1\.(\d+)\.0 release notes\.odt", str(n)))
        ]
        minor = max([int(NEXT.split(".")[1]), *(d + 1 for d in done)])
        return f"1.{minor - 1}.0", f"1.{minor}.0"

    def oracle(self, env: AgentEnv) -> None:
        """Diff the log against the last tag, look up each named ticket, write the notes, share them."""
        doc = re.search(r"new document (Shared/.+)/([^/]+\.odt) covering", env.prompt)
        repo = re.search(r"release v[\d.]+ of (\S+) today", env.prompt)
        assert doc and repo
        name = repo.group(1)
        head = env.call("git_log", repo=name, limit=200)["commits"]
        tag = re.search(r"since the tag (v[\d.]+)", env.prompt)
        if tag is None:  # the newest release commit carries the last tag
            version = next(m.group(1) for c in head if (m := re.match(r"Release (\d+\.\d+\.\d+)$", c["subject"])))
            tag_name = f"v{version}"
        else:
            tag_name = tag.group(1)
        released = {c["commit"] for c in env.call("git_log", repo=name, ref=tag_name, limit=200)["commits"]}
        new = [c["subject"] for c in reversed(head) if c["commit"] not in released]
        reverted = {m.group(1) for s in new if (m := re.match(r'Revert "(.*)"$', s))}
        parts: dict[str, list[str]] = {"Features": [], "Fixes": [], OTHER: []}
        seen: set[str] = set()
        for subject in new:
            if subject in reverted or subject.startswith("Revert "):
                continue
            keys = _KEY.findall(subject)
            if not keys:
                parts[OTHER].append(subject)
            for key in keys:
                if key not in seen:
                    seen.add(key)
                    ticket = env.call("tickets_get", key=key)
                    parts[section_of(ticket["type"])].append(f"{key}: {ticket['title']}")
        text = "\n\n".join(
            f"# {h}\n\n" + ("\n\n".join(lines) if lines else "Nothing in this release.") for h, lines in parts.items()
        )
        made = env.call("docs_create", name=doc.group(2), folder=doc.group(1), text=text)
        lead = re.search(r"your team lead @([a-z0-9._-]+[a-z0-9])", env.prompt)
        if lead is not None:
            username = lead.group(1)
        else:
            team = env.call("directory_get_profile", username=env.actor)["team"]
            username = env.call("directory_team_members", team=team)["members"][0]["username"]
        env.call("docs_share", document=made["path"], username=username, permission="view")
        env.call("submit", summary=f"release notes for {name} written and shared")

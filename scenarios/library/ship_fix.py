"""``ship-fix-v0``: fix a user-reported bug and ship it: the component's code owners approve, then it merges.

The bug, the repository and the ticket are ``fix-failing-test-v0``'s (this family subclasses it). On top, the
team works by a review rule its lead pinned in the team channel, with the reasons: a fix is merged only after
every code owner of the component (the repository's ``CODEOWNERS`` file, written in setup) approved the
request at its current head, and the ticket is closed with a comment naming the request. The owners are NPC
coworkers (``needs_npcs``, pinned cooperative by default); a named reviewer always looks
(``npcs.apps._review``), but only in their working hours, so the agent must name them and wait.

Difficulty: 0 one owner, a teammate in the agent's time zone; 1 the owner works in another time zone and is
off when the day starts (the wait crosses into their morning); 2 two owners, one local and one remote, both
must approve; 3 two remote owners. The parent's duplicate reports come with it (one per level, linked to the
ticket): the request names each, and each is closed with its own comment naming the request, like the ticket.
(The parent's bug family also rotates with the difficulty.)

What counts: the parent's gates (a request from a new branch, tests and pytest config untouched, every hidden
case passing at the request's head), plus a gate per owner: the request is merged and that owner's last verdict
before the merge approved the merged head (so merging on someone else's approval, or on a stale one, fails;
the forge itself refuses a merge without an approval of the head). Scored: green pipeline, ticket key, each
owner named as ``@username`` in the request, the tests run in the shell, and per ticket (the reported one and
each duplicate) its key in the request, the ticket done and a comment on it naming the request as ``!number``.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from npcs.hours import WorkHours
from scenarios.base import AgentEnv, Limits, RepoCommit, ScenarioInstance
from scenarios.library import setup
from scenarios.library.fix_test import FixFailingTest, duplicates_of, find_bug, fix_and_open, read_task
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds
from worlds.workflow import path_to

WAIT_MINUTES = 60
MAX_WAITS = 40
"""The oracle polls the request hourly for up to 40 hours: a remote owner's next morning is at most ~24 h away."""
MAX_REMINDERS = 6
"""An owner who asked for changes on a fix that has none to make is reminded every third poll, at most this often."""
SHIP_PROMPTS = (
    " Its pipeline must be green. Then ship it by the team's review rules, pinned in ~{channel}: ask the code"
    " owners of what you changed (see CODEOWNERS) to review by naming them as @username in the request, wait until"
    " each of them approved its current head (use the wait tool to let time pass; they may be in other time"
    " zones), merge it, move the ticket to done and comment on it naming the request as !number. Do not change the"
    " tests. Submit when done.",
    " Its pipeline must be green. Our review rules are pinned in ~{channel}: the fix goes in only once every code"
    " owner listed in CODEOWNERS for the files you touch has approved the request, so name them as @username in it"
    " and wait for them (the wait tool lets time pass; owners abroad answer in their own morning). After it is"
    " merged, set the ticket to done and leave a comment on it with the request's !number. Leave the tests alone"
    " and submit when you are finished.",
    " Its pipeline must be green. Please follow the review rules pinned in ~{channel}: @-mention the CODEOWNERS of"
    " the changed code in the request, and do not merge until each of them has approved the latest commit. Use the"
    " wait tool while they get to it; some work in other time zones. Once merged, close the ticket as done with a"
    " comment that names the request as !number. Do not edit the tests. Submit at the end.",
)
"""What the lead asks, in three wordings (drawn from the stream ``scenario/ship-fix/prompt``); each names the
channel of the rules, CODEOWNERS, the wait and the !number the ticket comment needs."""
_PEOPLE = (
    "SELECT id, username, timezone, work_start_minute, work_end_minute, workdays, team_id FROM employees"
    " WHERE active = ? ORDER BY id"
)


def _hours(row: Any) -> WorkHours:
    return WorkHours(str(row[2]), int(row[3]), int(row[4]), str(row[5]))


class ShipFix(FixFailingTest):
    """The ``ship-fix-v0`` family."""

    id = "ship-fix-v0"
    description = "Fix a reported bug, get the code owners' approval (NPCs, maybe in other zones), merge, close."

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """The parent's bug and ticket, plus CODEOWNERS, the pinned review rule and the owners as NPCs."""
        difficulty = max(0, min(3, difficulty))
        base = super().build(session, seeds, clock, difficulty)
        sql = Sql.of(session)
        rng = seeds.rng("scenario/ship-fix")
        now = clock.now()
        p = dict(base.params)
        repo, agent = str(p["repo"]), base.actor
        everyone = sql.all(_PEOPLE, (True,))
        me = next(r for r in everyone if r[1] == agent)
        people = [r for r in everyone if r[0] != me[0]]
        team = [r for r in people if r[6] == me[6]]
        local = [r for r in team if r[2] == me[2] and _hours(r).is_open(now + timedelta(minutes=30))] or [
            r for r in people if _hours(r).is_open(now + timedelta(minutes=30))
        ]
        away = [r for r in people if r[2] != me[2] and not _hours(r).is_open(now + timedelta(minutes=30))]
        # Off for the next four hours when there are enough such people (two owners at difficulty 3).
        remote = [r for r in away if not any(_hours(r).is_open(now + timedelta(hours=h)) for h in range(4))]
        remote = remote if len(remote) >= 2 else away
        wanted = {0: (0,), 1: (1,), 2: (0, 1), 3: (1, 1)}[difficulty]
        owners: list[Any] = []
        for far in wanted:
            pool = [r for r in (remote if far else local) if r not in owners]
            pool = [r for r in pool if r[6] == me[6]] or pool  # a teammate when one fits
            if not pool:
                raise ValueError(
                    f"no {'off-duty remote' if far else 'on-duty'} code owner for @{agent}: world too small"
                )
            owners.append(pool[int(rng.integers(len(pool)))])
        names = [str(o[1]) for o in owners]
        package = str(p["module"]).split(".", 1)[0]
        codeowners = (
            "# Code owners: every owner listed for a path approves changes to it before they merge.\n"
            f"* @{self._lead(sql, int(me[6]), names)}\n/{package}/ {' '.join('@' + n for n in names)}\n"
        )
        first = RepoCommit(
            repo=repo,
            files={"CODEOWNERS": codeowners},
            message="Add CODEOWNERS for the rules package",
            author=str(self._lead(sql, int(me[6]), names)),
            at=now - timedelta(days=3),
        )
        channel = self._rule_post(sql, int(me[6]), repo, now)
        p.update({"owners": names, "channel": channel})
        variant = int(seeds.rng("scenario/ship-fix/prompt").integers(len(SHIP_PROMPTS)))
        prompt = base.prompt.split(" Its pipeline must be green.")[0] + SHIP_PROMPTS[variant].format(channel=channel)
        return dataclasses.replace(
            base,
            scenario_id=self.id,
            prompt=prompt,
            rubric=self._ship_rubric(repo, str(p["ticket"]), len(p["cases"]), names, list(p.get("duplicates") or [])),
            params=p,
            limits=Limits(max_turns=160, time_budget_s=3 * 24 * 3600),
            apps=("git", "shell", "tickets", "chat"),
            npcs={n: "cooperative" for n in names},
            npc_population=tuple(names),
            needs_npcs=True,
            repo_commits=(first, *base.repo_commits),
        )

    @staticmethod
    def _lead(sql: Sql, team: int, owners: list[str]) -> str:
        """The team's lead (owner of the rest of the repository), or the first owner when the team has none."""
        lead = sql.scalar("SELECT e.username FROM teams t JOIN employees e ON e.id = t.lead_id WHERE t.id = ?", (team,))
        return str(lead or owners[0])

    @staticmethod
    def _rule_post(sql: Sql, team: int, repo: str, now: datetime) -> str:
        """The lead pins the review rule, with the reasons, in the team channel (joining it first if needed)."""
        row = sql.one(
            "SELECT c.id, c.name, t.lead_id FROM teams t JOIN channels c ON c.name = 'team-' || t.slug WHERE t.id = ?",
            (team,),
        )
        assert row is not None, "every team has a team channel"
        channel, name, lead = int(row[0]), str(row[1]), int(row[2])
        setup.ensure_member(sql, channel, lead, now)
        rule = (
            f"Review rules for {repo} (pinned): a fix merges only after every code owner of the files it touches"
            " (CODEOWNERS at the repository root) has approved the merge request at its latest commit. Name them"
            " as @username in the request so the forge pings them; if they are in another time zone, wait for"
            " their morning rather than asking someone else. Why: last quarter two fixes merged on a teammate's"
            " LGTM broke billing, and the owners are the ones who know the edge cases. After merging, move the"
            " ticket to done and comment the request's !number on it, so support can tell the reporter; the same for"
            " every duplicate linked to it."
        )
        setup.post(sql, channel, lead, rule, now - timedelta(days=2), pinned=True)
        return name

    @staticmethod
    def _ship_rubric(repo: str, key: str, cases: int, owners: list[str], duplicates: list[str] | None = None) -> Rubric:
        """The parent's gates and scored checks, plus a merge-after-approval gate and a naming check per owner.

        The owners' checks share fixed weights (approval 2, naming 1, split between the owners), so a second
        owner does not dilute the rest of the work. Each duplicate adds its own key, done and comment checks (1
        each), as the reported ticket has: more tickets are more work, and leaving them open costs more.
        """
        parent = FixFailingTest._rubric(repo, key, cases, duplicates)
        checks: list[dict[str, Any]] = [c.model_dump(mode="json") for c in parent.checks]
        for owner in owners:
            checks.append(
                {
                    "id": f"approved-by-{owner}",
                    "description": f"The request merged after @{owner} (code owner) approved its merged head.",
                    "weight": 2 / len(owners),
                    "must": True,
                    "fn": "merge_request_merged_after_approval",
                    "params": {"repo": repo, "username": owner},
                }
            )
            checks.append(
                {
                    "id": f"names-{owner}",
                    "description": f"The request asks @{owner} to review (@username in its title or description).",
                    "weight": 1 / len(owners),
                    "fn": "merge_request_names_reviewer",
                    "params": {"repo": repo, "username": owner},
                }
            )
        checks += [
            {
                "id": "tests-run",
                "description": "The agent ran the tests in the shell.",
                "weight": 1,
                "fn": "tool_called",
                "params": {"name": "shell_run", "only_ok": True},
            },
        ]
        for ticket in [key, *(duplicates or [])]:
            tail = "" if ticket == key else f"-{ticket}"
            checks += [
                {
                    "id": f"ticket-done{tail}",
                    "description": f"{ticket} is done.",
                    "weight": 1,
                    "fn": "row_exists",
                    "params": {"table": "tickets", "where": {"key": ticket, "status": "done"}},
                },
                {
                    "id": f"ticket-names-request{tail}",
                    "description": f"A new comment on {ticket} names the merged request as !number.",
                    "weight": 1,
                    "fn": "ticket_names_merge_request",
                    "params": {"repo": repo, "key": ticket},
                },
            ]
        return load_rubric(
            {
                "id": "ship-fix",
                "version": 1,
                "description": "Fix the reported bug, get every code owner's approval, merge, close the ticket.",
                "checks": checks,
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """No older versions yet."""
        return None

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Fix as the parent does, name the code owners from CODEOWNERS, wait for their approvals, merge, close."""
        key, repo = read_task(env.prompt)
        channel = re.search(r"pinned in ~([a-z0-9-]+)", env.prompt)
        if channel is not None:
            env.call("chat_read_channel", channel=channel.group(1), limit=30)
        path, family = find_bug(env, key, repo)
        dups = duplicates_of(env, key)
        owners = owners_of(env.call("git_read_file", repo=repo, path="CODEOWNERS")["content"], path)
        ask = " ".join(f"@{o}" for o in owners)
        also = f" Also fixes {', '.join(dups)} (duplicates)." if dups else ""
        opened = fix_and_open(env, key, repo, path, family, f"Fixes {key}.{also} {ask} please review (CODEOWNERS).")
        mr_id, approved, reminders = opened["id"], False, 0
        for poll in range(MAX_WAITS):
            mr = env.call("git_mr_get", mr_id=mr_id)
            approved = set(owners) <= set(mr["approved_by"]) and not mr["changes_requested_by"]
            if approved:
                break
            if mr["changes_requested_by"] and poll % 3 == 0 and reminders < MAX_REMINDERS:
                who = " ".join(f"@{o}" for o in mr["changes_requested_by"])
                body = f"{who} the fix is the minimal one and the pipeline is green; could you take another look?"
                env.call("git_mr_comment", mr_id=mr_id, body=body)
                reminders += 1
            env.call("wait", minutes=WAIT_MINUTES)
        if not approved:  # the rule forbids merging without every owner: say so rather than merge
            env.call("submit", summary=f"!{opened['number']} for {key} still waits for {ask}; not merged")
            return
        env.call("git_mr_merge", mr_id=mr_id)
        for ticket in [key, *dups]:
            status = env.call("tickets_get", key=ticket)["status"]
            steps = path_to("done")
            for nxt in steps[steps.index(status) + 1 :] if status in steps else []:
                env.call("tickets_transition", key=ticket, status=nxt)
            body = f"Fixed by merge request !{opened['number']} in {repo}, now merged."
            env.call("tickets_comment", key=ticket, body=body)
        env.call("submit", summary=f"Fixed {key}: merge request !{opened['number']} approved by {ask} and merged")


def owners_of(codeowners: str, path: str) -> list[str]:
    """The owners CODEOWNERS gives ``path``: the last matching line wins, as on the forges (directory or ``*``)."""
    found: list[str] = []
    for line in codeowners.splitlines():
        parts = line.split("#", 1)[0].split()
        if len(parts) < 2:
            continue
        pattern = parts[0]
        if pattern == "*" or ("/" + path).startswith(pattern if pattern.endswith("/") else pattern + "/"):
            found = [h.lstrip("@") for h in parts[1:]]
    return found

"""``roadmap-update-v0``: a product manager brings the roadmap document up to date with last week's decisions.

Setup writes the project's roadmap (``Shared/Product/<Project> roadmap.odt``, owned by the agent): a section per
quarter, one line per item (``name — owner @user — status``), and a "How we change this roadmap" section saying
a change is decided only when the head of product agrees to it in its thread in ~product (or sends it by mail),
and that the latest word in a thread counts. The same rule is pinned in ~product. Last week's threads there
propose changes (move an item to another quarter, drop it, add one with an owner, rename one), each with the
reason product people would give.

The agent edits the roadmap (``docs_replace_section``) so every decided item matches its decision, leaves the
rest as it is, and posts a summary in ~product naming each item it changed.

Difficulty adds decisions (2, 3, 4, 5), of which one is agreed only after a question and its answer in the
thread (two at 3), and proposals nobody with authority agreed to (1, 1, 2, 3: a peer's "agreed", then the lead's
"not yet" or silence); from 2, a decision the head of product reversed the next day in the same thread (the item
stays) and a decision about another project's roadmap (it belongs in that document, which the agent may also
edit); at 3 one decision arrives by mail from the head of product instead of chat.

The rubric is dense: per decision a check on the document (two for an addition or a rename) and one on the
summary; per trap a check that the item is as it was; per untouched item a check that it kept its quarter and
owner; a gate that only the roadmap changed. The oracle reads the roadmap, ~product and the inbox through the
tools and never the params.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from scenarios.library import setup
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

DECISIONS = (2, 3, 4, 5)
DISCUSSED = (1, 1, 1, 2)
PROPOSALS = (1, 1, 2, 3)
ITEMS = 12
FEATURES = (
    "Audit log export", "SAML single sign-on", "Usage-based billing", "Bulk user import", "Custom dashboards",
    "Slack notifications", "Offline mode", "Role templates", "Scheduled reports", "Data residency in the EU",
    "Webhook retries", "Guest workspaces", "Two-step approvals", "Invoice PDF redesign", "Saved search filters",
    "Public API rate limits", "Mobile push digests", "Sandbox environments", "Field-level permissions",
    "Activity timeline", "CSV export for admins", "Self-serve plan upgrades", "In-app onboarding checklist",
    "Account health scores", "Dark mode", "SCIM provisioning", "Quarterly usage review", "Priority support queue",
)  # fmt: skip
NEW_NAMES = (
    "Spend insights", "Workspace analytics", "Approval flows", "Admin activity feed", "Team spaces",
    "Smart alerts", "Report builder", "Partner portal",
)  # fmt: skip
CUSTOMERS = ("Northwind Freight", "Globex Retail", "Initech Health", "Umbrella Logistics", "Stark Travel", "Vandelay")
STATUSES = ("in progress", "in design", "planned", "discovery")
REASONS = {
    "move": (
        "Legal pushed the SOC 2 audit back, so nobody needs it before then",
        "it depends on the new billing API, which lands a quarter later",
        "the team is on the data migration until then and cannot start it sooner",
        "research showed we need another round of customer interviews first",
    ),
    "earlier": (
        "{customer} asked for it in their renewal and the designs are already done",
        "the API it was waiting for shipped early, so the team can start now",
    ),
    "drop": (
        "{customer}, the only customer asking for it, churned last month",
        "usage of the beta has been under 1% for three months",
        "the partner integration it relied on is being sunset",
    ),
    "add": (
        "{customer} made it a condition of the enterprise deal",
        "it came up in six of the last ten enterprise calls",
    ),
    "rename": (
        "customers keep confusing the current name with the old reports page",
        "marketing is launching it under that name",
    ),
}
QUESTIONS = (
    ("Has design seen this?", "Yes, design reviewed it on Tuesday; no new screens are needed."),
    ("Does this clash with the pricing work?", "No, pricing ships first either way; I checked with finance."),
    ("Who tells the sales team?", "I will, in Monday's pipeline review."),
)
AGREE = (
    "Agreed, let's do it.",
    "Agreed. Go ahead and update the roadmap.",
    "Agreed: the reasoning holds, make the change.",
)
PEER_AGREE = ("Agreed from engineering's side, we can absorb that.", "Agreed, makes sense to me.")
DEFER = (
    "Not agreed yet: I want the capacity numbers before we move anything. Let's bring it to Thursday's review.",
    "Not yet. Let's hold this until the pricing work lands; it stays where it is for now.",
)
OPENERS = (
    "Proposal for the {project} roadmap: {action}. Why: {reason}.",
    "{project} roadmap proposal: {action}. {Reason}.",
    "For the {project} roadmap, I'd like to {action}: {reason}.",
)
"""How a thread proposes a change (a thread about another project's roadmap names that project)."""
RULE = (
    "Anyone can propose a change in ~product, in a thread of its own. A change is decided when @{lead} (head of"
    " product) agrees to it in that thread; until then it is a proposal and the roadmap does not move. The latest"
    " word in a thread is what counts. Decisions @{lead} sends by mail count too. Whoever applies decisions posts"
    " what changed in ~product."
)
PROMPTS = (
    "You are {name} (@{actor}), product manager for {project}. Last week's discussion in ~product took decisions"
    " about the {project} roadmap. Bring the roadmap document {path} up to date with what was decided (items moved,"
    " dropped, added with their owner, renamed), following its 'How we change this roadmap' section, and leave every"
    " other item as it is. Then post a short summary in ~product naming each item you changed. Do not change"
    " anything else. Call the submit tool when you are done.",
    "You are {name} (@{actor}), the product manager who keeps the {project} roadmap. Several changes to it were"
    " discussed last week, mostly in ~product. Update the roadmap document {path} so it reflects what was actually"
    " decided under its 'How we change this roadmap' section (moves, drops, additions with their owner, renames);"
    " nothing else on it should change. Post a short summary in ~product naming each item you changed, and change"
    " nothing else. Call the submit tool when you are done.",
)
"""Phrasings of the task (picked by their own seed stream, so the setup does not move with them)."""

_ACTIONS = (
    ("move", re.compile(r"move '(?P<item>[^']+)' to (?P<to>Q[1-4] \d{4})")),
    ("drop", re.compile(r"drop '(?P<item>[^']+)'")),
    ("add", re.compile(r"add '(?P<item>[^']+)' to (?P<to>Q[1-4] \d{4}), owner @(?P<owner>[\w.-]+)")),
    ("rename", re.compile(r"rename '(?P<item>[^']+)' to '(?P<new>[^']+)'")),
)
_WHOSE = re.compile(r"(?:Proposal for|For) the (.+?) roadmap|(.+?) roadmap proposal:")
_LINE = re.compile(r"^(?P<item>.+?) — owner @(?P<owner>[\w.-]+) — (?P<status>.+)$")


def quarter_of(at: datetime) -> tuple[int, int]:
    """(year, quarter) of ``at``."""
    return at.year, (at.month - 1) // 3 + 1


def quarters_from(at: datetime, n: int = 4) -> list[str]:
    """The ``n`` quarters from the one ``at`` falls in, as ``Q4 2026``."""
    year, q = quarter_of(at)
    out = []
    for _ in range(n):
        out.append(f"Q{q} {year}")
        q, year = (1, year + 1) if q == 4 else (q + 1, year)
    return out


def _rank(quarter: str) -> tuple[int, int]:
    """``Q3 2026`` as (2026, 3), so quarters sort in time."""
    q, year = quarter.split()
    return int(year), int(q[1:])


def action_text(d: dict[str, Any], project: str) -> str:
    """The words that propose decision ``d`` (the oracle's regexes read them back)."""
    if d["kind"] == "move":
        return f"move '{d['item']}' to {d['to']}"
    if d["kind"] == "drop":
        return f"drop '{d['item']}'"
    if d["kind"] == "add":
        return f"add '{d['item']}' to {d['to']}, owner @{d['owner']}"
    return f"rename '{d['item']}' to '{d['new']}'"


def parse_action(text: str) -> dict[str, Any] | None:
    """The roadmap action a message proposes, or None."""
    for kind, pattern in _ACTIONS:
        m = pattern.search(text)
        if m:
            return {"kind": kind, **m.groupdict()}
    return None


class RoadmapUpdate:
    """The ``roadmap-update-v0`` family."""

    id = "roadmap-update-v0"
    description = "Product manager updates the roadmap document from the decisions taken in ~product, then sums up."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Write the roadmap, the rule and last week's threads (and mail); return the decided end state."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/roadmap-update")
        sql = Sql.of(session)
        actor, actor_name, lead, peer, project, other, people = self._pick(sql, rng)
        now = start_day(session, clock, actor)
        ids = {u: self._id(sql, u) for u in dict.fromkeys([actor, lead, peer, *people])}
        quarters = quarters_from(now)
        names = [FEATURES[int(i)] for i in rng.permutation(len(FEATURES))]
        fresh = [NEW_NAMES[int(i)] for i in rng.permutation(len(NEW_NAMES))]
        customers = [CUSTOMERS[int(i)] for i in rng.permutation(len(CUSTOMERS))]
        owners = [actor, *people]  # the PM and the project's engineers own this roadmap's items
        items = []
        for k, item in enumerate(names[:ITEMS]):
            qi = min(3, k * 4 // ITEMS)
            status = STATUSES[0 if qi == 0 else 2 + int(rng.integers(2)) if qi > 1 else 1 + int(rng.integers(2))]
            items.append({"item": item, "quarter": quarters[qi], "owner": owners[int(rng.integers(len(owners)))],
                          "status": status})  # fmt: skip
        spare = names[ITEMS:]
        order = [int(i) for i in rng.permutation(ITEMS)]
        kinds = [("move", "drop", "add", "rename")[int(i)] for i in rng.permutation(4)] + ["move"]
        decisions: list[dict[str, Any]] = []
        for kind in kinds[: DECISIONS[difficulty]]:
            if kind == "add":
                to = quarters[1 + int(rng.integers(3))]
                owner = people[int(rng.integers(len(people)))]
                decisions.append({"kind": "add", "item": spare.pop(0), "to": to, "owner": owner})
                continue
            it = items[order.pop(0)]
            d: dict[str, Any] = {"kind": kind, "item": it["item"], "quarter": it["quarter"], "owner": it["owner"]}
            if kind == "move":
                d["to"] = [q for q in quarters if q != it["quarter"]][int(rng.integers(3))]
            elif kind == "rename":
                d["new"] = fresh.pop(0)
            decisions.append(d)
        for k, d in enumerate(decisions):
            d["via"] = "mail" if difficulty == 3 and k == len(decisions) - 1 else "chat"
            d["discussed"] = k < DISCUSSED[difficulty]
        traps: list[dict[str, Any]] = []
        for k in range(PROPOSALS[difficulty]):
            it = items[order.pop(0)]
            kind = ("move", "drop")[k % 2]
            t: dict[str, Any] = {"trap": "proposal", "kind": kind}
            t |= {"item": it["item"], "quarter": it["quarter"], "owner": it["owner"]}
            if kind == "move":
                t["to"] = [q for q in quarters if q != it["quarter"]][int(rng.integers(3))]
            t["lead_says"] = k % 2 == 0  # the lead answers "not yet"; else only a peer agrees
            traps.append(t)
        if difficulty >= 2:
            it = items[order.pop(0)]
            traps.append({"trap": "reversed", "kind": "drop", "item": it["item"], "quarter": it["quarter"],
                          "owner": it["owner"]})  # fmt: skip
            traps.append({"trap": "other", "kind": "add", "item": spare.pop(0), "to": quarters[2],
                          "owner": people[0], "project": other})  # fmt: skip
        untouched = [items[i] for i in order]

        path, doc_id = self._write_docs(
            session, clock, sql, actor, peer, lead, project, other, quarters, items, spare, now
        )
        channel = self._channel(sql, ids, now)
        setup.post(sql, channel, ids[lead], "Reminder on roadmap changes: " + RULE.format(lead=lead),
                   now - timedelta(days=30), pinned=True)  # fmt: skip
        self._threads(sql, channel, ids, rng, decisions, traps, customers, project, lead, actor, peer, people, now)
        mailed = [d for d in decisions if d["via"] == "mail"]
        if mailed:
            self._mail(sql, ids, lead, actor, mailed[0], project, customers[-1], now)
        variants = seeds.rng("scenario/roadmap-update/prompt")
        prompt = PROMPTS[int(variants.integers(len(PROMPTS)))].format(
            name=actor_name, actor=actor, project=project, path=path
        )
        params = {
            "document": path,
            "doc_id": doc_id,
            "project": project,
            "lead": lead,
            "channel": "product",
            "decisions": decisions,
            "traps": [{k: v for k, v in t.items() if k != "lead_says"} for t in traps],
            "untouched": untouched,
        }
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=actor,
            rubric=self._rubric(params),
            params=params,
            limits=Limits(max_turns=30 + 4 * len(decisions + traps), time_budget_s=8 * 3600),
            apps=("chat", "docs", "mail", "directory"),
            difficulty=difficulty,
        )

    # -- setup helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _id(sql: Sql, username: str) -> int:
        return int(sql.scalar("SELECT id FROM employees WHERE username = ?", (username,)))

    @staticmethod
    def _pick(sql: Sql, rng: np.random.Generator) -> tuple[str, str, str, str, str, str, list[str]]:
        """A product manager (not the head), the head of product, a peer, two active projects and three engineers.

        The peer is another product person (the other project's manager); the engineers are the project team's
        active members, who take part in the threads and own items.
        """
        dept = sql.one(
            "SELECT d.id, d.head_id FROM departments d JOIN employees h ON h.id = d.head_id"
            " WHERE d.name = 'Product' AND h.active = ? ORDER BY d.id",
            (True,),
        )
        if dept is None:
            raise ValueError("no Product department with an active head: world too small")
        staff = sql.all(
            "SELECT username, first_name || ' ' || last_name FROM employees WHERE department_id = ? AND active = ?"
            " AND id <> ? ORDER BY id",
            (int(dept[0]), True, int(dept[1])),
        )
        if len(staff) < 2:
            raise ValueError("the Product department needs two active people besides its head: world too small")
        projects = sql.all(
            "SELECT p.id, p.name FROM projects p WHERE p.status = 'active' ORDER BY p.id",
        )
        if len(projects) < 2:
            raise ValueError("two active projects are needed: world too small")
        lead = str(sql.scalar("SELECT username FROM employees WHERE id = ?", (int(dept[1]),)))
        pick = [int(i) for i in rng.permutation(len(staff))]
        actor, name = str(staff[pick[0]][0]), str(staff[pick[0]][1])
        peer = str(staff[pick[1]][0])
        chosen = [int(i) for i in rng.permutation(len(projects))]
        project_id, project = int(projects[chosen[0]][0]), str(projects[chosen[0]][1])
        other = str(projects[chosen[1]][1])
        mates = sql.all(
            "SELECT e.username FROM project_members m JOIN employees e ON e.id = m.employee_id"
            " WHERE m.project_id = ? AND e.active = ? AND e.username NOT IN (?, ?, ?) ORDER BY e.id",
            (project_id, True, actor, peer, lead),
        )
        if len(mates) < 3:
            mates = sql.all(
                "SELECT username FROM employees WHERE active = ? AND username NOT IN (?, ?, ?) ORDER BY id",
                (True, actor, peer, lead),
            )
        people = [str(mates[int(i)][0]) for i in rng.permutation(len(mates))[:3]]
        return actor, name, lead, peer, project, other, people

    @staticmethod
    def _write_docs(
        session: Session, clock: Clock, sql: Sql, actor: str, peer: str, lead: str, project: str, other: str,
        quarters: list[str], items: list[dict[str, Any]], spare: list[str], now: datetime,
    ) -> tuple[str, int]:  # fmt: skip
        """Write this project's roadmap (the agent's) and the other one's (the peer's); return this one's path, id."""
        body = [f"# {project} roadmap", f"Owner: @{actor}. Reviewed every quarter with @{lead}.",
                "# How we change this roadmap", RULE.format(lead=lead)]  # fmt: skip
        for q in quarters:
            body.append(f"# {q}")
            lines = [f"{i['item']} — owner @{i['owner']} — {i['status']}" for i in items if i["quarter"] == q]
            body += lines or ["Nothing planned yet."]
        owner = int(sql.scalar("SELECT id FROM employees WHERE username = ?", (actor,)))
        name = f"{project} roadmap.odt"
        made = setup.create_document(
            session, clock, owner, "Shared/Product", name, "\n\n".join(body), now - timedelta(days=40)
        )
        theirs = [f"# {other} roadmap", f"Owner: @{peer}.", "# How we change this roadmap", RULE.format(lead=lead)]
        for k, q in enumerate(quarters[:2]):
            theirs += [f"# {q}", f"{spare[-1 - k]} — owner @{peer} — planned"]
        peer_id = int(sql.scalar("SELECT id FROM employees WHERE username = ?", (peer,)))
        their = setup.create_document(
            session, clock, peer_id, "Shared/Product", f"{other} roadmap.odt", "\n\n".join(theirs),
            now - timedelta(days=38),
        )  # fmt: skip
        setup.share(sql, int(their["id"]), owner, "edit")  # product managers cover each other's roadmaps
        return f"Shared/Product/{name}", int(made["id"])

    @staticmethod
    def _channel(sql: Sql, ids: dict[str, int], now: datetime) -> int:
        """~product (created two years ago unless a campaign's earlier day made it), with everyone in the threads."""
        found = sql.scalar("SELECT id FROM channels WHERE name = 'product' ORDER BY id LIMIT 1")
        if found is None:
            team = int(sql.scalar("SELECT id FROM chat_teams ORDER BY id LIMIT 1"))
            found = sql.insert(
                "channels",
                {"team_id": team, "name": "product", "display_name": "Product", "type": "O",
                 "purpose": "Product decisions, roadmap changes and launch planning.", "header": "",
                 "creator_id": min(ids.values()), "created_at": now - timedelta(days=730)},
            )  # fmt: skip
        for who in sorted(ids.values()):
            setup.ensure_member(sql, int(found), who, now)
        return int(found)

    @staticmethod
    def _reply(sql: Sql, channel: int, author: int, message: str, at: datetime, root: int) -> int:
        return sql.insert(
            "posts",
            {"channel_id": channel, "author_id": author, "root_id": root, "message": message, "created_at": at,
             "edited_at": None, "deleted_at": None, "is_pinned": False},
        )  # fmt: skip

    def _threads(
        self, sql: Sql, channel: int, ids: dict[str, int], rng: np.random.Generator, decisions: list[dict[str, Any]],
        traps: list[dict[str, Any]], customers: list[str], project: str, lead: str, actor: str, peer: str,
        people: list[str], now: datetime,
    ) -> None:  # fmt: skip
        """One thread per chat decision and per trap, spread over last week in a shuffled order."""
        threads = [("decision", d) for d in decisions if d["via"] == "chat"] + [("trap", t) for t in traps]
        proposers = [peer, actor, *people]
        said: dict[str, int] = {}
        first_question, asked, deferred = int(rng.integers(len(QUESTIONS))), 0, int(rng.integers(len(DEFER)))
        days = [now - timedelta(days=k) for k in range(7, 0, -1) if (now - timedelta(days=k)).weekday() < 5]
        for n, k in enumerate(int(i) for i in rng.permutation(len(threads))):
            what, d = threads[k]
            hour = 1 + 3 * (n % 2) + int(rng.integers(0, 2))  # two threads a day, late morning and afternoon
            at = days[n * len(days) // len(threads)] + timedelta(hours=hour, minutes=5 * n)
            earlier = d["kind"] == "move" and _rank(d["to"]) < _rank(d["quarter"])
            reasons = REASONS["earlier" if earlier else d["kind"]]
            key = "earlier" if earlier else d["kind"]
            said[key] = said.get(key, int(rng.integers(len(reasons)))) + 1  # no reason twice in a row
            reason = reasons[said[key] % len(reasons)].format(customer=customers[n % len(customers)])
            opener = OPENERS[int(rng.integers(len(OPENERS)))]
            text = opener.format(project=d.get("project", project), action=action_text(d, project), reason=reason,
                                 Reason=reason[0].upper() + reason[1:])  # fmt: skip
            proposer = proposers[int(rng.integers(len(proposers)))]
            proposer = peer if d.get("trap") == "other" else proposer  # that roadmap's manager asks
            root = setup.post(sql, channel, ids[proposer], text, at)
            posts: list[tuple[str, str]] = []
            if d.get("discussed"):
                question, answer = QUESTIONS[(first_question + asked) % len(QUESTIONS)]
                asked += 1
                asker = next(p for p in people if p != proposer)
                posts += [(asker, question), (proposer, answer)]
            if what == "decision" or d["trap"] == "other":
                posts.append((lead, AGREE[int(rng.integers(len(AGREE)))]))
            elif d["trap"] == "proposal":
                agreer = next(p for p in [*people, peer] if p != proposer)
                posts.append((agreer, PEER_AGREE[int(rng.integers(len(PEER_AGREE)))]))
                if d["lead_says"]:
                    posts.append((lead, DEFER[deferred % len(DEFER)]))
                    deferred += 1
            else:  # reversed: agreed, then new facts, then the lead keeps it
                customer = customers[(n + 1) % len(customers)]
                posts += [
                    (lead, AGREE[int(rng.integers(len(AGREE)))]),
                    (peer, f"Heads-up before anyone edits the roadmap: {customer} renewed for two years this"
                           f" morning and '{d['item']}' is in their contract."),
                    (lead, f"Scratch that: we keep '{d['item']}' where it is. A two-year renewal that depends on"
                           " it changes the picture."),
                ]  # fmt: skip
            for j, (who, message) in enumerate(posts, 1):
                # minutes apart, except a reversal's news, which comes the next day
                later = timedelta(days=1, hours=j - 3) if what == "trap" and d["trap"] == "reversed" and j > 1 else None
                self._reply(sql, channel, ids[who], message, at + (later or timedelta(minutes=40 * j)), root)

    @staticmethod
    def _mail(
        sql: Sql, ids: dict[str, int], lead: str, actor: str, d: dict[str, Any], project: str, customer: str,
        now: datetime,
    ) -> None:  # fmt: skip
        """The decision the head of product sent by mail after a customer call."""
        to = setup.inbox(sql, ids[actor])
        sender = sql.scalar("SELECT id FROM mailboxes WHERE employee_id = ? ORDER BY id LIMIT 1", (ids[lead],))
        if to is None or sender is None:
            raise ValueError("the product manager and the head of product need mailboxes")
        first = str(sql.scalar("SELECT first_name FROM employees WHERE id = ?", (ids[actor],)))
        me = str(sql.scalar("SELECT first_name FROM employees WHERE id = ?", (ids[lead],)))
        body = (
            f"Hi {first},\n\nWe settled one more {project} roadmap change on yesterday's call with {customer}, so I am"
            f" sending it here rather than in ~product: {action_text(d, project)}. Decided; please put it in the"
            f" roadmap with the others.\n\nThanks,\n{me}"
        )
        subject = f"{project} roadmap: one more change"
        setup.mail(sql, int(sender), to[1], to[0], subject, body, now - timedelta(days=1, hours=2))

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(p: dict[str, Any]) -> Rubric:
        """Per decision: the document's state and the summary; per trap and untouched item: unchanged; a gate."""
        doc = p["document"]
        checks: list[dict[str, Any]] = []
        # Leaving an item alone earns credit only on a roadmap that carries the plainly agreed decisions (chat, no
        # discussion): otherwise a comment, or an edit that changes nothing, would collect every "unchanged" check.
        applied: list[str] = []

        def name(item: str) -> str:
            return rf"(?i)(?<![\w-]){re.escape(item)}(?![\w-])"

        def inside(cid: str, what: str, heading: str, pattern: str, **extra: Any) -> dict[str, Any]:
            return {"id": cid, "description": what, "fn": "doc_section_contains", **extra,
                    "params": {"document": doc, "heading": rf"^{re.escape(heading)}$", "pattern": pattern,
                               "label": what}}  # fmt: skip

        def gone(cid: str, what: str, item: str, **extra: Any) -> dict[str, Any]:
            return {"id": cid, "description": what, "fn": "doc_lacks", **extra,
                    "params": {"document": doc, "pattern": name(item), "label": item}}  # fmt: skip

        for k, d in enumerate(p["decisions"], 1):
            item = d["item"]
            if d["kind"] == "move":
                checks.append(inside(f"d{k}-moved", f"'{item}' moved to {d['to']} (and only there)", d["to"],
                                     name(item)))  # fmt: skip
                checks.append(inside(f"d{k}-owner-kept", f"'{item}' keeps its owner @{d['owner']}", d["to"],
                                     rf"(?i){re.escape(item)}[^\n]*@{re.escape(d['owner'])}\b",
                                     needs=[f"d{k}-moved"]))  # fmt: skip
            elif d["kind"] == "drop":
                checks.append(gone(f"d{k}-dropped", f"'{item}' is dropped from the roadmap", item))
            elif d["kind"] == "add":
                checks.append(inside(f"d{k}-added", f"'{item}' is added under {d['to']}", d["to"], name(item)))
                checks.append(inside(f"d{k}-owner", f"'{item}' names its owner @{d['owner']}", d["to"],
                                     rf"(?i){re.escape(item)}[^\n]*@{re.escape(d['owner'])}\b",
                                     needs=[f"d{k}-added"]))  # fmt: skip
            else:
                checks.append(inside(f"d{k}-renamed", f"'{item}' is renamed '{d['new']}' in {d['quarter']}",
                                     d["quarter"], name(d["new"])))  # fmt: skip
                checks.append(gone(f"d{k}-old-name", f"the old name '{item}' is gone", item))
            if d["via"] == "chat" and not d["discussed"]:
                applied.append(checks[-1 if d["kind"] == "drop" else -2]["id"])
            said = d["new"] if d["kind"] == "rename" else item
            checks.append(
                {"id": f"d{k}-summary", "description": f"The ~product summary names '{said}'.",
                 "fn": "post_in_channel", "needs": [checks[-1 if d["kind"] == "drop" else -2]["id"]],
                 "params": {"channel": p["channel"], "pattern": name(said)}}
            )  # fmt: skip
        for k, t in enumerate(p["traps"], 1):
            item = t["item"]
            if t["trap"] == "other":
                checks.append(gone(f"t{k}-other-project", f"'{item}' (the {t['project']} roadmap's) is not added here",
                                   item, needs=applied, weight=2))  # fmt: skip
                continue
            why = "nobody with authority agreed" if t["trap"] == "proposal" else "the decision was reversed"
            checks.append(inside(f"t{k}-{t['trap']}", f"'{item}' stays in {t['quarter']} ({why})", t["quarter"],
                                 rf"(?i){re.escape(item)}[^\n]*@{re.escape(t['owner'])}\b",
                                 needs=applied, weight=2))  # fmt: skip
        for k, u in enumerate(p["untouched"], 1):
            checks.append(inside(f"u{k}-unchanged", f"'{u['item']}' stays in {u['quarter']} with @{u['owner']}",
                                 u["quarter"], rf"(?i){re.escape(u['item'])}[^\n]*@{re.escape(u['owner'])}\b",
                                 needs=applied))  # fmt: skip
        checks.append(
            {
                "id": "only-the-roadmap",
                "description": "Only the roadmap document changed (and posts in chat).",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        {"table": "documents", "ops": ["update"], "keys": [p["doc_id"]]},
                        {"table": "document_versions", "ops": ["insert"]},
                        {"table": "blobs", "ops": ["insert"]},
                        {"table": "posts", "ops": ["insert"]},
                        {"table": "mentions", "ops": ["insert"]},
                        {"table": "reactions", "ops": ["insert"]},
                        {"table": "channel_members", "fields": ["last_viewed_at"]},
                        {"table": "mail_deliveries", "fields": ["is_read", "read_at", "is_flagged"]},
                    ]
                },
            }
        )
        return load_rubric(
            {
                "id": "roadmap-update",
                "version": 1,
                "description": "The roadmap matches the decisions taken, and only those; a summary names each change.",
                "checks": checks,
            }
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the roadmap and its rule, ~product's threads and the lead's mail; edit, sum up, submit."""
        found = re.search(r"roadmap document (Shared/.+/(.+?) roadmap\.odt)", env.prompt)
        assert found
        path, mine = found.group(1), found.group(2)
        sections = env.call("docs_read", document=path)["sections"]
        rule = " ".join(" ".join(s["paragraphs"]) for s in sections if s["heading"] == "How we change this roadmap")
        named = re.search(r"decided when @([\w.-]+) ", rule)
        lead = named.group(1) if named else None  # no rule read: any agreement counts
        plan: dict[str, list[str]] = {
            s["heading"]: list(s["paragraphs"]) for s in sections if re.match(r"^Q[1-4] \d{4}$", s["heading"] or "")
        }
        decided = self._from_chat(env, lead, mine) + self._from_mail(env, lead, mine)
        changed: list[str] = []
        touched: set[str] = set()
        for d in decided:
            said = self._apply(plan, d, touched)
            if said:
                changed.append(said)
        for heading in sorted(touched):
            text = "\n\n".join(plan[heading]) or "Nothing planned yet."
            env.call("docs_replace_section", document=path, heading=heading, text=text)
        if changed:
            env.call("chat_post", channel="product", message=f"{mine} roadmap updated: " + "; ".join(changed) + ".")
        env.call("submit", summary=f"{len(changed)} roadmap changes applied")

    @staticmethod
    def _from_chat(env: AgentEnv, lead: str | None, project: str) -> list[dict[str, Any]]:
        """Each ~product thread's final decided action for this project's roadmap, oldest thread first."""
        posts = env.call("chat_read_channel", channel="product", limit=200)["posts"]
        out: list[dict[str, Any]] = []
        for root in posts:
            if root["root_id"] is not None:
                continue
            whose = _WHOSE.match(root["message"])
            action = parse_action(root["message"])
            if whose is None or (whose.group(1) or whose.group(2)) != project or action is None:
                continue
            final: dict[str, Any] | None = None
            for reply in env.call("chat_read_thread", post_id=root["id"])["posts"][1:]:
                if lead is not None and reply["author"] != lead:
                    continue
                if re.match(r"(?i)agreed\b", reply["message"]):
                    final = action
                elif re.search(r"we keep '([^']+)'", reply["message"]):
                    final = None
            if final is not None:
                out.append(final)
        return out

    @staticmethod
    def _from_mail(env: AgentEnv, lead: str | None, project: str) -> list[dict[str, Any]]:
        """Decisions sent by mail (by the lead) about this project's roadmap."""
        query: dict[str, Any] = {"text": f"{project} roadmap"}
        if lead is not None:
            query["sender"] = lead
        out = []
        for m in env.call("mail_search", **query)["messages"]:
            body = env.call("mail_read_message", message_id=m["id"])["body"]
            action = parse_action(body)
            if action is not None and "Decided" in body:
                out.append(action)
        return out

    @staticmethod
    def _apply(plan: dict[str, list[str]], d: dict[str, Any], touched: set[str]) -> str | None:
        """Apply one decision to the quarters' lines; returns how the summary says it (None: nothing to apply)."""
        where = next(((q, i) for q, lines in plan.items() for i, line in enumerate(lines)
                      if (m := _LINE.match(line)) and m.group("item") == d["item"]), None)  # fmt: skip
        if d["kind"] == "add":
            if where is not None or d["to"] not in plan:
                return None
            plan[d["to"]] = [x for x in plan[d["to"]] if x != "Nothing planned yet."]
            plan[d["to"]].append(f"{d['item']} — owner @{d['owner']} — planned")
            touched.add(d["to"])
            return f"added '{d['item']}' to {d['to']} (owner @{d['owner']})"
        if where is None:
            return None
        q, i = where
        line = plan[q][i]
        touched.add(q)
        if d["kind"] == "rename":
            plan[q][i] = line.replace(d["item"], d["new"], 1)
            return f"renamed '{d['item']}' to '{d['new']}'"
        del plan[q][i]
        if d["kind"] == "drop":
            return f"dropped '{d['item']}'"
        if d["to"] not in plan:
            return None
        plan[d["to"]] = [x for x in plan[d["to"]] if x != "Nothing planned yet."] + [line]
        touched.add(d["to"])
        return f"moved '{d['item']}' to {d['to']}"

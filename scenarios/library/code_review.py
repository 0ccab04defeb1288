"""``code-review-v0``: review a teammate's merge request against the team's written review checklist.

A teammate opened a merge request in the team's repository: a branch that adds two small library modules
about money (refunds, invoices, ...) and a command-line entry point. The team's review rules are the
repository's ``CONTRIBUTING.md`` (written by the lead, each with the reason and, for some, an explicit
exception): public functions have docstrings, no ``print()`` in library code, no TODO without a ticket key,
money in integer cents, no bare ``except:``. The change breaks some rules at specific files and respects
others; the agent leaves one comment on the request per broken rule naming the file and the rule, then
submits the review as "request changes". It must not approve or merge, change anything else, or flag the
traps: code that looks like a violation but that an exception in the checklist allows (``print()`` in the
CLI entry point, a private helper without a docstring, a TODO that names its ticket, a float that is a
rate), and a violation in a file the request never touched (``legacy_export.py``, an older commit on the
default branch by someone else).

Difficulty: violations 1, 2, 3, 4 and exception traps 1, 2, 3, 4 at 0..3 (plus the pre-existing file at every
level); the CLI's ``print()`` is always one of the traps.

What counts (rubric version 2): gates: the request is still open (not merged or closed) and the agent changed
nothing but notes on it. Scored, per violation: a note naming its file and its rule, that note pointing at the
line, a note flagging it alone (one comment per violation), a note naming the function at fault, and a note
saying the fix the checklist asks for (3.75 in all, split between the violations); per trap, no note naming its
file and its rule (1 each), and per rule the change keeps with no trap about it, no note claiming it broken (0.5
each; both need the verdict, so doing nothing earns none); the verdict: request changes, never an approval (2),
and the review's body naming every broken rule (0.5). Version 1 (no function, fix or summary) stays available
through ``older_rubric`` to rescore old traces.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, RepoCommit, ScenarioInstance, WorldDefaults, start_day
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

RULES: dict[str, str] = {
    "docstring": r"docstring",
    "print": r"\bprint\b",
    "todo": r"\btodo\b",
    "cents": r"\bcents?\b|\bfloat",
    "except": r"\bexcept\b",
}
"""The checklist's rules and how a note names each (case-insensitive); a note must name the file too."""
TRAPS = ("print-cli", "private-docstring", "todo-key", "float-rate")
"""Exception traps (first is always used), each looking like the rule ``TRAP_RULE`` names."""
TRAP_RULE = {"print-cli": "print", "private-docstring": "docstring", "todo-key": "todo", "float-rate": "cents"}
TOPICS = ("refunds", "invoices", "payouts", "discounts", "credits")
"""Module names of the request (all sort after ``cli.py``, so the entry point is the diff's first file)."""
LEGACY = "legacy_export.py"
CHECKLIST = """# Contributing to {repo}

## Code review checklist

Reviewers check every merge request against these rules and leave one comment per broken rule, naming the
file and the rule. A request that breaks any rule gets "request changes"; it is approved only when clean.
The rules apply to what the request changes; older code is cleaned up in its own tickets.

### 1. Every public function has a docstring
Why: the API reference is generated from docstrings, and support reads it when customers ask.
Exception: private helpers (names starting with an underscore) may go without one.

### 2. No print() in library code
Why: the service runs under a process manager that drops stdout; use the module's logger.
Exception: the command-line entry point ({pkg}/cli.py) prints to the terminal on purpose.

### 3. No TODO without a ticket key
Why: TODOs without a ticket are never scheduled and rot.
Exception: a TODO that names its ticket, as TODO({key}), is fine.

### 4. Money is integer cents
Why: float amounts drift (0.1 + 0.2 != 0.3) and the ledger stores cents.
Exception: rates and percentages (a tax or discount rate) may be floats.

### 5. No bare except
Why: a bare except: swallows KeyboardInterrupt and real bugs; catch the exceptions you expect.
"""
PROMPTS = (
    "You are @{agent}, a developer on the team that owns {repo}. @{author} opened merge request !{number} in"
    " {repo} ({branch}) and asked you to review it. Review it against the team's code review checklist"
    " (CONTRIBUTING.md at the repository root): leave one comment on the request for each place the change"
    " breaks a rule, naming the file and the rule, then submit your review (request changes if anything breaks"
    " a rule, approve only if nothing does). Do not merge it or change its code. Submit when done.",
    "@{agent}: you're the reviewer on !{number} in {repo}, @{author}'s branch {branch}. Our review rules are in"
    " CONTRIBUTING.md at the root of the repository. Comment once per rule the change breaks (say which file and"
    " which rule), and then give your verdict on the request: request changes when it breaks a rule, approve when"
    " it is clean. Don't merge it and don't edit the code. Submit at the end.",
    "Hi @{agent}, could you review @{author}'s merge request !{number} in {repo} (branch {branch})? Please go by"
    " the checklist in the repository's CONTRIBUTING.md: one comment on the request per broken rule, with the"
    " file and the rule it breaks, and then your review verdict (request changes, or approve if it is all fine)."
    " Leave merging and fixing to @{author}. Submit when you are finished.",
)
"""What the agent is asked, in three wordings (stream ``scenario/code-review/prompt``)."""


FIXES: dict[str, tuple[str, str]] = {
    "docstring": (r"\b(add|write)\b", "add one"),
    "print": (r"\blog(ger|ging)?\b", "log through the module's logger"),
    "todo": (r"TODO\(|\b(file|open|create|link)\b[^.\n]*\bticket\b", "file a ticket and name it in the TODO"),
    "cents": (r"\bint(eger)?\b", "integer cents"),
    "except": (r"\bcatch\b|\b[A-Z]\w*(Error|Exception)\b", "catch the exceptions it expects"),
}
"""How a comment says the fix each rule's checklist entry asks for (case-insensitive), and the fix in words."""
CULPRITS = {
    "docstring": "{noun}_reference",
    "print": "record_{noun}",
    "todo": "{noun}_within_limit",
    "cents": "{noun}_fee",
    "except": "parse_{noun}_amount",
}
"""The function each violation is planted in, by its module's noun (``_violation`` writes them)."""


def culprit(rule: str, noun: str) -> str:
    """The name of the function in the module about ``noun`` that breaks ``rule``."""
    return CULPRITS[rule].format(noun=noun)


MARKS = {
    "docstring": "def {noun}_reference(",
    "print": 'print("recording"',
    "todo": "# TODO: ",
    "cents": "def {noun}_fee(",
    "except": "except:",
}
"""Where each violation sits in its module (the line a reviewer points at), found by this text."""


def _line_of(source: str, mark: str) -> int:
    """The 1-based number of the line of ``source`` that contains ``mark`` (the first one)."""
    return next(n for n, text in enumerate(source.splitlines(), 1) if mark in text)


def _header(topic: str) -> str:
    return (
        f'"""{topic.title()}: amounts, checks and references for the {topic} flow."""\n\n'
        "import logging\n\nlog = logging.getLogger(__name__)\n"
    )


def _clean(noun: str) -> str:
    return (
        f"\n\ndef {noun}_total_cents(items: list[dict[str, int]]) -> int:\n"
        f'    """Sum of the {noun} items in cents, the unit the ledger stores."""\n'
        '    return sum(int(i["amount_cents"]) for i in items)\n'
    )


def _violation(rule: str, noun: str) -> str:
    """A function that breaks ``rule`` (and only it), in the module about ``noun``."""
    if rule == "docstring":
        return (
            f"\n\ndef {noun}_reference(order_id: int, day: str) -> str:\n"
            f'    return f"{noun[:3].upper()}-{{day}}-{{order_id:06d}}"\n'
        )
    if rule == "print":
        return (
            f"\n\ndef record_{noun}(ledger: list[int], amount_cents: int) -> None:\n"
            f'    """Append one {noun[:-1]} to the ledger (amounts in cents)."""\n'
            '    print("recording", amount_cents)\n'
            "    ledger.append(amount_cents)\n"
        )
    if rule == "todo":
        return (
            f"\n\ndef {noun}_within_limit(amount_cents: int, limit_cents: int) -> bool:\n"
            f'    """Whether a {noun[:-1]} fits under the customer\'s limit."""\n'
            "    # TODO: customers without a limit\n"
            "    return amount_cents <= limit_cents\n"
        )
    if rule == "cents":
        return (
            f"\n\ndef {noun}_fee(amount: float) -> float:\n"
            f'    """The processing fee of a {noun[:-1]}, in dollars."""\n'
            "    return round(amount * 0.029 + 0.30, 2)\n"
        )
    return (
        f"\n\ndef parse_{noun}_amount(text: str) -> int:\n"
        '    """Cents from what a person typed, such as "12.50"."""\n'
        "    try:\n"
        '        whole, _, frac = text.partition(".")\n'
        '        return int(whole) * 100 + int((frac + "00")[:2])\n'
        "    except:\n"
        "        return 0\n"
    )


def _trap(trap: str, noun: str, key: str) -> str:
    """A function that looks like it breaks a rule but that the checklist's exception allows."""
    if trap == "private-docstring":
        return f'\n\ndef _{noun}_cache_key(order_id: int) -> str:\n    return f"{noun}:{{order_id}}"\n'
    if trap == "todo-key":
        return (
            f"\n\ndef {noun}_currency(account: dict[str, str]) -> str:\n"
            f'    """The currency a {noun[:-1]} is paid in (the account\'s)."""\n'
            f"    # TODO({key}): multi-currency accounts\n"
            '    return account.get("currency", "EUR")\n'
        )
    return (
        f"\n\ndef {noun}_discount_rate(tier: str) -> float:\n"
        '    """The discount rate of a customer tier, as a fraction (0.05 is 5%)."""\n'
        '    return {"gold": 0.05, "silver": 0.02}.get(tier, 0.0)\n'
    )


def _cli(pkg: str, topics: list[str]) -> str:
    a, b = topics
    return (
        f'"""Command line: totals of {a} and {b} from a JSON file of items."""\n\n'
        f"import json\nimport sys\n\nfrom {pkg}.{a} import {a}_total_cents\nfrom {pkg}.{b} import {b}_total_cents\n"
        "\n\ndef main(argv: list[str] | None = None) -> int:\n"
        '    """Print both totals, in cents, for the file named on the command line."""\n'
        "    args = sys.argv[1:] if argv is None else argv\n"
        "    with open(args[0], encoding='utf-8') as fh:\n"
        "        items = json.load(fh)\n"
        f'    print("{a}", {a}_total_cents(items))\n'
        f'    print("{b}", {b}_total_cents(items))\n'
        "    return 0\n"
    )


def _legacy(pkg: str) -> str:
    return (
        '"""Nightly CSV export (kept until the reporting service replaces it)."""\n\n'
        "import csv\n\n\ndef export_rows(rows: list[dict[str, str]], path: str) -> int:\n"
        '    """Write ``rows`` to ``path``; returns how many were written."""\n'
        "    try:\n"
        "        with open(path, 'w', newline='', encoding='utf-8') as fh:\n"
        "            writer = csv.DictWriter(fh, fieldnames=sorted(rows[0]))\n"
        "            writer.writeheader()\n"
        "            writer.writerows(rows)\n"
        "    except:\n"
        '        print("export failed")\n'
        "        return 0\n"
        "    return len(rows)\n"
    )


class CodeReview:
    """The ``code-review-v0`` family."""

    id = "code-review-v0"
    description = "Review a teammate's merge request by the written checklist: comment per violation, request changes."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Plant the checklist and a legacy file on the default branch, the request's branch, and open it."""
        difficulty = max(0, min(3, difficulty))
        sql = Sql.of(session)
        rng = seeds.rng("scenario/code-review")
        repos = sql.all(
            "SELECT r.id, r.name, r.team_id, r.project_id, r.default_branch FROM repositories r"
            " WHERE r.name LIKE ? ORDER BY r.id",
            ("%-service",),
        )
        rid, repo, team, project, default = repos[int(rng.integers(len(repos)))]
        people = [
            (int(i), str(u))
            for i, u in sql.all(
                "SELECT id, username FROM employees WHERE team_id = ? AND active = ? ORDER BY id", (team, True)
            )
        ]
        agent = people[int(rng.integers(len(people)))]
        others = [p for p in people if p != agent]
        author = others[int(rng.integers(len(others)))]
        lead = sql.scalar("SELECT e.username FROM teams t JOIN employees e ON e.id = t.lead_id WHERE t.id = ?", (team,))
        older = [p for p in others if p != author] or others
        legacy_author = older[int(rng.integers(len(older)))][1]
        keys = sql.column("SELECT key FROM tickets WHERE project_id = ? ORDER BY id", (project,))
        key = str(keys[int(rng.integers(len(keys)))]) if keys else "OPS-1"
        now = start_day(session, clock, agent[1])
        pkg = str(repo).replace("-", "_")
        picked = [TOPICS[int(i)] for i in rng.permutation(len(TOPICS))[:2]]
        topics = sorted(picked)
        paths = {t: f"{pkg}/{t}.py" for t in topics}
        rules = [list(RULES)[int(i)] for i in rng.permutation(len(RULES))[: difficulty + 1]]
        extra = [TRAPS[1:][int(i)] for i in rng.permutation(len(TRAPS) - 1)[:difficulty]]
        bodies = {t: _header(t) + _clean(t) for t in topics}
        violations: list[dict[str, Any]] = []
        for i, rule in enumerate(rules):
            noun = topics[(i + int(rng.integers(2))) % 2]
            bodies[noun] += _violation(rule, noun)
            violations.append({"file": paths[noun], "rule": rule, "noun": noun})
        planted: list[dict[str, str]] = [{"file": f"{pkg}/cli.py", "trap": "print-cli", "rule": "print"}]
        for trap in extra:
            rule = TRAP_RULE[trap]
            free = [t for t in topics if (paths[t], rule) not in {(v["file"], v["rule"]) for v in violations}]
            noun = free[int(rng.integers(len(free)))]
            bodies[noun] += _trap(trap, noun, key)
            planted.append({"file": paths[noun], "trap": trap, "rule": rule})
        planted.append({"file": f"{pkg}/{LEGACY}", "trap": "pre-existing", "rule": ""})
        for v in violations:
            v["line"] = _line_of(bodies[v.pop("noun")], MARKS[v["rule"]].format(noun=v["file"].rsplit("/", 1)[-1][:-3]))
        branch = f"{author[1]}/{topics[0]}-and-{topics[1]}"
        files = {paths[t]: bodies[t] for t in topics} | {f"{pkg}/cli.py": _cli(pkg, topics)}
        base_commit = RepoCommit(
            repo=str(repo),
            files={"CONTRIBUTING.md": CHECKLIST.format(repo=repo, pkg=pkg, key=key)},
            message="Write down the code review checklist",
            author=str(lead or legacy_author),
            at=now - timedelta(days=12),
        )
        legacy_commit = RepoCommit(
            repo=str(repo),
            files={f"{pkg}/{LEGACY}": _legacy(pkg)},
            message="Add the nightly CSV export",
            author=legacy_author,
            at=now - timedelta(days=9),
        )
        change = RepoCommit(
            repo=str(repo),
            files=files,
            message=f"Add {topics[0]} and {topics[1]} amounts, with a CLI for their totals",
            author=author[1],
            at=now - timedelta(hours=20),
            branch=branch,
        )
        number = int(sql.scalar("SELECT coalesce(max(number), 0) FROM merge_requests WHERE repository_id = ?", (rid,)))
        opened = now - timedelta(hours=19)
        mr_id = sql.insert(
            "merge_requests",
            {
                "repository_id": rid,
                "number": number + 1,
                "title": f"Add {topics[0]} and {topics[1]} amounts and a totals CLI",
                "description": f"New {topics[0]} and {topics[1]} helpers and a small CLI that prints their totals."
                f" @{agent[1]} could you review?",
                "author_id": author[0],
                "source_branch": branch,
                "target_branch": default,
                "state": "open",
                "source_head": "",  # the branch's commit exists only once the task's repository is built
                "merge_commit": None,
                "pipeline": {"status": "not_run"},
                "created_at": opened,
                "updated_at": opened,
                "merged_at": None,
                "merged_by_id": None,
            },
        )
        variant = int(seeds.rng("scenario/code-review/prompt").integers(len(PROMPTS)))
        prompt = PROMPTS[variant].format(agent=agent[1], author=author[1], repo=repo, number=number + 1, branch=branch)
        params = {
            "repo": repo,
            "mr_id": int(mr_id),
            "number": number + 1,
            "author": author[1],
            "branch": branch,
            "violations": violations,
            "traps": planted,
            "ticket": key,
        }
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=agent[1],
            rubric=self.rubric(params),
            params=params,
            limits=Limits(max_turns=40, time_budget_s=4 * 3600),
            apps=("git", "tickets"),
            difficulty=difficulty,
            repo_commits=(base_commit, legacy_commit, change),
        )

    @staticmethod
    def rubric(params: dict[str, Any]) -> Rubric:
        """Version 2: version 1's checks, then per violation its function and fix, and the review's summary.

        Gates: the request still open, nothing else changed. Per violation a comment the author can act on (the
        file and rule, its line, by itself, the function at fault, the fix); per trap and kept rule a spare;
        the verdict and a summary naming the broken rules.
        """
        mr_id, violations = int(params["mr_id"]), params["violations"]
        checks = CodeReview._checks_v1(params)
        checks[0] = {  # the same gate, read from the request's state column alone (a note only bumps updated_at)
            **checks[0],
            "fn": "merge_request_state",
            "params": {"mr_id": mr_id, "state": "open"},
        }
        for v in violations:
            name = v["file"].rsplit("/", 1)[-1]
            flag = f"flags-{v['rule']}-{name}"
            named = {"mr_id": mr_id, "file": v["file"], "pattern": RULES[v["rule"]]}
            fn = culprit(v["rule"], name[:-3])
            checks.append(
                {
                    "id": f"function-{v['rule']}-{name}",
                    "description": f"That note names {fn}(), the function in {v['file']} that breaks the rule.",
                    "weight": 0.25 / len(violations),
                    "needs": [flag],
                    "fn": "merge_request_note_names",
                    "params": {**named, "also": rf"\b{re.escape(fn)}\b"},
                }
            )
            checks.append(
                {
                    "id": f"fix-{v['rule']}-{name}",
                    "description": f"That note says how to fix it as the checklist asks ({FIXES[v['rule']][1]}).",
                    "weight": 0.5 / len(violations),
                    "needs": [flag],
                    "fn": "merge_request_note_names",
                    "params": {**named, "also": FIXES[v["rule"]][0]},
                }
            )
        broken = sorted({str(v["rule"]) for v in violations})
        checks.append(
            {
                "id": "summary",
                "description": f"The review that requests changes says which rules break ({', '.join(broken)}).",
                "weight": 0.5,
                "needs": ["verdict"],
                "fn": "merge_request_review_says",
                "params": {"mr_id": mr_id, "verdict": "request_changes", "patterns": [RULES[r] for r in broken]},
            }
        )
        return load_rubric(
            {
                "id": "code-review",
                "version": 2,
                "description": "Review a merge request by the team's checklist: one actionable comment per violation,"
                " no false flags, request changes and say why.",
                "checks": checks,
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Version 1 (flag, line and one comment per violation; no function, fix or summary), for old traces."""
        if version != 1 or instance.rubric.id != "code-review":  # a variant's rubric has its own history
            return None
        return CodeReview._rubric_v1(dict(instance.params))

    @staticmethod
    def _rubric_v1(params: dict[str, Any]) -> Rubric:
        """Version 1: gates, per violation a flag, its line and a note of its own, per trap a spare, the verdict."""
        return load_rubric(
            {
                "id": "code-review",
                "version": 1,
                "description": "Review a merge request by the team's checklist: one comment per violation, no"
                " false flags, request changes.",
                "checks": CodeReview._checks_v1(params),
            }
        )

    @staticmethod
    def _checks_v1(params: dict[str, Any]) -> list[dict[str, Any]]:
        """Version 1's checks, which version 2 keeps as they were and adds to."""
        mr_id, violations = int(params["mr_id"]), params["violations"]
        checks: list[dict[str, Any]] = [
            {
                "id": "still-open",
                "description": f"!{params['number']} is still open: the reviewer neither merged nor closed it.",
                "weight": 1,
                "must": True,
                "fn": "row_exists",
                "params": {"table": "merge_requests", "where": {"id": mr_id, "state": "open"}, "scope": "any"},
            },
            {
                "id": "nothing-else",
                "description": "The agent only left notes on requests (no code, ticket or other edits).",
                "weight": 1,
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        {"table": "merge_request_notes", "ops": ["insert"]},
                        {"table": "merge_requests", "fields": ["updated_at"]},
                    ]
                },
            },
            {
                "id": "verdict",
                "description": f"The agent's review of !{params['number']} requests changes and never approves.",
                "weight": 2,
                "fn": "merge_request_verdict",
                "params": {"mr_id": mr_id, "verdict": "request_changes"},
            },
        ]
        for v in violations:
            flag = f"flags-{v['rule']}-{v['file'].rsplit('/', 1)[-1]}"
            named = {"mr_id": mr_id, "file": v["file"], "pattern": RULES[v["rule"]]}
            checks.append(
                {
                    "id": flag,
                    "description": f"A note on the request names {v['file']} and the {v['rule']} rule it breaks.",
                    "weight": 2 / len(violations),
                    "fn": "merge_request_note_names",
                    "params": named,
                }
            )
            checks.append(
                {
                    "id": f"points-{v['rule']}-{v['file'].rsplit('/', 1)[-1]}",
                    "description": f"That note points at line {v['line']} of {v['file']}, where the rule breaks.",
                    "weight": 0.5 / len(violations),
                    "needs": [flag],
                    "fn": "merge_request_note_names",
                    "params": {**named, "line": v["line"]},
                }
            )
            others = [[o["file"], RULES[o["rule"]]] for o in violations if o is not v]
            checks.append(
                {
                    "id": f"alone-{v['rule']}-{v['file'].rsplit('/', 1)[-1]}",
                    "description": f"A note flags {v['file']} ({v['rule']}) by itself: one comment per violation.",
                    "weight": 0.5 / len(violations),
                    "needs": [flag],
                    "fn": "merge_request_note_names",
                    "params": {**named, "apart": others},
                }
            )
        kept = sorted(set(RULES) - {v["rule"] for v in violations} - {t["rule"] for t in params["traps"]})
        for rule in kept:
            checks.append(
                {
                    "id": f"keeps-{rule}",
                    "description": f"No note claims the change breaks the {rule} rule (it keeps it everywhere).",
                    "weight": 0.5,
                    "needs": ["verdict"],
                    "fn": "merge_request_note_spares",
                    "params": {"mr_id": mr_id, "file": "", "pattern": RULES[rule]},
                }
            )
        for t in params["traps"]:
            rule = t["rule"]
            what = f"the {rule} rule at {t['file']}" if rule else f"{t['file']}, which the request does not touch"
            checks.append(
                {
                    "id": f"spares-{t['trap']}",
                    "description": f"No note flags {what} ({t['trap']}: the checklist allows it or it is not the"
                    " author's change).",
                    "weight": 1,
                    "needs": ["verdict"],
                    "fn": "merge_request_note_spares",
                    "params": {"mr_id": mr_id, "file": t["file"], "pattern": RULES[rule] if rule else "."},
                }
            )
        return checks

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the request, the checklist and the diff; comment per violation the exceptions do not allow."""
        found = re.search(r"!(\d+) in ([a-z0-9-]+)", env.prompt)
        assert found is not None, "the prompt names the request and the repository"
        number, repo = int(found.group(1)), found.group(2)
        listed = env.call("git_mr_list", repo=repo, state="open")["merge_requests"]
        mr = next(m for m in listed if m["number"] == number)
        checklist = env.call("git_read_file", repo=repo, path="CONTRIBUTING.md", ref=mr["target_branch"])["content"]
        diff = env.call("git_diff", repo=repo, base=mr["target_branch"], head=mr["source_branch"])
        added = _added_lines(str(diff["patch"]))
        findings: list[str] = []
        for entry in diff["files"]:
            path = str(entry["path"])
            if path.endswith(".py"):
                findings += [f"{path} line {n}: {say}" for n, say in lint(path, added.get(path, []), checklist)]
        for body in findings:
            env.call("git_mr_comment", mr_id=mr["id"], body=body)
        if findings:
            body = summary(findings, checklist)
            env.call("git_mr_review", mr_id=mr["id"], verdict="request_changes", body=body)
        else:
            env.call("git_mr_review", mr_id=mr["id"], verdict="approve", body="Clean against the checklist.")
        env.call("submit", summary=f"Reviewed !{number}: {len(findings)} comment(s)")


def _added_lines(patch: str) -> dict[str, list[tuple[int, str]]]:
    """Per file of a unified diff, its added lines with their line numbers in the new file."""
    out: dict[str, list[tuple[int, str]]] = {}
    path, line = "", 0
    for raw in patch.splitlines():
        if raw.startswith("+++ "):
            path = raw[4:].removeprefix("b/")
            out.setdefault(path, [])
        elif raw.startswith("@@"):
            hunk = re.search(r"\+(\d+)", raw)
            line = int(hunk.group(1)) if hunk else 0
        elif raw.startswith("+"):
            out.setdefault(path, []).append((line, raw[1:]))
            line += 1
        elif not raw.startswith("-"):
            line += 1
    return out


def lint(path: str, lines: list[tuple[int, str]], checklist: str) -> list[tuple[int, str]]:
    """The checklist's rules applied to a file's added lines, with the exceptions the checklist states.

    Each finding names the function it sits in and the fix its rule asks for, so the author can act on it
    without opening the checklist.
    """
    allows = checklist.lower()
    cli = "cli.py" in allows and path.endswith("/cli.py")
    found: list[tuple[int, str]] = []
    where = "module level"
    for i, (n, text) in enumerate(lines):
        code = text.strip()
        fn = re.match(r"def (\w+)\(", code)
        if fn is not None:
            name = fn.group(1)
            where = f"{name}()"
            nxt = lines[i + 1][1].strip() if i + 1 < len(lines) else ""
            private = name.startswith("_") and "underscore" in allows
            if not nxt.startswith('"""') and not private:
                found.append((n, f"function {name}() has no docstring (rule 1); add one saying what it returns."))
            rate = re.search(r"rate|percent", name) is not None and "rates and percentages" in allows
            if "float" in code and not rate:
                found.append((n, f"{name}() handles money as a float; amounts must be integer cents (rule 4)."))
        if re.match(r"print\(", code) and not cli:
            found.append((n, f"print() in library code, in {where}; log through the module's logger instead (rule 2)."))
        todo = re.search(r"#\s*TODO(\(([A-Z][A-Z0-9]*-\d+)\))?", code)
        if todo is not None and not (todo.group(2) and "names its ticket" in allows):
            found.append((n, f"a TODO without a ticket key in {where}; file one and write TODO(KEY-123) (rule 3)."))
        if code == "except:":
            found.append((n, f"a bare except: in {where} hides real errors; catch the ones you expect (rule 5)."))
    return found


def summary(findings: list[str], checklist: str) -> str:
    """A "request changes" body naming each checklist rule the findings break, by its title in the checklist."""
    titles = dict(re.findall(r"^###\s*(\d+)\.\s*(.+)$", checklist, re.MULTILINE))
    broken = sorted({int(n) for f in findings for n in re.findall(r"\(rule (\d+)\)", f)})
    said = "; ".join(f"{titles.get(str(n), f'rule {n}')} (rule {n})" for n in broken)
    return f"Requesting changes: {len(findings)} item(s) break the review checklist: {said}. See my comments."

"""``history-question-v0``: a question whose answer the company's own history holds, answered exactly.

The first kind of mined task (issue 13 item 3): the generated past is the task. Nothing is set up and nothing
is rewound; the build lists the facts the world's rows hold about its history, picks one question by the seed,
computes the exact answer from the rows (kept in the hidden params, never written to a table) and asks for it.
The agent must find the answer through the tools and state it in its submit summary, one labelled line a fact.

Every question is about who filed ticket K (of project P). Difficulty adds facts about that person's record as
the tracker holds it; each level keeps the facts of the one before and adds facts that need more of the
history read (issue 13 item 4: a mistake in reading then costs more of the answer):

- 0 ``reporter``: who filed K, and on which day (one ``tickets_get``).
- 1 ``filed-in-project``: who filed K, and how many P tickets they have filed in all (every P ticket read).
- 2 ``open-in-project``: + how many of those P tickets are still open (neither done nor won't do).
- 3 ``filed-everywhere``: + how many tickets they have filed across every project, and how many of those are
  still open (every ticket of the tracker read).

Who filed a ticket is its reporter, which is often not its assignee (the tracker shows the assignee first, and
the first status change is usually the assignee's), and the counts need every page of the search: the search
lists ten tickets unless asked for more, and the search rows hold no reporter, so every ticket is read. Kind 1
asks once per (reporter, project), kinds 2-3 once per reporter, each about the first ticket they filed there
or anywhere, so two questions of one kind never share their answer.

The seed picks the question as ``seed % n`` over the kind's questions in a fixed order, so seeds 0..n-1 of one
world enumerate every question that world holds: the miner (``sim.mine``) counts and validates them that way.
A world without a question of the difficulty's kind gets one of the next easier kind.

The rubric is one exact-fact check per fact (``submit_answer`` on the fact's labelled line: every value stated
under the label must be the answer, so listing candidates earns nothing) and a gate that the agent changed
nothing: answering a question is reading. The oracle finds the answer through the tools; it never reads the
params.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds
from worlds.workflow import STATUSES, TERMINAL_STATUSES

T = TypeVar("T")

KINDS = ("reporter", "filed-in-project", "open-in-project", "filed-everywhere")
USER = r"@([a-z0-9][a-z0-9._-]*[a-z0-9])"
DATE = r"(?<![\d-])(\d{4}-\d\d-\d\d)(?![\d-])"
COUNT = r"(?<![\w.:-])(\d+)(?![\w.:-])"
FORMAT = (
    "Put the answer in your submit summary: name people by @username and days as YYYY-MM-DD (UTC), and state "
    "no other usernames, days or numbers. Only read: change nothing. Call the submit tool when you are done."
)
"""The answer format of a one-fact question (``history-unanswerable-v0`` asks in it)."""
OPEN = tuple(s for s in STATUSES if s not in TERMINAL_STATUSES)
"""Statuses of a ticket still open: neither done nor won't do (the workflow's terminal statuses)."""
_VALUE = {"user": USER, "date": DATE, "count": COUNT}
_LABEL = {"user": "@<username>", "date": "<YYYY-MM-DD>", "count": "<number>"}


@dataclass(frozen=True)
class Question:
    """One question about the history: its kind, its ticket, the question, and the answer by fact.

    ``facts`` lists each fact as (id, label, type) in the order the answer states them: the label is what the
    answer's line starts with (``filed in DAT``), the type what its value is (``user``, ``date``, ``count``).
    """

    kind: str
    subject: str
    question: str
    answer: dict[str, str]
    facts: tuple[tuple[str, str, str], ...]

    @property
    def id(self) -> str:
        """A stable id for the mined task (kind and subject), its provenance in the history."""
        return f"{self.kind}:{self.subject}"


def _day(value: Any) -> str:
    """The UTC day of a stored timestamp (a datetime, or the text SQLite returns)."""
    return value.date().isoformat() if isinstance(value, datetime) else str(value)[:10]


def pick(kinds: Iterable[str], find: Callable[[str], list[T]], seed: int, empty: str) -> tuple[T, int, int]:
    """Item ``seed % n`` of the first kind (in ``kinds`` order) the history holds any of: (item, index, n).

    Why one rule for every mined family: seeds 0..n-1 of one world then enumerate the kind's items (``sim.mine``
    counts and validates them that way), and a small world without the difficulty's kind falls back to another.

    Raises:
        ValueError: no kind has any item (``empty`` says what the world lacks).
    """
    pool = next((items for kind in kinds if (items := find(kind))), [])
    if not pool:
        raise ValueError(empty)
    index = seed % len(pool)
    return pool[index], index, len(pool)


def questions(sql: Sql, kind: str) -> list[Question]:
    """Every question of ``kind`` the world's rows answer, in a fixed order (by project key and number)."""
    if kind not in KINDS:
        raise ValueError(f"unknown question kind {kind!r}")
    rows = [
        (str(p), int(n), str(u), _day(at), str(s))
        for p, n, u, at, s in sql.all(
            "SELECT p.key, t.number, e.username, t.created_at, t.status FROM tickets t"
            " JOIN projects p ON p.id = t.project_id JOIN employees e ON e.id = t.reporter_id"
            " ORDER BY p.key, t.number"
        )
    ]
    if kind == "reporter":
        return [
            Question(kind, f"{p}-{n}", f"Who filed ticket {p}-{n}, and on which day?", {"reporter": u, "filed-on": at},
                     (("reporter", "filed by", "user"), ("filed-on", "filed on", "date")))
            for p, n, u, at, _ in rows
        ]  # fmt: skip
    out: list[Question] = []
    seen: set[tuple[str, ...]] = set()
    for p, n, u, _, _ in rows:
        # Kind 1 asks once per (reporter, project), kinds 2-3 once per reporter: each about the first ticket they
        # filed (there, or anywhere), so two questions of a kind never share their answer.
        once = (u, p) if kind == "filed-in-project" else (u,)
        if once in seen:
            continue
        seen.add(once)
        mine = [r for r in rows if r[2] == u]
        here = [r for r in mine if r[0] == p]
        facts = [("reporter", "filed by", "user"), ("filed-in-project", f"filed in {p}", "count")]
        answer = {"reporter": u, "filed-in-project": str(len(here))}
        asks = [f"Who filed ticket {p}-{n}", f"how many {p} tickets have they filed in all ({p}-{n} included)"]
        if kind in ("open-in-project", "filed-everywhere"):
            facts.append(("open-in-project", f"open in {p}", "count"))
            answer["open-in-project"] = str(sum(r[4] in OPEN for r in here))
            asks.append(f"how many of those {p} tickets are still open (neither done nor won't do)")
        if kind == "filed-everywhere":
            facts += [("filed-everywhere", "filed in all", "count"), ("open-everywhere", "open in all", "count")]
            answer["filed-everywhere"] = str(len(mine))
            answer["open-everywhere"] = str(sum(r[4] in OPEN for r in mine))
            asks += ["how many tickets have they filed across every project", "how many of those are still open"]
        question = ", ".join(asks[:-1]) + ", and " + asks[-1]
        out.append(Question(kind, f"{p}-{n}", question + "?", answer, tuple(facts)))
    return out


def answer_format(q: Question) -> str:
    """What the prompt asks the summary to look like: one ``label: value`` line per fact, in order."""
    lines = "; ".join(f"`{label}: {_LABEL[typ]}`" for _, label, typ in q.facts)
    return (
        f"Answer in your submit summary with one line per fact, exactly these labels: {lines}. Name people by "
        "@username, days as YYYY-MM-DD (UTC) and counts in digits. Only read: change nothing. Call the submit "
        "tool when you are done."
    )


def fact_pattern(label: str, typ: str) -> str:
    """The pattern of a fact's labelled value (``filed in DAT: 3``): its first group is the value."""
    return rf"(?i)(?<![\w-]){re.escape(label)}\s*:\s*{_VALUE[typ]}"


def _asker(sql: Sql, q: Question, index: int) -> tuple[str, str]:
    """(username, full name) of an active employee who asks: rotated by the index, never the one who filed."""
    rows = sql.all(
        "SELECT username, first_name || ' ' || last_name FROM employees WHERE active = ? ORDER BY id", (True,)
    )
    busy = {q.answer.get("reporter")}
    rows = [r for r in rows if str(r[0]) not in busy]
    r = rows[(index * 7919) % len(rows)]
    return str(r[0]), str(r[1])


class HistoryQuestion:
    """The ``history-question-v0`` family."""

    id = "history-question-v0"
    description = "Answer a question about the company's history exactly (who, when, how many) by reading only."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Pick question ``seed % n`` of the difficulty's kind; the answer goes to the params, nothing is written."""
        difficulty = max(0, min(3, difficulty))
        sql = Sql.of(session)
        # A small world may hold no question of the kind: the next easier kind.
        kinds = reversed(KINDS[: difficulty + 1])
        q, index, count = pick(
            kinds,
            lambda k: questions(sql, k),
            seeds.seed,
            "the history holds no question: world too small",
        )
        actor, name = _asker(sql, q, index)
        start_day(session, clock, actor)  # the asker's morning; the facts are history, fixed before it
        prompt = f"You are {name} (@{actor}). A question about our history: {q.question} {answer_format(q)}"
        tickets = int(sql.scalar("SELECT count(*) FROM tickets") or 0)
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=actor,
            rubric=self._rubric(q),
            params={"question": q.id, "kind": q.kind, "answer": q.answer,
                    "labels": {fact: label for fact, label, _ in q.facts}, "index": index, "of": count},
            # Reading every ticket once, and its search pages, fits; so does a second pass.
            limits=Limits(max_turns=12 if q.kind == "reporter" else 20 + 2 * tickets, time_budget_s=4 * 3600),
            apps=("directory", "tickets"),
            difficulty=difficulty,
        )  # fmt: skip

    @staticmethod
    def _rubric(q: Question) -> Rubric:
        """One exact-fact check per fact of the answer, and a gate that nothing was changed."""
        checks: list[dict[str, Any]] = [
            {
                "id": f"answer-{fact}",
                "description": f"The submit summary's '{label}' line states {q.answer[fact]} and nothing else.",
                "fn": "submit_answer",
                "params": {"pattern": fact_pattern(label, typ), "value": q.answer[fact], "label": f"'{label}'"},
            }
            for fact, label, typ in q.facts
        ]
        checks.append(
            {
                "id": "read-only",
                "description": "Answering is reading: nothing was changed.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {"allowed": []},
            }
        )
        return load_rubric(
            {"id": "history-question", "version": 2, "description": f"Answer exactly: {q.question}", "checks": checks}
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the ticket, then every ticket the counts need (every page of the search); submit the lines."""
        text = env.prompt
        m = re.search(r"Who filed ticket (([A-Z][A-Z0-9]*)-\d+)", text)
        if m is None:
            raise ValueError("the prompt asks no question this oracle knows")
        key, project = m.group(1), m.group(2)
        ticket = env.call("tickets_get", key=key)
        who = ticket["reporter"]
        lines = [f"filed by: @{who}"]
        if "`filed on:" in text:
            lines.append(f"filed on: {ticket['created_at'][:10]}")
        if f"`filed in {project}:" in text:
            everywhere = "`filed in all:" in text
            mine = [t for t in self._read_all(env, None if everywhere else project) if t["reporter"] == who]
            here = [t for t in mine if t["key"].startswith(f"{project}-")]
            lines.append(f"filed in {project}: {len(here)}")
            if f"`open in {project}:" in text:
                lines.append(f"open in {project}: {sum(t['status'] in OPEN for t in here)}")
            if everywhere:
                lines.append(f"filed in all: {len(mine)}")
                lines.append(f"open in all: {sum(t['status'] in OPEN for t in mine)}")
        env.call("submit", summary="\n".join(lines))

    @staticmethod
    def _read_all(env: AgentEnv, project: str | None) -> list[dict[str, Any]]:
        """Every ticket (of ``project``, or of every project), each read in full: the search holds no reporter."""
        keys: list[str] = []
        where = {"project": project} if project else {}
        while True:
            page = env.call("tickets_search", **where, limit=100, offset=len(keys))
            keys += [t["key"] for t in page["tickets"]]
            if not page["tickets"] or len(keys) >= page["total"]:
                break
        return [env.call("tickets_get", key=k) for k in keys]

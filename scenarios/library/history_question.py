"""``history-question-v0``: a question whose answer the company's own history holds, answered exactly.

The first kind of mined task (issue 13 item 3): the generated past is the task. Nothing is set up and nothing
is rewound; the build lists the facts the world's rows hold about its history, picks one by the seed, computes
the exact answer from the rows (kept in the hidden params, never written to a table) and asks for it. The agent
must find the answer through the tools and state it in its submit summary.

Kinds, one per difficulty (the later ones need more reading to find the fact):

- 0 ``reporter``: who reported ticket K, and on which day was it filed (one ``tickets_get``).
- 1 ``resolved``: who moved ticket K to done, and on which day (the last move to done in its status history,
  which is not always the assignee's).
- 2 ``skip-manager``: who is @X's manager's manager (two directory hops).
- 3 ``blocked-count``: how many distinct tickets of project P were moved to blocked in a given week (every
  ticket of the project read, its history filtered by date).

A world whose history holds no question of the difficulty's kind gets one of the next easier kind.

The seed picks the question as ``seed % n`` over the kind's questions in a fixed order, so seeds 0..n-1 of one
world enumerate every question that world holds: the miner (``sim.mine``) counts and validates them that way.

The rubric is one exact-fact check per fact (``submit_answer``: every @username, date or count the summary
states must be the answer, so listing every candidate earns nothing) and a gate that the agent changed nothing:
answering a question is reading. The oracle finds the answer through the tools; it never reads the params.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

T = TypeVar("T")

KINDS = ("reporter", "resolved", "skip-manager", "blocked-count")
USER = r"@([a-z0-9][a-z0-9._-]*[a-z0-9])"
DATE = r"(?<![\d-])(\d{4}-\d\d-\d\d)(?![\d-])"
COUNT = r"(?<![\w.:-])(\d+)(?![\w.:-])"
FORMAT = (
    "Put the answer in your submit summary: name people by @username and days as YYYY-MM-DD (UTC), and state "
    "no other usernames, days or numbers. Only read: change nothing. Call the submit tool when you are done."
)


@dataclass(frozen=True)
class Question:
    """One fact of the history: its kind, what it is about, the question, and the exact answer by fact type."""

    kind: str
    subject: str
    question: str
    answer: dict[str, str]

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


def questions(sql: Sql, kind: str, now: datetime) -> list[Question]:
    """Every question of ``kind`` the world's rows answer unambiguously, in a fixed order (by key or id)."""
    if kind == "reporter":
        rows = sql.all(
            "SELECT p.key || '-' || t.number, e.username, t.created_at FROM tickets t"
            " JOIN projects p ON p.id = t.project_id JOIN employees e ON e.id = t.reporter_id ORDER BY p.key, t.number"
        )
        return [
            Question(kind, str(k), f"Who reported ticket {k}, and on which day was it filed?",
                     {"user": str(u), "date": _day(at)})
            for k, u, at in rows
        ]  # fmt: skip
    if kind == "resolved":
        rows = sql.all(
            "SELECT p.key || '-' || t.number, e.username, h.changed_at FROM tickets t"
            " JOIN projects p ON p.id = t.project_id JOIN ticket_status_changes h ON h.ticket_id = t.id"
            " JOIN employees e ON e.id = h.actor_id WHERE t.status = 'done' AND h.to_status = 'done'"
            " AND h.id = (SELECT max(x.id) FROM ticket_status_changes x WHERE x.ticket_id = t.id"
            " AND x.to_status = 'done') ORDER BY p.key, t.number"
        )
        return [
            Question(kind, str(k), f"Ticket {k} is done: who moved it to done, and on which day?",
                     {"user": str(u), "date": _day(at)})
            for k, u, at in rows
        ]  # fmt: skip
    if kind == "skip-manager":
        rows = sql.all(
            "SELECT e.username, s.username FROM employees e JOIN employees m ON m.id = e.manager_id"
            " JOIN employees s ON s.id = m.manager_id WHERE e.active = ? AND m.active = ? AND s.active = ?"
            " ORDER BY e.id",
            (True, True, True),
        )
        return [Question(kind, str(u), f"Who is @{u}'s manager's manager?", {"user": str(s)}) for u, s in rows]
    if kind == "blocked-count":
        rows = sql.all(
            "SELECT p.key, h.changed_at, h.ticket_id FROM ticket_status_changes h JOIN tickets t ON t.id = h.ticket_id"
            " JOIN projects p ON p.id = t.project_id WHERE h.to_status = 'blocked' ORDER BY p.key, h.id"
        )
        weeks: dict[tuple[str, date], set[int]] = {}
        for key, at, ticket in rows:
            day = date.fromisoformat(_day(at))
            if day <= now.date():  # the history's past: a change after the start is not history
                weeks.setdefault((str(key), day - timedelta(days=day.weekday())), set()).add(int(ticket))
        return [
            Question(
                kind, f"{key}/{monday.isoformat()}",
                f"How many distinct {key} tickets were moved to blocked in the week from Monday "
                f"{monday.isoformat()} to Sunday {(monday + timedelta(days=6)).isoformat()} (UTC)?",
                {"count": str(len(ids))},
            )
            for (key, monday), ids in sorted(weeks.items())
        ]  # fmt: skip
    raise ValueError(f"unknown question kind {kind!r}")


def _asker(sql: Sql, q: Question, index: int) -> tuple[str, str]:
    """(username, full name) of an active employee who asks: rotated by the index, never the answer or subject."""
    rows = sql.all(
        "SELECT username, first_name || ' ' || last_name FROM employees WHERE active = ? ORDER BY id", (True,)
    )
    busy = {q.answer.get("user"), q.subject}
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
        # A small world may hold no question of the kind (no ticket was ever blocked): the next easier kind.
        kinds = reversed(KINDS[: difficulty + 1])
        q, index, count = pick(
            kinds,
            lambda k: questions(sql, k, clock.now()),
            seeds.seed,
            "the history holds no question: world too small",
        )
        actor, name = _asker(sql, q, index)
        start_day(session, clock, actor)  # the asker's morning; the facts are history, fixed before it
        prompt = f"You are {name} (@{actor}). A question about our history: {q.question} {FORMAT}"
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=actor,
            rubric=self._rubric(q),
            params={"question": q.id, "kind": q.kind, "answer": q.answer, "index": index, "of": count},
            limits=Limits(max_turns=12 if difficulty < 3 else 150, time_budget_s=4 * 3600),
            apps=("directory", "tickets"),
            difficulty=difficulty,
        )

    @staticmethod
    def _rubric(q: Question) -> Rubric:
        """One exact-fact check per fact of the answer, and a gate that nothing was changed."""
        kinds = {"user": (USER, "the person"), "date": (DATE, "the day"), "count": (COUNT, "the count")}
        checks: list[dict[str, Any]] = [
            {
                "id": f"answer-{fact}",
                "description": f"The submit summary states {kinds[fact][1]} ({value}) and no other.",
                "fn": "submit_answer",
                "params": {"pattern": kinds[fact][0], "value": value, "label": kinds[fact][1]},
            }
            for fact, value in sorted(q.answer.items())
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
            {"id": "history-question", "version": 1, "description": f"Answer exactly: {q.question}", "checks": checks}
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the ticket, the directory or the project's tickets the question names; submit the answer."""
        text = env.prompt
        if m := re.search(r"Who reported ticket ([A-Z][A-Z0-9]*-\d+)", text):
            t = env.call("tickets_get", key=m.group(1))
            answer = f"@{t['reporter']} filed it on {t['created_at'][:10]}."
        elif m := re.search(r"Ticket ([A-Z][A-Z0-9]*-\d+) is done", text):
            t = env.call("tickets_get", key=m.group(1))
            last = [h for h in t["history"] if h["to"] == "done"][-1]
            answer = f"@{last['by']} moved it to done on {last['at'][:10]}."
        elif m := re.search(r"Who is @([a-z0-9._-]+)'s manager's manager", text):
            manager = env.call("directory_get_profile", username=m.group(1))["manager"]
            skip = env.call("directory_get_profile", username=manager)["manager"]
            answer = f"@{skip}."
        elif m := re.search(r"distinct ([A-Z][A-Z0-9]*) tickets .* Monday (\S+) to Sunday (\S+) \(UTC\)", text):
            project, first, last = m.group(1), m.group(2), m.group(3)
            keys: list[str] = []
            while True:
                page = env.call("tickets_search", project=project, limit=100, offset=len(keys))
                keys += [t["key"] for t in page["tickets"]]
                if not page["tickets"] or len(keys) >= page["total"]:
                    break
            count = 0
            for key in keys:
                history = env.call("tickets_get", key=key)["history"]
                count += any(h["to"] == "blocked" and first <= h["at"][:10] <= last for h in history)
            answer = f"{count} tickets."
        else:
            raise ValueError("the prompt asks no question this oracle knows")
        env.call("submit", summary=answer)

"""LLM-judge checks: what no rule can decide (is this status report clear? is this reply polite?).

A judge check is rubric data like any other check, of kind ``judge``::

    {"id": "report-clear", "kind": "judge", "fn": "judge", "weight": 1,
     "params": {"question": "Is the weekly status report clear to a busy director?",
                "criteria": ["names every blocked ticket", "says what is needed from whom"],
                "evidence": ["document:Shared/Reports/Weekly status"], "scale": 4, "pass_at": 3}}

``evidence`` names what the judge reads, gathered from the final state by ``EVIDENCE`` readers:
``document:<path>`` (a document's text), ``posts:<channel>`` (the agent's new posts there), ``mail`` (mail the
agent sent), ``comments`` (the agent's new ticket comments). The judge answers on a 0..``scale`` scale with a
reason; the check scores ``verdict / scale`` (or pass/fail at ``pass_at``), with the reason as evidence.

Rules that keep judged rewards trustworthy and replayable:

- The judge is a ``worlds.llm.ChatModel`` at temperature 0, so each verdict is recorded under the hash of its
  prompt and a later grading replays it offline, with the endpoint gone.
- The judge model must differ from the policy model (``Judge`` refuses the same name): a model grading itself
  learns to please itself.
- A check that could not be judged (no judge configured, no recorded verdict in replay, the endpoint failing,
  an answer that is not a verdict) is *unjudged*: it is reported as such and left out of the reward's weighted
  mean, never silently counted as 0 or 1 (``grade`` lists it in ``Score.unjudged``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from graders.base import CheckOutcome, GradingContext, check_fn
from graders.errors import JudgeRefused
from worlds.llm import ChatModel, LLMError

SYSTEM = (
    "You grade one piece of work done by an employee in a simulated company. Read the question, the criteria "
    'and the evidence, then answer with JSON only: {"verdict": <integer from 0 to SCALE>, "reason": '
    '"<one sentence naming what decided it>"}. Grade only what the evidence shows; missing evidence scores 0.'
)
MAX_EVIDENCE = 12_000
"""Characters of evidence per item the judge is shown (more is cut with a marker)."""
_VERDICT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True)
class Judge:
    """The model that judges, and the policy model it must not be.

    Args:
        model: A recorded chat model (``worlds.llm.ChatModel``).
        policy_model: The name of the model whose work is graded, when known.

    Raises:
        JudgeRefused: the judge and the policy are the same model.
    """

    model: ChatModel
    policy_model: str | None = None

    def __post_init__(self) -> None:
        if self.policy_model is not None and self.policy_model.strip() == self.model.model.strip():
            raise JudgeRefused(
                f"the judge model {self.model.model!r} is the policy model; choose a different model to judge"
            )

    def verdict(self, question: str, criteria: Sequence[str], scale: int, evidence: str) -> tuple[int, str]:
        """The judge's (verdict, reason) for ``evidence``, recorded or fetched.

        Raises:
            LLMError: no recorded verdict and no endpoint, or the endpoint failed.
            ValueError: the answer holds no usable verdict.
        """
        listed = "\n".join(f"- {c}" for c in criteria) or "- (none given)"
        scale_line = f"Scale: 0 (not at all) to {scale} (fully)."
        user = f"Question: {question}\n\nCriteria:\n{listed}\n\n{scale_line}\n\n{evidence}"
        answer = self.model.complete(
            [{"role": "system", "content": SYSTEM.replace("SCALE", str(scale))}, {"role": "user", "content": user}]
        )
        match = _VERDICT.search(answer.content)
        if match is None:
            raise ValueError(f"the judge did not answer with a JSON verdict: {answer.content[:120]!r}")
        data = json.loads(match.group(0))
        verdict = data.get("verdict")
        if isinstance(verdict, bool) or not isinstance(verdict, int) or not 0 <= verdict <= scale:
            raise ValueError(f"the judge's verdict {verdict!r} is not an integer from 0 to {scale}")
        return verdict, str(data.get("reason", ""))[:500]


# -- evidence ---------------------------------------------------------------------------------------------


def _cut(text: str) -> str:
    return text if len(text) <= MAX_EVIDENCE else text[:MAX_EVIDENCE] + "\n[... evidence cut ...]"


def _document(ctx: GradingContext, path: str) -> str:
    from mcp_tools.base import Actor, ToolContext  # graders read documents as the agent would see them
    from mcp_tools.docs import store
    from worlds.rawsql import Sql

    sql = Sql.of(ctx.session)
    actor = Actor.load(ctx.session, ctx.actor_id)
    tool_ctx = ToolContext(session=ctx.session, actor=actor, clock=None)  # type: ignore[arg-type]
    doc = store.open_doc(tool_ctx, sql, path, "read", "document")
    text = store.load_text(sql, doc)
    return "\n".join(("#" * b.level + " " if b.level else "") + b.text for b in text.blocks)


def _posts(ctx: GradingContext, channel: str) -> str:
    ids = [
        r.key[0] for r in ctx.changed_rows("posts") if r.op == "insert" and r.changes.get("author_id") == ctx.actor_id
    ]
    if not ids:
        return ""
    from sqlalchemy import bindparam, text

    rows = ctx.db.execute(
        text(
            "SELECT p.message FROM posts p JOIN channels c ON c.id = p.channel_id WHERE p.id IN :ids"
            " AND c.name = :channel ORDER BY p.id"
        ).bindparams(bindparam("ids", expanding=True)),
        {"ids": list(ids), "channel": channel.lstrip("~")},
    )
    return "\n---\n".join(str(r[0]) for r in rows)


def _mail(ctx: GradingContext, _: str) -> str:
    ids = [r.key[0] for r in ctx.changed_rows("mail_messages") if r.op == "insert"]
    if not ids:
        return ""
    from sqlalchemy import bindparam, text

    rows = ctx.db.execute(
        text(
            "SELECT m.subject, m.body FROM mail_messages m JOIN mailboxes b ON b.id = m.sender_mailbox_id"
            " WHERE m.id IN :ids AND b.employee_id = :me ORDER BY m.id"
        ).bindparams(bindparam("ids", expanding=True)),
        {"ids": list(ids), "me": ctx.actor_id},
    )
    return "\n---\n".join(f"Subject: {r[0]}\n\n{r[1]}" for r in rows)


def _comments(ctx: GradingContext, _: str) -> str:
    texts = [
        str(r.changes.get("body", ""))
        for r in ctx.changed_rows("ticket_comments")
        if r.op == "insert" and r.changes.get("author_id") == ctx.actor_id
    ]
    return "\n---\n".join(texts)


EVIDENCE: dict[str, Callable[[GradingContext, str], str]] = {
    "document": _document,
    "posts": _posts,
    "mail": _mail,
    "comments": _comments,
}
"""Evidence readers by kind: ``kind:argument`` in a judge check's ``evidence`` list."""


def gather(ctx: GradingContext, refs: Sequence[str]) -> str:
    """The evidence text for ``refs``, each item headed by its reference, empty items said to be empty."""
    parts = []
    for ref in refs:
        kind, _, arg = ref.partition(":")
        try:
            body = EVIDENCE[kind](ctx, arg)
        except Exception as exc:  # noqa: BLE001 - unreadable evidence is shown to the judge as such
            body = f"(could not be read: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__})"
        parts.append(f"=== {ref} ===\n{_cut(body) if body else '(nothing)'}")
    return "Evidence:\n" + "\n\n".join(parts)


def _check_params(kwargs: dict[str, Any]) -> None:
    if not 1 <= kwargs["scale"] <= 10:
        raise ValueError("field 'scale' must be 1-10")
    if kwargs["pass_at"] is not None and not 0 <= kwargs["pass_at"] <= kwargs["scale"]:
        raise ValueError("field 'pass_at' must lie between 0 and 'scale'")
    for ref in kwargs["evidence"]:
        if ref.partition(":")[0] not in EVIDENCE:
            raise ValueError(f"field 'evidence': {ref!r} names no reader; known: {', '.join(sorted(EVIDENCE))}")


def unjudged(why: str) -> CheckOutcome:
    """The outcome of a check that could not be judged (``grade`` leaves it out of the reward)."""
    return CheckOutcome(score=0.0, evidence=f"unjudged: {why}", details={"unjudged": True})


@check_fn("judge", kind="judge", validate=_check_params)
def judge(
    ctx: GradingContext,
    question: str,
    evidence: list[str],
    criteria: list[str] | None = None,
    scale: int = 4,
    pass_at: int | None = None,
) -> CheckOutcome:
    """An LLM judge's verdict on ``question`` over ``evidence``: ``verdict / scale``, or pass at ``pass_at``."""
    if ctx.judge is None:
        return unjudged("no judge model is configured for this grading")
    text = gather(ctx, evidence)
    try:
        verdict, reason = ctx.judge.verdict(question, criteria or [], scale, text)
    except (LLMError, ValueError, json.JSONDecodeError) as exc:
        return unjudged(str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
    score = (1.0 if verdict >= pass_at else 0.0) if pass_at is not None else verdict / scale
    return CheckOutcome(score=score, evidence=f"judged {verdict}/{scale}: {reason}", details={"verdict": verdict})

"""One NPC turn as a langgraph ``StateGraph``: perceive -> decide -> (act) -> remember.

Why a graph for four plain functions: the behaviour policy is meant to grow (an LLM decide node, a planning
loop, per-preset subgraphs), and a graph keeps those swaps local and inspectable. Routing depends on the
stimulus: a turn whose stimuli and proactive goals yield no plan goes from decide straight to remember. It is
compiled once per process and invoked once per NPC turn (never per clock tick).

What an NPC carries from one turn to the next is the graph's ``mind`` channel (its read cursors and turn
count), loaded and saved by ``npcs.mind.WorldSaver``, a langgraph checkpointer whose storage is the NPC's
persona row in the world database: one thread per NPC, so a snapshot, a fork or a campaign's next episode
carries every coworker's state. What it perceived and did goes to ``npc_memory`` rows (the long memory that
``npcs.apps`` reads back, e.g. a time it already agreed to).

The turn's runtime (session, Actor, clock, persona, RNG stream) travels in ``config["configurable"]["env"]``;
the graph state holds only the data flowing between nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypedDict

from mcp_tools.errors import AppError
from npcs.actions import TOOLS, Action, Plan
from npcs.apps import react_app
from npcs.decide import TurnEnv, proactive, react
from npcs.mind import WorldSaver, save
from npcs.perceive import APP_KINDS, Stimulus, inbound
from npcs.persona import assigned_ids, maxima, remember
from npcs.realiser import Realiser
from worlds.rawsql import Sql

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

_TEXT_ARG = {"chat_direct_message": "message", "chat_reply": "message", "chat_post": "message"}
_TEXT_ARG |= {"tickets_comment": "body", "mail_reply": "body", "git_mr_comment": "body", "git_mr_review": "body"}


class TurnState(TypedDict, total=False):
    """Data flowing through the graph."""

    stimuli: list[Stimulus]
    plans: list[Plan]
    actions: list[Action]
    mind: dict[str, Any]
    """Persisted by the checkpointer between turns: ``cursor`` (how far each app was read) and ``turns``."""


@dataclass
class Runtime:
    """Per-turn objects that are not graph data: the environment and the optional realiser."""

    env: TurnEnv
    realiser: Realiser | None = None
    mind: dict[str, Any] | None = None
    """The checkpoint ``WorldSaver.put`` staged at the end of the run, written by ``run`` (``mind.save``)."""


def _rt(config: RunnableConfig) -> Runtime:
    rt = (config.get("configurable") or {})["rt"]
    assert isinstance(rt, Runtime)
    return rt


def perceive(state: TurnState, config: RunnableConfig) -> TurnState:
    """Everything inbound since the cursors the NPC's mind holds, up to now; every cursor moves to now."""
    env = _rt(config).env
    sql, now = Sql.of(env.ctx.session), env.ctx.clock.now()
    me = env.persona.employee_id
    mind = state["mind"]
    cursor: dict[str, Any] = mind["cursor"]
    since = {"post": 0, "comment": 0, "mail": 0, **cursor}
    stimuli = inbound(sql, since, now, [me], {me: set(cursor.get("assigned", []))})
    moved = {**maxima(sql), "assigned": assigned_ids(sql, me), "at": now.isoformat()}
    return {"stimuli": stimuli, "mind": {**mind, "cursor": moved}}


def decide(state: TurnState, config: RunnableConfig) -> TurnState:
    """Plans for every stimulus (in time order), then the proactive plan if this is a proactive turn."""
    rt = _rt(config)
    env = rt.env
    plans: list[Plan] = []
    for s in state.get("stimuli", []):
        plans += react_app(env, s) if s.kind in APP_KINDS else react(env, s)
    if env.turn.kind == "proactive":
        plans += proactive(env)
    if rt.realiser is not None:
        plans = [_realise(rt.realiser, env, pl) for pl in plans]
    return {"plans": plans}


def _realise(realiser: Realiser, env: TurnEnv, plan: Plan) -> Plan:
    arg = _TEXT_ARG.get(plan.tool)
    if arg is None or not plan.text:
        return plan
    text = realiser.realise(plan.text, env.persona.traits)
    return replace(plan, text=text, args={**plan.args, arg: text})


def act(state: TurnState, config: RunnableConfig) -> TurnState:
    """Run each plan through its app service as the NPC, each in a savepoint (a refusal undoes only itself)."""
    env = _rt(config).env
    sql = Sql.of(env.ctx.session)
    at = env.ctx.clock.now().isoformat()
    out: list[Action] = []
    for plan in state.get("plans", []):
        base = dict(
            employee_id=env.persona.employee_id,
            actor=env.persona.username,
            turn=env.number,
            at=at,
            tool=plan.tool,
            target=plan.target,
            reaction=plan.reaction,
            text=plan.text,
            intent=plan.intent,
            fact=plan.fact,
        )
        sql.execute("SAVEPOINT npc_act")
        try:
            result = TOOLS[plan.tool](env.ctx, plan.args)
        except Exception as exc:
            sql.execute("ROLLBACK TO SAVEPOINT npc_act")
            sql.execute("RELEASE SAVEPOINT npc_act")
            if not isinstance(exc, AppError):
                raise  # a bug, not a refusal: the world is as before this plan, and the caller must see it
            out.append(Action(**base, ok=False, error=exc.code))  # type: ignore[arg-type]
            continue
        sql.execute("RELEASE SAVEPOINT npc_act")
        out.append(Action(**base, result=result))  # type: ignore[arg-type]
    return {"actions": out}


def remember_node(state: TurnState, config: RunnableConfig) -> TurnState:
    """Memory rows for what was perceived and done; the persona's cursor and turn count are saved."""
    env = _rt(config).env
    p, sql, now = env.persona, Sql.of(env.ctx.session), env.ctx.clock.now()
    for s in state.get("stimuli", []):
        seen: dict[str, Any] = {"kind": s.kind, "from": s.sender, "text": s.text[:300], "at": s.at}
        remember(sql, p, now, env.number, "perceived", s.marker, seen)
    for a in state.get("actions", []):
        data: dict[str, Any] = {
            "tool": a.tool,
            "reaction": a.reaction,
            "text": a.text[:300],
            "ok": a.ok,
            "error": a.error,
        }
        if a.fact is not None:
            data["fact"] = a.fact
        remember(sql, p, now, env.number, "did", a.target, data)
    return {"mind": {**state["mind"], "turns": int(state["mind"]["turns"]) + 1}}


def _route(state: TurnState) -> str:
    return "act" if state.get("plans") else "remember"


_GRAPH: Any = None


def graph() -> Any:
    """The compiled turn graph (built on first use, then shared by every NPC of the process)."""
    global _GRAPH
    if _GRAPH is None:
        from langgraph.graph import END, START, StateGraph  # lazy: importing langgraph costs ~1 s

        g: Any = StateGraph(TurnState)
        g.add_node("perceive", perceive)
        g.add_node("decide", decide)
        g.add_node("act", act)
        g.add_node("remember", remember_node)
        g.add_edge(START, "perceive")
        g.add_edge("perceive", "decide")
        g.add_conditional_edges("decide", _route, {"act": "act", "remember": "remember"})
        g.add_edge("act", "remember")
        g.add_edge("remember", END)
        _GRAPH = g.compile(checkpointer=WorldSaver())
    return _GRAPH


def run(rt: Runtime) -> list[Action]:
    """Invoke the graph for one turn on the NPC's thread; returns the actions taken (refused ones ``ok=False``).

    The checkpointer loads the NPC's mind before the first node and writes it back after the last one (and
    mirrors it into ``rt.env.persona``, which the model reads to decide whom to wake).
    """
    config: RunnableConfig = {"configurable": {"rt": rt, "thread_id": rt.env.persona.username}}
    out = graph().invoke({"stimuli": [], "plans": [], "actions": []}, config=config, durability="exit")
    save(Sql.of(rt.env.ctx.session), rt.env.persona, rt.mind)
    return list(out.get("actions", []))

"""One tool call of an episode: the action parsed, the service run inside a savepoint, failures made observations.

Why a raw ``SAVEPOINT`` around every write: a tool that fails halfway (a refused transition after a row was
written) must leave the world exactly as before the call. Reads need none. Any exception becomes an error
observation with a stable code; the agent never sees internals (``internal`` names only the tool and the
exception type), and the episode goes on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from mcp_tools.base import READ, ToolContext, ToolSpec, call_tool
from mcp_tools.errors import AppError
from sim.errors import BadAction
from sim.noise import COST_S, FaultGate, error_for
from sim.submit import MAX_WAIT_MINUTES
from worlds.changelog import ChangeContext
from worlds.rawsql import Sql

if TYPE_CHECKING:
    from sim.workspace import EpisodeCode

READ_COST_S = 15
WRITE_COST_S = 45
ERROR_COST_S = 5
"""Simulated seconds a call takes: a read, a write, and a call that failed."""


def parse_action(action: Any) -> tuple[str, dict[str, Any]]:
    """Normalise an action to (tool name, arguments dict).

    Accepts ``{"name", "arguments": dict | JSON text}``, an OpenAI tool call ``{"function": {...}}``, or either
    as JSON text.

    Raises:
        BadAction: the action has no tool name or its arguments are not a JSON object.
    """
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except json.JSONDecodeError:
            raise BadAction('action is not JSON; expected {"name": ..., "arguments": {...}}') from None
    if not isinstance(action, dict):
        raise BadAction(f"action must be an object with name and arguments, got {type(action).__name__}")
    if isinstance(action.get("function"), dict):
        action = action["function"]
    name = action.get("name")
    if not isinstance(name, str) or not name:
        raise BadAction("action has no tool name (expected a non-empty string under 'name')")
    arguments = action.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            raise BadAction(f"arguments of {name!r} are not valid JSON") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise BadAction(f"arguments of {name!r} must be a JSON object, got {type(arguments).__name__}")
    return name, arguments


def run_tool(
    ctx: ToolContext, spec: ToolSpec, arguments: dict[str, Any], write: bool, code: EpisodeCode | None
) -> tuple[Any, dict[str, str] | None]:
    """Run ``spec`` with ``arguments`` as the context's actor; returns (result, None) or (None, error).

    A write runs inside ``SAVEPOINT step``: on failure it is rolled back, so state is exactly as before. On
    PostgreSQL reads do too: a failed statement aborts the whole transaction there until it is rolled back.
    """
    session: Session = ctx.session
    guarded = Sql.of(session)
    sql = guarded if write or guarded.pg else None
    if sql is not None:
        sql.execute("SAVEPOINT step")
    try:
        if code is None:
            result = call_tool(spec, arguments, ctx)
        else:
            with code.active():
                result = call_tool(spec, arguments, ctx)
        if sql is not None:
            if session.new or session.dirty or session.deleted:
                session.flush()  # a service that used the ORM: its rows belong to this step
            sql.execute("RELEASE SAVEPOINT step")
        return result, None
    except Exception as exc:  # noqa: BLE001 - the agent must never see internals, and the episode goes on
        if sql is not None:
            sql.execute("ROLLBACK TO SAVEPOINT step")
            sql.execute("RELEASE SAVEPOINT step")
            if session.identity_map:
                session.expunge_all()  # ORM objects may hold values the rollback undid
        if isinstance(exc, AppError):
            return None, {"code": exc.code, "message": str(exc)}
        return None, {"code": "internal", "message": f"internal error in {spec.name} ({type(exc).__name__})"}


@dataclass(frozen=True)
class Outcome:
    """What one call did: its result or error, its simulated cost, whether it wrote, its fault, if it ended."""

    result: Any = None
    error: dict[str, str] | None = None
    cost: int = ERROR_COST_S
    write: bool = False
    fault: dict[str, Any] | None = None
    submitted: bool = False


def dispatch(
    name: str,
    arguments: dict[str, Any],
    *,
    index: int,
    tools: Mapping[str, ToolSpec],
    ctx: ToolContext,
    change: ChangeContext,
    gate: FaultGate | None,
    code: EpisodeCode | None,
) -> Outcome:
    """Run the call ``name(arguments)`` of step ``index``: ``submit``, ``wait`` or an app tool behind the gate.

    A failing fault never reaches the service; a read fault only changes what the agent sees.
    """
    if name == "submit":
        return Outcome(result={"submitted": True}, cost=0, submitted=True)
    if name == "wait":
        minutes = arguments.get("minutes")
        if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= MAX_WAIT_MINUTES:
            message = f"minutes: expected an integer from 1 to {MAX_WAIT_MINUTES}; got {minutes!r:.40}"
            return Outcome(error={"code": "invalid_argument", "message": message})
        return Outcome(result={"waited_minutes": minutes}, cost=minutes * 60)
    spec = tools.get(name)
    if spec is None:
        return Outcome(error={"code": "unknown_tool", "message": f"unknown tool {name!r}; see the tool list"})
    write = spec.kind != READ
    decision = gate.decide(spec.name, spec.app, write) if gate is not None else None
    if decision is not None and gate is not None and decision.fault in COST_S:
        failed = gate.record(index, decision)
        return Outcome(error=error_for(decision, spec.app), cost=COST_S[decision.fault], fault=failed)
    change.tag = name
    result, error = run_tool(ctx, spec, arguments, write, code)
    if error is not None:
        return Outcome(error=error, write=write)  # the call failed on its own; a read fault had nothing to act on
    if gate is not None and not write and gate.reads:
        result, decision = gate.read(name, arguments, result, decision)
    fault = gate.record(index, decision) if decision is not None and gate is not None else None
    return Outcome(result=result, cost=WRITE_COST_S if write else READ_COST_S, write=write, fault=fault)

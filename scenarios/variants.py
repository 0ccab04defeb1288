"""Prompt variants shared by every family: the task arrives as a direct message from the actor's manager.

Why: in a real office the work rarely comes as a system prompt; a manager asks for it in chat, and the agent
has to notice the message and read it. ``ManagerPrompt`` wraps any family without changing it: its ``build``
runs the family's build, then writes the family's own prompt, prefixed by one line of greeting, as a direct
message from the actor's manager (from the directory; without an active manager, their manager's manager,
else the longest-serving active employee acts for the company), sent just before the episode starts. The
instance's prompt then only names the agent and says to check messages. The rubric, the hidden params and
the limits are the family's own, so grading is unchanged; the DM is a setup row like any other, which the
change log tags ``setup``, so it never counts as the agent's work.

The wrapped oracle finds the message through the chat tools (``chat_unread``, then ``chat_read_channel``),
strips the greeting and hands the brief to the family's own oracle as its prompt: it still never reads params.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from mcp_tools.base import Actor, ToolContext
from mcp_tools.chat import service as chat
from scenarios.base import AgentEnv, ScenarioFamily, ScenarioInstance, WorldDefaults
from worlds.clock import Clock, FixedClock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

PROMPT_VIA = ("system", "manager")
"""The values of the ``prompt_via`` reset option: the task in the system prompt, or in a DM from the manager."""

GREETING = "Morning! Here is what I need from you today; the details are below."
"""The manager's first line; the brief follows after one blank line (the oracle cuts there)."""


def manager_of(sql: Sql, actor: str) -> tuple[int, str]:
    """(id, username) of who gives ``actor`` their work: the active manager, the skip-level, else the senior-most.

    Raises:
        ValueError: the actor is not an employee, or the company has nobody else active.
    """
    row = sql.one("SELECT id, manager_id FROM employees WHERE username = ?", (actor,))
    if row is None:
        raise ValueError(f"no employee {actor!r} to deliver the task to")
    me, boss = int(row[0]), row[1]
    for _ in range(2):
        if boss is None:
            break
        found = sql.one("SELECT id, username, active, manager_id FROM employees WHERE id = ?", (boss,))
        if found is None:
            break
        if found[2] and int(found[0]) != me:
            return int(found[0]), str(found[1])
        boss = found[3]
    senior = sql.one(
        "SELECT id, username FROM employees WHERE active = ? AND id <> ? ORDER BY hire_date, id LIMIT 1", (True, me)
    )
    if senior is None:
        raise ValueError(f"nobody but @{actor} is active: no one can send the task")
    return int(senior[0]), str(senior[1])


def deliver_by_manager(session: Session, clock: Clock, instance: ScenarioInstance) -> ScenarioInstance:
    """Send ``instance``'s prompt to its actor as a DM from their manager; returns the instance to play.

    The direct channel is opened two minutes before the start and the message sent one minute before, so the
    message counts as unread for the agent (``chat_unread`` counts posts after the member joined).
    """
    sql = Sql.of(session)
    boss_id, boss = manager_of(sql, instance.actor)
    now = clock.now()
    manager = Actor.load(session, boss_id)
    chat.open_direct(
        ToolContext(session=session, actor=manager, clock=FixedClock(now - timedelta(minutes=2))), instance.actor
    )
    sent = chat.direct_message(
        ToolContext(session=session, actor=manager, clock=FixedClock(now - timedelta(minutes=1))),
        instance.actor,
        f"{GREETING}\n\n{instance.prompt}",
    )
    name = sql.scalar("SELECT first_name || ' ' || last_name FROM employees WHERE username = ?", (instance.actor,))
    prompt = (
        f"You are {name} (@{instance.actor}). Your manager @{boss} has sent you today's task as a direct message "
        f"in chat ({sent['channel']}). Check your messages, do what it asks, and call the submit tool when you "
        "are done."
    )
    apps = instance.apps if "chat" in instance.apps else ("chat", *instance.apps)
    params = {**instance.params, "prompt_via": {"manager": boss, "channel": sent["channel"], "post": sent["id"]}}
    return replace(instance, prompt=prompt, apps=apps, params=params)


class ManagerPrompt:
    """``family`` with its task delivered by the manager's DM (the ``prompt_via: manager`` reset option).

    Its ``id`` differs from the family's (``<id>+manager``) so post-setup states are cached apart; the
    instances it builds keep the family's ``scenario_id``.
    """

    def __init__(self, family: ScenarioFamily) -> None:
        self.inner = family
        self.id = f"{family.id}+manager"
        self.description = family.description
        self.world: WorldDefaults = family.world

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """The family's build, then the DM (after the family started the day, so it is sent that morning)."""
        return deliver_by_manager(session, clock, self.inner.build(session, seeds, clock, difficulty))

    def oracle(self, env: AgentEnv) -> None:
        """Read the manager's DM through the chat tools, then run the family's oracle on the brief it carries."""
        self.inner.oracle(_Briefed(env, read_brief(env)))

    def __getattr__(self, name: str) -> Any:
        """Anything else (``older_rubric``, ``story``, ...) is the family's."""
        return getattr(self.inner, name)


def read_brief(env: AgentEnv) -> str:
    """The task text of the newest unread DM that opens with the manager's greeting (tools only)."""
    unread = env.call("chat_unread")
    for channel in unread["channels"]:
        if channel["type"] != "direct" or not channel["unread"]:
            continue
        for post in reversed(env.call("chat_read_channel", channel=channel["name"], limit=20)["posts"]):
            message = str(post["message"])
            if post["author"] != env.actor and message.startswith(GREETING):
                return message.split("\n\n", 1)[1]
    raise LookupError("no direct message with today's task")


class _Briefed:
    """``env`` with the brief from the DM as its prompt (what the family's oracle parses)."""

    def __init__(self, env: AgentEnv, prompt: str) -> None:
        self._env = env
        self.prompt = prompt
        self.actor = env.actor

    def call(self, name: str, /, **arguments: Any) -> Any:
        return self._env.call(name, **arguments)

    @property
    def done(self) -> bool:
        return self._env.done


def with_prompt_via(family: ScenarioFamily, via: str) -> ScenarioFamily:
    """``family`` for the ``prompt_via`` option ``via`` (``system``: itself)."""
    if via not in PROMPT_VIA:
        raise ValueError(f"prompt_via must be one of {', '.join(PROMPT_VIA)}; got {via!r:.40}")
    return family if via == "system" else ManagerPrompt(family)


__all__ = [
    "GREETING",
    "PROMPT_VIA",
    "ManagerPrompt",
    "deliver_by_manager",
    "manager_of",
    "read_brief",
    "with_prompt_via",
]

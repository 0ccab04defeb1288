"""npcs: coworkers that react to the agent and carry on their own work, deterministically.

Pieces (each module's docstring says why it is built the way it is):

- ``traits``: ``TraitVector`` (nine dims in [0, 1]), presets ``cooperative``/``adversarial``/``chaotic``/
  ``absent``, ``sample_traits(world_seed, employee_id)``, ``TraitVector.parse``.
- ``persona``: persona and memory rows in the world DB (``worlds.schema.npcs``), loaded and saved through Sql.
- ``perceive`` -> ``decide`` -> ``actions`` (act) -> memory: one turn, run as a langgraph graph (``behaviour``).
  ``apps`` decides app items (RSVP an invitation, review a merge request, decide an access request);
  ``intents`` recognises questions and reads the true facts; ``text`` renders trait-modulated templates;
  ``realiser`` optionally rephrases them through an OpenAI-compatible endpoint, recorded and replayed.
- ``model``: ``NpcWorld``, a ``mesa.Model`` that owns the NPC streams and schedules reactive and proactive
  turns in each NPC's working hours (``hours``).

NPCs change the company only through the app services (``mcp_tools.*.service``) as their own Actor; their
change-log rows carry their employee id and the tag ``npc``. Errors derive from ``npcs.errors.NpcError``.

Episode wiring::

    npcs = NpcWorld(session, world_seed, clock, agent=agent_employee_id, overrides=npc_overrides)
    # after every agent step (its writes already in the session), before advancing the clock:
    npcs.poke()
    # then make sure a clock event fires at npcs.next_wakeup(); when it fires: npcs.run_due(clock.now())
"""

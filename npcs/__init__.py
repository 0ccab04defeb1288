"""npcs: coworkers (not built yet).

Will hold TraitVector and personas, behaviour policies as langgraph graphs (perceive -> decide -> act ->
remember), and a mesa Model that owns the NPC RNG and schedules turns on the simulated clock. NPCs act only
through the same app services as the agent.
"""

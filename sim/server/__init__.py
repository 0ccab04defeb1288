"""``companysim server``: many live episodes in worker processes behind OpenEnv, ORS and MCP-over-HTTP faces.

See ``sim.server.app`` for the design; one module per face (``openenv``, ``ors``, ``episodes``, ``admin``).
"""

from sim.server.app import Settings, build_app

__all__ = ["Settings", "build_app"]

"""mcp_tools: the apps an agent (and NPCs) act through.

Each app is ``<app>/service.py`` (typed functions acting as an Actor, with access control) and
``<app>/server.py`` (a FastMCP server wrapping the service); a company server mounts them under namespaces.
"""

"""mcp_tools: the apps an agent (and NPCs) act through.

Each app is ``<app>/service.py`` (typed functions acting as an Actor, with access control) and
``<app>/server.py`` (its tools: documented wrappers with flat arguments); ``company.py`` gathers them under
namespaces, and ``base.build_server`` serves them over MCP.
"""

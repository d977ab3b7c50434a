"""The Model Context Protocol, both ways (SPEC C8, C2, C5, X3, B8; issue 18; docs/mcp.md).

- Client: :class:`loopact.mcp.hub.McpHub` connects the servers of ``mcp.servers`` (stdio or
  streamable HTTP, through the official ``mcp`` SDK), supervises each one
  (:mod:`loopact.mcp.client`) and offers their tools as hot-pluggable outputs of the agent.
- Server: :mod:`loopact.mcp.server` serves a tool registry (the robot's tools included) to
  MCP clients over stdio or streamable HTTP (:mod:`loopact.mcp.http`, bearer token beyond
  loopback), validating every call like the agent's own.
- :mod:`loopact.mcp.convert`: names, safety classes and results between the two worlds.

Importing this package imports nothing else: the SDK loads with the submodules.
"""

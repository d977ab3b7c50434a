"""The Model Context Protocol, both ways (SPEC C8, C2, C5, X3, B8; issue 18; docs/mcp.md).

- Client: :class:`loopact.mcp.hub.McpHub` connects the servers of ``mcp.servers`` (stdio or
  streamable HTTP, through the official ``mcp`` SDK), supervises each one
  (:mod:`loopact.mcp.client`) and offers their tools as hot-pluggable outputs of the agent.
- Server: :mod:`loopact.mcp.server` serves a tool registry (the robot's tools included) to
  MCP clients over stdio or streamable HTTP (:mod:`loopact.mcp.http`, bearer token beyond
  loopback), validating every call like the agent's own.
- :mod:`loopact.mcp.convert`: names, safety classes and results between the two worlds
  (:mod:`loopact.mcp.structured`: ``structuredContent`` without binary, an error's reason;
  :mod:`loopact.mcp.schemas`: input schemas in the form every model API accepts).
- The client's parts: :mod:`loopact.mcp.calls` (one call raced against the connection's
  loss), :mod:`loopact.mcp.listing` (tool lists, liveness, list changes),
  :mod:`loopact.mcp.sessions` (a streamable HTTP server's failed answers, a lost session),
  :mod:`loopact.mcp.status`, :mod:`loopact.mcp.transport`.

Importing this package imports nothing else: the SDK loads with the submodules.
"""

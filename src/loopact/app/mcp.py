"""MCP servers' tools in a running agent (SPEC C8; issue 18).

:func:`attach_mcp`: ``loopact run`` connects the servers of ``mcp.servers`` (and
``--mcp-config FILE``) at start, supervised, and offers their tools next to the others.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from loopact.app.robot import image_gate
from loopact.config import Config
from loopact.events import EventBus
from loopact.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from loopact.mcp.hub import McpHub

log = logging.getLogger(__name__)


def mcp_log_dir() -> Path:
    """Where stdio MCP servers' stderr goes: ``<user cache>/logs`` (``mcp-<name>.log``)."""
    from loopact.llm.local.brain import cache_dir

    return cache_dir() / "logs"


async def attach_mcp(
    cfg: Config,
    registry: ToolRegistry,
    bus: EventBus,
    stack: AsyncExitStack,
    *,
    log_dir: Path | None = None,
) -> McpHub | None:
    """Connect the configured MCP servers and offer their tools in ``registry`` (issue 18).

    Waits for each server's first attempt (bounded by its ``connect_timeout_s``, shown with
    a spinner); servers that fail are retried with back-off and their tools appear when
    they come up. ``stack`` closes every server, each from its own task.

    Returns:
        The :class:`~loopact.mcp.hub.McpHub`, or None when no server is configured.
    """
    servers = {name: s for name, s in cfg.mcp.servers.items() if not s.disabled}
    if not servers:
        return None
    from loopact.mcp.hub import McpHub

    hub = McpHub(
        servers,
        registry,
        bus=bus,
        default_timeout_s=cfg.agent.bounds.tool_timeout_s,
        log_dir=log_dir or mcp_log_dir(),
        gate=image_gate(cfg),
    )
    stack.push_async_callback(hub.stop)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    names = ", ".join(servers)
    with err.status(f"loopact: connecting to MCP servers: {names} ..."):
        await hub.start(wait=True)
    for status in hub.status():
        if status["state"] != "connected":
            err.print(f"loopact: {status['detail']}", markup=False)
    return hub

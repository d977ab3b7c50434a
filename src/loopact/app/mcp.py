"""MCP servers' tools in a running agent (SPEC C8; issue 18).

:func:`attach_mcp`: ``loopact run`` connects the servers of ``mcp.servers`` (and
``--mcp-config FILE``) at start, supervised, and offers their tools next to the others.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Collection, Sequence
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


def allow_warnings(
    allowed: Sequence[str], registry: ToolRegistry, servers: Collection[str]
) -> list[str]:
    """What to say at start about ``confirm.allow`` entries that allow nothing yet (SPEC C5,
    H2; issue 39 item 13), one line each.

    - a plain name of no tool: the closest tool's name (a typo such as ``fiel_write``);
    - a plain name that only an MCP server's tool has: the ``mcp:SERVER/TOOL`` entry that
      would allow it (a plain name allows loopact's own tools only, since whichever server
      lists a name first gets it);
    - ``mcp:SERVER/TOOL`` of a server that ``mcp.servers`` does not have.

    Not errors: a node or MCP server that connects later may bring the tool.

    Args:
        allowed: The entries of ``confirm.allow``.
        registry: The tools at start (MCP servers' included).
        servers: The names of the configured MCP servers.
    """
    lines: list[str] = []
    names = registry.names
    for entry in sorted(set(allowed)):
        server, sep, _tool = entry.removeprefix("mcp:").partition("/")
        if entry.startswith("mcp:") and sep:
            if server not in servers:
                close = difflib.get_close_matches(server, list(servers), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                lines.append(f"confirm.allow: {entry!r} names no server of mcp.servers{hint}")
            continue
        tool = registry.get(entry)
        if tool is not None and tool.allow_entry is not None:
            lines.append(
                f"confirm.allow: {entry!r} is a tool of an MCP server, and a plain name allows "
                f"loopact's own tools only (another server may list the name first): write "
                f"{tool.allow_entry!r} to allow it"
            )
        elif tool is None:
            close = difflib.get_close_matches(entry, names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            lines.append(
                f"confirm.allow: no tool is named {entry!r} yet; {hint}(a tool of a node or "
                "MCP server that connects later is allowed when it comes)"
            )
    return lines

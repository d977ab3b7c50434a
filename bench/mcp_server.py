"""The MCP server ``bench/mcp.py`` measures loopact's client against (official SDK, stdio).

Tools: ``noop()``; ``grow(n)``: answers, then (50 ms later, so the notification is not
tied to the call) adds ``extra_<n>``, writes the wall-clock time of the notification into
``<stamp_dir>/<n>`` and sends ``notifications/tools/list_changed`` (to 2025-era sessions)
and a ``subscriptions/listen`` event (to 2026-era ones).

Usage: ``python bench/mcp_server.py STAMP_DIR``.
"""

# ruff: noqa: E402  (imports after the sys.path fix below)
from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this folder is sys.path[0] and its mcp.py would shadow the SDK's package.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import time
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

STAMPS = Path(sys.argv[1])
BUS = InMemorySubscriptionBus()
EXTRA: list[str] = []
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
    tools = [
        mt.Tool(name="noop", description="Nothing.", input_schema=EMPTY),
        mt.Tool(
            name="grow",
            description="Add a tool.",
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
        ),
    ]
    tools += [mt.Tool(name=n, description="Added.", input_schema=EMPTY) for n in EXTRA]
    return mt.ListToolsResult(tools=tools)


async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    if params.name == "grow":
        n = int((params.arguments or {}).get("n", 0))
        session = ctx.session

        async def later() -> None:
            await anyio.sleep(0.05)
            EXTRA.append(f"extra_{n}")
            (STAMPS / str(n)).write_text(repr(time.time()))
            try:
                await session.send_tool_list_changed()
            except Exception:
                pass
            await BUS.publish(ToolsListChanged())

        TASKS.start_soon(later)
    return mt.CallToolResult(content=[mt.TextContent(type="text", text="ok")])


SERVER = Server(
    "bench",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(BUS),
)
TASKS: Any = None


async def main() -> None:
    global TASKS
    options = SERVER.create_initialization_options(NotificationOptions(tools_changed=True))
    async with anyio.create_task_group() as tg, stdio_server() as (read, write):
        TASKS = tg
        await SERVER.run(read, write, options)
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)

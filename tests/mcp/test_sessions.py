"""A restarted streamable HTTP MCP server is reconnected (issue 39 item 6, SPEC C8).

The server is ``servers/reference.py`` run as a process with ``--ts-sessions``: like servers
built on the TypeScript SDK, it answers a request with a session id it does not know with
HTTP 400 "Bad Request: No valid session ID provided" (the MCP specification says 404, which
the SDK's own servers answer). Killed and started again on the same port, it knows none of
the sessions of before.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.mcp.helpers import REFERENCE, free_port, until

from loopact.config import McpServerConfig
from loopact.events import Event, EventBus
from loopact.llm.messages import ToolCall
from loopact.mcp.hub import McpHub
from loopact.tools.base import ToolContext
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.timeout(120)

STALE = "HTTP 400 Bad Request: 'Bad Request: No valid session ID provided'"


async def _accepts(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    return True


class _Server:
    """The reference server over streamable HTTP on ``port``, restartable."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(REFERENCE),
            "--http",
            str(self.port),
            "--ts-sessions",
            stderr=asyncio.subprocess.DEVNULL,
        )
        ready = False
        for _ in range(1500):  # up to 30 s (20 ms steps): the process takes seconds to start
            if await _accepts(self.port):
                ready = True
                break
            await asyncio.sleep(0.02)
        assert ready, "the reference server did not start listening"

    async def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        await self.proc.wait()
        self.proc = None


@asynccontextmanager
async def _served(
    tmp_path: Path, **link: Any
) -> AsyncIterator[tuple[_Server, McpHub, ToolRegistry, list[Event]]]:
    server = _Server(free_port())
    await server.start()
    bus = EventBus()
    events: list[Event] = []
    bus.subscribe(events.append)
    registry = ToolRegistry()
    cfg = McpServerConfig(url=f"http://127.0.0.1:{server.port}/mcp", trust=True, timeout_s=20)
    timings = {"ping_timeout_s": 2.0, "backoff_base_s": 0.2, "backoff_max_s": 1.0, **link}
    hub = McpHub({"lab": cfg}, registry, bus=bus, **timings)
    await hub.start(wait=True)
    try:
        yield server, hub, registry, events
    finally:
        await hub.stop()
        if server.proc is not None:
            await server.kill()


async def _now(registry: ToolRegistry, tmp_path: Path) -> str:
    ctx = ToolContext(task_id="t", call_id="c", workspace=tmp_path)
    result = await registry.execute(ToolCall("n", "now", {}), ctx, 30)
    assert result.ok, result.error
    return str(result.data)


def _states(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.data["state"], e.data["detail"]) for e in events if e.type == "mcp_server"]


async def test_a_call_after_the_server_restarted_renews_the_session_and_runs_once(
    tmp_path: Path,
) -> None:
    """The server restarts between two calls (no ping in between): the second call's 400
    means a lost session, so loopact initializes again, lists again and retries the call
    once, on the new server, which runs it once (its first call)."""
    async with _served(tmp_path, ping_interval_s=600.0) as (server, _hub, registry, events):
        first = await _now(registry, tmp_path)
        assert first.endswith("call 1")
        await server.kill()
        await server.start()
        second = await _now(registry, tmp_path)
        assert second.endswith("call 1") and second != first  # the new process, once
        states = _states(events)
        dropped = [d for s, d in states if s == "restarting"]
        assert len(dropped) == 1, states
        assert "its session was lost" in dropped[0] and STALE in dropped[0]
        assert [s for s, _ in states].count("connected") == 2
        third = await _now(registry, tmp_path)
        assert third.endswith("call 2")  # the renewed session is kept


async def test_a_ping_that_finds_the_session_gone_reconnects(tmp_path: Path) -> None:
    """The server forgets its sessions (SIGHUP: a restart without the port closing): the
    next ping's 400 drops the connection, naming the HTTP status, and a new session comes up
    with the tools offered again."""
    async with _served(tmp_path, ping_interval_s=0.3) as (server, _hub, registry, events):
        assert "now" in registry
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGHUP)
        await until(
            lambda: [s for s, _ in _states(events)].count("connected") >= 2,
            30,
            "a new session after the ping found the old one gone",
        )
        dropped = [d for s, d in _states(events) if s == "restarting"]
        assert STALE in dropped[0], dropped
        await until(lambda: "now" in registry, 10, "the tools offered again")
        assert (await _now(registry, tmp_path)).startswith("started")


async def test_a_server_gone_during_a_ping_is_reconnected_when_it_is_back(
    tmp_path: Path,
) -> None:
    """A ping while the server is down fails inside the SDK's transport, which cancels the
    task that entered it: supervision must go on, and reconnect once the server is back."""
    async with _served(tmp_path, ping_interval_s=0.3) as (server, _hub, registry, events):
        first = await _now(registry, tmp_path)
        await server.kill()
        await until(lambda: "now" not in registry, 30, "the tools dropped")
        await server.start()
        await until(lambda: "now" in registry, 30, "the tools back after the restart")
        assert await _now(registry, tmp_path) != first
        assert any(s == "restarting" for s, _ in _states(events))

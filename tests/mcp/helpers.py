"""Shared helpers of the MCP tests: the test servers, free ports, waiting for a condition."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopact.config import McpServerConfig

SERVERS = Path(__file__).resolve().parent / "servers"
TOY = SERVERS / "toy.py"
RAW = SERVERS / "raw.py"
REFERENCE = SERVERS / "reference.py"

#: Short supervision timings so the tests observe drops and restarts quickly.
FAST = {"ping_interval_s": 0.5, "ping_timeout_s": 1.0, "backoff_base_s": 0.2, "backoff_max_s": 1.0}


def toy(marker_dir: Path, *flags: str, **extra: Any) -> McpServerConfig:
    """The SDK-written test server over stdio (``flags``: its options, see ``servers/toy.py``)."""
    args = [str(TOY), "--marker-dir", str(marker_dir), *flags]
    return McpServerConfig(command=sys.executable, args=args, **extra)


#: How a toy server announces a tool-list change (hot-plug, issue 18), and the protocol it
#: then speaks: a 2025-era server (most servers today) sends only
#: ``notifications/tools/list_changed``; a 2026-era one only a ``subscriptions/listen`` event.
SIGNALS = {
    "list_changed": (("--legacy", "--signals", "list_changed"), "2025-11-25"),
    "listen": (("--signals", "listen"), "2026-07-28"),
}


def raw(mode: str, **extra: Any) -> McpServerConfig:
    """The hand-written misbehaving stdio server in ``mode``."""
    return McpServerConfig(command=sys.executable, args=[str(RAW), mode], **extra)


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def until(check: Callable[[], Any], timeout_s: float = 20.0, what: str = "") -> Any:
    """Wait until ``check()`` is truthy (polled every 20 ms); fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what or check}")
        await asyncio.sleep(0.02)

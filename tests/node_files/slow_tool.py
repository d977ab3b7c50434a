"""A slow motion-like tool that counts its executions in a file (issue 17 broker restart)."""

import asyncio
import os
from pathlib import Path

from loopact import tool


@tool(safety="idempotent", timeout_s=30)
async def slow_step(seconds: float) -> str:
    """Take a slow step that lasts `seconds` seconds."""
    with Path(os.environ["SLOW_TOOL_COUNT"]).open("a") as f:
        f.write("run\n")
    await asyncio.sleep(seconds)
    return f"stepped for {seconds:g} s"

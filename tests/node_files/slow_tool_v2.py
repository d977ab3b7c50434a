"""slow_tool.py restarted with another schema: a required ``label`` (issue 20 node faults)."""

import asyncio
import os
from pathlib import Path

from loopact import tool


@tool(safety="idempotent", timeout_s=30)
async def slow_step(seconds: float, label: str) -> str:
    """Take a slow step that lasts `seconds` seconds, tagged with `label`."""
    with Path(os.environ["SLOW_TOOL_COUNT"]).open("a") as f:
        f.write(f"v2 {label}\n")
    await asyncio.sleep(seconds)
    return f"{label}: stepped for {seconds:g} s"

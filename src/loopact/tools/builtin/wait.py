"""``wait``: pause for a while without blocking anything else (SPEC C6).

The wait is an :func:`asyncio.sleep`, so cancelling the task (a new user command, SPEC A5) ends
it at once. The tool is re-entrant: parallel waits do not queue behind each other.
"""

from __future__ import annotations

import asyncio
import math

from loopact.errors import ToolError
from loopact.tools.base import SafetyClass, Tool, tool

MAX_WAIT_S = 600.0
"""The longest wait allowed, in seconds."""


async def wait_seconds(seconds: float) -> str:
    """Sleep ``seconds`` (0 < seconds <= 600) and say so.

    Args:
        seconds: How long to wait, in seconds.

    Returns:
        ``"waited {seconds} s"``.

    Raises:
        ToolError: ``seconds`` is not in (0, 600].
        asyncio.CancelledError: The wait was cancelled.
    """
    if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_WAIT_S:
        raise ToolError(f"seconds must be > 0 and <= {MAX_WAIT_S:g}, got {seconds:g}")
    await asyncio.sleep(seconds)
    return f"waited {seconds:g} s"


def make_wait_tool() -> Tool:
    """The ``wait`` tool (read-only, re-entrant; its own timeout is just above 600 s)."""

    @tool(
        safety=SafetyClass.READ_ONLY,
        reentrant=True,
        timeout_s=MAX_WAIT_S + 10.0,
        description="Wait for a number of seconds (at most 600) before doing anything else.",
    )
    async def wait(seconds: float) -> str:
        """Wait.

        Args:
            seconds: How long to wait, in seconds (more than 0, at most 600).
        """
        return await wait_seconds(seconds)

    return wait

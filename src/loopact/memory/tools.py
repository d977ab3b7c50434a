"""The ``remember`` and ``recall`` tools over a :class:`~loopact.memory.store.GitMemory` (E4)."""

from __future__ import annotations

from typing import Literal

from loopact.memory.store import GitMemory
from loopact.tools.base import FunctionTool, Tool, ToolResult, tool


def make_memory_tools(mem: GitMemory) -> list[Tool]:
    """Build ``remember`` (idempotent) and ``recall`` (read_only) bound to ``mem`` (SPEC E4).

    Args:
        mem: An opened memory.

    Returns:
        ``[remember, recall]``.
    """

    @tool(safety="idempotent", timeout_s=30)
    async def remember(fact: str, kind: Literal["fact", "preference"] = "fact") -> ToolResult:
        """Store a fact or a preference the user told you, for later sessions.

        Use it when the user states a preference ("I like my tea without sugar") or a fact
        worth keeping ("the charger is in room 2"). Write it as one self-contained sentence.

        Args:
            fact: The fact or preference, one self-contained sentence.
            kind: "preference" for what the user likes or wants, else "fact".
        """
        try:
            added = await mem.remember(fact, kind)
        except ValueError as exc:
            return ToolResult.failure(str(exc))
        return ToolResult.success(
            "remembered" if added else "already remembered", kind=kind, added=added
        )

    @tool(safety="read_only", timeout_s=30)
    async def recall(query: str, limit: int = 5) -> ToolResult:
        """Look up remembered facts and preferences that match some words.

        Args:
            query: Words to look for (empty: the most recent items).
            limit: At most this many items (1-20).
        """
        items = await mem.recall(query, max(1, min(limit, 20)))
        data = [{"kind": i.kind, "text": i.text, "date": i.date, "by": i.machine_id} for i in items]
        return ToolResult.success(data, found=len(data))

    tools: list[FunctionTool] = [remember, recall]
    return list(tools)

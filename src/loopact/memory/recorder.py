"""Writes what the agent does into its memory as it happens (SPEC E2).

Subscribes to the event bus: every finished task becomes a diary entry (the instruction, how
it ended, the reply); every model response writes a snapshot of the context (images as
hashes). Writes are scheduled on the event loop and committed by the memory's background
worker, so the agent's loop never waits for Git. A failed write is logged, never raised.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from loopact.events import Event, EventBus
from loopact.llm.messages import Message
from loopact.memory.store import GitMemory

log = logging.getLogger(__name__)


class MemoryRecorder:
    """Diary entries per task and context snapshots per round.

    Args:
        memory: The opened memory.
        history: Returns the agent's current history (for snapshots).
        snapshots: Whether to write a snapshot per model response.
    """

    def __init__(
        self,
        memory: GitMemory,
        history: Callable[[], Sequence[Message]],
        snapshots: bool = True,
    ) -> None:
        self.memory = memory
        self.history: Callable[[], Sequence[Message]] = history
        self.snapshots = snapshots
        self._tasks: dict[str, str] = {}
        self._replies: dict[str, str] = {}
        self._pending: set[asyncio.Future[Any]] = set()
        self._unsubscribe: Callable[[], None] | None = None

    def attach(self, bus: EventBus) -> MemoryRecorder:
        """Subscribe to ``bus``; returns self."""
        self._unsubscribe = bus.subscribe(self.on_event)
        return self

    def on_event(self, ev: Event) -> None:
        """Turn task ends into diary entries and responses into snapshots."""
        task = ev.task_id or ""
        if ev.type == "task_start":
            self._tasks[task] = str(ev.data.get("text", ""))
        elif ev.type in ("reply", "message"):
            self._replies[task] = str(ev.data.get("text", ""))
        elif ev.type == "task_end":
            text = self._tasks.pop(task, "")
            reply = self._replies.pop(task, "")
            entry = f"task {task}: {text!r} -> {ev.data.get('status')}"
            if reply:
                entry += f"; replied: {reply[:300]!r}"
            self._schedule(self.memory.append_diary(entry))
        elif ev.type == "model_response" and self.snapshots:
            messages = list(self.history())
            self._schedule(self.memory.snapshot(int(ev.data.get("round", 0)), messages))

    def _schedule(self, coro: Coroutine[Any, Any, Any]) -> None:
        fut = asyncio.ensure_future(coro)
        self._pending.add(fut)
        fut.add_done_callback(self._done)

    def _done(self, fut: asyncio.Future[Any]) -> None:
        self._pending.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            log.warning("memory write failed: %r", fut.exception())

    async def checkpoint(self, text: str) -> None:
        """Write a task checkpoint to the diary before the context is compressed (E1)."""
        await self.memory.append_diary(text)

    async def close(self) -> None:
        """Unsubscribe and wait for scheduled writes."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._pending:
            await asyncio.wait(self._pending, timeout=10)

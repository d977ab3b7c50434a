"""Writes what the agent does into its memory as it happens (SPEC E2).

Subscribes to the event bus: every finished task becomes a diary entry (the instruction, how
it ended, the reply); every model response writes a snapshot of the context (images as
hashes). Writes are scheduled on the event loop and committed by the memory's background
worker, so the agent's loop never waits for Git. A failed write is never raised: the memory
says each distinct problem once (a read-only folder is one warning, not one per round), and
anything else is logged here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from loopact._compat import wait_within
from loopact.errors import MemoryRepoError
from loopact.events import Event, EventBus, EventType
from loopact.events.payloads import (
    MessagePayload,
    ModelResponsePayload,
    TaskEndPayload,
    TaskStartPayload,
    TextPayload,
)
from loopact.llm.messages import Message
from loopact.memory.store import GitMemory

log = logging.getLogger(__name__)

#: How long a checkpoint may hold up a compression, in seconds (the memory may be busy).
CHECKPOINT_TIMEOUT_S = 20.0


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
        if ev.type == EventType.TASK_START:
            self._tasks[task] = str(ev.payload(TaskStartPayload).get("text", ""))
        elif ev.type == EventType.REPLY:
            self._replies[task] = str(ev.payload(TextPayload).get("text", ""))
        elif ev.type == EventType.MESSAGE:
            self._replies[task] = str(ev.payload(MessagePayload).get("text", ""))
        elif ev.type == EventType.TASK_END:
            text = self._tasks.pop(task, "")
            reply = self._replies.pop(task, "")
            entry = f"task {task}: {text!r} -> {ev.payload(TaskEndPayload).get('status')}"
            if reply:
                entry += f"; replied: {reply[:300]!r}"
            self._schedule(self.memory.append_diary(entry))
        elif ev.type == EventType.MODEL_RESPONSE and self.snapshots:
            messages = list(self.history())
            n = int(ev.payload(ModelResponsePayload).get("round", 0))
            self._schedule(self.memory.snapshot(n, messages))

    def _schedule(self, coro: Coroutine[Any, Any, Any]) -> None:
        fut = asyncio.ensure_future(coro)
        self._pending.add(fut)
        fut.add_done_callback(self._done)

    def _done(self, fut: asyncio.Future[Any]) -> None:
        self._pending.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            _log_failure(fut.exception())

    async def checkpoint(self, text: str) -> None:
        """Write a task checkpoint to the diary before the context is compressed (E1).

        Never raises and waits at most :data:`CHECKPOINT_TIMEOUT_S`: the compression (and the
        task) go on without the checkpoint when the memory cannot take it.
        """
        try:
            await wait_within(self.memory.append_diary(text), CHECKPOINT_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning("memory checkpoint not written within %g s", CHECKPOINT_TIMEOUT_S)
        except Exception as exc:
            _log_failure(exc)

    async def close(self) -> None:
        """Unsubscribe and wait for scheduled writes."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._pending:
            await asyncio.wait(self._pending, timeout=10)


def _log_failure(exc: BaseException | None) -> None:
    """A failed write: the memory has said a :class:`MemoryRepoError` already (once)."""
    if isinstance(exc, MemoryRepoError):
        log.debug("memory write failed: %s", exc)
    else:
        log.warning("memory write failed: %r", exc)

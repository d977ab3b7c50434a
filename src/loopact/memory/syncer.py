"""Sharing the memory while the agent runs (SPEC E2, issue 46 item 2).

:class:`MemorySyncer` syncs a :class:`~loopact.memory.store.GitMemory` with its remote every
``interval_s`` seconds (fetch, merge as at start, push: :meth:`GitMemory.sync`), and on demand
(:meth:`MemorySyncer.sync_now`, the ``memory_sync`` tool), so robots that run for days see each
other's diaries, facts and rules. Nothing is lost when the remote cannot be reached: what
this robot writes is committed locally and waits (:meth:`status` says how many commits); the
sync is retried sooner than the interval, 5 s after a failure, doubling to the interval, and
goes on at the interval once it succeeds. Two robots that write at once are merged (diaries
unioned, facts line by line, :mod:`loopact.memory.merge`).

Example::

    syncer = MemorySyncer(memory, interval_s=300, on_result=report)
    await syncer.start()
    ...
    result = await syncer.sync_now("tool")   # the memory_sync tool
    await syncer.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from loopact._compat import wait_within
from loopact.memory.store import GitMemory
from loopact.memory.sync import SyncResult

log = logging.getLogger(__name__)

#: First retry after a failed sync, seconds (doubling up to the interval).
RETRY_FIRST_S = 5.0


class MemorySyncer:
    """Periodic and on-demand sync of one memory with its remote (see the module docstring).

    Args:
        memory: An opened memory with a remote.
        interval_s: Seconds between syncs; 0: no periodic sync (on demand and at exit only).
        on_result: Called with each sync's result and why it ran (``interval``, ``retry``,
            ``tool``...), e.g. to emit an event; a failing callback is logged.
        retry_first_s: First retry after a failure, seconds (doubles up to ``interval_s``).

    Raises:
        ValueError: ``memory`` has no remote, or ``interval_s`` is negative.
    """

    def __init__(
        self,
        memory: GitMemory,
        interval_s: float,
        on_result: Callable[[SyncResult, str], None] | None = None,
        retry_first_s: float = RETRY_FIRST_S,
    ) -> None:
        if memory.remote is None:
            raise ValueError("MemorySyncer needs a memory with a remote")
        if interval_s < 0:
            raise ValueError(f"interval_s must be >= 0, got {interval_s}")
        self.memory = memory
        self.interval_s = interval_s
        self.on_result = on_result
        self.retry_first_s = retry_first_s
        self.failures = 0
        self.syncs = 0
        self.last_attempt: float | None = None
        self.last_ok: float | None = None
        self.last_result: SyncResult | None = None
        self.unsynced = 0
        self.next_at: float | None = None
        self._lock = asyncio.Lock()
        self._synced = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Count what waits for the remote, and start the periodic sync (nothing with
        ``interval_s`` 0). A memory whose sync at open failed is retried soon."""
        with contextlib.suppress(Exception):  # a damaged repository: said by the memory
            self.unsynced = await self.memory.unsynced_commits()
        if self.memory.last_error is not None and "sync" in self.memory.last_error:
            self.failures = 1
        if self._task is None and self.interval_s > 0:
            self._task = asyncio.get_running_loop().create_task(
                self._loop(), name="loopact-memory-sync"
            )

    async def stop(self, timeout_s: float | None = None) -> None:
        """Stop the periodic sync. A sync under way is let finish (its fetch, merge and push
        are bounded by the memory's ``sync_timeout_s``), so that no half-done sync is left
        running on a worker thread beside the exit sync; past ``timeout_s`` (default: three
        of the memory's timeouts) it is cancelled."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stopping = True
        self._synced.set()  # wakes a waiting loop, which then ends
        limit = timeout_s if timeout_s is not None else 3 * self.memory.sync_timeout_s
        try:
            await wait_within(asyncio.shield(task), limit)
        except asyncio.TimeoutError:
            log.warning("memory sync still running after %.0f s at stop: abandoned", limit)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def delay_s(self) -> float:
        """Seconds until the next periodic sync: the interval, or a retry after failures."""
        if self.failures == 0:
            return self.interval_s
        retry: float = self.retry_first_s * 2.0 ** (self.failures - 1)
        return min(self.interval_s, retry)

    async def _loop(self) -> None:
        while not self._stopping:
            delay = self.delay_s()
            self.next_at = time.time() + delay
            self._synced.clear()
            try:  # a sync made meanwhile (the tool's) starts the wait again, from its result
                await wait_within(self._synced.wait(), delay)
                continue
            except asyncio.TimeoutError:
                pass
            if not self._stopping:
                await self.sync_now("retry" if self.failures else "interval")

    async def sync_now(self, why: str = "request") -> SyncResult:
        """Sync now (one at a time); never raises.

        Args:
            why: What asked for it (``interval``, ``retry``, ``tool``), for :attr:`on_result`.

        Returns:
            What the sync did (``ok`` False with ``error`` when the remote was not reached).
        """
        async with self._lock:
            self.last_attempt = time.time()
            result = await self.memory.sync()
            self.syncs += 1
            self.last_result = result
            if result.ok:
                self.failures = 0
                self.last_ok = self.last_attempt
            else:
                self.failures += 1
                log.warning(
                    "memory sync with %s failed (%d in a row; retried in %.0f s): %s",
                    self.memory.remote,
                    self.failures,
                    self.delay_s() if self.interval_s else 0,
                    result.error,
                )
            try:
                self.unsynced = await self.memory.unsynced_commits()
            except Exception as exc:  # a damaged repository: said by the memory already
                log.debug("counting unsynced commits failed: %s", exc)
            self._synced.set()
        if self.on_result is not None:
            try:
                self.on_result(result, why)
            except Exception:
                log.exception("memory sync listener failed")
        return result

    def status(self) -> dict[str, Any]:
        """JSON-able state for ``/status``: the remote, the interval, the last attempt and the
        last success (Unix times), consecutive failures, the last error, the commits waiting
        for the remote and when the next periodic sync is due."""
        last = self.last_result
        return {
            "remote": self.memory.remote,
            "interval_s": self.interval_s,
            "syncs": self.syncs,
            "last_attempt": self.last_attempt,
            "last_ok": self.last_ok,
            "failures": self.failures,
            "last_error": None if last is None else last.error,
            "unsynced_commits": self.unsynced,
            "next_sync": self.next_at if self._task is not None else None,
        }

"""Blocking tool work on threads that a timeout can abandon (SPEC A2, C2, issue 22 item 8).

A synchronous tool (``open()`` on a hung network file system, a serial read that never
returns) cannot be interrupted from Python: when its timeout fires, the thread running it goes
on. On asyncio's default executor that thread is a pool worker for good, and interpreter
shutdown waits for it: a few such calls stall every threaded tool, and ``--once`` never exits.

:class:`BlockingExecutor` runs each call on a fresh daemon thread instead. A call whose awaiting
task is cancelled (the tool timeout, a preemption) returns at once and its thread is
*abandoned*: it frees its slot, so it stalls no later call, and being a daemon it never blocks
exit. Abandoned threads that are still stuck are counted; past ``max_stuck`` of them, new
calls are refused with a clear error instead of growing the number of threads without bound.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from loopact.errors import ToolError

__all__ = ["BlockingExecutor"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class BlockingExecutor:
    """Runs blocking functions on daemon threads, bounded, abandonable (issue 22 item 8).

    Args:
        max_workers: Calls running at once; more wait for a slot (abandoned calls hold none).
        max_stuck: Abandoned calls whose thread has not returned yet, beyond which new calls
            are refused (:class:`~loopact.errors.ToolError`).
        name: Prefix of the thread names (``loopact-blocking-3``).

    Raises:
        ValueError: ``max_workers`` or ``max_stuck`` is below 1.
    """

    def __init__(
        self, max_workers: int = 16, max_stuck: int = 64, name: str = "loopact-blocking"
    ) -> None:
        if max_workers < 1 or max_stuck < 1:
            raise ValueError("max_workers and max_stuck must be at least 1")
        self.max_workers = max_workers
        self.max_stuck = max_stuck
        self.name = name
        self._lock = threading.Lock()
        self._stuck = 0
        self._started = 0
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def stuck(self) -> int:
        """Abandoned calls whose thread is still running."""
        with self._lock:
            return self._stuck

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on a daemon thread and return its result.

        The context variables of the caller are visible in ``fn`` (as with
        ``asyncio.to_thread``).

        Raises:
            ToolError: ``max_stuck`` earlier calls were abandoned and never returned.
            asyncio.CancelledError: The caller was cancelled; the call is abandoned (its
                thread runs on as a daemon and its result is dropped).
            Exception: Whatever ``fn`` raised.
        """
        with self._lock:
            if self._stuck >= self.max_stuck:
                raise ToolError(
                    f"{self._stuck} earlier blocking tool calls never returned (a hung file "
                    "system or device?); no more are started until they do. Restarting the "
                    "agent frees them"
                )
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self.max_workers)
        async with slots:
            return await self._start(loop, fn, args, kwargs)

    async def _start(
        self,
        loop: asyncio.AbstractEventLoop,
        fn: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> T:
        done: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()
        state = {"abandoned": False, "finished": False}

        def work() -> None:
            try:
                result: Any = context.run(fn, *args, **kwargs)
                failure: BaseException | None = None
            except BaseException as exc:  # handed to the caller, never lost
                result, failure = None, exc
            with self._lock:
                state["finished"] = True
                if state["abandoned"]:
                    self._stuck -= 1
                    log.info("an abandoned blocking call of %s returned at last", _name(fn))
                    return
            try:
                loop.call_soon_threadsafe(_settle, done, result, failure)
            except RuntimeError:  # the loop closed meanwhile: nobody is waiting
                pass

        with self._lock:
            self._started += 1
            number = self._started
        threading.Thread(target=work, name=f"{self.name}-{number}", daemon=True).start()
        try:
            return await done
        except asyncio.CancelledError:
            with self._lock:
                if not state["finished"]:
                    state["abandoned"] = True
                    self._stuck += 1
                    log.warning(
                        "blocking call of %s abandoned while still running (%d stuck)",
                        _name(fn),
                        self._stuck,
                    )
            raise


def _settle(done: asyncio.Future[Any], result: Any, failure: BaseException | None) -> None:
    if done.done():
        return
    if failure is not None:
        done.set_exception(failure)
    else:
        done.set_result(result)


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)

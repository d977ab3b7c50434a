"""Python 3.10 compatibility shims (the robots of the seeds run ROS 2 Humble on Python 3.10)."""

from __future__ import annotations

import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

if sys.version_info >= (3, 11):
    from asyncio import timeout as timeout_after
else:  # pragma: no cover - exercised on Python 3.10 only
    from async_timeout import timeout as timeout_after


_T = TypeVar("_T")


async def wait_within(aw: Awaitable[_T], timeout_s: float | None) -> _T:
    """Await ``aw`` for at most ``timeout_s`` seconds (``None``: no limit); the runtime's
    only way to bound an await (``asyncio.wait_for`` is banned in ``src/`` by ruff, TID251).

    Before Python 3.12, ``asyncio.wait_for`` returns the result when the caller is cancelled
    just as the awaited work finishes, so a stop or a preemption (SPEC A3, A6) that races a
    tool, a confirmation or a device answer is swallowed and the task goes on (CPython
    gh-86296). This runs ``aw`` inside :func:`timeout_after` in the caller's own task, so a
    cancellation always propagates.

    Raises:
        TimeoutError: The time ran out (``asyncio.TimeoutError`` on 3.10); ``aw`` was
            cancelled.
    """
    async with timeout_after(timeout_s):
        return await aw


def reschedule(cm: Any, when: float) -> None:
    """Move a :func:`timeout_after` deadline to loop time ``when``.

    ``asyncio.Timeout.reschedule`` on 3.11+, ``async_timeout.Timeout.update`` on 3.10.
    """
    move = getattr(cm, "reschedule", None) or cm.update
    move(when)


__all__ = ["reschedule", "timeout_after", "wait_within"]

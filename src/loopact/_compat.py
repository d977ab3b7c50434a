"""Python 3.10 compatibility shims (the robots of the seeds run ROS 2 Humble on Python 3.10)."""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    from asyncio import timeout as timeout_after
else:  # pragma: no cover - exercised on Python 3.10 only
    from async_timeout import timeout as timeout_after


def reschedule(cm: Any, when: float) -> None:
    """Move a :func:`timeout_after` deadline to loop time ``when``.

    ``asyncio.Timeout.reschedule`` on 3.11+, ``async_timeout.Timeout.update`` on 3.10.
    """
    move = getattr(cm, "reschedule", None) or cm.update
    move(when)


__all__ = ["reschedule", "timeout_after"]

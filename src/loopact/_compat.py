"""Python 3.10 compatibility shims (the robots of the seeds run ROS 2 Humble on Python 3.10)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from asyncio import timeout as timeout_after
else:  # pragma: no cover - exercised on Python 3.10 only
    from async_timeout import timeout as timeout_after

__all__ = ["timeout_after"]

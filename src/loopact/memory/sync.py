"""Sharing one memory between robots through a Git remote (SPEC E2): fetch, merge, push.

:meth:`loopact.memory.GitMemory.sync` calls :func:`fetch_merge_push` holding its Git lock.
A push that races another robot's is rejected, never lost (:func:`loopact.memory._git.push`),
and the whole round is tried again after a short jittered back-off.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from dulwich.repo import Repo

from loopact._compat import wait_within
from loopact.errors import PushRejected
from loopact.memory import _git
from loopact.tools.blocking import BlockingExecutor

log = logging.getLogger(__name__)

#: Fetch-merge-push rounds tried while the remote keeps moving.
SYNC_ATTEMPTS = 5


@dataclass(frozen=True)
class SyncResult:
    """What :meth:`GitMemory.sync` did.

    Attributes:
        ok: True when the remote now holds our history.
        integration: ``"none"``, ``"fast_forward"`` or ``"merged"``.
        pushed: True when a push was made.
        conflicts: Conflict copies written (remote versions kept beside local files).
        error: Why the sync failed, when ``ok`` is False.
    """

    ok: bool
    integration: str = "none"
    pushed: bool = False
    conflicts: tuple[str, ...] = ()
    error: str | None = None


def remote_url(remote: str) -> str:
    """A Git URL as given, a local path made absolute (``~`` expanded)."""
    if "://" in remote or remote.startswith("git@"):
        return remote
    return str(Path(remote).expanduser().absolute())


async def fetch_merge_push(
    repo: Repo,
    remote: str,
    blocking: BlockingExecutor,
    integrate: Callable[[bytes | None], Awaitable[_git.Integration]],
    timeout_s: float,
) -> SyncResult:
    """Fetch the remote's ``main``, integrate it, push ours; retried while it keeps moving.

    Args:
        repo: The memory repository.
        remote: Its remote (see :func:`remote_url`).
        blocking: Where the fetch and the push run (abandoned past ``timeout_s``).
        integrate: Commits pending writes and merges the fetched head (under the memory's
            locks); returns what it did.
        timeout_s: Time limit of one fetch or push, in seconds.

    Returns:
        What was done (``ok`` False with ``error`` when the remote kept moving).

    Raises:
        Exception: A fetch, merge or push failed for another reason (the caller says it).
    """
    kind, pushed = "none", False
    conflicts: tuple[str, ...] = ()
    for attempt in range(SYNC_ATTEMPTS):
        try:
            remote_head = await wait_within(blocking.run(_git.fetch, repo, remote), timeout_s)
            result = await integrate(remote_head)
            if result.kind != "none":
                kind, conflicts = result.kind, result.conflicts
            local = _git.head(repo)
            if local is not None and local != remote_head:
                await wait_within(blocking.run(_git.push, repo, remote), timeout_s)
                pushed = True
            await blocking.run(_git.mark_synced, repo, local)  # the remote holds it now
            return SyncResult(True, kind, pushed, conflicts)
        except PushRejected as exc:
            log.info("memory push rejected (attempt %d): %s", attempt + 1, exc)
            # Back off a little, jittered, so two robots do not collide again.
            await asyncio.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
    return SyncResult(False, kind, pushed, conflicts, "remote kept moving; gave up")

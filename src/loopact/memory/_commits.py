"""The memory's commit queue (SPEC E2): writes return at once, a worker commits them.

:class:`~loopact.memory.store.GitMemory` writes a file atomically and calls
:meth:`CommitQueue.enqueue` with its path; a background task commits the paths queued so far
in one commit, off the caller's critical path. :meth:`CommitQueue.flush` waits until every
write queued before it is committed. A failed commit never raises into the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from dulwich.repo import Repo

from loopact._compat import wait_within
from loopact.memory import _git
from loopact.tools.blocking import BlockingExecutor

log = logging.getLogger(__name__)


class CommitQueue:
    """Queued paths, the worker that commits them, and the lock around Git operations.

    Args:
        repo: The opened repository.
        blocking: Where blocking Git work runs (daemon threads).
        machine_id: Prefix of every commit message (``[robot-1] ...``).
        author: ``b"name <email>"`` of the commits.
    """

    def __init__(
        self, repo: Repo, blocking: BlockingExecutor, machine_id: str, author: bytes
    ) -> None:
        self.repo = repo
        self.machine_id = machine_id
        self.author = author
        self.last_error: str | None = None
        #: Held by every Git operation on the repository (commits, a sync's merge).
        self.git_lock = asyncio.Lock()
        self._blocking = blocking
        self._pending: dict[str, str] = {}
        self._requested = 0
        self._done = 0
        self._cond = asyncio.Condition()
        self._wake = asyncio.Event()
        self._worker = asyncio.create_task(self._run(), name="memory-commit")

    def enqueue(self, relpath: str, message: str) -> None:
        """Commit ``relpath`` (written or deleted) soon, with ``message``."""
        self._pending[relpath] = message
        self._requested += 1
        self._wake.set()

    async def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until every path queued before this call is committed (or failed).

        Raises:
            asyncio.TimeoutError: The commits did not finish within ``timeout_s`` seconds.
        """
        target = self._requested
        cond = self._cond

        async def wait() -> None:
            async with cond:
                await cond.wait_for(lambda: self._done >= target)

        await wait_within(wait(), timeout_s)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            async with self.git_lock:
                await self.commit_pending()

    async def commit_pending(self) -> None:
        """Commit what is queued (the caller holds :attr:`git_lock`); never raises."""
        if not self._pending:
            return
        batch, self._pending = self._pending, {}
        upto = self._requested
        messages = list(dict.fromkeys(batch.values()))
        message = messages[0] if len(messages) == 1 else f"{len(batch)} memory updates"
        body = "\n".join(messages) if len(messages) > 1 else ""
        try:
            await self._blocking.run(
                _git.commit_paths,
                self.repo,
                list(batch),
                f"[{self.machine_id}] {message}\n\n{body}".strip() + "\n",
                self.author,
            )
        except Exception as exc:  # a failed commit must never take the agent down
            self.last_error = f"commit failed: {exc}"
            log.exception("memory commit failed")
        async with self._cond:
            self._done = max(self._done, upto)
            self._cond.notify_all()

    async def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the worker between commits (a commit thread cannot be cancelled)."""
        try:
            await wait_within(self.git_lock.acquire(), timeout_s)
            locked = True
        except asyncio.TimeoutError:
            log.warning("memory close: a git operation is still running; closing anyway")
            locked = False
        try:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        finally:
            if locked:
                self.git_lock.release()

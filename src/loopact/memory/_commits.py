"""The memory's commit queue (SPEC E2): writes return at once, a worker commits them.

:class:`~loopact.memory.store.GitMemory` writes a file atomically and calls
:meth:`CommitQueue.enqueue` with its path; a background task commits the paths queued so far
in one commit, off the caller's critical path. :meth:`CommitQueue.flush` waits until every
write queued before it is committed.

A failed commit never raises into the agent and loses nothing: its paths stay queued and go
into the next commit (after the next write, at :meth:`~CommitQueue.flush` or at close); the
problem is said once, in words (:class:`~loopact.memory._faults.Health`), not as a traceback
per write. What no commit took before the process ended (a ``.git/index.lock`` left by a
crashed ``git``, a kill) is committed by :meth:`CommitQueue.recover` at the next open. Every
commit holds the folder's cross-process lock (:mod:`loopact.memory._lock`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from dulwich.repo import Repo

from loopact._compat import wait_within
from loopact.memory import _git
from loopact.memory._faults import Health
from loopact.memory._lock import repo_lock
from loopact.tools.blocking import BlockingExecutor

log = logging.getLogger(__name__)


class CommitQueue:
    """Queued paths, the worker that commits them, and the lock around Git operations.

    Args:
        repo: The opened repository.
        folder: Its working tree, the memory folder.
        blocking: Where blocking Git work runs (daemon threads).
        machine_id: Prefix of every commit message (``[robot-1] ...``).
        author: ``b"name <email>"`` of the commits.
        health: Where a failed commit is said (once per distinct problem).
    """

    def __init__(
        self,
        repo: Repo,
        folder: Path,
        blocking: BlockingExecutor,
        machine_id: str,
        author: bytes,
        health: Health,
    ) -> None:
        self.repo = repo
        self.folder = folder
        self.machine_id = machine_id
        self.author = author
        self.health = health
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
                self._commit_locked,
                list(batch),
                f"[{self.machine_id}] {message}\n\n{body}".strip() + "\n",
            )
        except Exception as exc:  # a failed commit must never take the agent down
            self.health.failed(exc)
            log.debug("memory commit failed", exc_info=True)
            # Nothing is lost: the paths go into the next commit (newer messages win).
            self._pending = {**batch, **self._pending}
        else:
            self.health.ok()
        async with self._cond:
            self._done = max(self._done, upto)
            self._cond.notify_all()

    def _commit_locked(self, paths: list[str], message: str) -> None:
        with repo_lock(self.folder):
            _git.commit_paths(self.repo, paths, message, self.author)

    async def recover(self) -> list[str]:
        """Commit what the working tree holds beyond the last commit (SPEC E2).

        An earlier run's writes that no commit took (a lock file, a crash, a kill), files
        edited by hand, and the files of a folder that lost its ``.git``.

        Returns:
            The paths committed ([] when everything was committed).

        Raises:
            Exception: The commit failed (see :func:`~loopact.memory._faults.describe`);
                the files are left as they are.
        """

        def work() -> list[str]:
            with repo_lock(self.folder):
                paths = _git.uncommitted_paths(self.repo, self.folder)
                if paths:
                    _git.commit_paths(
                        self.repo,
                        paths,
                        f"[{self.machine_id}] commit {len(paths)} memory file(s) left "
                        "uncommitted\n\n" + "\n".join(paths[:50]) + "\n",
                        self.author,
                    )
                return paths

        async with self.git_lock:
            return await self._blocking.run(work)

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

"""One writer at a time on a memory folder, across processes (SPEC E2).

Two agents may share one memory folder (two ``loopact run`` on one robot, a ``loopact mcp``
beside the agent). Appending to a diary or to ``facts.md`` reads the file, adds a line and
writes it back; a commit stages into the one ``.git/index`` and moves ``main``. Done by two
processes at once, one's line or commit is lost (seen: 3 to 5 of 40 diary entries per
writer). :func:`repo_lock` serialises them: an advisory ``flock`` on ``.git/loopact.lock``,
taken by the blocking function that does the work (on a worker thread), never held across an
``await``. The kernel drops the lock when its process dies, so a crash leaves no stale lock.
Where ``fcntl`` does not exist (Windows), the lock is a no-op.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from loopact.errors import MemoryRepoError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux or macOS
    fcntl = None  # type: ignore[assignment]

#: The lock file, inside the repository's ``.git`` folder (never committed).
LOCK_NAME = "loopact.lock"
#: How long a writer waits for another process's write, in seconds.
LOCK_TIMEOUT_S = 15.0


@contextlib.contextmanager
def repo_lock(folder: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the memory folder's write lock (blocking; call it on a worker thread).

    Args:
        folder: The memory folder (its ``.git`` folder holds the lock file).
        timeout_s: How long to wait for another process, in seconds.

    Raises:
        MemoryRepoError: Another process held the lock for ``timeout_s`` seconds (the
            message names it by its process id).
        OSError: The lock file cannot be opened (a read-only disk, a missing ``.git``).
    """
    if fcntl is None:  # pragma: no cover - not on Linux or macOS
        yield
        return
    fd = os.open(folder / ".git" / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _wait_for(fd, folder, timeout_s, "is writing to it")
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def creation_lock(folder: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold a lock on the memory folder itself while its repository is opened or created.

    Two agents started together on a new folder would otherwise both create ``.git`` (one
    fails), or one would open the other's half-made ``.git`` and call it damaged. The lock
    is an advisory ``flock`` on the folder's directory (nothing is written into it); the
    folder is created first if it does not exist. Blocking: call it on a worker thread.

    Args:
        folder: The memory folder.
        timeout_s: How long to wait for another process, in seconds.

    Raises:
        MemoryRepoError: Another process held it for ``timeout_s`` seconds.
        OSError: The folder cannot be created or opened.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover - not on Linux or macOS
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        _wait_for(fd, folder, timeout_s, "is opening it")
        yield
    finally:
        os.close(fd)


def _wait_for(fd: int, folder: Path, timeout_s: float, doing: str) -> None:
    """Take an exclusive ``flock`` on ``fd``, polling until ``timeout_s`` seconds pass.

    Raises:
        MemoryRepoError: It is still held by another process at the deadline.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise MemoryRepoError(
                    f"the memory folder {folder} has been busy for {timeout_s:g} s: "
                    f"another process ({_holder(fd)}) {doing}"
                ) from None
            time.sleep(delay)  # the other process holds it for milliseconds
            delay = min(delay * 2, 0.05)


def _holder(fd: int) -> str:
    """``pid 1234`` of the process that wrote the lock file last, or ``unknown``."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode().strip())
        return f"pid {pid}"
    return "unknown"

"""What went wrong with the memory folder, said so a person can act on it (SPEC E2).

:func:`describe` turns the errors a memory write or commit meets (a read-only disk, a lock
file left by a crashed ``git``, a missing object) into one sentence that names the folder or
file and the fix; never a traceback or a temporary file name. :class:`Health` keeps the last
problem and logs each distinct one once, so a long-running agent on a read-only disk says so
once, not on every round.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import zlib
from pathlib import Path

from dulwich.errors import (
    ChecksumMismatch,
    FileFormatException,
    NotGitRepository,
    ObjectFormatException,
)
from dulwich.file import FileLocked

from loopact.errors import MemoryRepoError
from loopact.memory._fs import TEMP_MARKER

log = logging.getLogger("loopact.memory")

_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def read_only_text(folder: Path) -> str:
    """The sentence for a memory folder that cannot be written."""
    return (
        f"the memory folder {folder} is read-only, so nothing new is remembered (facts, "
        "preferences, diary, snapshots) until it can be written"
    )


def damaged_text(folder: Path, what: str) -> str:
    """The sentence for a damaged repository, ``what`` saying how."""
    return (
        f"the Git repository of the memory folder {folder} is damaged: {what}; repair it "
        f"(git fsck in {folder}), or move {folder / '.git'} away to start a new history "
        "that keeps the files"
    )


def _name_in(folder: Path, filename: object) -> str:
    """A file name relative to the memory folder, the temporary name mapped to the real one."""
    name = os.fsdecode(filename) if isinstance(filename, (str, bytes)) else str(filename)
    path = Path(name)
    if TEMP_MARKER in path.name and path.name.startswith("."):
        path = path.with_name(path.name[1:].split(TEMP_MARKER)[0])
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def describe(exc: BaseException, folder: Path) -> str:
    """One sentence saying what ``exc`` means for the memory folder ``folder``, and the fix.

    Args:
        exc: The error a write, commit or open raised.
        folder: The memory folder.

    Returns:
        The sentence (no traceback, no temporary file name).
    """
    if isinstance(exc, MemoryRepoError):
        return str(exc)
    if isinstance(exc, FileLocked):
        lock = _name_in(folder, exc.args[1] if len(exc.args) > 1 else exc.args[0])
        return (
            f"{folder / lock} exists: another git program is using the memory repository, or "
            "one stopped without removing it (delete the file if no git program is running); "
            "the memory files are written and are committed once it is gone"
        )
    if isinstance(exc, OSError) and exc.errno in _READ_ONLY:
        return read_only_text(folder)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"the disk of the memory folder {folder} is full; nothing new is remembered"
    if isinstance(exc, OSError):
        where = _name_in(folder, exc.filename) if exc.filename else str(folder)
        return f"memory file {where} cannot be written: {exc.strerror or exc}"
    if isinstance(exc, KeyError) and exc.args:
        key = exc.args[0]
        text = key.decode("ascii", "replace") if isinstance(key, bytes) else str(key)
        if _SHA_RE.match(text):
            return damaged_text(folder, f"object {text[:7]} is missing")
    damage = (ChecksumMismatch, FileFormatException, ObjectFormatException, NotGitRepository)
    if isinstance(exc, (*damage, zlib.error)):
        return damaged_text(folder, f"{type(exc).__name__}: {exc}")
    return f"memory commit failed: {type(exc).__name__}: {exc}"


class Health:
    """The memory's last problem; each distinct one is logged once, as a warning.

    Args:
        folder: The memory folder (named in the messages).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.last_error: str | None = None
        self._said: str | None = None

    def failed(self, exc: BaseException | str) -> str:
        """Record a problem and log it unless it is the one said last; returns its text."""
        text = exc if isinstance(exc, str) else describe(exc, self.folder)
        self.last_error = text
        if text != self._said:
            log.warning("%s", text)
            self._said = text
        else:
            log.debug("again: %s", text)
        return text

    def ok(self) -> None:
        """The memory works again (a commit went through): forget the problem."""
        if self.last_error is not None:
            log.info("memory: working again after: %s", self.last_error)
        self.last_error = None
        self._said = None

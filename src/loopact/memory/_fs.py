"""Atomic file writes for the memory folder (SPEC E2): temp file, fsync, rename."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

#: Marker in the names of temporary files (ignored by Git, never left behind on success).
TEMP_MARKER = ".tmp-"


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never a mix.

    The bytes go to a temporary file in the same folder, which is flushed and fsynced, then
    renamed over ``path`` with :func:`os.replace`; the folder is fsynced so the rename
    survives a power cut. On any error the temporary file is removed.

    Args:
        path: The destination file; its parent folders are created.
        data: The complete new content.

    Raises:
        OSError: The write failed (the old file, if any, is unchanged).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}{TEMP_MARKER}{secrets.token_hex(4)}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Fsync a folder so renames and deletions in it are durable (no-op where unsupported)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_file(path: Path) -> None:
    """Delete ``path`` if it exists and fsync its folder."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        fsync_dir(path.parent)

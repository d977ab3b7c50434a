"""Workspace-confined file tools (SPEC C6): ``file_read``, ``file_write``, ``file_list``.

Every path the model gives is resolved (symlinks followed) and must stay inside the workspace:
absolute paths elsewhere, ``..`` traversal and symlinks that lead out are refused with
"path '...' is outside the workspace <dir>". Writes are atomic: a temporary file in the target
folder is written, flushed, fsync'ed and renamed over the target with :func:`os.replace`, so a
reader never sees half a file.

The tools are plain functions; :class:`~loopact.tools.base.FunctionTool` runs them in a worker
thread, so the blocking file system calls never stall the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from loopact.errors import ToolError
from loopact.tools.base import FunctionTool, SafetyClass, Tool, ToolResult, tool

log = logging.getLogger(__name__)

MAX_READ_BYTES = 1024 * 1024
"""``file_read`` refuses files larger than this (1 MiB)."""

MAX_LIST_ENTRIES = 200
"""``file_list`` returns at most this many entries."""


class Workspace:
    """A folder the file tools are confined to (SPEC C6).

    Args:
        root: The workspace folder; created (with parents) if missing.

    Raises:
        OSError: The folder cannot be created.
    """

    def __init__(self, root: Path) -> None:
        root = Path(root).expanduser()
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()

    def resolve(self, path: str) -> Path:
        """The absolute, symlink-free path for ``path`` (relative to the workspace or absolute).

        Args:
            path: A path as the model wrote it.

        Returns:
            The resolved path, guaranteed to be the workspace or inside it.

        Raises:
            ToolError: ``path`` is empty, contains a NUL byte, or resolves outside the
                workspace (absolute path elsewhere, ``..`` traversal, symlink escape).
        """
        if not path or not path.strip():
            raise ToolError(
                "path is empty; give a path relative to the workspace, e.g. 'notes.txt'"
            )
        if "\0" in path:
            raise ToolError(f"path {path!r} contains a NUL byte")
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError) as exc:  # symlink loop
            raise ToolError(f"path '{path}' cannot be resolved: {exc}") from None
        if resolved != self.root and self.root not in resolved.parents:
            raise ToolError(f"path '{path}' is outside the workspace {self.root}")
        return resolved

    def relative(self, resolved: Path) -> str:
        """``resolved`` relative to the workspace, POSIX style (``"."`` for the root)."""
        rel = resolved.relative_to(self.root).as_posix()
        return rel or "."


def _fmt_mb(n_bytes: int) -> str:
    return f"{n_bytes / (1024 * 1024):.1f} MB"


def read_text(ws: Workspace, path: str) -> ToolResult:
    """Read a workspace file as text (see ``file_read``).

    Raises:
        ToolError: Outside the workspace, missing, not a regular file, or over 1 MiB.
    """
    target = ws.resolve(path)
    if not target.exists():
        raise ToolError(f"no file '{path}' in the workspace; use file_list to see what exists")
    if target.is_dir():
        raise ToolError(f"'{path}' is a folder, not a file; use file_list to see its contents")
    try:
        with target.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_READ_BYTES:
                raise ToolError(
                    f"file '{path}' is {_fmt_mb(size)}; file_read reads files up to "
                    f"{_fmt_mb(MAX_READ_BYTES)}"
                )
            raw = f.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise ToolError(f"cannot read '{path}': {exc.strerror or exc}") from None
    if len(raw) > MAX_READ_BYTES:  # grew while we read it
        raise ToolError(
            f"file '{path}' is over {_fmt_mb(MAX_READ_BYTES)}; file_read reads files up to "
            f"{_fmt_mb(MAX_READ_BYTES)}"
        )
    text = raw.decode("utf-8", errors="replace")
    return ToolResult.success(text, path=ws.relative(target), bytes=len(raw))


def write_text(ws: Workspace, path: str, content: str | bytes) -> ToolResult:
    """Atomically write ``content`` (text as UTF-8, or bytes as they are) to a workspace file
    (see ``file_write``; ``write_document`` and saved images write bytes through it).

    Raises:
        ToolError: Outside the workspace, the target is a folder, or the write failed.
    """
    target = ws.resolve(path)
    if target == ws.root or target.is_dir():
        raise ToolError(f"'{path}' is a folder; give a file path such as '{path}/notes.txt'")
    data = content if isinstance(content, bytes) else content.encode("utf-8", errors="replace")
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ToolError(f"cannot create the folder for '{path}': {exc.strerror or exc}") from None
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    except OSError:
        mode = 0o644
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise ToolError(f"cannot write '{path}': {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(parent)
    return ToolResult.success(
        f"wrote {len(data)} bytes to {ws.relative(target)}",
        path=ws.relative(target),
        bytes=len(data),
    )


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable; not every file system supports fsync on a folder."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        log.debug("fsync of folder %s not supported", folder)
    finally:
        os.close(dir_fd)


def list_entries(ws: Workspace, path: str = ".") -> ToolResult:
    """List a workspace folder (see ``file_list``).

    Raises:
        ToolError: Outside the workspace, missing, or not a folder.
    """
    target = ws.resolve(path)
    if not target.exists():
        raise ToolError(f"no folder '{path}' in the workspace")
    if not target.is_dir():
        raise ToolError(f"'{path}' is a file, not a folder; use file_read to read it")
    entries: list[dict[str, Any]] = []
    try:
        with os.scandir(target) as it:
            items = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise ToolError(f"cannot list '{path}': {exc.strerror or exc}") from None
    for entry in items[:MAX_LIST_ENTRIES]:
        try:
            is_dir = entry.is_dir()
            size: int | None = None if is_dir else entry.stat().st_size
        except OSError:  # broken symlink, vanished file
            is_dir, size = False, None
        entries.append(
            {"name": entry.name, "type": "dir" if is_dir else "file", "size_bytes": size}
        )
    data: dict[str, Any] = {
        "path": ws.relative(target),
        "entries": entries,
        "total": len(items),
        "truncated": len(items) > MAX_LIST_ENTRIES,
    }
    if data["truncated"]:
        data["note"] = f"showing the first {MAX_LIST_ENTRIES} of {len(items)} entries"
    return ToolResult.success(data, path=ws.relative(target), truncated=data["truncated"])


def make_file_tools(workspace: Path | Workspace) -> list[Tool]:
    """``file_read``, ``file_write`` and ``file_list`` confined to ``workspace`` (SPEC C6).

    Args:
        workspace: The folder (created if missing) or an existing :class:`Workspace`.

    Returns:
        The three tools, in that order.
    """
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)

    @tool(
        safety=SafetyClass.READ_ONLY,
        description="Read a UTF-8 text file (up to 1 MB) from the workspace folder.",
    )
    def file_read(path: str) -> ToolResult:
        """Read a text file.

        Args:
            path: File path relative to the workspace, e.g. 'notes/todo.txt'.
        """
        return read_text(ws, path)

    @tool(
        safety=SafetyClass.WRITE,
        description="Write text to a file in the workspace folder, replacing it if it exists.",
    )
    def file_write(path: str, content: str) -> ToolResult:
        """Write a text file.

        Args:
            path: File path relative to the workspace; missing folders are created.
            content: The complete new text of the file.
        """
        return write_text(ws, path, content)

    @tool(
        safety=SafetyClass.READ_ONLY,
        description="List the files and folders in a workspace folder.",
    )
    def file_list(path: str = ".") -> ToolResult:
        """List a folder.

        Args:
            path: Folder path relative to the workspace; '.' is the workspace itself.
        """
        return list_entries(ws, path)

    tools: list[FunctionTool] = [file_read, file_write, file_list]
    return list(tools)

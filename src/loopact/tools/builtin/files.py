"""Workspace-confined file tools (SPEC C6): ``file_read``, ``file_write``, ``file_list``.

Every path the model gives is resolved (symlinks followed) and must stay inside the workspace:
absolute paths elsewhere, ``..`` traversal and symlinks that lead out are refused with
"path '...' is outside the workspace <dir>". Writes are atomic: a temporary file in the target
folder is written, flushed, fsync'ed and renamed over the target with :func:`os.replace`, so a
reader never sees half a file.

The agent's own state is out of reach (issue 21, docs/security.md): a :class:`Workspace` is
given *protected* paths (the memory repository with its ``.git``, the config file in use and
every config file loopact would load by default, the trace file, the local-brain cache, the
loopact package itself, the other files the configuration names) and refuses to read, write
or list anything at or below them, also when the path leads there through a symlink. A
workspace that lies inside a protected folder is refused when it is created.

Only regular files are read or replaced: a FIFO, socket or device is refused before it is
opened (opening a FIFO would block a worker thread until someone writes to it). ``file_list``
shows a symlink that leaves the workspace only as such, never its target's type or size. Names
longer than the file system allows (usually 255 bytes) get an error that names the limit.

The tools are plain functions; :class:`~loopact.tools.base.FunctionTool` runs them in a worker
thread, so the blocking file system calls never stall the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from loopact.errors import ToolError
from loopact.tools.base import FunctionTool, SafetyClass, Tool, ToolResult, tool

log = logging.getLogger(__name__)

MAX_READ_BYTES = 1024 * 1024
"""``file_read`` refuses files larger than this (1 MiB)."""

MAX_LIST_ENTRIES = 200
"""``file_list`` returns at most this many entries."""

DEFAULT_NAME_MAX = 255
"""Longest file name in bytes when the file system does not say (``NAME_MAX`` on Linux)."""

DEFAULT_PATH_MAX = 4096
"""Longest path in bytes when the file system does not say (``PATH_MAX`` on Linux)."""

_TEMP_PREFIX = ".loopact-"
_SHOWN_NAME_CHARS = 40


@dataclass(frozen=True)
class ProtectedPath:
    """A path the file tools never read, write or list (issue 21).

    Attributes:
        path: The file or folder; everything below a folder is protected too.
        what: What it is, for the model and the user, e.g. ``"the memory folder"``.
    """

    path: Path
    what: str


def _pathconf(folder: Path, name: str, default: int) -> int:
    try:
        value = os.pathconf(folder, name)
    except (OSError, ValueError):
        return default
    return value if value > 0 else default


def _kind_of(mode: int) -> str | None:
    """``"fifo"``, ``"socket"`` or ``"device"`` for special files, None for files and folders."""
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


_KIND_WORDS = {"fifo": "a FIFO (named pipe)", "socket": "a socket", "device": "a device"}


class Workspace:
    """A folder the file tools are confined to (SPEC C6), minus loopact's own state (issue 21).

    Args:
        root: The workspace folder; created (with parents) if missing.
        protected: Paths that stay out of reach of the file tools, e.g. the memory folder
            (see :class:`ProtectedPath`); resolved here, symlinks followed.

    Raises:
        OSError: The folder cannot be created.
        ValueError: The workspace is a protected path or lies inside one (every file tool
            call would be refused); the message names both paths.
    """

    def __init__(self, root: Path, protected: Iterable[ProtectedPath] = ()) -> None:
        root = Path(root).expanduser()
        resolved_protected = [
            ProtectedPath(Path(p.path).expanduser().resolve(), p.what) for p in protected
        ]
        for p in resolved_protected:
            # Checked before the folder is created, so a refused workspace leaves no trace.
            if _within(root.resolve(), p.path):
                raise ValueError(
                    f"the workspace {root.resolve()} lies inside {p.what} {p.path}; "
                    "choose a workspace folder outside it"
                )
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        self.protected = tuple(resolved_protected)
        self.name_max = _pathconf(self.root, "PC_NAME_MAX", DEFAULT_NAME_MAX)
        self.path_max = _pathconf(self.root, "PC_PATH_MAX", DEFAULT_PATH_MAX)

    def resolve(self, path: str) -> Path:
        """The absolute, symlink-free path for ``path`` (relative to the workspace or absolute).

        Args:
            path: A path as the model wrote it.

        Returns:
            The resolved path, guaranteed to be the workspace or inside it, and not protected.

        Raises:
            ToolError: ``path`` is empty, contains a NUL byte, has a name longer than the file
                system allows, resolves outside the workspace (absolute path elsewhere, ``..``
                traversal, symlink escape) or into a protected path.
        """
        if not path or not path.strip():
            raise ToolError(
                "path is empty; give a path relative to the workspace, e.g. 'notes.txt'"
            )
        if "\0" in path:
            raise ToolError(f"path {path!r} contains a NUL byte")
        self._check_lengths(path)
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError) as exc:  # symlink loop
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "symlink loop"
            raise ToolError(f"path '{path}' cannot be resolved: {reason}") from None
        if not _within(resolved, self.root):
            raise ToolError(f"path '{path}' is outside the workspace {self.root}")
        guard = self.protected_by(resolved)
        if guard is not None:
            where = "is" if resolved == guard.path else "is inside"
            raise ToolError(
                f"path '{path}' {where} {guard.what}; the file tools never read or change "
                "loopact's own state (docs/security.md)"
            )
        return resolved

    def protected_by(self, resolved: Path) -> ProtectedPath | None:
        """The protected path that ``resolved`` (symlink-free) is or lies inside, or None."""
        for p in self.protected:
            if _within(resolved, p.path):
                return p
        return None

    def _check_lengths(self, path: str) -> None:
        """Refuse names and paths the file system cannot hold, naming the limit (issue 21)."""
        for part in Path(path).parts:
            size = len(os.fsencode(part))
            if size > self.name_max and part != os.sep:
                shown = part if len(part) <= _SHOWN_NAME_CHARS else part[:_SHOWN_NAME_CHARS] + "..."
                raise ToolError(
                    f"the name '{shown}' is {size} bytes long; file names on this file "
                    f"system are limited to {self.name_max} bytes"
                )
        size = len(os.fsencode(path))
        if size > self.path_max:
            raise ToolError(
                f"the path is {size} bytes long; paths on this file system are limited to "
                f"{self.path_max} bytes"
            )

    def relative(self, resolved: Path) -> str:
        """``resolved`` relative to the workspace, POSIX style (``"."`` for the root)."""
        rel = resolved.relative_to(self.root).as_posix()
        return rel or "."


def _within(path: Path, folder: Path) -> bool:
    """True if ``path`` is ``folder`` or lies below it (both absolute and resolved)."""
    return path == folder or folder in path.parents


def _fmt_mb(n_bytes: int) -> str:
    return f"{n_bytes / (1024 * 1024):.1f} MB"


def read_text(ws: Workspace, path: str) -> ToolResult:
    """Read a workspace file as text (see ``file_read``).

    Raises:
        ToolError: Outside the workspace, protected, missing, not a regular file (a FIFO,
            socket or device is refused before it is opened), over 1 MiB, or not UTF-8 text
            (an image, a binary; names the size and the first byte that is not UTF-8).
    """
    target, raw = read_bytes(ws, path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"not UTF-8 text: {ws.relative(target)}; {len(raw)} bytes, the first byte that is "
            f"not UTF-8 is at offset {exc.start} (file_read reads text files only)"
        ) from None
    return ToolResult.success(text, path=ws.relative(target), bytes=len(raw))


def read_bytes(
    ws: Workspace, path: str, max_bytes: int = MAX_READ_BYTES, reader: str = "file_read"
) -> tuple[Path, bytes]:
    """The resolved path and the bytes of a regular workspace file, at most ``max_bytes``
    (``file_read``, and every other tool that reads a workspace file).

    Args:
        ws: The workspace.
        path: The path as the model wrote it.
        max_bytes: Larger files are refused before they are read.
        reader: The tool's name, for the error messages.

    Raises:
        ToolError: See :func:`open_regular`; also a file that grew past ``max_bytes`` while
            it was read.
    """
    target, f = open_regular(ws, path, max_bytes, reader)
    try:
        with f:
            raw = f.read(max_bytes + 1)
    except OSError as exc:
        raise ToolError(f"cannot read '{path}': {exc.strerror or 'error'}") from None
    if len(raw) > max_bytes:  # grew while we read it
        raise ToolError(
            f"file '{path}' is over {_fmt_mb(max_bytes)}; {reader} reads files up to "
            f"{_fmt_mb(max_bytes)}"
        )
    return target, raw


def open_regular(
    ws: Workspace, path: str, max_bytes: int = MAX_READ_BYTES, reader: str = "file_read"
) -> tuple[Path, BinaryIO]:
    """The resolved path of a regular workspace file of at most ``max_bytes``, open for
    reading (the caller closes it), for tools that read a file as a stream (``play_audio``).

    Args:
        ws: The workspace.
        path: The path as the model wrote it.
        max_bytes: Larger files are refused before they are read.
        reader: The tool's name, for the error messages.

    Raises:
        ToolError: Outside the workspace, protected, missing, a folder, not a regular file
            (a FIFO, socket or device is refused before it is opened, issue 21 item 11), or
            over ``max_bytes``; the message never holds an absolute path.
    """
    target = ws.resolve(path)
    try:
        st = target.stat()
    except FileNotFoundError:
        raise ToolError(
            f"no file '{path}' in the workspace; use file_list to see what exists"
        ) from None
    except OSError as exc:
        raise ToolError(f"cannot read '{path}': {exc.strerror or 'error'}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"'{path}' is a folder, not a file; use file_list to see its contents")
    _refuse_special(path, st.st_mode, f"{reader} reads")
    try:
        # O_NONBLOCK: if the file was swapped for a FIFO since the stat, open() still returns
        # at once and the fstat below refuses it; regular files ignore the flag.
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(target, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ToolError(f"cannot read '{path}': {exc.strerror or 'error'}") from None
    f = os.fdopen(fd, "rb")
    try:
        st = os.fstat(f.fileno())
    except OSError as exc:
        f.close()
        raise ToolError(f"cannot read '{path}': {exc.strerror or 'error'}") from None
    try:
        _refuse_special(path, st.st_mode, f"{reader} reads")
        if st.st_size > max_bytes:
            raise ToolError(
                f"file '{path}' is {_fmt_mb(st.st_size)}; {reader} reads files up to "
                f"{_fmt_mb(max_bytes)}"
            )
    except ToolError:
        f.close()
        raise
    return target, f


def _refuse_special(path: str, mode: int, verb: str) -> None:
    """Raise for anything that is not a regular file (FIFO, socket, device)."""
    kind = _kind_of(mode)
    if kind is not None or not stat.S_ISREG(mode):
        what = _KIND_WORDS.get(kind or "", "not a regular file")
        raise ToolError(f"'{path}' is {what}, not a regular file; {verb} regular files only")


def write_text(ws: Workspace, path: str, content: str | bytes) -> ToolResult:
    """Atomically write ``content`` (text as UTF-8, or bytes as they are) to a workspace file
    (see ``file_write``; ``write_document`` and saved images write bytes through it).

    Raises:
        ToolError: Outside the workspace, protected, the target is a folder or a special
            file, or the write failed (the message never holds an absolute path).
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
        st = target.stat()
    except OSError:
        mode = 0o644
    else:
        _refuse_special(path, st.st_mode, "file_write writes")
        mode = st.st_mode & 0o7777
    # The temporary name does not grow with the target's: a name of 255 bytes stays writable.
    tmp_name: str | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".tmp", dir=parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except OSError as exc:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
        raise ToolError(f"cannot write '{path}': {exc.strerror or 'error'}") from None
    except BaseException:
        if tmp_name is not None:
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


def _describe(ws: Workspace, entry: os.DirEntry[str]) -> dict[str, Any]:
    """One ``file_list`` entry: name, type and size, revealing nothing beyond the workspace.

    Types: ``file``, ``dir``, ``fifo``, ``socket``, ``device``, ``protected`` (loopact's own
    state) and ``link`` (a symlink leaving the workspace or broken; its target is not shown).
    """
    out: dict[str, Any] = {"name": entry.name, "type": "file", "size_bytes": None}
    try:
        if entry.is_symlink():
            real = Path(entry.path).resolve()
            if not _within(real, ws.root) or not real.exists():
                out["type"] = "link"
                out["target"] = "outside the workspace" if not _within(real, ws.root) else "missing"
                return out
        else:
            real = Path(entry.path)
        if ws.protected_by(real.resolve()) is not None:
            out["type"] = "protected"
            return out
        st = os.stat(real)
    except (OSError, RuntimeError):  # vanished file, symlink loop
        out["type"] = "link" if entry.is_symlink() else "file"
        return out
    if stat.S_ISDIR(st.st_mode):
        out["type"] = "dir"
    elif stat.S_ISREG(st.st_mode):
        out["size_bytes"] = st.st_size
    else:
        out["type"] = _kind_of(st.st_mode) or "other"
    return out


def list_entries(ws: Workspace, path: str = ".") -> ToolResult:
    """List a workspace folder (see ``file_list``).

    Raises:
        ToolError: Outside the workspace, protected, missing, or not a folder.
    """
    target = ws.resolve(path)
    if not target.exists():
        raise ToolError(f"no folder '{path}' in the workspace")
    if not target.is_dir():
        raise ToolError(f"'{path}' is a file, not a folder; use file_read to read it")
    try:
        with os.scandir(target) as it:
            items = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise ToolError(f"cannot list '{path}': {exc.strerror or 'error'}") from None
    entries = [_describe(ws, entry) for entry in items[:MAX_LIST_ENTRIES]]
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
        workspace: The folder (created if missing) or an existing :class:`Workspace` (which
            carries the protected paths, issue 21).

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

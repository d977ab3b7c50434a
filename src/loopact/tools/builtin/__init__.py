"""Built-in general tools (SPEC C6): ``system_status``, ``file_read``, ``file_write``,
``file_list`` and ``wait``.

Use :func:`make_builtin_tools` to get them all, bound to one workspace folder::

    registry = ToolRegistry(make_builtin_tools(Path("~/loopact-workspace").expanduser()))
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from loopact.tools.base import Tool
from loopact.tools.builtin.files import ProtectedPath, Workspace, make_file_tools
from loopact.tools.builtin.system import make_system_tools
from loopact.tools.builtin.wait import make_wait_tool

__all__ = [
    "ProtectedPath",
    "Workspace",
    "make_builtin_tools",
    "make_file_tools",
    "make_system_tools",
    "make_wait_tool",
]


def make_builtin_tools(
    workspace: Path | Workspace, protected: Iterable[ProtectedPath] = ()
) -> list[Tool]:
    """All built-in tools, file tools confined to ``workspace`` (SPEC C6).

    Args:
        workspace: The workspace folder (created with parents if missing), or a
            :class:`~loopact.tools.builtin.files.Workspace` that already names its protected
            paths (then ``protected`` must be empty).
        protected: loopact's own state, out of reach of the file tools (issue 21, see
            :class:`~loopact.tools.builtin.files.Workspace`).

    Returns:
        ``system_status``, ``file_read``, ``file_write``, ``file_list``, ``wait``, in that
        order.

    Raises:
        OSError: The workspace folder cannot be created.
        ValueError: The workspace lies inside a protected path, or ``protected`` was given
            with a :class:`~loopact.tools.builtin.files.Workspace`.
    """
    if isinstance(workspace, Workspace):
        if tuple(protected):
            raise ValueError("give the protected paths to the Workspace, not as well here")
        ws = workspace
    else:
        ws = Workspace(workspace, protected)
    return [*make_system_tools(ws.root), *make_file_tools(ws), make_wait_tool()]

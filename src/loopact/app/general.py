"""The configured general tools of a run (issue 19, SPEC C6): ``write_document`` (with
``documents.font``) and those that exist only when their configuration says so
(``shell_exec`` with ``tools.shell.enabled``)."""

from __future__ import annotations

from pathlib import Path

from loopact.config import Config
from loopact.tools.base import Tool
from loopact.tools.builtin.files import Workspace


def general_tools(cfg: Config, workspace: Path) -> list[Tool]:
    """The general tools ``cfg`` enables, confined to ``workspace``.

    Args:
        cfg: The configuration (``tools.*``).
        workspace: The workspace folder (created if missing).
    """
    ws = Workspace(workspace)
    from loopact.tools.builtin.documents import make_document_tool

    font = cfg.documents.font.expanduser() if cfg.documents.font else None
    tools: list[Tool] = [make_document_tool(ws, font)]
    shell = cfg.tools.shell
    if shell.enabled:
        from loopact.tools.builtin.shell import ShellSettings, make_shell_tool

        settings = ShellSettings(
            allow={k: list(v) for k, v in shell.allow.items()},
            timeout_s=shell.timeout_s,
            max_output_chars=shell.max_output_chars,
        )
        tools.append(make_shell_tool(ws, settings))
    return tools

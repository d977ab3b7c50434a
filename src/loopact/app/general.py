"""The configured general tools of a run (issue 19, SPEC C6): ``write_document`` (with
``documents.font``) and those that exist only when their configuration says so
(``shell_exec`` with ``tools.shell.enabled``, ``generate_image`` with ``images.base_url`` and
``images.model``)."""

from __future__ import annotations

from pathlib import Path

from loopact.config import Config
from loopact.tools.base import Tool
from loopact.tools.builtin.files import Workspace


def general_tools(cfg: Config, workspace: Path | Workspace) -> list[Tool]:
    """The general tools ``cfg`` enables, confined to ``workspace``.

    Args:
        cfg: The configuration (``tools.*``).
        workspace: The workspace folder (created if missing), or the run's
            :class:`~loopact.tools.builtin.files.Workspace`: ``loopact run`` gives the one of
            its file tools, so that ``write_document`` and ``generate_image`` cannot reach
            loopact's own state either (a ``RULE.md`` written into the memory folder would
            change every later system prompt; issue 21 items 1 and 2).
    """
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
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
    if cfg.images.configured:
        tools.append(_image_tool(cfg, ws))
    return tools


def _image_tool(cfg: Config, ws: Workspace) -> Tool:
    """``generate_image``; its images reach the model through the image gate (SPEC G1)."""
    from loopact.app.robot import image_gate
    from loopact.llm.messages import Image
    from loopact.tools.builtin.images import ImageEndpoint, make_image_tool

    images = cfg.images
    assert images.base_url and images.model
    key = images.api_key.get_secret_value() if images.api_key else None
    if key is None and images.base_url == cfg.model.base_url:
        key = cfg.api_key  # the same service: its key (never sent to another host)
    gate = image_gate(cfg)  # SPEC G1: the configured limits

    def through_gate(data: bytes) -> Image | None:
        return gate.process(data).image

    endpoint = ImageEndpoint(
        images.base_url, images.model, key, images.default_size, images.timeout_s
    )
    return make_image_tool(ws, endpoint, through_gate)

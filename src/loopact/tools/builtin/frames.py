"""Images kept in the workspace so that later steps can use them (issue 19, SPEC A4, D5).

A tool that shows the model an image (``seewhat``, ``generate_image``) also saves it under
``frames/`` in the workspace and names the file in its result's ``metadata.image``; a plan
step then embeds it by reference (``write_document(..., images=
["{{steps.1.outputs.metadata.image}}"])``). Only the newest :data:`KEEP_FRAMES` camera frames
are kept, so a long run does not fill the disk.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from loopact.errors import ToolError
from loopact.llm.messages import Image
from loopact.tools.base import ToolContext
from loopact.tools.builtin.files import Workspace, write_text

log = logging.getLogger(__name__)

FRAMES_DIR = "frames"
"""The workspace folder saved images go to."""

KEEP_FRAMES = 50
"""Saved images kept per name prefix (the oldest are deleted)."""

_EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp"}
_counter = itertools.count(1)


def save_image(workspace: Path, image: Image, prefix: str, keep: int = KEEP_FRAMES) -> str:
    """Save ``image`` as ``frames/<prefix>-<time>-<n>.<ext>`` atomically; blocking.

    Args:
        workspace: The workspace folder.
        image: The image (its bytes are written as they are).
        prefix: Name prefix, e.g. ``seewhat``.
        keep: How many files with this prefix to keep (older ones are deleted).

    Returns:
        The path relative to the workspace, for ``metadata.image``.

    Raises:
        ToolError: The file cannot be written.
    """
    ext = _EXTENSIONS.get(image.media_type, "bin")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{FRAMES_DIR}/{prefix}-{stamp}-{next(_counter):04d}.{ext}"
    ws = Workspace(workspace)
    result = write_text(ws, name, image.data)
    _prune(ws.root / FRAMES_DIR, prefix, keep)
    return str(result.metadata["path"])


def _prune(folder: Path, prefix: str, keep: int) -> None:
    try:
        files = sorted(
            (p for p in folder.glob(f"{prefix}-*") if p.is_file()),
            key=lambda p: p.stat().st_mtime_ns,
        )
    except OSError:
        return
    for old in files[:-keep] if keep > 0 else files:
        with contextlib.suppress(OSError):
            old.unlink()
            log.debug("deleted old frame %s", old.name)


async def keep_for_plan(ctx: ToolContext, images: Sequence[Image], prefix: str) -> dict[str, str]:
    """``{"image": "frames/<prefix>-....jpg"}`` for a tool result's metadata: the first image,
    saved in the call's workspace for later plan steps (``{{steps.N.outputs.metadata.image}}``).

    Empty when there is no image or the call is a direct one (``tool()`` in a script or test,
    whose context's workspace is only the current folder); ``{"image_error": ...}`` when
    the file cannot be written (the tool's result stays a success).
    """
    if not images or ctx.call_id == "direct":
        return {}
    try:
        # the call's executor: a timeout abandons a write a hung file system never finishes
        return {"image": await ctx.executor.run(save_image, ctx.workspace, images[0], prefix)}
    except ToolError as exc:
        return {"image_error": str(exc)}

"""Canonical messages as Anthropic Messages API content (SPEC B2, B4, B8).

The request side of :mod:`loopact.llm.anthropic`. System messages go to ``system``;
consecutive tool messages become one user message of ``tool_result`` blocks (with image blocks
where the tool returned images), and a user message right after them is merged into the same
message, after the results; consecutive messages of one role are merged; empty and
whitespace-only text blocks are left out (the API refuses them with HTTP 400, issue 22); an
assistant message carries its thinking blocks first, unchanged with their signatures (the API
requires them back), then its text, then one ``tool_use`` block per call. Nothing is reordered
or dropped, so every ``tool_use`` keeps its ``tool_result``. A call id the API refuses (it
wants ``^[a-zA-Z0-9_-]+$``; other servers send ``functions.file_write:0`` or none, and the
history comes along when the provider is switched at run time, SPEC B4) is rewritten by
:func:`wire_id`, the same way in the ``tool_use`` and in its ``tool_result``. Pure functions of
the history: no I/O.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from typing import Any

from loopact.llm.messages import (
    NO_VISION_NOTE,
    AudioPart,
    Image,
    Message,
    TextPart,
    audio_fallback_text,
)

__all__ = ["to_anthropic_messages", "tools_used", "wire_id"]

_EMPTY_RESULT = "(no output)"
_ID = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_ID = re.compile(r"[^a-zA-Z0-9_-]+")


def wire_id(call_id: str) -> str:
    """``call_id`` as the Messages API accepts a tool-use id (``^[a-zA-Z0-9_-]+$``).

    Args:
        call_id: A canonical call id, from any provider (``functions.file_write:0``, "").

    Returns:
        ``call_id`` itself when the API accepts it; else ``toolu_`` + its allowed characters +
        a hash of the whole id, so that distinct ids stay distinct and one id always maps to
        the same wire id.
    """
    if _ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    kept = _NOT_ID.sub("_", call_id).strip("_")[:40]
    return f"toolu_{kept}_{digest}" if kept else f"toolu_{digest}"


def to_anthropic_messages(
    messages: Sequence[Message], vision: bool = True
) -> tuple[str, list[dict[str, Any]]]:
    """Convert canonical messages to the Messages API's ``system`` and ``messages`` (SPEC B4).

    Args:
        messages: The canonical history.
        vision: When False, images become a short text note.

    Returns:
        ``(system, messages)``: the system text ("" when there is none) and the message list,
        roles alternating, starting with ``user``.
    """
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if m.role == "system":
            if m.text.strip():
                system_parts.append(m.text)
        elif m.role == "user":
            add("user", _content_blocks(m, vision))
        elif m.role == "tool":
            add("user", [_tool_result_block(m, vision)])
        else:
            add("assistant", _assistant_blocks(m))
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(continue)"}]})
    return "\n\n".join(system_parts), out


def _image_block(image: Image) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": image.media_type,
            "data": base64.b64encode(image.data).decode("ascii"),
        },
    }


def _content_blocks(m: Message, vision: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    heard = audio_fallback_text(m)  # the Messages API takes no audio: its transcript (B8)
    for part in m.content:
        if isinstance(part, TextPart):
            if part.text.strip():  # the API refuses empty and whitespace-only text blocks
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, AudioPart):
            if heard:
                blocks.append({"type": "text", "text": heard})
                heard = ""
        elif vision:
            blocks.append(_image_block(part.image))
        else:
            blocks.append({"type": "text", "text": NO_VISION_NOTE})
    return blocks


def _tool_result_block(m: Message, vision: bool) -> dict[str, Any]:
    content = _content_blocks(m, vision)
    if not any(b["type"] == "text" for b in content):
        content.insert(0, {"type": "text", "text": _EMPTY_RESULT})
    return {"type": "tool_result", "tool_use_id": wire_id(m.tool_call_id or ""), "content": content}


def _assistant_blocks(m: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for t in m.thinking:
        if t.redacted_data is not None:
            blocks.append({"type": "redacted_thinking", "data": t.redacted_data})
        else:
            blocks.append({"type": "thinking", "thinking": t.text, "signature": t.signature})
    for part in m.content:
        if isinstance(part, TextPart) and part.text.strip():
            # "\n\n" before a tool_use comes back from the API, but sent in a request it is
            # refused: "text content blocks must contain non-whitespace text" (issue 22).
            blocks.append({"type": "text", "text": part.text})
    for call in m.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": wire_id(call.id), "name": call.name, "input": call.arguments}
        )
    return blocks


def tools_used(messages: list[dict[str, Any]]) -> list[str]:
    """Names of the tools called in ``messages`` (Anthropic shape), in first-use order."""
    names: dict[str, None] = {}
    for m in messages:
        for block in m["content"]:
            if block.get("type") == "tool_use" and block.get("name"):
                names[str(block["name"])] = None
    return list(names)

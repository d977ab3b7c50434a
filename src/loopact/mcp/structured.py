"""An MCP result's ``structuredContent`` as the model should read it (issue 39 items 4, 5;
SPEC B8, C8).

- :func:`without_binary`: base64 of binary data does not belong in the model's text. A
  server may echo a result's image in ``structuredContent`` (the reference filesystem
  server's ``read_media_file`` puts 12-16 k characters of base64 there beside the image
  block); every such string is replaced by a short note. The image itself reaches the model
  as an image, through the image gate.
- :func:`error_reason`: a failed result whose reason is only in ``structuredContent`` says
  that reason, not "the tool reported an error".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import mcp.types as mt

MIN_BINARY_CHARS = 200
"""A string of at least this many base64 characters (and nothing else) is taken for binary
data; words, identifiers, hashes (64 hex digits) and tokens are shorter or have other
characters."""

REASON_CHARS = 300
"""Characters of a reason taken from ``structuredContent`` for the error message."""

_MAX_DEPTH = 64
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+)?(;[\w=.+-]+)*;base64,", re.IGNORECASE)
_REASON_KEYS = ("message", "error", "detail", "reason", "description")


def binary_blocks(content: Iterable[Any]) -> dict[str, str]:
    """The base64 data of a result's binary blocks (images, audio, blob resources), each
    with what it is (``image/png``), to recognise an echo of it."""
    found: dict[str, str] = {}
    for block in content:
        if isinstance(block, (mt.ImageContent, mt.AudioContent)):
            found[block.data] = block.mime_type
        elif isinstance(block, mt.EmbeddedResource) and isinstance(
            block.resource, mt.BlobResourceContents
        ):
            found[block.resource.blob] = block.resource.mime_type or "binary data"
    return found


def binary_note(text: str, blocks: dict[str, str], *, echo_only: bool = False) -> str | None:
    """What to say instead of ``text`` if it is base64 of binary data (or a ``data:`` URL
    holding it), else None.

    Args:
        text: A string of the result.
        blocks: :func:`binary_blocks` of the same result.
        echo_only: Only the data of one of ``blocks`` counts (for text blocks, which may
            hold anything); else also any run of at least :data:`MIN_BINARY_CHARS` base64
            characters with upper and lower case letters and digits, as encoded bytes have.
    """
    data = text.strip()
    url = _DATA_URL.match(data)
    if url is not None:
        data = data[url.end() :]
    size = len(data) * 3 // 4
    if data in blocks:
        kind = blocks[data]
        shown = "it reaches you as an image" if kind.startswith("image/") else "see the notes"
        return f"[base64 of the result's {kind} block, {size} bytes, not shown as text: {shown}]"
    if echo_only or len(data) < MIN_BINARY_CHARS or not _BASE64.fullmatch(data):
        return None
    if not (re.search(r"[a-z]", data) and re.search(r"[A-Z]", data) and re.search(r"\d", data)):
        return None  # "xxxx...", a long word: not encoded bytes
    return f"[base64 data, about {size} bytes, not shown as text]"


def without_binary(value: Any, blocks: dict[str, str], _depth: int = 0) -> Any:
    """``value`` (a ``structuredContent``) with every string of binary data replaced by
    :func:`binary_note`; ``value`` itself when there is none."""
    if isinstance(value, str):
        note = binary_note(value, blocks)
        return value if note is None else note
    if _depth >= _MAX_DEPTH:
        return value
    if isinstance(value, dict):
        items = {k: without_binary(v, blocks, _depth + 1) for k, v in value.items()}
        changed = any(items[k] is not v for k, v in value.items())
        return items if changed else value
    if isinstance(value, list):
        seq = [without_binary(v, blocks, _depth + 1) for v in value]
        return seq if any(a is not b for a, b in zip(seq, value, strict=True)) else value
    return value


def error_reason(structured: Any) -> str:
    """The reason a failed result gives in its ``structuredContent``: the first string under
    ``message``, ``error``, ``detail``, ``reason`` or ``description`` (looked for inside an
    ``error`` object too), else the whole of it as compact JSON; cut to
    :data:`REASON_CHARS`."""
    found = _reason(structured, 0)
    if not found:
        found = json.dumps(structured, ensure_ascii=False, default=str)
    found = " ".join(found.split())
    if len(found) > REASON_CHARS:
        found = found[: REASON_CHARS - 3] + "..."
    return found


def _reason(value: Any, depth: int) -> str:
    if isinstance(value, str):
        return value.strip()
    if not isinstance(value, dict) or depth > 3:
        return ""
    for key in _REASON_KEYS:
        if key in value:
            found = _reason(value[key], depth + 1)
            if found:
                return found
    return ""

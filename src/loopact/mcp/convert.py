"""Between MCP's wire shapes and loopact's tools (SPEC C1, C5, B8; issue 18).

Pure functions, used by both sides:

- the client: an MCP tool's name, safety class and result as loopact sees them
  (:func:`offered_name`, :func:`safety_of`, :func:`to_tool_result`);
- the server: a loopact tool and result as MCP clients see them (:func:`annotations_of`,
  :func:`to_call_result`).

Safety (issue 18, issue 21 item 13): a server's ``readOnlyHint`` makes a tool read-only only
when the operator trusts that server (``mcp.servers.NAME.trust``); ``destructiveHint`` and
no hint at all make it a write tool, which needs confirmation unless allowed. The operator's
own grant (``mcp.servers.NAME.safety``) beats both.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

import mcp.types as mt

from loopact.llm.messages import Image
from loopact.mcp.structured import binary_blocks, binary_note, error_reason, without_binary
from loopact.tools.base import SafetyClass, ToolResult
from loopact.tools.report import result_json

MAX_TEXT_CHARS = 100_000
"""Characters of text kept from one MCP result; the rest is cut with a note (20 MB results)."""

MAX_IMAGES = 8
"""Images kept from one MCP result."""

MAX_DESCRIPTION_CHARS = 2_000
"""Characters of a remote tool's description offered to the model."""

MAX_SCHEMA_CHARS = 16_000
"""Characters of JSON a remote tool's ``inputSchema`` may have; every model request carries
it, so a larger one is not offered."""

MAX_TOOLS_PER_SERVER = 128
"""Tools of one server offered at most (the first ones it lists); every model request
carries every tool."""

SAFETY_META_KEY = "io.github.loopact/safety"
"""``_meta`` key under which ``loopact mcp`` announces a tool's own safety class."""

_NAME_BAD = re.compile(r"[^a-zA-Z0-9_-]+")
_NAME_MAX = 64

GateFn = Callable[[bytes], "Image | str"]
"""Turns image bytes into a gated :class:`Image`, or returns why the image was refused."""


# ---------------------------------------------------------------------- names and classes
def clean_name(text: str) -> str:
    """``text`` as a provider-safe tool name: ``[a-zA-Z0-9_-]``, at most 64 characters."""
    cleaned = _NAME_BAD.sub("_", text).strip("_") or "tool"
    return cleaned[:_NAME_MAX]


def offered_name(server: str, tool: str, taken: Callable[[str], bool]) -> str:
    """The name the model sees for ``tool`` of ``server`` (issue 18: prefixed on conflict).

    The tool's own name (made provider-safe) when it is free; else ``<server>_<tool>``;
    else that with ``_2``, ``_3``, ... appended.

    Args:
        server: The server's name in ``mcp.servers``.
        tool: The tool's name on the server.
        taken: Whether a name is already used by another tool.
    """
    own = clean_name(tool)
    if not taken(own):
        return own
    prefixed = clean_name(f"{server}_{tool}")
    if not taken(prefixed):
        return prefixed
    n = 2
    while True:
        suffix = f"_{n}"
        candidate = prefixed[: _NAME_MAX - len(suffix)] + suffix
        if not taken(candidate):
            return candidate
        n += 1


def granted_class(name: str, grants: Mapping[str, str] | None) -> str | None:
    """The class the operator grants the server's tool ``name`` in ``grants`` (the server's
    ``safety`` mapping), or None; an exact name beats an ``fnmatch`` pattern, as for nodes."""
    grants = grants or {}
    granted = grants.get(name)
    if granted is None:
        granted = next((c for p, c in grants.items() if fnmatchcase(name, p)), None)
    return granted


def safety_of(
    tool: mt.Tool, *, trusted: bool, grants: Mapping[str, str] | None = None
) -> SafetyClass:
    """The safety class loopact gives a server's tool (issue 18, issue 21 item 13).

    Args:
        tool: The tool as the server lists it.
        trusted: Whether the operator trusts the server's annotations.
        grants: The operator's classes by the tool's name on the server, or an ``fnmatch``
            pattern of names (``read_*``): ``read_only``, ``idempotent`` or ``write``.

    Returns:
        The granted class if any; ``read_only`` for ``readOnlyHint`` on a trusted server;
        ``write`` otherwise (``destructiveHint``, no hints, or an untrusted server).
    """
    granted = granted_class(tool.name, grants)
    if granted is not None:
        return SafetyClass(granted)
    hints = tool.annotations
    if trusted and hints is not None and hints.read_only_hint:
        return SafetyClass.READ_ONLY
    return SafetyClass.WRITE


def annotations_of(safety: SafetyClass) -> mt.ToolAnnotations:
    """MCP tool annotations for a loopact safety class (``loopact mcp``).

    ``read_only``: read-only, idempotent. ``idempotent``: not read-only, not destructive,
    idempotent. ``write``: destructive. ``motion``: destructive and open-world (it moves a
    robot in the physical world; every motion still goes through the safety governor).
    """
    if safety is SafetyClass.READ_ONLY:
        return mt.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    if safety is SafetyClass.IDEMPOTENT:
        return mt.ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True
        )
    return mt.ToolAnnotations(
        read_only_hint=False,
        destructive_hint=True,
        idempotent_hint=False,
        open_world_hint=safety is SafetyClass.MOTION,
    )


def short_description(text: str | None, fallback: str) -> str:
    """A remote tool's description, cut to :data:`MAX_DESCRIPTION_CHARS`."""
    text = (text or "").strip() or fallback
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 3] + "..."
    return text


# ---------------------------------------------------------------------- MCP -> loopact
class _Collector:
    """Gathers the text, images and notes of one result within the size limits."""

    def __init__(self, gate: GateFn) -> None:
        self.gate = gate
        self.texts: list[str] = []
        self.chars = 0
        self.cut_chars = 0
        self.images: list[Image] = []
        self.notes: list[str] = []

    def text(self, text: str) -> None:
        room = MAX_TEXT_CHARS - self.chars
        if room <= 0:
            self.cut_chars += len(text)
            return
        if len(text) > room:
            self.cut_chars += len(text) - room
            text = text[:room]
        self.texts.append(text)
        self.chars += len(text)

    def image(self, data_b64: str, mime: str, what: str) -> None:
        if len(self.images) >= MAX_IMAGES:
            self.notes.append(f"{what}: more than {MAX_IMAGES} images, not shown")
            return
        try:
            raw = base64.b64decode(data_b64, validate=True)
        except (binascii.Error, ValueError):
            self.notes.append(f"{what} ({mime}) is not valid base64, not shown")
            return
        gated = self.gate(raw)
        if isinstance(gated, str):
            self.notes.append(f"{what} ({mime}, {len(raw)} bytes) not shown: {gated}")
            return
        self.images.append(gated)

    def blob(self, data_b64: str, mime: str, what: str) -> None:
        if mime.startswith("image/"):
            self.image(data_b64, mime, what)
            return
        size = len(data_b64) * 3 // 4
        self.notes.append(f"{what}: {mime or 'binary'} data of about {size} bytes, not shown")


def _resource(c: _Collector, contents: mt.TextResourceContents | mt.BlobResourceContents) -> None:
    mime = contents.mime_type or ""
    uri = str(contents.uri)
    if isinstance(contents, mt.TextResourceContents):
        c.text(f"[resource {uri}{' (' + mime + ')' if mime else ''}]\n{contents.text}")
    else:
        c.blob(contents.blob, mime, f"resource {uri}")


def _block(c: _Collector, block: Any) -> list[str]:
    """Add one content block; returns the URIs of resource links (to read, if wanted)."""
    if isinstance(block, mt.TextContent):
        c.text(block.text)
    elif isinstance(block, mt.ImageContent):
        c.image(block.data, block.mime_type, "image")
    elif isinstance(block, mt.AudioContent):
        size = len(block.data) * 3 // 4
        c.notes.append(f"audio ({block.mime_type}, about {size} bytes), not played")
    elif isinstance(block, mt.EmbeddedResource):
        _resource(c, block.resource)
    elif isinstance(block, mt.ResourceLink):
        desc = f" - {block.description}" if block.description else ""
        c.text(f"[resource link {block.uri} ({block.name}){desc}]")
        return [str(block.uri)]
    else:
        kind = getattr(block, "type", type(block).__name__)
        c.notes.append(f"content of unknown type {kind!r}, not shown")
    return []


def to_tool_result(
    result: mt.CallToolResult,
    *,
    server: str,
    gate: GateFn,
    linked: Iterable[mt.TextResourceContents | mt.BlobResourceContents] = (),
) -> ToolResult:
    """An MCP tool result as a loopact :class:`ToolResult` (SPEC B8, issue 18).

    Text blocks become ``data`` (one string; cut at :data:`MAX_TEXT_CHARS` with a note);
    images and image resources go through ``gate`` into ``images`` (at most
    :data:`MAX_IMAGES`); embedded text resources are added to the text with their URI;
    audio, binary resources and unknown blocks are named in ``metadata.notes``;
    ``structuredContent`` is ``data`` when there is no text, else ``metadata.structured``
    when small and different. Base64 of binary data is never text: a text block or a string
    of ``structuredContent`` that holds it (an echo of the image block) is replaced by a
    note (:mod:`loopact.mcp.structured`, issue 39 item 5). ``isError`` makes a failed result
    whose ``error`` is the text, or the reason ``structuredContent`` gives, whose details are
    ``data`` as for a success (issue 39 item 4).

    Args:
        result: The server's answer.
        server: The server's name (``metadata.mcp_server``).
        gate: Image gate (see :data:`GateFn`).
        linked: Contents of resource links already read, added like embedded resources.
    """
    c = _Collector(gate)
    blocks = binary_blocks(result.content)
    links: list[str] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            echo = binary_note(block.text, blocks, echo_only=True)
            if echo is not None:  # a binary block's base64 as text: the note instead
                c.notes.append(echo)
                continue
        links.extend(_block(c, block))
    for contents in linked:
        _resource(c, contents)
    meta: dict[str, Any] = {"mcp_server": server}
    if links:
        meta["resource_links"] = links
    if c.cut_chars:
        c.notes.append(f"text cut: {c.cut_chars} more characters not shown")
    if c.notes:
        meta["notes"] = c.notes
    text = "\n".join(c.texts)
    data: Any = text
    structured = result.structured_content
    if structured is not None:
        structured = without_binary(structured, blocks)  # issue 39 item 5
        dumped = json.dumps(structured, ensure_ascii=False, default=str)
        if not text:
            data = structured if len(dumped) <= MAX_TEXT_CHARS else dumped[:MAX_TEXT_CHARS]
        elif len(dumped) <= 4_000 and dumped != text:
            meta["structured"] = structured
    if result.is_error:  # the details as for a success; the reason in the error (item 4)
        reason = text or (error_reason(structured) if structured is not None else "")
        return ToolResult(
            ok=False,
            data=None if text else data or None,
            metadata=meta,
            error=f"MCP server {server}: {reason or 'the tool reported an error'}",
            images=tuple(c.images),
        )
    return ToolResult(ok=True, data=data, metadata=meta, images=tuple(c.images))


# ---------------------------------------------------------------------- loopact -> MCP
def _finite(value: Any) -> Any:
    """JSON-safe copy: NaN and infinities become None (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def to_call_result(result: ToolResult) -> mt.CallToolResult:
    """A loopact :class:`ToolResult` as an MCP tool result (``loopact mcp``).

    One text block with the result as compact JSON (``{ok, data, error, metadata}``,
    :func:`~loopact.tools.report.result_json`, the
    same facts the agent's own model reads: what was clamped, how a motion ended), one image
    block per image (camera frames, SPEC G1 gated JPEGs), the JSON also as
    ``structuredContent``, and ``isError`` for a failed result.
    """
    body = _finite(json.loads(json.dumps(result_json(result), ensure_ascii=False, default=str)))
    content: list[mt.ContentBlock] = [
        mt.TextContent(type="text", text=json.dumps(body, ensure_ascii=False))
    ]
    for image in result.images:
        content.append(
            mt.ImageContent(
                type="image",
                data=base64.b64encode(image.data).decode("ascii"),
                mime_type=image.media_type,
            )
        )
    return mt.CallToolResult(content=content, structured_content=body, is_error=not result.ok)


def error_result(message: str) -> mt.CallToolResult:
    """A failed MCP tool result with ``message`` (refusals, bad arguments)."""
    body = {"ok": False, "error": message}
    return mt.CallToolResult(
        content=[mt.TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=True,
    )

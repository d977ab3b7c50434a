"""Tool calls written as text (SPEC B4, B5, B7).

These forms are recognised in answer text:

* ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (the Hermes / Qwen chat
  template format that many local servers pass through as plain text), and the open models'
  own markup of :mod:`loopact.llm.markup` (Qwen3-Coder ``<function=...>``, GLM
  ``<arg_key>``, Kimi K2 ``<|tool_calls_section_begin|>``; issue 39 item 2). They are
  streamed: :class:`ToolCallTagParser` finds them as chunks arrive and hands each block over
  at its closing tag, so the call can run before the response ends (SPEC X1).
* A bare JSON object naming a known tool, ``{"name": ..., "arguments"|"parameters": {...}}``,
  possibly in a ```` ``` ```` fence. This is only trusted for endpoints without native tool
  calls and only decided at the end of the response (:func:`find_bare_json_calls`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from loopact.llm.arguments import MAX_ARGUMENT_CHARS, too_long_error
from loopact.llm.markup import (
    KIMI_CALL,
    KIMI_SECTION,
    QWEN_FUNCTION,
    UNREADABLE,
    new_call_id,
    parse_glm_call,
    parse_kimi_calls,
    parse_qwen_function,
)
from loopact.llm.messages import ToolCall
from loopact.llm.repair import parse_tool_arguments
from loopact.llm.think import partial_tag_suffix
from loopact.llm.toolnames import resolve_tool_name

__all__ = [
    "ToolCallTagParser",
    "find_bare_json_calls",
    "new_call_id",
    "parse_block",
    "parse_tool_call_block",
]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
BLOCK_TAGS: dict[str, str] = {
    OPEN_TAG: CLOSE_TAG,
    KIMI_SECTION[0]: KIMI_SECTION[1],
    KIMI_CALL[0]: KIMI_CALL[1],
    QWEN_FUNCTION[0]: QWEN_FUNCTION[1],
}
"""Opening tag -> closing tag of every block that holds tool calls."""

_NAME_RE = re.compile(r'"name"\s*:\s*"([^"]+)"')
_FENCE_RE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_MAX_BARE_ATTEMPTS = 64


class ToolCallTagParser:
    """Incrementally cut tool-call blocks (:data:`BLOCK_TAGS`: ``<tool_call>...</tool_call>``
    and the markup of :mod:`loopact.llm.markup`) out of streamed text.

    :meth:`feed` and :meth:`flush` return a list whose items are either answer text
    (``str``) or a finished :class:`ToolCall` (one per call of a closed block), in stream
    order. Text
    that could still be the start of a tag is held back until the next chunk decides. A
    block's body is collected in linear time (the closing tag is looked for only in the new
    text and the few characters before it) and bounded: past
    :data:`~loopact.llm.arguments.MAX_ARGUMENT_CHARS` it is dropped and the block becomes a
    failed call (issue 21 item 7).
    """

    def __init__(self, max_chars: int = MAX_ARGUMENT_CHARS) -> None:
        self.max_chars = max_chars
        self._buf = ""  # outside a block: a possible partial opening tag
        self._in_block = False
        self._block: list[str] = []  # inside a block: the body so far, minus _tail
        self._tail = ""  # the last few characters, which may start the closing tag
        self._size = 0  # characters of the block body so far
        self._head = ""  # its first characters (the tool name, even when it is too long)
        self._open = OPEN_TAG  # the opening tag of the block we are in

    @property
    def in_block(self) -> bool:
        """True while inside an unclosed tool-call block."""
        return self._in_block

    @property
    def pending(self) -> str:
        """Text held back so far (the body of an unclosed block, or a partial tag)."""
        if self._in_block:
            return "".join(self._block) + self._tail
        return self._buf

    def feed(self, chunk: str) -> list[str | ToolCall]:
        """Add a chunk of answer text; return the text and calls that are now certain."""
        out: list[str | ToolCall] = []
        text = chunk
        while text or self._buf:
            if self._in_block:
                close = BLOCK_TAGS[self._open]
                window = self._tail + text
                pos = window.find(close)
                if pos < 0:
                    self._keep(window)
                    return out
                self._keep(window[:pos], final=True)
                out.extend(self._close_block())
                text = window[pos + len(close) :]
                continue
            text, self._buf = self._buf + text, ""
            found = [(text.find(tag), tag) for tag in BLOCK_TAGS if tag in text]
            if found:
                pos, self._open = min(found)
                if pos:
                    out.append(text[:pos])
                self._in_block = True
                text = text[pos + len(self._open) :]
                continue
            cut = len(text) - max(partial_tag_suffix(text, tag) for tag in BLOCK_TAGS)
            if cut:
                out.append(text[:cut])
            self._buf = text[cut:]
            return out
        return out

    def flush(self) -> list[str | ToolCall]:
        """End of stream. An unclosed block is still parsed as a call (its closing tag may
        simply be missing); held-back text is released."""
        out: list[str | ToolCall] = []
        if self._in_block:
            self._keep(self._tail, final=True)
            if self._size > self.max_chars or "".join(self._block).strip():
                out.extend(self._close_block())
        elif self._buf:
            out.append(self._buf)
        self._buf = ""
        self._in_block = False
        return out

    def _keep(self, window: str, final: bool = False) -> None:
        """Store ``window`` (the old tail plus new text) except a tail that may start the tag."""
        hold = 0 if final else min(len(window), len(BLOCK_TAGS[self._open]) - 1)
        body, self._tail = window[: len(window) - hold], window[len(window) - hold :]
        if not body:
            return
        self._size += len(body)
        if len(self._head) < 256:
            self._head += body[: 256 - len(self._head)]
        if self._size <= self.max_chars:
            self._block.append(body)
        else:
            self._block = []

    def _close_block(self) -> list[ToolCall]:
        size, head, body = self._size, self._head, "".join(self._block)
        self._block, self._tail, self._size, self._head = [], "", 0, ""
        self._in_block = False
        if size > self.max_chars:
            name = _NAME_RE.search(head)
            return [
                ToolCall(
                    id=new_call_id(),
                    name=name.group(1) if name else "",
                    raw_arguments=head,
                    error=too_long_error(size, self.max_chars),
                )
            ]
        return parse_block(self._open, body)


def parse_block(open_tag: str, body: str) -> list[ToolCall]:
    """The calls of one block that opened with ``open_tag`` (a key of :data:`BLOCK_TAGS`).

    Args:
        open_tag: The block's opening tag.
        body: The text between its tags.

    Returns:
        The calls, in order (one failed call when the block cannot be read). Never raises.
    """
    if open_tag == KIMI_SECTION[0]:
        return parse_kimi_calls(body)
    if open_tag == KIMI_CALL[0]:
        return parse_kimi_calls(KIMI_CALL[0] + body + KIMI_CALL[1])
    if open_tag == QWEN_FUNCTION[0]:
        return [parse_qwen_function(QWEN_FUNCTION[0] + body + QWEN_FUNCTION[1])]
    return [parse_tool_call_block(body)]


def parse_tool_call_block(body: str) -> ToolCall:
    """Parse the body of a ``<tool_call>`` block into a :class:`ToolCall`.

    Args:
        body: Text between the tags: JSON, e.g. ``{"name": "wait", "arguments": {"seconds":
            1}}`` (``"parameters"`` is accepted for ``"arguments"``, and arguments may be JSON
            text); a Qwen3-Coder ``<function=NAME>`` element; or GLM markup, ``NAME`` then
            ``<arg_key>``/``<arg_value>`` pairs (:mod:`loopact.llm.markup`).

    Returns:
        The call with a generated id. When the body is not usable, ``error`` says why and
        ``name`` is whatever could be recovered (possibly ``""``). Never raises.
    """
    text = body.strip()
    if text.startswith(QWEN_FUNCTION[0]):
        return parse_qwen_function(text)
    if not text.startswith(("{", "[", "```")):
        glm = parse_glm_call(text)
        if glm is not None:
            return glm
    obj, err = parse_tool_arguments(body)
    if err is not None or not obj:
        m = _NAME_RE.search(body)
        return ToolCall(
            id=new_call_id(),
            name=m.group(1) if m else "",
            raw_arguments=body.strip(),
            error=UNREADABLE.format(
                why=f"could not parse the <tool_call> block: {err or 'empty block'}"
            ),
        )
    return _call_from_object(obj, body.strip())


def _call_from_object(obj: dict[str, Any], raw: str) -> ToolCall:
    name = obj.get("name")
    raw_args: Any = obj.get("arguments", obj.get("parameters"))
    args, err = parse_tool_arguments(raw_args)
    raw_text = raw_args if isinstance(raw_args, str) else json.dumps(raw_args or {})
    if not isinstance(name, str) or not name:
        err = "the tool call names no tool"
        name = ""
    return ToolCall(
        id=new_call_id(),
        name=name,
        arguments=args,
        raw_arguments=raw_text,
        error=err,
    )


def _as_bare_call(value: object, known: Collection[str]) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    if not isinstance(name, str) or resolve_tool_name(name, known) is None:
        return None  # the dispatcher resolves a mangled name (issue 22 items 3 and 4)
    args = value.get("arguments", value.get("parameters", {}))
    if args is None or isinstance(args, (dict, str)):
        return value
    return None


def find_bare_json_calls(text: str, known: Collection[str]) -> tuple[str, list[ToolCall]]:
    """Find bare JSON tool calls in a finished answer (for endpoints without native calls).

    A JSON object counts as a call only if its ``name`` is one of ``known`` (or a mangled
    form of one: :func:`~loopact.llm.toolnames.resolve_tool_name`) and its
    ``arguments`` (or ``parameters``) is an object or JSON text. A ```` ``` ```` fence around
    it is removed with it.

    Args:
        text: The whole answer text, reasoning and ``<tool_call>`` blocks already removed.
        known: Names of the tools offered in the request.

    Returns:
        ``(remaining_text, calls)``: the text with the calls cut out (stripped), and the
        calls in order. ``calls`` is empty (and the text unchanged) when none was found.
    """
    if not known or "{" not in text:
        return text, []
    spans: list[tuple[int, int, dict[str, Any]]] = []
    for fence in _FENCE_RE.finditer(text):
        try:
            value = json.loads(fence.group(1).strip())
        except ValueError:
            continue
        obj = _as_bare_call(value, known)
        if obj is not None:
            spans.append((fence.start(), fence.end(), obj))
    decoder = json.JSONDecoder()
    pos = 0
    attempts = 0
    while attempts < _MAX_BARE_ATTEMPTS:
        start = text.find("{", pos)
        if start < 0:
            break
        if any(a <= start < b for a, b, _ in spans):
            pos = next(b for a, b, _ in spans if a <= start < b)
            continue
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            pos = start + 1
            continue
        obj = _as_bare_call(value, known)
        if obj is not None:
            spans.append((start, end, obj))
        pos = end
    if not spans:
        return text, []
    spans.sort(key=lambda s: s[0])
    calls = [_call_from_object(obj, json.dumps(obj)) for _, _, obj in spans]
    pieces: list[str] = []
    last = 0
    for a, b, _ in spans:
        pieces.append(text[last:a])
        last = b
    pieces.append(text[last:])
    return "".join(pieces).strip(), calls

"""Tool calls written as text (SPEC B4, B5, B7).

Two forms are recognised in answer text:

* ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (the Hermes / Qwen chat
  template format that many local servers pass through as plain text). They are streamed:
  :class:`ToolCallTagParser` finds them as chunks arrive and hands each block over at its
  closing tag, so the call can run before the response ends (SPEC X1).
* A bare JSON object naming a known tool, ``{"name": ..., "arguments"|"parameters": {...}}``,
  possibly in a ```` ``` ```` fence. This is only trusted for endpoints without native tool
  calls and only decided at the end of the response (:func:`find_bare_json_calls`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection
from typing import Any

from loopact.llm.arguments import MAX_ARGUMENT_CHARS, too_long_error
from loopact.llm.messages import ToolCall
from loopact.llm.repair import parse_tool_arguments
from loopact.llm.think import partial_tag_suffix
from loopact.llm.toolnames import resolve_tool_name

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"

_NAME_RE = re.compile(r'"name"\s*:\s*"([^"]+)"')
_FENCE_RE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_MAX_BARE_ATTEMPTS = 64


def new_call_id() -> str:
    """A fresh tool-call id, ``call_<24 hex digits>``, for calls that arrived without one."""
    return "call_" + uuid.uuid4().hex[:24]


class ToolCallTagParser:
    """Incrementally cut ``<tool_call>...</tool_call>`` blocks out of streamed text.

    :meth:`feed` and :meth:`flush` return a list whose items are either answer text
    (``str``) or a finished :class:`ToolCall` (one per closed block), in stream order. Text
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

    @property
    def in_block(self) -> bool:
        """True while inside an unclosed ``<tool_call>`` block."""
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
                window = self._tail + text
                pos = window.find(CLOSE_TAG)
                if pos < 0:
                    self._keep(window)
                    return out
                self._keep(window[:pos], final=True)
                out.append(self._close_block())
                text = window[pos + len(CLOSE_TAG) :]
                continue
            text, self._buf = self._buf + text, ""
            pos = text.find(OPEN_TAG)
            if pos >= 0:
                if pos:
                    out.append(text[:pos])
                self._in_block = True
                text = text[pos + len(OPEN_TAG) :]
                continue
            cut = len(text) - partial_tag_suffix(text, OPEN_TAG)
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
                out.append(self._close_block())
        elif self._buf:
            out.append(self._buf)
        self._buf = ""
        self._in_block = False
        return out

    def _keep(self, window: str, final: bool = False) -> None:
        """Store ``window`` (the old tail plus new text) except a tail that may start the tag."""
        hold = 0 if final else min(len(window), len(CLOSE_TAG) - 1)
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

    def _close_block(self) -> ToolCall:
        size, head, body = self._size, self._head, "".join(self._block)
        self._block, self._tail, self._size, self._head = [], "", 0, ""
        self._in_block = False
        if size > self.max_chars:
            name = _NAME_RE.search(head)
            return ToolCall(
                id=new_call_id(),
                name=name.group(1) if name else "",
                raw_arguments=head,
                error=too_long_error(size, self.max_chars),
            )
        return parse_tool_call_block(body)


def parse_tool_call_block(body: str) -> ToolCall:
    """Parse the JSON body of a ``<tool_call>`` block into a :class:`ToolCall`.

    Args:
        body: Text between the tags, e.g. ``{"name": "wait", "arguments": {"seconds": 1}}``;
            ``"parameters"`` is accepted for ``"arguments"``, and arguments may be JSON text.

    Returns:
        The call with a generated id. When the body is not usable, ``error`` says why and
        ``name`` is whatever could be recovered (possibly ``""``). Never raises.
    """
    obj, err = parse_tool_arguments(body)
    if err is not None or not obj:
        m = _NAME_RE.search(body)
        return ToolCall(
            id=new_call_id(),
            name=m.group(1) if m else "",
            raw_arguments=body.strip(),
            error=f"could not parse the <tool_call> block: {err or 'empty block'}",
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

"""The Anthropic Messages event stream as loopact model events (SPEC B2, B5, B7, X1).

The response side of :mod:`loopact.llm.anthropic`. :class:`AnthropicStreamState` turns the
server-sent events into the model events of :mod:`loopact.llm.base`, one event at a time (a
pure accumulator tests can drive with dicts). A ``tool_use`` block is ready at its
``content_block_stop`` (X1) when its accumulated ``input_json_delta`` pieces form valid JSON
(an empty input is ``{}``); a block whose JSON is incomplete waits for the stop reason:
``max_tokens`` makes it a truncated call that is never run, anything else has it repaired
(SPEC B7) and yielded. :func:`message_events` gives the events a whole ``message`` body stands
for (a gateway answering a stream request with JSON, issue 22).

Stop reasons that are not an answer: ``refusal`` (a streaming classifier stopped the
response; the API says the refused turn must not be continued) raises
:class:`~loopact.errors.ModelFatalError` with the ``stop_details`` explanation, so no partial
answer reaches the history; ``pause_turn`` (the API paused a long turn) leaves the state
:attr:`~AnthropicStreamState.paused`, and the provider sends
:meth:`~AnthropicStreamState.paused_content` back to have the turn continued into the same
state (at most :data:`MAX_PAUSES` times). A surrogate pair split across two deltas (a gateway
that cuts strings by UTF-16 code unit) is joined into its one character; a lone half becomes
U+FFFD.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopact.errors import ModelError, ModelFatalError, ModelRefused, ModelRetryableError
from loopact.llm.arguments import ArgumentBuffer
from loopact.llm.base import (
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
)
from loopact.llm.messages import Message, ThinkingBlock, ToolCall, Usage
from loopact.llm.repair import parse_tool_arguments
from loopact.llm.surrogates import SurrogateJoiner
from loopact.llm.wire import SSEData, decode_event_json

__all__ = ["MAX_PAUSES", "AnthropicStreamState", "event_dict", "message_events", "stream_error"]

MAX_PAUSES = 3
"""Continuations of a paused turn (``stop_reason: pause_turn``) per request; a turn still
paused after them ends with what arrived."""

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
    "pause_turn": "",
}
_RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


@dataclass
class _Block:
    kind: str
    parts: list[str] = field(default_factory=list)  # text or thinking, in linear time
    signature: str = ""
    data: str | None = None
    call_id: str = ""
    call_index: int = 0
    name: str = ""
    args: ArgumentBuffer = field(default_factory=ArgumentBuffer)
    start_input: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)  # the block as it started
    joiner: SurrogateJoiner = field(default_factory=SurrogateJoiner)  # pairs cut by deltas
    json: bool = False  # input_json_delta pieces arrived
    done: bool = False

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def whole(self, piece: str) -> str:
        """``piece`` with a surrogate pair split across deltas joined into one character; a
        trailing high surrogate is held back for the next delta (:mod:`loopact.llm.surrogates`)."""
        return self.joiner.feed(piece)

    def rest(self) -> str:
        """The held-back half at the end of the block (U+FFFD), or ""."""
        return self.joiner.flush()

    @property
    def json_text(self) -> str:
        return self.args.text


@dataclass
class AnthropicStreamState:
    """Accumulates one streamed response, event by event (SPEC B5, X1).

    Feed each event (the SSE ``data`` object as a dict) to :meth:`feed`; it returns the model
    events to yield now. After ``message_stop``, :attr:`done` is True and :meth:`feed` has
    returned the final :class:`ResponseDone`.

    A response that stops with ``pause_turn`` leaves :attr:`paused` True instead: send
    :meth:`paused_content` back as the last (assistant) message, call :meth:`resume` and
    feed the continuation's events to the same state; its blocks add to the paused ones.

    Raises:
        ModelRetryableError: An ``error`` event of an overloaded/server kind.
        ModelFatalError: Any other ``error`` event; a response that stopped with
            ``refusal`` (at its ``message_stop``).
    """

    blocks: dict[int, _Block] = field(default_factory=dict)
    calls: list[ToolCall] = field(default_factory=list)
    pending: list[_Block] = field(default_factory=list)
    stop_reason: str | None = None
    stop_details: Mapping[str, Any] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    done: bool = False
    paused: bool = False
    pauses: int = 0
    _offset: int = 0  # block index of the current response's first block
    _earlier_output_tokens: int = 0  # output tokens of the paused responses before it

    def feed(self, event: Mapping[str, Any]) -> list[ModelEvent]:
        """Apply one stream event; return the model events it completes.

        Raises:
            ModelFatalError: Also for an event of the wrong shape ("malformed Anthropic
                stream: ...", a ``delta`` that is not an object, say).
        """
        try:
            return self._apply(event)
        except (AttributeError, TypeError, ValueError) as exc:
            kind = event.get("type")
            raise ModelFatalError(f"malformed Anthropic stream: a {kind} event: {exc}") from None

    def _apply(self, event: Mapping[str, Any]) -> list[ModelEvent]:
        kind = event.get("type")
        out: list[ModelEvent] = []
        if kind == "message_start":
            self._usage((event.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            self._start(event)
        elif kind == "content_block_delta":
            out.extend(self._delta(event))
        elif kind == "content_block_stop":
            out.extend(self._stop(event))
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            if delta.get("stop_reason") is not None:
                self.stop_reason = str(delta["stop_reason"])
            details = delta.get("stop_details") or event.get("stop_details")
            if isinstance(details, Mapping):
                self.stop_details = details
            self._usage(event.get("usage"))
        elif kind == "message_stop":
            out.extend(self._finish())
        elif kind == "error":
            raise stream_error(event.get("error"))
        return out

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        if isinstance(usage.get("input_tokens"), int):
            self.input_tokens = usage["input_tokens"]
        if isinstance(usage.get("output_tokens"), int):
            self.output_tokens = usage["output_tokens"]

    def _start(self, event: Mapping[str, Any]) -> None:
        cb = event.get("content_block") or {}
        block = _Block(kind=str(cb.get("type", "")))
        if block.kind == "text":
            block.parts.append(str(cb.get("text") or ""))
        elif block.kind == "thinking":
            block.parts.append(str(cb.get("thinking") or ""))
            block.signature = str(cb.get("signature") or "")
        elif block.kind == "redacted_thinking":
            block.data = str(cb.get("data") or "")
        elif block.kind == "tool_use":
            block.call_id = str(cb.get("id") or "") or f"toolu_{uuid.uuid4().hex[:24]}"
            block.call_index = sum(b.kind == "tool_use" for b in self.blocks.values())
            block.name = str(cb.get("name") or "")
            if isinstance(cb.get("input"), dict):
                block.start_input = dict(cb["input"])
        block.raw = dict(cb)
        self.blocks[self._index(event, len(self.blocks) - self._offset)] = block

    def _index(self, event: Mapping[str, Any], default: int = -1) -> int:
        """The state's index of the block an event names (continued turns add up)."""
        return self._offset + int(event.get("index", default))

    def _delta(self, event: Mapping[str, Any]) -> list[ModelEvent]:
        block = self.blocks.get(self._index(event))
        delta = event.get("delta") or {}
        if block is None:
            raise ModelFatalError("malformed Anthropic stream: delta for an unknown block")
        dkind = delta.get("type")
        if dkind == "text_delta":
            return self._words(block, block.whole(str(delta.get("text") or "")))
        if dkind == "thinking_delta":
            return self._words(block, block.whole(str(delta.get("thinking") or "")))
        if dkind == "signature_delta":
            block.signature += str(delta.get("signature") or "")
        elif dkind == "input_json_delta":
            block.json = True
            piece = block.whole(str(delta.get("partial_json") or ""))
            block.args.feed(piece)
            if piece:
                return [ToolCallDelta(block.call_index, piece, block.name)]
        return []

    def _words(self, block: _Block, piece: str) -> list[ModelEvent]:
        """Add one piece of text or thinking to ``block``; the event that streams it."""
        block.parts.append(piece)
        if not piece:
            return []
        return [ReasoningDelta(piece)] if block.kind == "thinking" else [TextDelta(piece)]

    def _stop(self, event: Mapping[str, Any]) -> list[ModelEvent]:
        block = self.blocks.get(self._index(event))
        if block is None or block.done:
            return []
        block.done = True
        rest = block.rest()
        if block.json:
            block.args.feed(rest)
        elif rest:
            return self._words(block, rest)
        if block.kind != "tool_use":
            return []
        failure = block.args.failure()
        if failure is not None:
            return self._ready(block, {}, failure)
        if not block.json_text.strip():
            args, err = parse_tool_arguments(dict(block.start_input))
            return self._ready(block, args, err)
        value = block.args.complete_object()
        if value is not None:
            return self._ready(block, value, None)
        if not block.args.closed:
            self.pending.append(block)  # maybe cut by max_tokens: decided by the stop reason
            return []
        args, err = parse_tool_arguments(block.json_text)
        return self._ready(block, args, err)

    def _ready(self, block: _Block, args: dict[str, Any], err: str | None) -> list[ModelEvent]:
        call = ToolCall(
            id=block.call_id,
            name=block.name,
            arguments=args,
            raw_arguments=block.json_text,
            error=err,
        )
        self.calls.append(call)
        return [ToolCallReady(len(self.calls) - 1, call)]

    def _finish(self) -> list[ModelEvent]:
        if self.stop_reason == "refusal":
            raise _refusal(self.stop_details)
        if self.stop_reason == "pause_turn" and self.pauses < MAX_PAUSES:
            self.paused = True
            return []
        out, truncated = self._unfinished_calls()
        ordered = [self.blocks[i] for i in sorted(self.blocks)]
        text = "".join(b.text for b in ordered if b.kind == "text")
        thinking = [
            ThinkingBlock(text=b.text, signature=b.signature, redacted_data=b.data)
            for b in ordered
            if b.kind in ("thinking", "redacted_thinking")
        ]
        reasoning = "".join(b.text for b in ordered if b.kind == "thinking")
        message = Message.assistant(
            text=text, tool_calls=self.calls, reasoning=reasoning or None, thinking=thinking
        )
        finish = _FINISH.get(self.stop_reason or "", self.stop_reason or "")
        usage = Usage(self.input_tokens, self._earlier_output_tokens + self.output_tokens)
        out.append(
            ResponseDone(
                message=message,
                finish_reason=finish,
                usage=usage,
                truncated_calls=tuple(truncated),
            )
        )
        self.done = True
        return out

    def _unfinished_calls(self) -> tuple[list[ModelEvent], list[ToolCall]]:
        """The calls whose JSON was incomplete at their stop: truncated when the response
        ran out of tokens, else repaired (SPEC B7) and ready."""
        out: list[ModelEvent] = []
        truncated: list[ToolCall] = []
        unfinished = self.pending + [
            b for b in self.blocks.values() if b.kind == "tool_use" and not b.done
        ]
        for block in unfinished:
            if self.stop_reason in ("max_tokens", "model_context_window_exceeded"):
                truncated.append(
                    ToolCall(
                        id=block.call_id,
                        name=block.name,
                        raw_arguments=block.json_text,
                        error="the call was truncated (max_tokens reached); its arguments "
                        "are incomplete",
                    )
                )
            else:
                args: dict[str, Any] = {}
                err: str | None = block.args.failure()
                if err is None:
                    args, err = parse_tool_arguments(block.json_text)
                out.extend(self._ready(block, args, err))
        self.pending = []
        return out, truncated

    def paused_content(self) -> list[dict[str, Any]]:
        """The content of the paused turn so far, as the assistant message that continues it
        (Messages API blocks, in order; the last text without trailing whitespace, which the
        API refuses at the end of an assistant message)."""
        blocks: list[dict[str, Any]] = []
        for block in (self.blocks[i] for i in sorted(self.blocks)):
            if block.kind == "text":
                if block.text.strip():
                    blocks.append({"type": "text", "text": block.text})
            elif block.kind == "thinking":
                blocks.append(
                    {"type": "thinking", "thinking": block.text, "signature": block.signature}
                )
            elif block.kind == "redacted_thinking":
                blocks.append({"type": "redacted_thinking", "data": block.data or ""})
            else:  # tool_use, server tools and their results: as they came
                value = block.args.complete_object() if block.json else None
                blocks.append({**block.raw, **({"input": value} if value is not None else {})})
        if blocks and blocks[-1]["type"] == "text":
            blocks[-1]["text"] = blocks[-1]["text"].rstrip()
        return blocks

    def resume(self) -> None:
        """Read a continuation of the paused turn next: its blocks come after the paused
        ones, its output tokens add to theirs."""
        self.paused = False
        self.pauses += 1
        self.stop_reason = None
        self._offset = max(self.blocks, default=-1) + 1
        self._earlier_output_tokens += self.output_tokens
        self.output_tokens = 0


def _refusal(details: Mapping[str, Any] | None) -> ModelRefused:
    """The error of a response that stopped with ``refusal`` (a streaming classifier)."""
    details = details or {}
    category = f", category {details['category']}" if details.get("category") else ""
    explanation = details.get("explanation") or (
        "the response was stopped as a possible policy violation"
    )
    return ModelRefused(
        f"the model declined to answer (Anthropic stop_reason refusal{category}): "
        f"{explanation}; what it had said is not kept and the instruction is dropped from "
        "the conversation. Rephrase the request"
    )


def stream_error(error: Any) -> ModelError:
    """The loopact error for an Anthropic ``error`` object (an ``error`` event's ``error``).

    Args:
        error: ``{"type": "overloaded_error", "message": ...}``; anything else counts as an
            error without type or message.

    Returns:
        :class:`ModelRetryableError` for an overloaded, server or rate-limit error, else
        :class:`ModelFatalError`; the message names the type and the server's message.
    """
    err = error if isinstance(error, Mapping) else {}
    kind = str(err.get("type") or "error")
    message = f"Anthropic stream error {kind}: {err.get('message') or 'no message'}"
    if kind in _RETRYABLE_STREAM_ERRORS:
        return ModelRetryableError(message)
    return ModelFatalError(message)


def event_dict(item: SSEData) -> dict[str, Any]:
    """One stream event's data as a dict; its ``type`` is the SSE event name when missing."""
    data = decode_event_json(item.data, "Anthropic")
    if not isinstance(data, dict):
        raise ModelFatalError(f"malformed Anthropic stream: an event is not an object: {data!r}")
    data.setdefault("type", item.event)
    return data


def message_events(body: Any) -> list[dict[str, Any]]:
    """The stream events equivalent to a whole ``message`` (or ``error``) JSON body.

    Some gateways answer a stream request with the non-streaming response (issue 22); feeding
    these events to :class:`AnthropicStreamState` reads it like a stream.

    Raises:
        ModelRetryableError: ``body`` is neither a message nor an error object.
    """
    if isinstance(body, dict) and body.get("type") == "error":
        return [body]
    if not isinstance(body, dict) or body.get("type") != "message":
        clip = json.dumps(body, ensure_ascii=False)[:200]
        raise ModelRetryableError(
            f"the Anthropic endpoint answered HTTP 200 with JSON that is not a message: {clip}"
        )
    usage: dict[str, Any] = body["usage"] if isinstance(body.get("usage"), dict) else {}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**body, "content": [], "usage": usage}}
    ]
    for index, block in enumerate(body.get("content") or []):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        start = dict(block)
        delta: dict[str, Any] | None = None
        if kind == "text":
            start["text"], delta = "", {"type": "text_delta", "text": block.get("text", "")}
        elif kind == "thinking":
            start["thinking"] = ""
            delta = {"type": "thinking_delta", "thinking": block.get("thinking", "")}
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        if delta is not None:
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": body.get("stop_reason"),
                "stop_details": body.get("stop_details"),
            },
            "usage": {"output_tokens": usage.get("output_tokens", 0)},
        }
    )
    events.append({"type": "message_stop"})
    return events

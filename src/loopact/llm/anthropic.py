"""Anthropic Messages provider on the official ``anthropic`` SDK (SPEC B2, B4, B5, B6, X1).

Canonical history -> Messages API: system messages go to ``system``; consecutive tool messages
become one user message of ``tool_result`` blocks (with image blocks where the tool returned
images), and a user message right after them is merged into the same message, after the
results; consecutive messages of one role are merged; empty and whitespace-only text blocks
are left out (the API refuses them with HTTP 400, issue 22); an assistant message carries its
thinking blocks first, unchanged with their signatures (the API requires them back), then its
text, then one ``tool_use`` block per call. Nothing is reordered or dropped, so every
``tool_use`` keeps its ``tool_result``.

The response streams as server-sent events; :class:`AnthropicStreamState` turns them into the
model events of :mod:`loopact.llm.base`, one event at a time (a pure accumulator tests can
drive with dicts). A ``tool_use`` block is ready at its ``content_block_stop`` (X1) when its
accumulated ``input_json_delta`` pieces form valid JSON (an empty input is ``{}``); a block
whose JSON is incomplete waits for the stop reason: ``max_tokens`` makes it a truncated call
that is never run, anything else has it repaired (SPEC B7) and yielded.

Errors: connection failures, 408/409/429/5xx (``Retry-After`` honoured), an overloaded or
server error event inside the stream, and a stream cut before ``message_stop`` raise
:class:`~loopact.errors.ModelRetryableError`; anything else
:class:`~loopact.errors.ModelFatalError`. The SDK's own retries are off (``max_retries=0``):
the agent loop owns retries.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2

from loopact.errors import ModelError, ModelFatalError, ModelRetryableError
from loopact.llm.arguments import ArgumentBuffer
from loopact.llm.base import (
    Capabilities,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
)
from loopact.llm.httperrors import describe_body, masking_errors, status_error
from loopact.llm.messages import (
    Image,
    Message,
    TextPart,
    ThinkingBlock,
    ToolCall,
    Usage,
)
from loopact.llm.repair import parse_tool_arguments
from loopact.llm.wire import (
    JSONBody,
    SSEData,
    cap_error_body,
    decode_event_json,
    drain,
    read_body,
)
from loopact.redact import Redactor

__all__ = ["AnthropicModel", "AnthropicStreamState", "to_anthropic_messages"]

logger = logging.getLogger(__name__)

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
_NO_VISION_NOTE = "[image omitted: this model has no vision]"
_EMPTY_RESULT = "(no output)"


# ---------------------------------------------------------------------------- request


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
    for part in m.content:
        if isinstance(part, TextPart):
            if part.text.strip():  # the API refuses empty and whitespace-only text blocks
                blocks.append({"type": "text", "text": part.text})
        elif vision:
            blocks.append(_image_block(part.image))
        else:
            blocks.append({"type": "text", "text": _NO_VISION_NOTE})
    return blocks


def _tool_result_block(m: Message, vision: bool) -> dict[str, Any]:
    content = _content_blocks(m, vision)
    if not any(b["type"] == "text" for b in content):
        content.insert(0, {"type": "text", "text": _EMPTY_RESULT})
    return {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": content}


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
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    return blocks


# ---------------------------------------------------------------------------- response


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
    done: bool = False

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def json_text(self) -> str:
        return self.args.text


@dataclass
class AnthropicStreamState:
    """Accumulates one streamed response, event by event (SPEC B5, X1).

    Feed each event (the SSE ``data`` object as a dict) to :meth:`feed`; it returns the model
    events to yield now. After ``message_stop``, :attr:`done` is True and :meth:`feed` has
    returned the final :class:`ResponseDone`.

    Raises:
        ModelRetryableError: An ``error`` event of an overloaded/server kind.
        ModelFatalError: Any other ``error`` event.
    """

    blocks: dict[int, _Block] = field(default_factory=dict)
    calls: list[ToolCall] = field(default_factory=list)
    pending: list[_Block] = field(default_factory=list)
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    done: bool = False

    def feed(self, event: Mapping[str, Any]) -> list[ModelEvent]:
        """Apply one stream event; return the model events it completes."""
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
            self._usage(event.get("usage"))
        elif kind == "message_stop":
            out.extend(self._finish())
        elif kind == "error":
            raise _stream_error(event.get("error"))
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
        self.blocks[int(event.get("index", len(self.blocks)))] = block

    def _delta(self, event: Mapping[str, Any]) -> list[ModelEvent]:
        block = self.blocks.get(int(event.get("index", -1)))
        delta = event.get("delta") or {}
        if block is None:
            raise ModelFatalError("malformed Anthropic stream: delta for an unknown block")
        dkind = delta.get("type")
        if dkind == "text_delta":
            piece = str(delta.get("text") or "")
            block.parts.append(piece)
            return [TextDelta(piece)] if piece else []
        if dkind == "thinking_delta":
            piece = str(delta.get("thinking") or "")
            block.parts.append(piece)
            return [ReasoningDelta(piece)] if piece else []
        if dkind == "signature_delta":
            block.signature += str(delta.get("signature") or "")
        elif dkind == "input_json_delta":
            piece = str(delta.get("partial_json") or "")
            block.args.feed(piece)
            if piece:
                return [ToolCallDelta(block.call_index, piece, block.name)]
        return []

    def _stop(self, event: Mapping[str, Any]) -> list[ModelEvent]:
        block = self.blocks.get(int(event.get("index", -1)))
        if block is None or block.done:
            return []
        block.done = True
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
        out.append(
            ResponseDone(
                message=message,
                finish_reason=finish,
                usage=Usage(self.input_tokens, self.output_tokens),
                truncated_calls=tuple(truncated),
            )
        )
        self.done = True
        return out


def _stream_error(error: Any) -> ModelError:
    err = error if isinstance(error, Mapping) else {}
    kind = str(err.get("type") or "error")
    message = f"Anthropic stream error {kind}: {err.get('message') or 'no message'}"
    if kind in _RETRYABLE_STREAM_ERRORS:
        return ModelRetryableError(message)
    return ModelFatalError(message)


# ---------------------------------------------------------------------------- provider


class AnthropicModel:
    """A model behind the Anthropic Messages API (SPEC B2).

    Args:
        model: The model name (``claude-sonnet-4-5``, ...).
        base_url: The API root (the SDK appends ``/v1/messages``); a trailing ``/v1`` is
            tolerated and removed. None for the SDK default.
        api_key: The API key; None sends a placeholder (local gateways).
        capabilities: What the endpoint can do; ``vision=False`` turns images into a note.
        max_tokens: Output cap in tokens when the request sets none (the API requires one).
        thinking_budget_tokens: When set, extended thinking is enabled with this budget
            (tokens, must be below ``max_tokens``).
        request_timeout_s: Timeout in seconds for connecting and for each read.

    Raises:
        ValueError: ``max_tokens`` or ``thinking_budget_tokens`` is not positive, or the
            budget is not below ``max_tokens``.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        capabilities: Capabilities | None = None,
        max_tokens: int = 2048,
        thinking_budget_tokens: int | None = None,
        request_timeout_s: float = 120.0,
    ) -> None:
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be > 0, got {max_tokens}")
        if thinking_budget_tokens is not None and not 0 < thinking_budget_tokens < max_tokens:
            raise ValueError(
                f"thinking_budget_tokens must be > 0 and < max_tokens ({max_tokens}), "
                f"got {thinking_budget_tokens}"
            )
        self.model = model
        self.capabilities = capabilities or Capabilities(stream_usage=False)
        self.max_tokens = max_tokens
        self.thinking_budget_tokens = thinking_budget_tokens
        root = base_url.rstrip("/") if base_url else None
        if root is not None and root.endswith("/v1"):
            root = root[: -len("/v1")]
        self.redactor = Redactor([api_key])
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key or "none",
            base_url=root,
            max_retries=0,
            timeout=request_timeout_s,
            http_client=anthropic.DefaultAsyncHttpxClient(
                event_hooks={"response": [cap_error_body]}  # error pages read up to 64 KB
            ),
        )

    def reset(self) -> None:
        """Nothing to forget: the Messages API keeps no conversation state."""

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request`` (without ``stream``)."""
        system, messages = to_anthropic_messages(request.messages, self.capabilities.vision)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_output_tokens or self.max_tokens,
            "messages": messages,
        }
        if system:
            params["system"] = system
        if request.tools:
            offered = request.tools if request.allowed_tools is None else request.callable_tools()
            params["tools"] = [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters or {"type": "object", "properties": {}},
                }
                for t in offered or request.tools
            ]
            if request.tool_choice == "required" and self.thinking_budget_tokens is None:
                params["tool_choice"] = {"type": "any"}  # not allowed with extended thinking
            elif request.tool_choice == "none":
                params["tool_choice"] = {"type": "none"}
        else:
            used = _tools_used(messages)
            if used:
                # A history holding tool_use blocks must define those tools even when none is
                # offered (the final, tool-less request of SPEC A2): declare them, forbidden.
                params["tools"] = [
                    {
                        "name": name,
                        "description": "Not available now.",
                        "input_schema": {"type": "object", "properties": {}},
                    }
                    for name in used
                ]
                params["tool_choice"] = {"type": "none"}
        if request.temperature is not None and self.thinking_budget_tokens is None:
            params["temperature"] = request.temperature
        if self.thinking_budget_tokens is not None:
            params["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget_tokens}
        return params

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values no error or event may show (the API key)."""
        return self.redactor.secrets

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send ``request`` and yield model events as the response streams (SPEC B2, X1).

        Errors never show the API key (a 401 body may quote it, issue 21).

        Raises:
            ModelRetryableError: Connection error, 408/409/429/5xx, an overloaded/server
                error event, or a stream cut before ``message_stop``.
            ModelFatalError: Any other failure (400/401/403/404/422, malformed stream).
        """
        return masking_errors(self._stream(request), self.redactor)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        params = self.request_params(request)
        state = AnthropicStreamState()
        logger.debug("anthropic request: model=%s messages=%d", self.model, len(params["messages"]))
        try:
            async with self._client.messages.with_streaming_response.create(
                **params, stream=True
            ) as raw:
                items = read_body(raw.http_response, what="the Anthropic endpoint")
                async for item in items:
                    if isinstance(item, JSONBody):
                        events = message_events(item.value)  # a whole message (issue 22)
                    else:
                        events = [_event_dict(item)]
                    for event in events:
                        outs = state.feed(event)
                        if state.done:  # read the rest first: the consumer stops at the end
                            await drain(items)  # so that the connection is reused
                        for out in outs:
                            yield out
                        if state.done:
                            return
        except ModelError:
            raise
        except anthropic.APIStatusError as exc:
            raise _status_error(exc) from None
        except anthropic.APIConnectionError as exc:
            raise ModelRetryableError(f"cannot reach the Anthropic endpoint: {exc}") from None
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            raise ModelRetryableError(f"model stream was cut: {exc}") from None
        except anthropic.AnthropicError as exc:
            raise ModelFatalError(f"Anthropic request failed: {exc}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelFatalError(f"malformed Anthropic stream: {exc}") from None
        raise ModelRetryableError("model stream was cut: it ended before message_stop")


def _event_dict(item: SSEData) -> dict[str, Any]:
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
            "delta": {"stop_reason": body.get("stop_reason")},
            "usage": {"output_tokens": usage.get("output_tokens", 0)},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _tools_used(messages: list[dict[str, Any]]) -> list[str]:
    """Names of the tools called in ``messages`` (Anthropic shape), in first-use order."""
    names: dict[str, None] = {}
    for m in messages:
        for block in m["content"]:
            if block.get("type") == "tool_use" and block.get("name"):
                names[str(block["name"])] = None
    return list(names)


def _status_error(exc: anthropic.APIStatusError) -> ModelError:
    status = exc.status_code
    detail = _error_detail(exc)
    if status == 200:  # an error event inside a stream
        err = exc.body.get("error") if isinstance(exc.body, dict) else None
        return _stream_error(err if err is not None else {"message": detail})
    message = f"Anthropic endpoint answered HTTP {status}: {detail}"
    return status_error(status, message, exc.response.headers)


def _error_detail(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return f"{err.get('type', 'error')}: {err['message']}"
    if isinstance(body, str) and body:
        return describe_body(body, exc.response.headers.get("content-type"))
    return str(exc.message)

"""Anthropic ``POST /v1/messages`` for the scripted model server (SPEC X2, B2).

Renders a :class:`~loopact.testing.script.Turn` as the real Messages API wire format: a
``message`` JSON object, or, when the request has ``stream: true``, the server-sent event
sequence ``message_start``, ``ping``, then per content block ``content_block_start`` /
``content_block_delta``... / ``content_block_stop`` (a ``thinking`` block with
``thinking_delta`` pieces and one ``signature_delta`` when the turn has ``reasoning``; a
``text`` block with ``text_delta`` pieces; one ``tool_use`` block per call with its input as
``input_json_delta`` pieces), then ``message_delta`` (``stop_reason`` and usage) and
``message_stop``.

Turn fields map as: ``reasoning`` -> thinking block, ``text`` -> text block, ``tool_calls``
-> tool_use blocks (ids default to ``toolu_<turn>_<index>``; string arguments are sent
verbatim, an empty string as one empty ``partial_json``), ``finish_reason`` -> ``stop_reason``
(``stop`` -> ``end_turn``, ``tool_calls`` -> ``tool_use``, ``length`` -> ``max_tokens``,
other values as given), ``usage`` -> ``input_tokens`` / ``output_tokens``. Extras under
``extras.anthropic``: ``thinking_signature`` (the signature to send; default
``sig_<turn>``), ``redacted_thinking`` (opaque data of a redacted thinking block sent first),
``stop_sequence``, ``stop_details`` (an object sent beside ``stop_reason``, as a refusal's
``{"type": "refusal", "category", "explanation"}``). ``raw_chunks`` are sent as event
payloads, the event name taken from their ``type`` field.

Like the real API, requests it refuses are answered with HTTP 400 (:meth:`reject`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from loopact.testing.protocol import (
    Protocol,
    RecordedRequest,
    RequestSummary,
    ResponsePlan,
    wire_json,
)
from loopact.testing.schema_rules import anthropic_problem
from loopact.testing.script import ScriptUsage, Turn

__all__ = ["AnthropicMessagesProtocol"]

_ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _block_events(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> list[bytes]:
    """The SSE events of one content block: its start, its deltas, its stop."""
    out = [
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
    ]
    out.extend(
        _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    )
    out.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {wire_json(payload)}\n\n".encode()


def _raw_event(raw: str) -> bytes:
    try:
        name = str(json.loads(raw).get("type", "message"))
    except (ValueError, AttributeError):
        name = "message"
    return f"event: {name}\ndata: {raw}\n\n".encode()


def _id_problem(block: dict[str, Any]) -> str | None:
    """Why the real API refuses the call id of a ``tool_use`` / ``tool_result`` block."""
    kind = block.get("type")
    key = {"tool_use": "id", "tool_result": "tool_use_id"}.get(str(kind))
    if key is not None and not _ID_PATTERN.match(str(block.get(key, ""))):
        return f"{kind}.{key}: String should match pattern '^[a-zA-Z0-9_-]+$'"
    return None


def _thinking_problem(messages: list[Any]) -> str | None:
    """What the API refuses of a history when thinking is enabled: the last assistant message
    with ``tool_use`` blocks must start with a ``thinking`` or ``redacted_thinking`` block, and a
    ``thinking`` block must carry its ``signature``."""
    last: tuple[int, list[Any]] | None = None
    for m, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        for b, block in enumerate(content):
            if (
                isinstance(block, dict)
                and block.get("type") == "thinking"
                and not str(block.get("signature") or "")
            ):
                return f"messages.{m}.content.{b}.thinking.signature: Field required"
        if any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content):
            last = (m, content)
    if last is None:
        return None
    m, content = last
    first = content[0].get("type") if isinstance(content[0], dict) else None
    if first in ("thinking", "redacted_thinking"):
        return None
    return (
        f"messages.{m}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        f"`{first}`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). "
        "We recommend you include thinking blocks from previous turns."
    )


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _block_text(content: Any) -> str:
    """Text of an Anthropic ``content``/``system``: a string or a list of blocks."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(_block_text(block.get("content")))
    return "\n".join(parts)


class AnthropicMessagesProtocol(Protocol):
    """The Anthropic Messages protocol (streaming and non-streaming)."""

    name = "anthropic"
    paths = ("/v1/messages",)

    def summarize(self, request: RecordedRequest) -> RequestSummary:
        """Tool names, last user text, all text and ``stream`` of a Messages request."""
        body = request.body if isinstance(request.body, dict) else {}
        names = tuple(
            str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)
        )
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        texts = [_block_text(body.get("system"))]
        last_user = ""
        for m in messages:
            text = _block_text(m.get("content"))
            texts.append(text)
            if m.get("role") == "user":
                last_user = text
        return RequestSummary(
            tool_names=names,
            last_user_text=last_user,
            all_text="\n".join(texts),
            stream=bool(body.get("stream")),
        )

    def reject(self, request: RecordedRequest) -> str | None:
        """What the real API refuses with HTTP 400 (and a test must not get past): a text
        content block that is empty or only whitespace; a ``max_tokens`` not above
        ``thinking.budget_tokens``; a ``tool_use`` id or ``tool_result`` ``tool_use_id``
        outside ``^[a-zA-Z0-9_-]+$``; a tool whose ``input_schema`` has a top-level
        ``oneOf``, ``allOf`` or ``anyOf`` (:mod:`loopact.testing.schema_rules`); with thinking
        enabled, a last assistant message with ``tool_use`` that does not start with its
        thinking block, or a thinking block without its signature (the thinking must be passed
        back as it came, SPEC B2)."""
        body = request.body if isinstance(request.body, dict) else {}
        problem = anthropic_problem(body.get("tools"))
        if problem is not None:
            return problem
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            budget = thinking.get("budget_tokens")
            if isinstance(budget, int) and budget >= int(body.get("max_tokens") or 0):
                return "`max_tokens` must be greater than `thinking.budget_tokens`."
            problem = _thinking_problem(body.get("messages") or [])
            if problem is not None:
                return problem
        for m, message in enumerate(body.get("messages") or []):
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, list):
                continue
            for b, block in enumerate(content):
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and not str(block.get("text", "")).strip():
                    return "messages: text content blocks must contain non-whitespace text"
                problem = _id_problem(block)
                if problem is not None:
                    return f"messages.{m}.content.{b}.{problem}"
        return None

    def render(self, turn: Turn, request: RecordedRequest) -> ResponsePlan:
        """Render ``turn`` as a message (JSON) or an event stream (SSE), as the request asks."""
        body = request.json()
        model = str(body.get("model") or "scripted")
        ident = f"msg_scripted_{request.index + 1}"
        if body.get("stream") and not turn.stream_as_json:
            return ResponsePlan(
                content_type="text/event-stream",
                chunks=self._stream(turn, request, ident, model),
                delay_s=turn.delay_s,
                chunk_delay_s=turn.chunk_delay_s,
                cut_after_chunks=turn.cut_after_chunks,
            )
        if turn.raw_chunks is not None:
            payload = "".join(turn.raw_chunks).encode()
        else:
            usage = self._usage(turn, request)
            message = {
                "id": ident,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": self._blocks(turn, request),
                "stop_reason": self._stop_reason(turn),
                "stop_sequence": turn.extra("anthropic").get("stop_sequence"),
                **self._stop_details(turn),
                "usage": {
                    "input_tokens": usage.prompt_tokens,
                    "output_tokens": usage.completion_tokens,
                },
            }
            payload = wire_json(message).encode()
        return ResponsePlan(
            body=payload, delay_s=turn.delay_s, cut_after_chunks=turn.cut_after_chunks
        )

    def render_error(
        self, status: int, message: str, request: RecordedRequest, turn: Turn | None = None
    ) -> ResponsePlan:
        """An Anthropic error body ``{"type": "error", "error": {"type", "message"}}``."""
        spec = turn.error if turn is not None else None
        kind = _ERROR_TYPES.get(status, "api_error")
        if spec is not None and spec.type:
            kind = spec.type
        headers = {"request-id": f"req_scripted_{request.index + 1}"}
        if spec is not None and spec.retry_after is not None:
            headers["retry-after"] = spec.retry_after
        if spec is not None:
            headers.update(spec.headers)
        body = {"type": "error", "error": {"type": kind, "message": message}}
        return ResponsePlan(
            status=status,
            body=json.dumps(body).encode(),
            headers=headers,
            delay_s=turn.delay_s if turn is not None else 0.0,
        )

    # ---- helpers ---------------------------------------------------------------------------

    def _usage(self, turn: Turn, request: RecordedRequest) -> ScriptUsage:
        return turn.usage_for(request.raw_body)

    def _stop_reason(self, turn: Turn) -> str | None:
        reason = turn.resolved_finish_reason()
        if reason is None:
            return None
        return _STOP_REASONS.get(reason, reason)

    def _stop_details(self, turn: Turn) -> dict[str, Any]:
        details = turn.extra("anthropic").get("stop_details")
        return {"stop_details": details} if details is not None else {}

    def _signature(self, turn: Turn, request: RecordedRequest) -> str:
        sig = turn.extra("anthropic").get("thinking_signature")
        return str(sig) if sig is not None else f"sig_{(request.turn_index or 0) + 1}"

    def _call_id(self, turn: Turn, request: RecordedRequest, index: int) -> str:
        call = turn.tool_calls[index]
        return call.id or f"toolu_{(request.turn_index or 0) + 1}_{index}"

    def _blocks(self, turn: Turn, request: RecordedRequest) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        redacted = turn.extra("anthropic").get("redacted_thinking")
        if redacted:
            blocks.append({"type": "redacted_thinking", "data": str(redacted)})
        if turn.reasoning:
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": turn.reasoning,
                    "signature": self._signature(turn, request),
                }
            )
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        for i, call in enumerate(turn.tool_calls):
            args: Any = call.arguments
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except ValueError:
                    args = {}
            blocks.append(
                {
                    "type": "tool_use",
                    "id": self._call_id(turn, request, i),
                    "name": call.name,
                    "input": args,
                }
            )
        return blocks

    def _stream_blocks(
        self, turn: Turn, request: RecordedRequest
    ) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
        """The content blocks of a streamed turn: each block's start and its deltas, in order
        (redacted thinking, thinking with its signature, text, one per tool call)."""
        size = turn.chunk_size
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        redacted = turn.extra("anthropic").get("redacted_thinking")
        if redacted:
            blocks.append(({"type": "redacted_thinking", "data": str(redacted)}, []))
        if turn.reasoning:
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in _pieces(turn.reasoning, size)
            ]
            deltas.append({"type": "signature_delta", "signature": self._signature(turn, request)})
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        if turn.text:
            blocks.append(
                (
                    {"type": "text", "text": ""},
                    [{"type": "text_delta", "text": p} for p in _pieces(turn.text, size)],
                )
            )
        for i, call in enumerate(turn.tool_calls):
            pieces = _pieces(call.arguments_text(), size) or [""]
            start = {
                "type": "tool_use",
                "id": self._call_id(turn, request, i),
                "name": call.name,
                "input": {},
            }
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
            blocks.append((start, deltas))
        return blocks

    def _stream(self, turn: Turn, request: RecordedRequest, ident: str, model: str) -> list[bytes]:
        if turn.raw_chunks is not None:
            return [_raw_event(raw) for raw in turn.raw_chunks]
        usage = self._usage(turn, request)
        out = [
            _event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": ident,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": usage.prompt_tokens, "output_tokens": 1},
                    },
                },
            ),
            _event("ping", {"type": "ping"}),
        ]
        for index, (start, deltas) in enumerate(self._stream_blocks(turn, request)):
            out.extend(_block_events(index, start, deltas))
        out.append(
            _event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": self._stop_reason(turn),
                        "stop_sequence": turn.extra("anthropic").get("stop_sequence"),
                        **self._stop_details(turn),
                    },
                    "usage": {"output_tokens": usage.completion_tokens},
                },
            )
        )
        out.append(_event("message_stop", {"type": "message_stop"}))
        return out

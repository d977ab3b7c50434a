"""OpenAI ``POST /v1/chat/completions`` for the scripted model server (SPEC X2, B1).

Renders a :class:`~loopact.testing.script.Turn` as the real wire format: a
``chat.completion`` JSON object, or, when the request has ``stream: true``, server-sent events
of ``chat.completion.chunk`` objects ending in ``data: [DONE]``.

Stream order: a role chunk; reasoning deltas (``reasoning_content`` or ``reasoning``); content
deltas; for each tool call, a first chunk with ``index``, ``id``, ``type``, ``function.name``
and empty ``function.arguments``, then chunks with only ``index`` and argument pieces; a chunk
with an empty delta and the finish reason; a usage chunk with ``choices: []`` when asked for;
then ``[DONE]``.

Extras under ``extras.openai``: ``interleave_calls`` (declare every call first, then send
their argument pieces by turns, index 0, 1, 0, 1, ..., as servers streaming parallel calls
do), ``reuse_index`` (every call on ``index`` 0, told apart only by its new ``id``) and
``omit_index`` (no ``index`` in any call delta: every delta names its call by ``id``, as some
gateways send them) and ``require_reasoning_content`` (answer HTTP 400 as Kimi K2.5 and
DeepSeek V4 in thinking mode do when an assistant message with ``tool_calls`` in the request
carries no ``reasoning_content``), ``reject_audio`` (answer HTTP 400 to ``input_audio`` parts, as
a model without audio input does), ``reject_parallel_tool_calls`` (answer HTTP 400
"Unrecognized request argument supplied: parallel_tool_calls" to a request that has the
parameter, as endpoints that refuse parameters they do not know do).

User messages may carry ``input_audio`` parts (``{"data": <base64>, "format": "wav" | "mp3"}``,
SPEC B8); a malformed one, or one outside a user message, is refused with HTTP 400.

A request with ``parallel_tool_calls: false`` gets at most one tool call, as a server
honouring it answers: the turn's first call (the others are dropped).
"""

from __future__ import annotations

import base64
import itertools
import json
import time
from typing import Any

from loopact.testing.protocol import (
    Protocol,
    RecordedRequest,
    RequestSummary,
    ResponsePlan,
    wire_json,
)
from loopact.testing.schema_rules import openai_problem
from loopact.testing.script import Turn

__all__ = ["OpenAIChatProtocol"]

_DONE = b"data: [DONE]\n\n"


def _sse(payload: str) -> bytes:
    return f"data: {payload}\n\n".encode()


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _content_text(content: Any) -> str:
    """Text of an OpenAI message ``content``: a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _audio_parts(content: Any) -> list[Any]:
    """The ``input_audio`` parts of a message ``content``."""
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, dict) and p.get("type") == "input_audio"]


def _audio_problem(body: dict[str, Any], reject: bool) -> str | None:
    """Why a server refuses the ``input_audio`` parts of a request (HTTP 400), or None: a part
    is ``{"type": "input_audio", "input_audio": {"data": <base64>, "format": "wav"|"mp3"}}``,
    only in user messages; ``reject`` answers as a model without audio input does."""
    for index, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        for part in _audio_parts(message.get("content")):
            where = f"messages[{index}]"
            if reject:
                return f"{where}: audio input is not supported by this model"
            if message.get("role") != "user":
                return f"{where}: input_audio parts are only allowed in user messages"
            spec = part.get("input_audio")
            if not isinstance(spec, dict) or spec.get("format") not in ("wav", "mp3"):
                return f"{where}: Invalid value for 'input_audio.format': expected wav or mp3"
            try:
                base64.b64decode(str(spec.get("data") or ""), validate=True)
            except ValueError:
                return f"{where}: Invalid 'input_audio.data': expected base64-encoded audio"
            if not spec.get("data"):
                return f"{where}: Invalid 'input_audio.data': empty"
    return None


def _missing_reasoning(body: dict[str, Any]) -> int | None:
    """The index of the first assistant message with ``tool_calls`` and no non-empty
    ``reasoning_content`` in a request body, or None."""
    for index, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        if message.get("tool_calls") and not message.get("reasoning_content"):
            return index
    return None


class OpenAIChatProtocol(Protocol):
    """The OpenAI chat completions protocol (streaming and non-streaming)."""

    name = "openai"
    paths = ("/v1/chat/completions", "/v1/models")

    def consumes_turn(self, request: RecordedRequest) -> bool:
        """Chat completions consume a turn; ``GET /v1/models`` does not."""
        return request.path != "/v1/models"

    def render_static(self, request: RecordedRequest) -> ResponsePlan:
        """``GET /v1/models``: one model, ``scripted`` (servers and SDKs probe it)."""
        if request.path != "/v1/models":
            return self.render_error(404, f"not served: {request.path}", request)
        body = {
            "object": "list",
            "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "loopact"}],
        }
        return ResponsePlan(body=json.dumps(body).encode())

    def reject(self, request: RecordedRequest) -> str | None:
        """What the real API refuses with HTTP 400: a tool whose ``parameters`` is not
        ``type: "object"`` or has a top-level ``oneOf``/``anyOf``/``allOf``/``enum``/``not``
        (:mod:`loopact.testing.schema_rules`)."""
        body = request.body if isinstance(request.body, dict) else {}
        return openai_problem(body.get("tools"))

    def summarize(self, request: RecordedRequest) -> RequestSummary:
        """Tool names, last user text, all text and ``stream`` of a chat completions request."""
        body = request.body if isinstance(request.body, dict) else {}
        tools = body.get("tools") or []
        names = tuple(
            str(tool.get("function", {}).get("name", ""))
            for tool in tools
            if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
        )
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        texts = [_content_text(m.get("content")) for m in messages]
        last_user, audio = "", 0
        for message, text in zip(messages, texts, strict=True):
            if message.get("role") == "user":
                last_user, audio = text, len(_audio_parts(message.get("content")))
        return RequestSummary(
            tool_names=names,
            last_user_text=last_user,
            all_text="\n".join(texts),
            stream=bool(body.get("stream")),
            last_user_audio=audio,
        )

    def render(self, turn: Turn, request: RecordedRequest) -> ResponsePlan:
        """Render ``turn`` as a completion (JSON) or a chunk stream (SSE), as the request asks."""
        body = request.json()
        missing = (
            _missing_reasoning(body)
            if turn.extra("openai").get("require_reasoning_content")
            else None
        )
        if missing is not None:
            return self.render_error(
                400,
                "thinking is enabled but reasoning_content is missing in assistant tool call "
                f"message at index {missing}",
                request,
            )
        audio_problem = _audio_problem(body, bool(turn.extra("openai").get("reject_audio")))
        if audio_problem is not None:
            return self.render_error(400, audio_problem, request)
        if "parallel_tool_calls" in body and turn.extra("openai").get("reject_parallel_tool_calls"):
            return self.render_error(
                400, "Unrecognized request argument supplied: parallel_tool_calls", request
            )
        if body.get("parallel_tool_calls") is False and len(turn.tool_calls) > 1:
            turn = turn.model_copy(update={"tool_calls": turn.tool_calls[:1]})
        model = str(body.get("model") or "scripted")
        ident = f"chatcmpl-scripted-{request.index + 1}"
        created = int(time.time())
        if body.get("stream") and not turn.stream_as_json:
            chunks = self._stream(turn, request, body, ident, created, model)
            return ResponsePlan(
                content_type="text/event-stream",
                chunks=chunks,
                delay_s=turn.delay_s,
                chunk_delay_s=turn.chunk_delay_s,
                cut_after_chunks=turn.cut_after_chunks,
            )
        if turn.raw_chunks is not None:
            payload = "".join(turn.raw_chunks).encode()
        else:
            payload = json.dumps(self._completion(turn, request, ident, created, model)).encode()
        return ResponsePlan(
            body=payload, delay_s=turn.delay_s, cut_after_chunks=turn.cut_after_chunks
        )

    def render_error(
        self, status: int, message: str, request: RecordedRequest, turn: Turn | None = None
    ) -> ResponsePlan:
        """An OpenAI error body ``{"error": {"message", "type", "param", "code"}}``."""
        spec = turn.error if turn is not None else None
        default_type = "server_error" if status >= 500 else "invalid_request_error"
        if status == 429:
            default_type = "rate_limit_exceeded"
        error = {
            "message": message,
            "type": spec.type if spec is not None and spec.type else default_type,
            "param": None,
            "code": spec.code if spec is not None else None,
        }
        headers = {}
        if spec is not None and spec.retry_after is not None:
            headers["Retry-After"] = spec.retry_after
        if spec is not None:
            headers.update(spec.headers)
        return ResponsePlan(
            status=status,
            body=json.dumps({"error": error}).encode(),
            headers=headers,
            delay_s=turn.delay_s if turn is not None else 0.0,
        )

    # ---- helpers ---------------------------------------------------------------------------

    def _usage(self, turn: Turn, request: RecordedRequest) -> dict[str, Any]:
        usage = turn.usage_for(request.raw_body)
        result: dict[str, Any] = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        }
        if usage.cached_tokens is not None:
            result["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
        if usage.reasoning_tokens is not None:
            result["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
        return result

    def _call_id(self, turn: Turn, request: RecordedRequest, index: int) -> str:
        call = turn.tool_calls[index]
        if call.id is not None:
            return call.id
        return f"call_{(request.turn_index or 0) + 1}_{index}"

    def _completion(
        self, turn: Turn, request: RecordedRequest, ident: str, created: int, model: str
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": turn.text if turn.text or not turn.tool_calls else None,
        }
        if turn.reasoning:
            message[turn.reasoning_field] = turn.reasoning
        if turn.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self._call_id(turn, request, i),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_text()},
                }
                for i, call in enumerate(turn.tool_calls)
            ]
        return {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": turn.resolved_finish_reason(),
                    "logprobs": None,
                }
            ],
            "usage": self._usage(turn, request),
        }

    def _stream(
        self,
        turn: Turn,
        request: RecordedRequest,
        body: dict[str, Any],
        ident: str,
        created: int,
        model: str,
    ) -> list[bytes]:
        if turn.raw_chunks is not None:
            return [_sse(raw) for raw in turn.raw_chunks] + [_DONE]

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            payload = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
                ],
            }
            return _sse(wire_json(payload))

        size = turn.chunk_size
        out = [chunk({"role": "assistant", "content": ""})]
        out += [chunk({turn.reasoning_field: p}) for p in _pieces(turn.reasoning, size)]
        out += [chunk({"content": p}) for p in _pieces(turn.text, size)]
        extra = turn.extra("openai")
        heads: list[list[bytes]] = []
        pieces: list[list[bytes]] = []
        for i, call in enumerate(turn.tool_calls):
            call_id = self._call_id(turn, request, i)
            # Where a delta says which call it continues: its index, or (omit_index) its id.
            ref: dict[str, Any] = {"index": 0 if extra.get("reuse_index") else i}
            if extra.get("omit_index"):
                ref = {"id": call_id}
            head = {
                **ref,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            heads.append([chunk({"tool_calls": [head]})])
            pieces.append(
                [
                    chunk({"tool_calls": [{**ref, "function": {"arguments": p}}]})
                    for p in _pieces(call.arguments_text(), size)
                ]
            )
        if extra.get("interleave_calls"):
            # Every call declared first, then argument pieces by turns: index 0, 1, 0, 1, ...
            out += [c for declared in heads for c in declared]
            for row in itertools.zip_longest(*pieces):
                out += [c for c in row if c is not None]
        else:
            for declared, rest in zip(heads, pieces, strict=True):
                out += declared + rest
        finish = turn.resolved_finish_reason()
        if finish is not None:
            out.append(chunk({}, finish))
        wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if turn.usage_chunk if turn.usage_chunk is not None else wants_usage:
            usage_payload = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": self._usage(turn, request),
            }
            out.append(_sse(json.dumps(usage_payload)))
        out.append(_DONE)
        return out

"""The script a :class:`~loopact.testing.ScriptedModelServer` replays (SPEC X2).

A script is a list of turns; the server answers one request with one turn, in order. A turn is
protocol-neutral (text, reasoning, tool calls, usage, failure modes); each wire protocol renders
it in its own shape. Protocol-specific knobs go in :attr:`Turn.extras`, keyed by protocol name.

The JSON format is documented with examples in ``docs/scripted-server.md``. Every model here
forbids unknown keys, so a typo in a script is an error naming the turn and the key, not a
silently ignored field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from loopact.errors import ScriptError

__all__ = [
    "Expect",
    "SSEShape",
    "Script",
    "ScriptToolCall",
    "ScriptUsage",
    "Turn",
    "TurnError",
    "WireBytes",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptToolCall(_Strict):
    """One tool call the scripted model makes.

    Attributes:
        id: The call id; None lets the server make one (``call_<turn>_<index>``).
        name: The tool name.
        arguments: A JSON object (serialised, then streamed in ``chunk_size`` pieces) or a
            string sent verbatim, so a test can send broken JSON such as ``{"a": 1,}``.
    """

    id: str | None = None
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)

    def arguments_text(self) -> str:
        """The arguments exactly as they go on the wire (a JSON text or the verbatim string)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


class ScriptUsage(_Strict):
    """Token counts the scripted model reports.

    Attributes:
        prompt_tokens: Input tokens.
        completion_tokens: Output tokens (reasoning included, as OpenAI counts them).
        reasoning_tokens: Of the completion tokens, how many were reasoning; None omits it.
        cached_tokens: Of the prompt tokens, how many were cache hits; None omits it.
    """

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    reasoning_tokens: int | None = Field(default=None, ge=0)
    cached_tokens: int | None = Field(default=None, ge=0)

    @property
    def total_tokens(self) -> int:
        """``prompt_tokens + completion_tokens``."""
        return self.prompt_tokens + self.completion_tokens


class TurnError(_Strict):
    """Answer the request with an HTTP error instead of a completion.

    Attributes:
        status: HTTP status code (400-599).
        message: The error message in the protocol's error body.
        retry_after: Value of the ``Retry-After`` header (seconds or an HTTP date); None omits it.
        type: The error ``type`` field; None lets the protocol pick one from the status.
        code: The error ``code`` field; None omits it.
        body: Send this text as the whole error body instead of the protocol's JSON error
            (an HTML page from a proxy, a plain-text message).
        content_type: The ``Content-Type`` of ``body``; default ``text/html; charset=utf-8``.
        headers: More response headers, e.g. what a gateway adds (LiteLLM's
            ``llm_provider-retry-after``, the backend's ``Retry-After`` passed on).
    """

    status: int = Field(ge=400, le=599)
    message: str = "scripted error"
    retry_after: str | None = None
    type: str | None = None
    code: str | None = None
    body: str | None = None
    content_type: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("retry_after", mode="before")
    @classmethod
    def _number_to_text(cls, value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return value


class WireBytes(_Strict):
    """Raw bytes in a :attr:`Turn.wire` body, written as hex (``{"hex": "ff"}``).

    Attributes:
        hex: The bytes as hexadecimal digits; spaces are ignored (``"e4 b8"``).
    """

    hex: str = Field(pattern=r"^[0-9a-fA-F ]*$")

    def data(self) -> bytes:
        """The bytes."""
        return bytes.fromhex(self.hex.replace(" ", ""))


class SSEShape(_Strict):
    """Extra server-sent-event lines around a rendered stream (real servers send them).

    None of them carries data, so by the SSE specification none dispatches an event.

    Attributes:
        retry_ms: Send a ``retry: <ms>`` block (field line and blank line) before the first
            event.
        event_ids: Give every event an ``id: <n>`` line (1, 2, ...).
        comment_every: After every n-th event send a comment block (``: ping`` and a blank
            line); None sends none.
        comment: The comment text (``ping``).
    """

    retry_ms: int | None = Field(default=None, ge=0)
    event_ids: bool = False
    comment_every: int | None = Field(default=None, ge=1)
    comment: str = "ping"

    def apply(self, chunks: list[bytes]) -> list[bytes]:
        """The stream with the extra lines; the number of chunks (HTTP writes) is unchanged:
        the ``retry`` block joins the first chunk, each comment the event before it."""
        out: list[bytes] = []
        for i, chunk in enumerate(chunks):
            if self.event_ids:
                chunk = b"id: %d\n" % (i + 1) + chunk
            if i == 0 and self.retry_ms is not None:
                chunk = b"retry: %d\n\n" % self.retry_ms + chunk
            if self.comment_every is not None and (i + 1) % self.comment_every == 0:
                chunk += b": " + self.comment.encode() + b"\n\n"
            out.append(chunk)
        return out


class Expect(_Strict):
    """Checks on the incoming request. A mismatch is recorded, the response is still served,
    and :meth:`ScriptedModelServer.assert_consumed` reports it.

    Attributes:
        tools: Tool names that must all be offered by the request.
        no_tools: When True, the request must offer no tools at all.
        last_user_contains: Text that must appear in the last user message.
        contains: Text that must appear somewhere in the request's messages (system included).
        stream: When set, whether the request must (True) or must not (False) ask to stream.
        audio: When set, whether the last user message must (True) or must not (False)
            carry audio (OpenAI ``input_audio`` parts).
    """

    tools: list[str] | None = None
    no_tools: bool = False
    last_user_contains: str | None = None
    contains: str | None = None
    stream: bool | None = None
    audio: bool | None = None


class Turn(_Strict):
    """One scripted response. Every field is optional; an empty turn answers with empty text.

    Attributes:
        text: The answer text, streamed as content deltas. May hold ``<think>..</think>`` or
            ``<tool_call>..</tool_call>`` markup; the server does not interpret it.
        reasoning: Reasoning text, streamed before the answer in the protocol's reasoning field.
        reasoning_field: OpenAI protocol: ``reasoning_content`` (DeepSeek, vLLM, llama.cpp) or
            ``reasoning`` (OpenRouter, Ollama).
        tool_calls: Tool calls, streamed after the text.
        finish_reason: The finish reason; left out it is ``tool_calls`` when there are tool calls,
            else ``stop``; an explicit ``null`` sends no finish reason at all.
        usage: Token counts; None sends a rough estimate (characters / 4).
        chunk_size: Characters per streamed delta (text, reasoning and argument pieces).
        chunk_delay_s: Seconds to wait between streamed chunks.
        delay_s: Seconds to wait before the response starts (headers included).
        error: Answer with this HTTP error instead; the turn is consumed.
        cut_after_chunks: Send this many stream chunks, then close the connection without
            ending the body (the client sees a transport error). Non-streaming: headers only.
        raw_chunks: Send exactly these strings as the stream's data payloads (then the end
            marker); non-streaming, their concatenation is the body.
        wire: Send exactly this body, one HTTP write per item (a string, UTF-8 encoded, or
            :class:`WireBytes`), with status 200, whatever the protocol: SSE framing, comment
            and ``retry:`` lines, invalid UTF-8, anything a real server may send.
        write_size: Split every write (stream chunk or body) into TCP writes of this many
            bytes, each flushed on its own: lines, JSON and UTF-8 characters arrive cut.
        sse: Extra data-less SSE lines around the rendered stream (:class:`SSEShape`).
        stream_as_json: Answer a streaming request with the protocol's whole JSON response
            (``Content-Type: application/json``), as some gateways do.
        content_type: Send this ``Content-Type`` instead of the protocol's.
        usage_chunk: Send a final usage-only chunk; None means "when the request asks for it"
            (``stream_options.include_usage``).
        expect: Checks on the incoming request.
        extras: Protocol-specific fields, keyed by protocol name (``{"dify": {...}}``).
    """

    text: str = ""
    reasoning: str = ""
    reasoning_field: Literal["reasoning_content", "reasoning"] = "reasoning_content"
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: ScriptUsage | None = None
    chunk_size: int = Field(default=16, ge=1)
    chunk_delay_s: float = Field(default=0.0, ge=0.0, le=60.0)
    delay_s: float = Field(default=0.0, ge=0.0, le=600.0)
    error: TurnError | None = None
    cut_after_chunks: int | None = Field(default=None, ge=0)
    raw_chunks: list[str] | None = None
    wire: list[str | WireBytes] | None = None
    write_size: int | None = Field(default=None, ge=1)
    sse: SSEShape | None = None
    stream_as_json: bool = False
    content_type: str | None = None
    usage_chunk: bool | None = None
    expect: Expect | None = None
    extras: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def resolved_finish_reason(self) -> str | None:
        """The finish reason to send: the scripted one, or the default; None means send none."""
        if "finish_reason" in self.model_fields_set:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    def usage_for(self, request_body: bytes) -> ScriptUsage:
        """The token counts reported for a request with this raw body.

        The scripted :attr:`usage`, else a rough count: request bytes / 4 prompt tokens and
        output characters (text, reasoning, call names and arguments) / 4 completion tokens,
        at least 1 each (docs/scripted-server.md, ``usage``).
        """
        if self.usage is not None:
            return self.usage
        out_chars = len(self.text) + len(self.reasoning)
        out_chars += sum(len(c.name) + len(c.arguments_text()) for c in self.tool_calls)
        return ScriptUsage(
            prompt_tokens=max(1, len(request_body) // 4),
            completion_tokens=max(1, out_chars // 4),
        )

    def wire_chunks(self) -> list[bytes] | None:
        """The :attr:`wire` body as bytes, one item per write; None when not set."""
        if self.wire is None:
            return None
        return [p.encode() if isinstance(p, str) else p.data() for p in self.wire]

    def extra(self, protocol: str) -> dict[str, Any]:
        """The protocol-specific fields for ``protocol`` (an empty dict when there are none)."""
        return self.extras.get(protocol, {})


class Script(_Strict):
    """An ordered list of turns, one per request.

    Attributes:
        turns: The turns, consumed in order.
        lanes: Turns of protocols that answer in an order of their own, keyed by the
            protocol's lane (``transcriptions``: one turn per audio upload, its ``text`` is the
            transcript; ``speech``: one turn per speech request), so that they never take a
            chat turn whatever order the requests race in.
    """

    turns: list[Turn] = Field(default_factory=list)
    lanes: dict[str, list[Turn]] = Field(default_factory=dict)

    @classmethod
    def load(cls, source: Script | dict[str, Any] | list[Any] | str | Path) -> Script:
        """Build a script from any of its accepted forms.

        Args:
            source: A :class:`Script`; a dict ``{"turns": [...]}``; a list of turns (dicts or
                :class:`Turn`); or the path of a JSON file holding either of the two.

        Returns:
            The validated script.

        Raises:
            ScriptError: The file is missing or not JSON, or the script is malformed; the
                message names the turn (1-based) and the field.
        """
        if isinstance(source, Script):
            return source
        origin = "script"
        if isinstance(source, (str, Path)):
            origin = str(source)
            try:
                text = Path(source).read_text(encoding="utf-8")
            except OSError as exc:
                raise ScriptError(f"cannot read script file {origin}: {exc}") from exc
            try:
                source = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ScriptError(f"script file {origin} is not valid JSON: {exc}") from exc
        if isinstance(source, list):
            source = {"turns": source}
        if not isinstance(source, dict):
            raise ScriptError(
                f"{origin}: expected an object {{'turns': [...]}} or a list of turns, "
                f"got {type(source).__name__}"
            )
        try:
            return cls.model_validate(source)
        except ValidationError as exc:
            raise ScriptError(_describe(origin, exc)) from exc


def _describe(origin: str, exc: ValidationError) -> str:
    """Turn a pydantic error into lines like ``turn 2: tool_calls.0.name: Field required``."""
    lines = []
    for err in exc.errors():
        loc = list(err["loc"])
        where = "script"
        if len(loc) >= 2 and loc[0] == "turns" and isinstance(loc[1], int):
            where = f"turn {loc[1] + 1}"
            loc = loc[2:]
        field = ".".join(str(part) for part in loc) or "(turn)"
        lines.append(f"{where}: {field}: {err['msg']}")
    return f"{origin} is malformed:\n  " + "\n  ".join(lines)

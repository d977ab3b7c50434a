"""Reading a model response body the way real servers send it (SPEC B5, B6, issue 22).

One reader for every provider. The answer to a streaming request is taken for what it is, not
for what its ``Content-Type`` claims: a body whose first non-blank byte opens a JSON value is
one JSON document (gateways that answer a stream request with a whole ``chat.completion``);
anything else is read as server-sent events. A body with neither (an empty body, an HTML page,
SSE lines that carry no data) is a malformed response worth a retry.

Server-sent events are decoded by ``httpx2.EventSource`` (the httpx-sse code, which follows
the WHATWG specification): lines may end in CR, LF or CRLF and may arrive cut anywhere
(tiny TCP writes); the bytes are decoded as UTF-8 incrementally, with an invalid byte replaced
by U+FFFD instead of failing the request. A body that ends cleanly ends its last event, blank
line or not. By the specification a block that carries no
``data`` (a ``retry:`` block, an ``id:`` line followed by a ``: ping`` comment) dispatches no
event; ``httpx2`` still yields those as events with empty data, so they are dropped here, as
are events whose data is only whitespace; one leading byte-order mark is ignored. An
``error:`` line before the first event (llama.cpp's error field of 2025) becomes an ``error``
event (:func:`error_field`). The
``openai`` SDK's own decoder gets this wrong (it dispatches such blocks, and then every blank
line after an ``id:`` line, and its JSON decoding of the empty data fails): see
``docs/scripted-server-wire.md``, "The openai SDK and data-less SSE blocks".
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2

from loopact._compat import timeout_after
from loopact.errors import ModelFatalError, ModelRetryableError
from loopact.llm.arguments import loads_bounded
from loopact.llm.httperrors import describe_body, json_error_text

__all__ = [
    "MAX_EVENT_BYTES",
    "MAX_JSON_BODY_BYTES",
    "JSONBody",
    "SSEData",
    "decode_event_json",
    "drain",
    "cap_error_body",
    "error_field",
    "error_text",
    "read_body",
    "read_error_body",
]

MAX_EVENT_BYTES = 8 * 1024 * 1024
"""Longest single server-sent event accepted, in bytes (larger: a fatal error)."""
MAX_JSON_BODY_BYTES = 32 * 1024 * 1024
"""Longest whole-JSON response body accepted, in bytes (larger: a fatal error)."""
MAX_ERROR_BODY_BYTES = 64 * 1024
"""How much of an HTTP error response's body is read (its message is in the first bytes)."""
DRAIN_TIMEOUT_S = 0.1
"""How long the rest of a body is read after its final event (connection reuse)."""
_SAMPLE_BYTES = 2048
log = logging.getLogger(__name__)
_BOM = b"\xef\xbb\xbf"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # SSE line ends only (not U+2028 and the like)
_WHITESPACE = b" \t\r\n" + _BOM  # a UTF-8 byte-order mark counts as blank too


@dataclass(frozen=True)
class SSEData:
    """One server-sent event that carries data.

    Attributes:
        event: The event type (``message`` when the block named none).
        data: The data lines joined with ``\\n`` (never empty).
    """

    event: str
    data: str


@dataclass(frozen=True)
class JSONBody:
    """The whole body was one JSON document.

    Attributes:
        value: The decoded document.
    """

    value: Any


async def read_body(response: httpx2.Response, *, what: str) -> AsyncIterator[SSEData | JSONBody]:
    """Yield the events of a 200 response, or its one JSON document.

    Args:
        response: An open streaming response with status 200.
        what: Who answered, for error messages (``"the model endpoint"``).

    Yields:
        :class:`SSEData` for every event with data (not only whitespace), in order; or
        exactly one :class:`JSONBody`.

    Raises:
        ModelRetryableError: The body is empty, is neither events nor JSON, or carried no
            event with data ("... answered HTTP 200 without any stream events ...").
        ModelFatalError: An event or the JSON body is larger than its limit.
        httpx2.TransportError: The connection failed or timed out while reading (the caller
            maps it; a cut stream is retryable).
    """
    chunks = response.aiter_bytes()
    prefix = b""
    async for chunk in chunks:
        prefix += chunk
        if prefix.lstrip(_WHITESPACE):
            break
    start = prefix.lstrip(_WHITESPACE)[:1]
    if not start:
        raise ModelRetryableError(f"{what} answered HTTP 200 with an empty body")
    blank = prefix.lstrip(b" \t\r\n")
    if blank.startswith(_BOM):
        # One leading byte-order mark is not part of the first line (SSE specification);
        # read as part of it, "data:" became an unknown field and the first event was lost.
        prefix = blank[len(_BOM) :]
    if start in (b"{", b"["):
        yield JSONBody(await _json_document(prefix, chunks, what))
        return
    sample = bytearray()

    async def replay() -> AsyncIterator[bytes]:
        sample.extend(prefix[:_SAMPLE_BYTES])
        yield prefix
        async for piece in chunks:
            if len(sample) < _SAMPLE_BYTES:
                sample.extend(piece[: _SAMPLE_BYTES - len(sample)])
            yield piece
        # The body ended cleanly: its last event is whole even without the blank line after
        # it (by the specification an unterminated event at the end is dropped, which lost a
        # final answer; a half-sent one now fails to decode, a retryable error).
        yield b"\n\n"

    events = httpx2.Response(
        200,
        headers={"content-type": "text/event-stream; charset=utf-8"},
        content=replay(),
        request=response.request,
    )
    seen = 0
    try:
        async for sse in httpx2.EventSource(events, max_event_size=MAX_EVENT_BYTES):
            if not sse.data.strip():
                # A data-less block dispatches no event (SSE specification); data that is
                # only whitespace (a proxy's keep-alive) carries no JSON either.
                continue
            if not seen and (stray := error_field(bytes(sample))) is not None:
                yield SSEData("error", stray)  # before the event it came before ([DONE])
            seen += 1
            yield SSEData(sse.event or "message", sse.data)
    except httpx2.SSEError as exc:
        raise ModelFatalError(f"{what} sent a stream event too large to read: {exc}") from None
    if not seen and (stray := error_field(bytes(sample))) is not None:
        yield SSEData("error", stray)
        return
    if not seen:
        text = bytes(sample).decode("utf-8", errors="replace")
        content_type = response.headers.get("content-type", "")
        raise ModelRetryableError(
            f"{what} answered HTTP 200 without any stream events or JSON response "
            f"(Content-Type {content_type or 'none'!r}): {describe_body(text, content_type)}"
        )


def error_field(start: bytes) -> str | None:
    """The value of an ``error:`` line in the first bytes of an event stream, or None.

    llama.cpp builds of 2025 sent a stream's error (a prompt past the context size) as this
    field, which is no SSE field, so every decoder drops it (fixed upstream by
    ggml-org/llama.cpp PR 16109, which sends ``data: {"error": ...}``). :func:`read_body`
    yields it as an ``error`` event before the first event with data (``[DONE]``), or alone.
    """
    if b"error:" not in start:
        return None
    for line in _LINE_BREAK.split(start.decode("utf-8", errors="replace")):
        if line.startswith("error:"):
            return line[len("error:") :].strip() or None
    return None


async def _json_document(prefix: bytes, chunks: AsyncIterator[bytes], what: str) -> Any:
    parts = [prefix]
    size = len(prefix)
    async for chunk in chunks:
        size += len(chunk)
        if size > MAX_JSON_BODY_BYTES:
            raise ModelFatalError(
                f"{what} answered with a JSON body larger than {MAX_JSON_BODY_BYTES} bytes"
            )
        parts.append(chunk)
    text = b"".join(parts).decode("utf-8", errors="replace")
    try:
        return loads_bounded(text)
    except ValueError as exc:
        raise ModelRetryableError(
            f"{what} answered HTTP 200 with a body that is neither stream events nor JSON "
            f"({exc}): {describe_body(text, 'application/json')}"
        ) from None


def decode_event_json(data: str, what: str) -> Any:
    """The JSON payload of one event (decoded by :func:`~loopact.llm.arguments.loads_bounded`:
    deep tool arguments in it make one failed call, never an unreadable event).

    Raises:
        ModelRetryableError: ``data`` is not JSON ("model stream was cut: malformed chunk").
    """
    try:
        return loads_bounded(data)
    except ValueError as exc:
        clip = data if len(data) <= 120 else data[:120] + "..."
        raise ModelRetryableError(
            f"{what} stream was cut: malformed chunk: {exc}: {clip!r}"
        ) from None


def error_text(value: Any) -> str:
    """The message of an error a server sent in a 200 response, at most 300 characters.

    Args:
        value: An SSE ``event: error``'s data (JSON text or plain text) or a decoded JSON
            value: ``{"error": {"message": ..., "code": ...}}``, ``{"error": "..."}``,
            ``{"message": ..., "code": ...}`` (iFlytek Spark), ``{"error_msg": ...}``.

    Returns:
        The message (:func:`~loopact.llm.httperrors.json_error_text`) and its code when it
        has one and does not say it (``"input content audit failed (code 10013)"``); never
        empty.
    """
    if isinstance(value, str):
        try:
            value = loads_bounded(value)
        except ValueError:
            pass
    message = json_error_text(value) if not isinstance(value, str) else value.strip()
    code = _error_code(value)
    if code and code not in message:
        message = f"{message} (code {code})"
    message = message or "An error occurred during streaming"
    return message if len(message) <= 300 else message[:300] + "..."


def _error_code(value: Any) -> str:
    if not isinstance(value, dict):
        return ""
    error = value.get("error")
    for scope in (error, value) if isinstance(error, dict) else (value,):
        for key in ("code", "error_code"):
            code = scope.get(key)
            if isinstance(code, (str, int)) and not isinstance(code, bool) and str(code).strip():
                return str(code).strip()
    return ""


async def drain(items: AsyncIterator[Any], timeout_s: float = DRAIN_TIMEOUT_S) -> None:
    """Read what is left of a body after its final event, for at most ``timeout_s``.

    An HTTP/1.1 connection can carry the next request only once the body has been read to
    its end (the terminating chunk right after ``data: [DONE]``); a response closed before
    costs a new connection per request, a TLS handshake each on a remote endpoint. Whatever
    arrives (or fails) now is ignored.
    """
    try:
        async with timeout_after(timeout_s):
            async for _ in items:
                pass
    except (asyncio.TimeoutError, TimeoutError, Exception) as exc:  # cleanup only
        log.debug("the rest of a model response was not read: %r", exc)


async def read_error_body(response: httpx2.Response) -> httpx2.Response:
    """An error response with at most :data:`MAX_ERROR_BODY_BYTES` of its body read: a proxy
    or a broken server may send an error page of any size, which is not read to its end
    (SPEC B6, issue 21 item 6). The connection is closed, not drained.

    Returns:
        A response with the same status and headers (bar the body's framing) and the start
        of the body, for :func:`~loopact.llm.httperrors.describe_body` and ``.json()``.
    """
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size >= MAX_ERROR_BODY_BYTES:
            break
    await response.aclose()
    framing = ("content-length", "content-encoding", "transfer-encoding")
    headers = [(k, v) for k, v in response.headers.items() if k.lower() not in framing]
    return httpx2.Response(
        response.status_code,
        headers=headers,
        content=b"".join(parts)[:MAX_ERROR_BODY_BYTES],
        request=response.request,
    )


class _CappedStream(httpx2.AsyncByteStream):
    """The first ``limit`` bytes of a response body; closing it closes the connection."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._inner:
            piece = chunk[: self._limit - size]
            size += len(piece)
            yield piece
            if size >= self._limit:
                return

    async def aclose(self) -> None:
        await self._inner.aclose()


async def cap_error_body(response: httpx2.Response) -> None:
    """An ``httpx`` response hook: an error response's body is read only up to
    :data:`MAX_ERROR_BODY_BYTES` by whoever reads it (the ``openai`` and ``anthropic`` SDKs
    read an error's whole body before they raise; issue 21 item 6, SPEC B6).

    Give it to a client as ``event_hooks={"response": [cap_error_body]}``.
    """
    if response.status_code >= 400 and isinstance(response.stream, httpx2.AsyncByteStream):
        response.stream = _CappedStream(response.stream, MAX_ERROR_BODY_BYTES)

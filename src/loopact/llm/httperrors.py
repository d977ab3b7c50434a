"""HTTP error responses as loopact model errors, one rule for every provider (SPEC B6).

HTTP 408, 409, 429 and every 5xx are worth retrying (:class:`ModelRetryableError`, with the
server's ``Retry-After``); any other status is fatal (:class:`ModelFatalError`).
"""

from __future__ import annotations

import email.utils
import html
import json
import math
import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, TypeVar

from loopact.errors import ContextOverflow, ModelError, ModelFatalError, ModelRetryableError
from loopact.redact import Redactor

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""Statuses below 500 that are retried."""
MAX_DETAIL_CHARS = 300
"""Longest error body text quoted in an error message."""

_TITLE_RE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_HIDDEN_RE = re.compile(
    r"<(script|style|head)\b[^>]*>.*?</\1\s*>|<!--.*?-->", re.IGNORECASE | re.DOTALL
)
_TAG_RE = re.compile(r"<[^>]*>")


def looks_like_html(text: str, content_type: str | None = None) -> bool:
    """Whether an error body is an HTML page (a proxy's or load balancer's error page)."""
    if content_type and "html" in content_type.lower():
        return True
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html")) or "<title" in head


def describe_body(text: str, content_type: str | None = None) -> str:
    """A short readable account of an HTTP response body for an error message (SPEC B6).

    An HTML page (a proxy's 502 or 503 page) is told by its ``<title>``, or else its first
    line of visible text, never by its markup; any other body by its first
    :data:`MAX_DETAIL_CHARS` characters.

    Args:
        text: The body as text.
        content_type: The ``Content-Type`` header, if any.

    Returns:
        E.g. ``"502 Bad Gateway (an HTML page)"``; ``"(empty body)"`` when there is nothing.
    """
    if looks_like_html(text, content_type):
        title = _TITLE_RE.search(text)
        words = _squash(html.unescape(_TAG_RE.sub(" ", title.group(1)))) if title else ""
        if not words:
            visible = _TAG_RE.sub("\n", _HIDDEN_RE.sub(" ", text))
            lines = (_squash(html.unescape(line)) for line in visible.splitlines())
            words = next((line for line in lines if line), "")
        return f"{_clip(words) or 'no text'} (an HTML page)"
    text = text.strip()
    return _clip(text) if text else "(empty body)"


def error_message(body: object, content_type: str | None, fallback: str) -> str:
    """The server's own message from an error response an SDK decoded (SPEC B6, issue 22).

    The ``openai`` and ``anthropic`` SDKs give an error's ``body`` as the decoded JSON when
    it was JSON and as the raw text otherwise; the ``openai`` SDK's ``message`` quotes only
    ``error.message`` (``"Error code: 404"`` for anything else) and may quote a proxy's HTML
    page whole. Every endpoint loopact calls through them (models, speech, transcription,
    images) says its error with this.

    Args:
        body: The SDK's ``exc.body``.
        content_type: The response's ``Content-Type``.
        fallback: Said when the body could not be read (the SDK's ``exc.message``).

    Returns:
        The words of a JSON body (:func:`json_error_text`: ``error.message``, ``message``,
        ``detail`` as FastAPI and vLLM send it, ``msg``, or the JSON itself), at most
        :data:`MAX_DETAIL_CHARS` characters; :func:`describe_body` of a text body
        (``"(empty body)"`` for none); else ``fallback``.
    """
    if isinstance(body, (Mapping, list)):
        return _clip(json_error_text(body))
    if isinstance(body, str):
        return describe_body(body, content_type)
    if looks_like_html(fallback, content_type):
        return describe_body(fallback, content_type)
    return fallback


def json_error_text(value: object) -> str:
    """The words of a JSON error document, never a Python repr of it (SPEC B6, issue 22).

    Args:
        value: The decoded JSON: ``{"error": {"message": ...}}`` (OpenAI, vLLM, llama.cpp,
            LiteLLM, Azure), ``{"error": "..."}`` (Ollama), ``{"message": ...}`` (vLLM's
            older shape, DashScope), ``{"detail": "..."}`` or FastAPI's
            ``{"detail": [{"loc": [...], "msg": ...}]}``, ``{"msg": ...}``, or a list holding
            one of these (Gemini's compatibility endpoint).

    Returns:
        The message; the JSON text when the document names none (``{"error": {"code":
        "context_length_exceeded"}}``); never empty.
    """
    found = _json_words(value, depth=0)
    if found:
        return found
    text = json.dumps(value, ensure_ascii=False, default=str).strip()
    return text or "(empty body)"


def _json_words(value: object, depth: int) -> str:
    if depth > 4:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        if value and all(isinstance(v, Mapping) and "msg" in v for v in value):
            return "; ".join(_fastapi_item(v) for v in value)
        return _json_words(value[0], depth + 1) if len(value) == 1 else ""
    if not isinstance(value, Mapping):
        return ""
    for key in ("error", "message", "detail", "msg", "error_msg", "errorMessage"):
        words = _json_words(value.get(key), depth + 1)
        if words:
            return words
    return ""


def _fastapi_item(item: Mapping[str, Any]) -> str:
    """``body.messages.0.role: Field required`` from one FastAPI validation error."""
    loc = item.get("loc")
    where = ".".join(str(p) for p in loc) if isinstance(loc, list) else ""
    msg = str(item.get("msg", "")).strip()
    return f"{where}: {msg}" if where else msg


def _squash(text: str) -> str:
    return " ".join(text.split())


def _clip(text: str) -> str:
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 3] + "..."


GATEWAY_PREFIX = "llm_provider-"
"""LiteLLM's proxy passes the backend's response headers on under this prefix
(``llm_provider-retry-after``; issue 39 item 9)."""


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date), and
    from the same headers of the backend behind a gateway (``llm_provider-retry-after-ms``,
    ``llm_provider-retry-after``: LiteLLM's proxy).

    Of one source the milliseconds header wins (it is the precise one); of the gateway's own
    and the backend's, the longer wait, so that a retry never comes sooner than either allows.

    Args:
        headers: Response headers (any mapping; names are compared case-insensitively).

    Returns:
        Seconds (>= 0), or None when no usable value was sent.
    """
    lower = {str(k).lower(): v for k, v in headers.items()}
    waits = []
    for prefix in ("", GATEWAY_PREFIX):
        wait = _milliseconds(lower.get(prefix + "retry-after-ms"))
        if wait is None:
            wait = _retry_after(lower.get(prefix + "retry-after"))
        if wait is not None:
            waits.append(wait)
    return max(waits) if waits else None


def _milliseconds(raw: str | None) -> float | None:
    if not raw:
        return None
    try:
        value = float(raw) / 1000.0
    except ValueError:
        return None
    return None if math.isnan(value) else max(0.0, value)


def _retry_after(raw: str | None) -> float | None:
    """A ``Retry-After`` value: seconds or an HTTP date."""
    if not raw:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        pass
    else:
        return None if math.isnan(value) else max(0.0, value)
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


UNRETRYABLE_CODES = frozenset(
    {
        "insufficient_quota",  # OpenAI: HTTP 429, but only billing helps
        "exceeded_current_quota_error",  # Moonshot (Kimi): HTTP 429, a suspended account
        "billing_hard_limit_reached",
        "invalid_api_key",
        "authentication_error",
        "permission_error",
        "context_length_exceeded",
        "model_not_found",
        "not_found_error",
    }
)
"""Error ``code`` / ``type`` values that no retry can fix, whatever the HTTP status says."""


OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
"""Error codes of a prompt longer than the context window (OpenAI; llama.cpp's server)."""
_OVERFLOW_RE = re.compile(
    r"context (?:length|window|size)|(?:input|prompt) (?:is )?too long|too many (?:input )?tokens",
    re.IGNORECASE,
)
_WINDOW_RES = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),  # OpenAI, vLLM, llama-cpp
    re.compile(r"tokens? > (\d+) maximum", re.IGNORECASE),  # Anthropic
    re.compile(r"context (?:window|size|length) of (\d+)", re.IGNORECASE),
    re.compile(r"\bn_ctx\W+(\d+)", re.IGNORECASE),  # llama.cpp's server
)


def context_overflow(status: int, message: str, codes: frozenset[str]) -> ContextOverflow | None:
    """The :class:`ContextOverflow` an error response means, or None when it is another error.

    A 400, 413 or 422 (or an error document sent with 200) whose code is in
    :data:`OVERFLOW_CODES` or whose message says the prompt passed the context length.

    Args:
        status: The HTTP status code.
        message: The full error message.
        codes: The body's error codes and types (:func:`error_codes`).

    Returns:
        The error, with the window in tokens when the message names it.
    """
    if status not in (200, 400, 413, 422):
        return None
    if not codes & OVERFLOW_CODES and not _OVERFLOW_RE.search(message):
        return None
    window = None
    for pattern in _WINDOW_RES:
        found = pattern.search(message)
        if found is not None and int(found.group(1)) > 0:
            window = int(found.group(1))
            break
    return ContextOverflow(message, status=status, context_tokens=window)


def error_codes(value: object) -> frozenset[str]:
    """The ``code`` and ``type`` strings of a JSON error document (lower-cased): those of its
    ``error`` object and its top level (``{"error": {"code": "insufficient_quota"}}``)."""
    found: set[str] = set()
    for scope in (value, value.get("error") if isinstance(value, Mapping) else None):
        if isinstance(scope, Mapping):
            for key in ("code", "type"):
                if isinstance(scope.get(key), str) and scope[key].strip():
                    found.add(scope[key].strip().lower())
    return frozenset(found)


def error_status(value: object) -> int | None:
    """The HTTP status an error document sent with status 200 names (its ``error.code`` or
    ``code``, a number or digits between 400 and 599, as OpenRouter and one-api send it)."""
    scopes = [value.get("error"), value] if isinstance(value, Mapping) else []
    for scope in scopes:
        if not isinstance(scope, Mapping):
            continue
        for key in ("code", "status"):
            code = scope.get(key)
            if isinstance(code, str) and code.strip().isdigit():
                code = int(code)
            if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
                return code
    return None


def status_error(
    status: int,
    message: str,
    headers: Mapping[str, str],
    codes: frozenset[str] = frozenset(),
) -> ModelError:
    """The loopact error for an HTTP error response (SPEC B6).

    Args:
        status: The HTTP status code.
        message: The full error message (already scrubbed of secrets).
        headers: The response headers (for ``Retry-After``).
        codes: The body's error codes and types (:func:`error_codes`); one of
            :data:`UNRETRYABLE_CODES` makes even a 429 fatal (an exhausted quota).

    Returns:
        :class:`ModelRetryableError` for 408, 409, 429 and 5xx, else (or with an
        unretryable code) :class:`ModelFatalError`: a :class:`ContextOverflow` when the
        prompt passed the context window (:func:`context_overflow`).
    """
    if (status in RETRYABLE_STATUS or status >= 500) and not codes & UNRETRYABLE_CODES:
        return ModelRetryableError(message, status=status, retry_after_s=parse_retry_after(headers))
    overflow = context_overflow(status, message, codes)
    return overflow if overflow is not None else ModelFatalError(message, status=status)


def body_error(value: object, message: str) -> ModelError:
    """The loopact error for an error document a server sent with HTTP 200 (a whole JSON body,
    a stream event: OpenRouter, one-api, iFlytek Spark; issue 22).

    Args:
        value: The decoded error document.
        message: The full error message.

    Returns:
        What :func:`status_error` makes of the status the document names (:func:`error_status`),
        else :class:`ModelFatalError` for an unretryable code, else
        :class:`ModelRetryableError` (a provider failing mid-answer).
    """
    codes = error_codes(value)
    status = error_status(value)
    if status is not None:
        return status_error(status, message, {}, codes)
    if codes & OVERFLOW_CODES:
        return context_overflow(200, message, codes) or ModelFatalError(message)
    if codes & UNRETRYABLE_CODES:
        return ModelFatalError(message)
    return ModelRetryableError(message)


async def masking_errors(events: AsyncIterator[T], redactor: Redactor) -> AsyncIterator[T]:
    """``events`` with every :class:`ModelError` they raise masked by ``redactor``.

    Every provider's ``stream`` goes through this, so no provider error carries a secret
    (the key a 401 body quotes), whichever way it was built (issue 21 item 5).
    """
    try:
        async for event in events:
            yield event
    except ModelError as exc:
        masked = redactor.error(exc)
        if masked is exc:
            raise
        raise masked from None

"""HTTP error responses as loopact model errors, one rule for every provider (SPEC B6).

HTTP 408, 409, 429 and every 5xx are worth retrying (:class:`ModelRetryableError`, with the
server's ``Retry-After``); any other status is fatal (:class:`ModelFatalError`).
"""

from __future__ import annotations

import email.utils
import html
import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import TypeVar

from loopact.errors import ModelError, ModelFatalError, ModelRetryableError
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
    it was JSON and as the raw text otherwise, and their ``message`` quotes that text whole
    (a proxy's HTML page). Every endpoint loopact calls through them (models, speech,
    transcription, images) says its error with this.

    Args:
        body: The SDK's ``exc.body``.
        content_type: The response's ``Content-Type``.
        fallback: Said when the body holds nothing usable (the SDK's ``exc.message``).

    Returns:
        ``error.message`` (or ``message``) of a JSON body, :func:`describe_body` of a text
        body, else ``fallback``.
    """
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(err, str) and err:
            return err
        if isinstance(body.get("message"), str):
            return str(body["message"])
    if isinstance(body, str) and body:
        return describe_body(body, content_type)
    if looks_like_html(fallback, content_type):
        return describe_body(fallback, content_type)
    return fallback


def _squash(text: str) -> str:
    return " ".join(text.split())


def _clip(text: str) -> str:
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 3] + "..."


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date).

    Args:
        headers: Response headers (case-insensitive mapping or lower-case keys).

    Returns:
        Seconds (>= 0), or None when the server sent no usable value.
    """
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after") or headers.get("Retry-After")
    if not raw:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def status_error(status: int, message: str, headers: Mapping[str, str]) -> ModelError:
    """The loopact error for an HTTP error response.

    Args:
        status: The HTTP status code.
        message: The full error message (already scrubbed of secrets).
        headers: The response headers (for ``Retry-After``).

    Returns:
        :class:`ModelRetryableError` for 408, 409, 429 and 5xx, else :class:`ModelFatalError`.
    """
    if status in RETRYABLE_STATUS or status >= 500:
        return ModelRetryableError(message, status=status, retry_after_s=parse_retry_after(headers))
    return ModelFatalError(message, status=status)


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

"""HTTP error responses as loopact model errors, one rule for every provider (SPEC B6).

HTTP 408, 409, 429 and every 5xx are worth retrying (:class:`ModelRetryableError`, with the
server's ``Retry-After``); any other status is fatal (:class:`ModelFatalError`).
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

from loopact.errors import ModelError, ModelFatalError, ModelRetryableError

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""Statuses below 500 that are retried."""


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

"""Secrets are never shown: one masker for provider errors and events (SPEC A8, B6).

A server may quote the API key it refused in its error body (Anthropic and Dify endpoints do
on HTTP 401), and anything a tool reads may hold one. :class:`Redactor` replaces every known
secret value with ``***``. It is applied in two places that everything passes through: every
provider's errors (:func:`loopact.llm.httperrors.masking_errors`) and every event on the
:class:`~loopact.events.EventBus` (so the trace, stderr, the web console and the ROS 2 text
channel never see a key; issue 21 item 5).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from typing import Any, TypeVar

__all__ = [
    "MASK",
    "MAX_DEPTH",
    "MIN_SECRET_CHARS",
    "TOO_DEEP",
    "Redactor",
    "StreamMasker",
    "masked_url",
    "printable",
    "public_url",
]

MASK = "***"
"""What a secret is replaced with."""
MIN_SECRET_CHARS = 6
"""Shorter values are placeholders (``"none"``, ``"k"``): masking them would mangle words.
Such a secret is not masked; ``loopact run`` warns at start naming the setting."""
MAX_DEPTH = 100
"""Levels of nesting :meth:`Redactor.value` looks into. Tool arguments hold at most 64 and an
event wraps them in a few more (``model_response``: ``tool_calls`` / item / ``arguments``);
anything deeper is replaced by :data:`TOO_DEEP`, never passed on unchecked (issue 21)."""
TOO_DEEP = "*** (nested too deeply to check for secrets)"
"""What a value nested deeper than :data:`MAX_DEPTH` is replaced with."""

E = TypeVar("E", bound=BaseException)


class Redactor:
    """Replaces known secret values with :data:`MASK` in text and JSON-able values.

    Args:
        secrets: Secret values (API keys, tokens); None, empty and short values are ignored.
    """

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets: tuple[str, ...] = ()
        self.add(*secrets)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values masked, longest first (their URL-encoded forms included)."""
        return self._secrets

    def add(self, *secrets: str | None) -> None:
        """Mask these values too (as written and URL-encoded)."""
        known = set(self._secrets)
        for secret in secrets:
            if not secret or len(secret) < MIN_SECRET_CHARS:
                continue
            known.add(secret)
            known.add(urllib.parse.quote(secret, safe=""))
        self._secrets = tuple(sorted(known, key=len, reverse=True))

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by :data:`MASK`."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def value(self, value: Any, _depth: int = 0) -> Any:
        """A JSON-able value (dicts, lists, tuples, strings) with its strings masked.

        Dict keys are masked as well as values (a key that becomes the same as another
        gets `` (2)``, `` (3)``... so no entry is lost). A dict, list or tuple nested deeper
        than :data:`MAX_DEPTH` levels is replaced by :data:`TOO_DEEP`.

        Args:
            value: The value, e.g. an event's data.

        Returns:
            ``value`` itself when nothing changes, else a masked copy.
        """
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (dict, list, tuple)) and _depth >= MAX_DEPTH:
            return TOO_DEEP
        if isinstance(value, dict):
            return self._dict(value, _depth)
        if isinstance(value, (list, tuple)):
            items = [self.value(v, _depth + 1) for v in value]
            if any(new is not old for new, old in zip(items, value, strict=True)):
                return type(value)(items) if isinstance(value, tuple) else items
        return value

    def _dict(self, value: dict[Any, Any], depth: int) -> dict[Any, Any]:
        masked: dict[Any, Any] = {}
        changed = False
        for key, item in value.items():
            new_key = self.text(key) if isinstance(key, str) else key
            if new_key != key:
                changed = True
                base, n = new_key, 2
                while new_key in masked or new_key in value:
                    new_key, n = f"{base} ({n})", n + 1
            new_item = self.value(item, depth + 1)
            changed = changed or new_item is not item
            masked[new_key] = new_item
        return masked if changed else value

    def error(self, exc: E) -> E:
        """``exc`` itself when its message holds no secret; else a copy with it masked.

        The copy has the same class and the same attributes (``status``, ``retry_after_s``),
        only ``args`` masked.
        """
        message = str(exc)
        masked = self.text(message)
        if masked == message:
            return exc
        copy = exc.__class__.__new__(exc.__class__)
        copy.__dict__.update(exc.__dict__)
        copy.args = (masked, *exc.args[1:]) if exc.args else (masked,)
        return copy


class StreamMasker:
    """Masks a text that arrives in pieces (streamed deltas), where a secret may be split
    across two or more pieces that each look harmless (issue 21 item 5).

    :meth:`feed` returns what can be shown now: the text so far with every whole secret
    masked, minus a held-back tail that could be the start of a secret; :meth:`flush`
    returns the tail when the text ends. Shown pieces joined equal
    ``redactor.text(whole_text)``. Without secrets, pieces pass through unchanged.

    Args:
        redactor: The masker that knows the secrets (read on every piece, so secrets it
            learns later count too).
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = ""

    def feed(self, piece: str) -> str:
        """The part of ``piece`` (with the held tail before it) that can be shown now."""
        secrets = self._redactor.secrets
        if not secrets:
            out, self._held = self._held + piece, ""
            return out
        text = self._redactor.text(self._held + piece)
        keep = _partial_secret_tail(text, secrets)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """The held-back tail (the text ended: it is no secret's start any more)."""
        out, self._held = self._held, ""
        return out


def public_url(url: str) -> str:
    """``url`` without its user info, query and fragment, which may hold credentials.

    ``http://bob:pw@host:8080/v1?key=k`` is shown as ``http://host:8080/v1`` in errors
    and the trace (SPEC B6: never log keys). A string that is not a URL comes back as is.

    Args:
        url: Any endpoint URL as the user configured it.

    Returns:
        The URL fit to show to people and to write to logs.
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket: drop everything up to its last "@"
        return url.rpartition("@")[2]
    netloc = parts.netloc.rpartition("@")[2]  # host[:port], as the user wrote it
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def masked_url(url: str) -> str:
    """``url`` with its user info and query replaced by :data:`MASK`, for a person to read.

    ``http://bob:pw@host:8080/v1?key=k`` is shown as ``http://***@host:8080/v1?***``: the
    start-up banner and the console's settings page say that credentials are set without
    showing them (SPEC B6). A URL without credentials comes back as it is (a fragment is
    dropped, like :func:`public_url`).

    Args:
        url: Any endpoint URL as the user configured it.

    Returns:
        The URL with its credentials masked.
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return public_url(url)
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{MASK}@{host}" if "@" in parts.netloc else host
    query = MASK if parts.query else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _partial_secret_tail(text: str, secrets: tuple[str, ...]) -> int:
    """The length of the longest end of ``text`` that is a proper start of a secret."""
    best = 0
    for secret in secrets:
        first = secret[0]
        end = len(text) - best  # a start at or after this gives no longer a tail
        i = text.find(first, max(0, len(text) - len(secret) + 1), end)
        while i != -1:
            if secret.startswith(text[i:]):
                best = len(text) - i
                break  # the earliest match is the longest for this secret
            i = text.find(first, i + 1, end)
    return best


_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    c = match.group()
    return "^" + chr(ord(c) ^ 0x40) if ord(c) < 0x20 or c == "\x7f" else "\ufffd"


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: control characters other than newline and tab
    are shown in caret notation (ESC as ``^[``, BEL as ``^G``, CR as ``^M``), C1 controls
    and lone surrogates (undecodable bytes) as U+FFFD.

    An instruction, a model's reply or a tool result can carry escape sequences that would
    retitle or clear the terminal or hide earlier lines (OSC ``ESC ] 0 ; ... BEL``, CSI,
    a carriage return); what came from outside is printed with this (issue 21).
    """
    return _UNPRINTABLE.sub(_visible, text)

"""Tool names as models actually write them (SPEC B7, issue 22 items 3 and 4).

Small models and models post-trained on other agents' transcripts call declared tools by
mangled names: surrounding whitespace or a newline (``"file_write\\n"``, a no-break space, a
zero-width space), quotes or backticks, a namespace prefix (``functions.file_write`` from
OpenAI's harmony format, ``default_api.file_write`` from Gemini transcripts, sometimes twice),
a chat-template token glued to the end
(``file_write<|channel|>commentary``), a trailing ``()``, another letter case.
:func:`resolve_tool_name` maps such a name to the one declared tool it means, or to None;
an unresolvable name stays what it was (an "unknown tool" result).
"""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = ["NAMESPACE_PREFIXES", "resolve_tool_name"]

NAMESPACE_PREFIXES = ("functions", "function", "tools", "tool", "default_api", "api")
"""Namespaces models put before a tool name (``functions.file_write``, ``tools:wait``)."""

_TEMPLATE_TOKEN = re.compile(r"<\|.*$", re.DOTALL)
_PREFIX = re.compile(rf"^(?:{'|'.join(NAMESPACE_PREFIXES)})\s*[.:/]\s*", re.IGNORECASE)
_DECORATION = " \t\r\n`'\"*"
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"  # zero-width characters, byte-order mark


def _trim(text: str) -> str:
    """``text`` without surrounding whitespace of any kind (``str.strip``: no-break and
    ideographic spaces, vertical tab, form feed too), zero-width characters and decoration."""
    while True:
        trimmed = text.strip().strip(_DECORATION + _INVISIBLE)
        if trimmed == text:
            return text
        text = trimmed


def resolve_tool_name(name: str, declared: Collection[str]) -> str | None:
    """The declared tool that ``name`` means, or None.

    Args:
        name: The name as the model wrote it.
        declared: The names of the tools on offer.

    Returns:
        ``name`` itself when declared; else the one declared name left after removing
        decoration (whitespace of any kind, zero-width characters, quotes, backticks, a
        trailing ``()``, a ``<|...|>`` token and what follows it) and known namespace
        prefixes (:data:`NAMESPACE_PREFIXES`, one or more),
        matched exactly or, failing that, ignoring letter case when only one tool matches;
        None when nothing matches.
    """
    if name in declared:
        return name
    cleaned = _trim(_TEMPLATE_TOKEN.sub("", name))
    if cleaned.endswith("()"):
        cleaned = _trim(cleaned[:-2])
    candidates = [cleaned]
    while True:  # each known prefix in turn (functions.functions.file_write)
        bare = _trim(_PREFIX.sub("", candidates[-1], count=1))
        if bare == candidates[-1]:
            break
        candidates.append(bare)
    for candidate in candidates:
        if candidate in declared:
            return candidate
    for candidate in candidates:
        folded = [d for d in declared if d.casefold() == candidate.casefold()]
        if len(folded) == 1:
            return folded[0]
    return None

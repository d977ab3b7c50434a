"""Tool names as models actually write them (SPEC B7, issue 22 items 3 and 4).

Small models and models post-trained on other agents' transcripts call declared tools by
mangled names: surrounding whitespace or a newline (``"file_write\\n"``), quotes or
backticks, a namespace prefix (``functions.file_write`` from OpenAI's harmony format,
``default_api.file_write`` from Gemini transcripts), a chat-template token glued to the end
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


def resolve_tool_name(name: str, declared: Collection[str]) -> str | None:
    """The declared tool that ``name`` means, or None.

    Args:
        name: The name as the model wrote it.
        declared: The names of the tools on offer.

    Returns:
        ``name`` itself when declared; else the one declared name left after removing
        decoration (whitespace, quotes, backticks, a trailing ``()``, a ``<|...|>`` token
        and what follows it) and a known namespace prefix (:data:`NAMESPACE_PREFIXES`),
        matched exactly or, failing that, ignoring letter case when only one tool matches;
        None when nothing matches.
    """
    if name in declared:
        return name
    cleaned = _TEMPLATE_TOKEN.sub("", name).strip(_DECORATION)
    if cleaned.endswith("()"):
        cleaned = cleaned[:-2].strip(_DECORATION)
    candidates = [cleaned]
    bare = _PREFIX.sub("", cleaned, count=1)
    if bare != cleaned:
        candidates.append(bare.strip(_DECORATION))
    for candidate in candidates:
        if candidate in declared:
            return candidate
    for candidate in candidates:
        folded = [d for d in declared if d.casefold() == candidate.casefold()]
        if len(folded) == 1:
            return folded[0]
    return None

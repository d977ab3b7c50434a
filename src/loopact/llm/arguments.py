"""Streamed tool-call arguments, collected in linear time and bounded (SPEC B5, B7, X1).

Servers stream a call's arguments as JSON text in small fragments (8 characters is common).
:class:`ArgumentBuffer` keeps the fragments in a list and scans each fragment once for JSON
structure (strings, escapes, brackets), so collecting ``n`` characters costs ``O(n)`` whatever
the fragment size (appending to one string and re-parsing it at every ``}`` cost ``O(n²)``:
1 MB took 10 s, issue 21 item 7). The scan also tells

* when the top-level object has closed, so the text is parsed exactly once, strictly, and a
  call is never taken from a prefix that a repair would turn into valid JSON
  (``{"distance_m": 1`` of ``{"distance_m": 10.5}``, issue 22 item 1);
* how deeply the arguments nest, so text nested past :data:`MAX_ARGUMENT_DEPTH` becomes one
  failed call instead of a ``RecursionError`` in the JSON decoder (issue 21 item 9);
* how long they are: past :data:`MAX_ARGUMENT_CHARS` the text is no longer kept (memory stays
  bounded) and the call fails with a clear error (issue 21 item 7).

Arguments also arrive already decoded, as objects inside a JSON document (a stream chunk with
``"arguments": {...}`` as Ollama sends it, an Anthropic ``tool_use`` ``input``, a whole JSON
completion). :func:`loads_bounded` decodes such documents without ever recursing past
:data:`MAX_DOCUMENT_DEPTH`, so deep arguments there too become one failed call, not a response
that cannot be read (issue 21 item 9).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_ARGUMENT_DEPTH",
    "MAX_DOCUMENT_DEPTH",
    "TOO_DEEP_ERROR",
    "ArgumentBuffer",
    "cut_deeper_than",
    "loads_bounded",
    "nesting_depth",
    "too_long_error",
    "value_depth",
]

MAX_ARGUMENT_CHARS = 1_000_000
"""Longest tool-call arguments accepted, in characters (about 1 MB of ASCII)."""
MAX_ARGUMENT_DEPTH = 64
"""Deepest nesting of objects and arrays accepted in tool-call arguments."""
MAX_DOCUMENT_DEPTH = 200
"""Deepest nesting :func:`loads_bounded` decodes; deeper containers are cut (well past
:data:`MAX_ARGUMENT_DEPTH` plus any envelope, far below Python's recursion limit)."""
TOO_DEEP_ERROR = f"arguments nested too deeply (more than {MAX_ARGUMENT_DEPTH} levels)"
"""The error of a call whose arguments nest deeper than :data:`MAX_ARGUMENT_DEPTH`."""

_STRUCTURE = re.compile(r'[\\"{}\[\]]')


def too_long_error(received: int, limit: int = MAX_ARGUMENT_CHARS) -> str:
    """The error of a call whose arguments passed the size limit."""
    return (
        f"the arguments are longer than the limit of {limit:,} characters (received "
        f"{received:,}); they were not kept and the call did not run. Send less data per call"
    )


class ArgumentBuffer:
    """One call's argument text, fed fragment by fragment (linear time, bounded memory).

    Args:
        max_chars: Characters kept at most; beyond it :attr:`overflowed` is True.
        max_depth: Deepest nesting accepted; beyond it :attr:`too_deep` is True.

    Attributes:
        size: Characters fed so far (kept or not).
        max_seen_depth: Deepest nesting seen so far.
        work_chars: Characters the buffer has scanned, copied (joining the fragments) or
            handed to the JSON decoder so far: its work, which stays within a small multiple
            of :attr:`size` (about 3x for a call read once) however small the fragments are.
            A test holds it to that without a clock (issue 21 item 7).
        parse_attempts: Times the text was handed to the JSON decoder (once a call).
    """

    def __init__(
        self, max_chars: int = MAX_ARGUMENT_CHARS, max_depth: int = MAX_ARGUMENT_DEPTH
    ) -> None:
        self.max_chars = max_chars
        self.max_depth = max_depth
        self.size = 0
        self.max_seen_depth = 0
        self.work_chars = 0
        self.parse_attempts = 0
        self._parts: list[str] = []
        self._joined: str | None = ""
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._closed_at: int | None = None

    @property
    def text(self) -> str:
        """The text kept so far (all of it unless :attr:`overflowed`)."""
        if self._joined is None:
            self._joined = "".join(self._parts)
            self._parts = [self._joined]
            self.work_chars += len(self._joined)
        return self._joined

    @property
    def overflowed(self) -> bool:
        """More than ``max_chars`` characters arrived."""
        return self.size > self.max_chars

    @property
    def too_deep(self) -> bool:
        """The nesting went deeper than ``max_depth``."""
        return self.max_seen_depth > self.max_depth

    @property
    def closed(self) -> bool:
        """The outermost object or array has closed (the text may still be invalid JSON)."""
        return self._closed_at is not None

    def feed(self, piece: str) -> None:
        """Add one fragment."""
        if not piece:
            return
        if not self.overflowed:
            if self.size + len(piece) <= self.max_chars:
                self._parts.append(piece)
                self._joined = None
            else:
                self._parts, self._joined = [], ""  # drop it all: memory stays bounded
        self.size += len(piece)
        self._scan(piece)

    def complete_object(self) -> dict[str, Any] | None:
        """The arguments once they are a complete JSON object, parsed strictly; else None.

        Never repairs: a prefix that would repair into an object is not complete. Returns
        None when the text is too long, too deep, not closed yet, or not valid JSON.
        """
        if not self.closed or self.overflowed or self.too_deep:
            return None
        text = self.text
        self.parse_attempts += 1
        self.work_chars += len(text)
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def failure(self) -> str | None:
        """Why the arguments cannot be used whatever follows (too long, too deep), or None."""
        if self.overflowed:
            return too_long_error(self.size, self.max_chars)
        if self.too_deep:
            return TOO_DEEP_ERROR
        return None

    def _scan(self, piece: str) -> None:
        self.work_chars += len(piece)
        skip = 0
        if self._escape:
            self._escape, skip = False, 1
        for match in _STRUCTURE.finditer(piece, skip):
            i = match.start()
            if i < skip:
                continue
            char = match.group()
            if self._in_string:
                if char == "\\":
                    if i + 1 < len(piece):
                        skip = i + 2
                    else:
                        self._escape = True
                elif char == '"':
                    self._in_string = False
            elif char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
                self.max_seen_depth = max(self.max_seen_depth, self._depth)
            elif char in "}]":
                self._depth -= 1
                if self._depth == 0 and self._closed_at is None:
                    self._closed_at = self.size - len(piece) + i + 1


def nesting_depth(text: str) -> int:
    """The deepest nesting of objects and arrays in JSON(-like) ``text`` (strings skipped)."""
    buf = ArgumentBuffer(max_chars=0)
    buf.feed(text)
    return buf.max_seen_depth


def value_depth(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> int:
    """The nesting depth of a decoded JSON value, counted without recursion.

    Stops counting at ``limit + 1`` (enough to tell that it is too deep).
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Sequence[Any] = list(item.values())
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def loads_bounded(text: str, max_depth: int = MAX_DOCUMENT_DEPTH) -> Any:
    """``json.loads(text)``, except that it never fails for nesting (issue 21 item 9).

    Python's decoder recurses once per level and raises ``RecursionError`` at about 1,000
    levels, which made a whole response unreadable for one call's deep arguments. When it
    does, every container that opens deeper than ``max_depth`` is replaced by ``[]`` and the
    text decoded again: the value still nests ``max_depth + 1`` levels there, so arguments
    holding it are refused as too deep (:data:`TOO_DEEP_ERROR`) and the rest of the
    document (text, other calls, usage) is read as sent.

    Raises:
        ValueError: ``text`` is not JSON (``json.JSONDecodeError``).
    """
    try:
        return json.loads(text)
    except RecursionError:
        return json.loads(cut_deeper_than(text, max_depth))


def cut_deeper_than(text: str, max_depth: int) -> str:
    """``text`` with every ``[`` / ``{`` container opening past ``max_depth`` replaced by
    ``[]`` (double-quoted strings and escapes respected; one pass, linear time).

    What is left still nests ``max_depth + 1`` levels where something was cut, so a depth
    check after decoding still refuses it; the decoder (``json``, ``ast``) no longer has to
    recurse through it.
    """
    out: list[str] = []
    kept_from = 0
    depth = 0
    cut_start: int | None = None
    in_string = False
    skip_to = 0
    for match in _STRUCTURE.finditer(text):
        i = match.start()
        if i < skip_to:
            continue
        char = match.group()
        if in_string:
            if char == "\\":
                skip_to = i + 2
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
            if depth == max_depth + 1 and cut_start is None:
                cut_start = i
        elif char in "}]":
            depth -= 1
            if depth == max_depth and cut_start is not None:
                out += [text[kept_from:cut_start], "[]"]
                kept_from, cut_start = i + 1, None
    if cut_start is not None:  # never closed: invalid JSON either way, the decoder says so
        out += [text[kept_from:cut_start], "[]"]
        kept_from = len(text)
    out.append(text[kept_from:])
    return "".join(out)

"""Facts and preferences the user told the agent (SPEC E4): their files, parsing and search.

Pure functions over the text of ``facts.md`` and ``preferences.md``; the files are read and
written by :class:`~loopact.memory.store.GitMemory`. Each item is one line::

    # Facts

    - [2026-11-30 robot-1] The charger is in room 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["fact", "preference"]

#: The file of each kind, in the memory folder.
FACT_FILES: dict[str, str] = {"fact": "facts.md", "preference": "preferences.md"}
_TITLES = {"fact": "# Facts\n\n", "preference": "# Preferences\n\n"}
_ITEM_RE = re.compile(r"^- \[(?P<date>[0-9-]+) (?P<who>[^\]\s]+)\] (?P<text>.*)$")

#: Preferences put into the system prompt (the newest).
MAX_PROMPT_PREFS = 30


@dataclass(frozen=True)
class MemoryItem:
    """One remembered fact or preference.

    Attributes:
        kind: ``"fact"`` or ``"preference"``.
        text: What was remembered.
        date: ``YYYY-MM-DD`` (UTC) when it was written.
        machine_id: The robot that wrote it.
    """

    kind: str
    text: str
    date: str
    machine_id: str


def parse_items(text: str, kind: str) -> list[MemoryItem]:
    """The items of one file's ``text``, oldest first (plain ``- text`` lines count too)."""
    out = []
    for line in text.splitlines():
        m = _ITEM_RE.match(line.strip())
        if m:
            out.append(MemoryItem(kind, m.group("text"), m.group("date"), m.group("who")))
        elif line.startswith("- ") and line[2:].strip():
            out.append(MemoryItem(kind, line[2:].strip(), "", ""))
    return out


def one_line(text: str) -> str:
    """``text`` on one line: runs of whitespace (newlines included) become one space."""
    return " ".join(text.split())


def add_item(old: str, kind: str, text: str, date: str, machine_id: str) -> str | None:
    """The file text with ``text`` appended as a new item, or None when it is there already.

    Args:
        old: The file's current text ("" when it does not exist).
        kind: ``"fact"`` or ``"preference"`` (the title of a new file).
        text: The item, one line (see :func:`one_line`).
        date: ``YYYY-MM-DD``.
        machine_id: Who writes it.

    Returns:
        The new text, or None when an item with the same text (ignoring case and spacing)
        exists.
    """
    norm = text.casefold()
    if any(one_line(item.text).casefold() == norm for item in parse_items(old, kind)):
        return None
    if not old:
        old = _TITLES[kind]
    elif not old.endswith("\n"):
        old += "\n"
    return f"{old}- [{date} {machine_id}] {text}\n"


def words(text: str) -> set[str]:
    """Lower-case word tokens, with a crude plural strip and CJK character bigrams."""
    out: set[str] = set()
    for w in re.findall(r"\w+", text.lower()):
        cjk = [c for c in w if "\u2e80" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af"]
        if cjk:
            out.update(cjk)
            out.update(a + b for a, b in zip(w, w[1:], strict=False))
            continue
        if len(w) > 1:
            out.add(w)
            if len(w) > 3 and w.endswith("s"):
                out.add(w[:-1])
    return out


def rank(items: list[MemoryItem], query: str, limit: int) -> list[MemoryItem]:
    """The items that match ``query``, best first (newest first among equals).

    Matching is by shared :func:`words` plus a bonus when the whole query occurs in the
    item; an empty query returns the newest items.

    Args:
        items: Every item, oldest first.
        query: Words to look for.
        limit: At most this many items.
    """
    q = words(query)
    if not q:
        return list(reversed(items))[:limit]
    scored = []
    for i, item in enumerate(items):
        score = len(q & words(item.text)) / len(q)
        if query.strip().casefold() in item.text.casefold():
            score += 1.0
        if score > 0:
            scored.append((score, i, item))
    scored.sort(key=lambda s: (-s[0], -s[1]))
    return [item for _s, _i, item in scored[:limit]]

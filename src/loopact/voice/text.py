"""Text for the voice: sentences cut from a streaming reply, and their language (SPEC F4, F5).

:class:`SentenceSplitter` receives the reply's text deltas as they stream and returns each
sentence as soon as it is complete, so the first sentence is spoken while the model still
writes the rest. A sentence ends at ``.``, ``!``, ``?`` or ``;`` followed by a space (not inside
a number such as ``1.5``), at Chinese ``。！？；``, or at a line break. :func:`language_of` tells
English from Chinese by the script, per sentence, so a reply that switches language is spoken in
the right voice.
"""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
_END = re.compile(r"[.!?;](?=\s)|[。！？；]|\n")
_MARKUP = re.compile(r"[*_`#>|]+|\[(?P<label>[^\]]*)\]\([^)]*\)")


def language_of(text: str, default: str = "en") -> str:
    """``zh`` when the text has more Chinese characters than Latin letters, else ``en``."""
    zh = len(_CJK.findall(text))
    en = len(_LATIN.findall(text))
    if zh == 0 and en == 0:
        return default
    return "zh" if zh * 2 >= en else "en"


def speakable(text: str) -> str:
    """The text as it should be spoken: Markdown marks removed, links by their label."""
    text = _MARKUP.sub(lambda m: m.group("label") or " ", text)
    return re.sub(r"\s+", " ", text).strip()


class SentenceSplitter:
    """Cuts a streamed text into sentences.

    Args:
        min_chars: A piece shorter than this joins the next sentence ("OK." + "Moving.").
    """

    def __init__(self, min_chars: int = 2) -> None:
        self._buf = ""
        self._min = min_chars

    def feed(self, delta: str) -> list[str]:
        """Add streamed text; returns the sentences it completed (maybe none)."""
        self._buf += delta
        out: list[str] = []
        start = 0
        for m in _END.finditer(self._buf):
            end = m.end()
            piece = speakable(self._buf[start:end])
            if len(piece) >= self._min:
                out.append(piece)
                start = end
        self._buf = self._buf[start:]
        return out

    def flush(self) -> str | None:
        """The unfinished rest (the reply ended without a final stop), or None."""
        rest, self._buf = speakable(self._buf), ""
        return rest or None

    def reset(self) -> None:
        """Forget the unfinished rest (a retried model request streams again)."""
        self._buf = ""

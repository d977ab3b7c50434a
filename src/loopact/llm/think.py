"""Split ``<think>...</think>`` reasoning out of streamed answer text (SPEC B5).

Open-weight reasoning models (Qwen3, DeepSeek-R1 distills, QwQ) served without a reasoning
parser write their reasoning inline between ``<think>`` tags. The tags arrive in arbitrary
chunk boundaries (``"<th"`` + ``"ink>"``), so :class:`ThinkSplitter` holds back any tail that
could still become a tag and releases it once it cannot.
"""

from __future__ import annotations

from typing import Literal

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"

SegmentKind = Literal["reasoning", "text", "retract"]
Segment = tuple[SegmentKind, str]
"""``(kind, text)``. ``("retract", "")`` says that all text released before it was in fact
reasoning: a lone ``</think>`` showed that the stream started inside a think block."""


def partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``.

    Args:
        text: Text received so far.
        tag: The tag being looked for, e.g. ``"</think>"``.

    Returns:
        How many trailing characters of ``text`` must be held back because the next chunk
        might complete them into ``tag`` (0 when none).
    """
    limit = min(len(text), len(tag) - 1)
    for n in range(limit, 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


class ThinkSplitter:
    """Incrementally separate ``<think>`` reasoning from answer text.

    Feed each content chunk to :meth:`feed`; call :meth:`flush` once at the end of the
    stream. Both return ``(kind, text)`` segments in stream order, ``kind`` being
    ``"reasoning"``, ``"text"`` or ``"retract"``. A lone ``</think>`` before any ``<think>``
    (reasoning models whose chat template opens the think block in the prompt: the stream
    starts inside it) makes everything before it reasoning: the text before it in the
    current chunk comes as ``"reasoning"``, and when answer text was already released a
    ``("retract", "")`` segment comes first, telling the consumer to move the text it has
    released so far to reasoning (issue 22 item 6). Any later stray ``</think>`` is dropped.

    Args:
        start_in_reasoning: Treat the stream as starting inside a think block.
    """

    def __init__(self, start_in_reasoning: bool = False) -> None:
        self._in_think = start_in_reasoning
        self._buf = ""
        self._released_text = False
        self._seen_tag = start_in_reasoning

    @property
    def in_reasoning(self) -> bool:
        """True while inside a ``<think>`` block."""
        return self._in_think

    def feed(self, chunk: str) -> list[Segment]:
        """Add a chunk of content; return the segments that are now certain."""
        self._buf += chunk
        out: list[Segment] = []
        while self._buf:
            tag = CLOSE_TAG if self._in_think else OPEN_TAG
            pos = self._buf.find(tag)
            if not self._in_think:
                stray = self._buf.find(CLOSE_TAG)
                if stray >= 0 and (pos < 0 or stray < pos):
                    self._stray_close(self._buf[:stray], out)
                    self._buf = self._buf[stray + len(CLOSE_TAG) :]
                    continue
            if pos >= 0:
                self._emit(self._buf[:pos], out)
                self._buf = self._buf[pos + len(tag) :]
                self._in_think = not self._in_think
                self._seen_tag = True
                continue
            hold = partial_tag_suffix(self._buf, tag)
            if not self._in_think:
                hold = max(hold, partial_tag_suffix(self._buf, CLOSE_TAG))
            cut = len(self._buf) - hold
            self._emit(self._buf[:cut], out)
            self._buf = self._buf[cut:]
            break
        return out

    def flush(self) -> list[Segment]:
        """End of stream: release whatever was held back (an unclosed think stays reasoning)."""
        out: list[Segment] = []
        self._emit(self._buf, out)
        self._buf = ""
        return out

    def _emit(self, text: str, out: list[Segment]) -> None:
        if not text:
            return
        kind: SegmentKind = "reasoning" if self._in_think else "text"
        if kind == "text":
            self._released_text = True
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))

    def _stray_close(self, before: str, out: list[Segment]) -> None:
        if self._seen_tag:
            self._emit(before, out)  # after a think block: drop the stray tag
            return
        self._seen_tag = True
        if self._released_text:
            out.append(("retract", ""))
            self._released_text = False
        self._in_think = True
        self._emit(before, out)
        self._in_think = False

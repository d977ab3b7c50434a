"""Characters cut between their two UTF-16 halves by a gateway (SPEC B5, issue 22).

JSON writes a character outside the Basic Multilingual Plane (an emoji, a rare CJK
character) as two ``\\uXXXX`` escapes, a surrogate pair. A gateway that cuts strings by
UTF-16 unit may end one delta after the high half (``"\\ud83d"``) and start the next with the
low half (``"\\ude00"``): each delta then decodes to a lone surrogate, which is no character,
cannot be encoded as UTF-8 and became two U+FFFD in the answer. :class:`SurrogateJoiner` holds
a trailing high half back until the next piece of the same text arrives.
"""

from __future__ import annotations

__all__ = ["SurrogateJoiner", "join_surrogates"]

_REPLACEMENT = "\ufffd"


def join_surrogates(text: str) -> str:
    """``text`` with each surrogate pair as its one character and each lone half as U+FFFD.

    Args:
        text: Any text, possibly holding surrogate code points (from JSON escapes).

    Returns:
        Text that encodes as UTF-8; ``text`` itself when it already does.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


class SurrogateJoiner:
    """One streamed text (the answer, the reasoning, one call's arguments) made of whole
    characters, piece by piece.

    Feed every piece of that text in order to :meth:`feed` and call :meth:`flush` at its end.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """``piece`` with a pair split from the previous piece joined, and a trailing high
        half held back for the next piece.

        Args:
            piece: The next piece of the text.

        Returns:
            The text that is certain now (may be ``""``); never a lone surrogate.
        """
        if self._held:
            piece, self._held = self._held + piece, ""
        elif piece.isascii():
            return piece
        if piece and "\ud800" <= piece[-1] <= "\udbff":
            piece, self._held = piece[:-1], piece[-1]
        return join_surrogates(piece)

    def flush(self) -> str:
        """The end of the text: a held-back high half that no low half followed, as U+FFFD
        (``""`` when none is held)."""
        held, self._held = self._held, ""
        return _REPLACEMENT if held else ""

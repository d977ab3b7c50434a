"""What loopact prints on a terminal has no control sequences from outside (issue 21)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loopact.redact import printable


def test_controls_are_shown_in_caret_notation_and_text_is_kept() -> None:
    assert printable("turn left\x1b]0;pwned\x07 now") == "turn left^[]0;pwned^G now"
    assert printable("a\x1b[2Jb\rc\x7fd") == "a^[[2Jb^Mc^?d"
    assert printable("\x9b31m \udcff") == "\ufffd31m \ufffd"  # a C1 CSI, an undecodable byte
    text = "line one\n\tline two: 前进 1.0 m, 90°"
    assert printable(text) == text


@given(st.text())
def test_nothing_a_terminal_acts_on_is_left(text: str) -> None:
    shown = printable(text)
    assert all(c in "\n\t" or (c >= " " and not "\x7f" <= c <= "\x9f") for c in shown)
    assert not any("\ud800" <= c <= "\udfff" for c in shown)

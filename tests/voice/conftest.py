"""Spoken test audio made with espeak-ng (issue 16), built once per session."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.voice.helpers import silence, speak

from loopact.voice.audio import wav_bytes


@pytest.fixture(scope="session")
def spoken(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``spoken([(0.5, "move forward one meter"), (2.0, None)], name)``: a WAV file of
    utterances and pauses (a float is seconds of silence, a string is spoken)."""
    folder = tmp_path_factory.mktemp("speech")

    def make(parts: list[float | str], name: str) -> Path:
        pcm = b"".join(silence(p) if isinstance(p, (int, float)) else speak(p) for p in parts)
        path = folder / f"{name}.wav"
        path.write_bytes(wav_bytes(pcm))
        return path

    return make

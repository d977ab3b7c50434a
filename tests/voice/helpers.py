"""Spoken test audio made with espeak-ng (issue 16): real speech, short."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from loopact.voice.audio import SAMPLE_RATE, read_wav

ESPEAK = shutil.which("espeak-ng")
needs_espeak = pytest.mark.skipif(
    ESPEAK is None, reason="espeak-ng is missing: run scripts/system-deps.sh"
)


def speak(text: str, voice: str = "en-us", rate_wpm: int = 150) -> bytes:
    """16 kHz mono PCM of espeak-ng saying ``text``."""
    assert ESPEAK is not None
    out = subprocess.run(
        [ESPEAK, "-v", voice, "-s", str(rate_wpm), "--stdout", text],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout
    return read_wav(out)[0]


def silence(seconds: float) -> bytes:
    """Digital silence."""
    return b"\0\0" * int(seconds * SAMPLE_RATE)


def noise(seconds: float, level: float = 30.0, seed: int = 1) -> bytes:
    """Faint white noise (a quiet room)."""
    rng = np.random.default_rng(seed)
    return (rng.normal(0, level, int(seconds * SAMPLE_RATE))).astype("<i2").tobytes()

"""Peak memory of ``play_audio`` reading a WAV file (issue 39 item 15).

Each case runs in a fresh Python process: the workspace gets one WAV file, the real
``VoiceControls`` loads it as ``play_audio`` does (read, check, convert to 16 kHz mono), and
the process reports its peak resident memory (``ru_maxrss``) before and after. Baseline
measured in the same run: the same process loading a one-second WAV (the interpreter, numpy
and loopact themselves). The ratio says how many times the file's size the load added.

Cases: the issue's 48 MB 8-bit 8 kHz mono file (100 minutes: 3.4 GB peak before), and the
largest file play_audio plays, 50 MB of 16-bit 44.1 kHz stereo (about 5 minutes).

Usage: .venv/bin/python bench/play_audio_memory.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

CHILD = r"""
import asyncio, json, resource, sys
from pathlib import Path
from loopact.channels.voice_tools import VoiceControls
from loopact.errors import ToolError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
controls = VoiceControls(None, None, Path(sys.argv[1]))
try:
    rel, pcm, notes = controls._load(sys.argv[2])
    outcome = f"loaded {len(pcm) / 32000:.0f} s"
except ToolError as exc:
    outcome = f"refused: {exc}"
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_kb": before, "after_kb": after, "outcome": outcome}))
"""


def write_wav(path: Path, seconds: float, rate: int, width: int, channels: int) -> int:
    """A WAV file of a quiet tone, written in blocks; returns its size in bytes."""
    block = bytes(range(256)) * 256
    frames = int(seconds * rate)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        left = frames * width * channels
        while left > 0:
            w.writeframesraw(block[: min(left, len(block))])
            left -= len(block)
    return path.stat().st_size


def measure(folder: Path, name: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), name],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = [
            ("one_second.wav", 1.0, 16000, 2, 1),
            ("issue_8bit_8khz.wav", 48e6 / 8000, 8000, 1, 1),
            ("largest_44k_stereo.wav", 49e6 / (44100 * 4), 44100, 2, 2),
        ]
        sizes = {n: write_wav(folder / n, s, r, w, c) for n, s, r, w, c in cases}
        base = measure(folder, "one_second.wav")
        base_peak = int(base["after_kb"])  # type: ignore[call-overload]
        print(f"baseline (1 s file): peak {base_peak / 1024:.0f} MB")
        for name, *_ in cases[1:]:
            got = measure(folder, name)
            added_mb = (int(got["after_kb"]) - base_peak) / 1024  # type: ignore[call-overload]
            file_mb = sizes[name] / 1e6
            print(
                f"{name}: {file_mb:.0f} MB file, peak {int(got['after_kb']) / 1024:.0f} MB "  # type: ignore[call-overload]
                f"(+{added_mb:.0f} MB over the baseline = {added_mb / file_mb:.2f}x the file); "
                f"{got['outcome']}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

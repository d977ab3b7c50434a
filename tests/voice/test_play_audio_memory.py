"""``play_audio`` reads its file in bounded memory (issue 39 item 15; SPEC F4).

Memory is measured with tracemalloc (numpy reports its arrays to it), never with a clock:
the peak of Python and numpy allocations while ``play_audio`` loads the file. Before: the
issue's 48 MB 8-bit 8 kHz WAV (100 minutes) took 3.1 GB at peak (65 times the file; peak RSS,
bench/play_audio_memory.py), the largest file it accepts (50 MB of 44.1 kHz stereo) 585 MB.
"""

from __future__ import annotations

import tracemalloc
import wave
from pathlib import Path

import numpy as np
import pytest

from loopact.channels.voice_tools import VoiceControls
from loopact.errors import AudioFormatError, ToolError
from loopact.events import EventBus
from loopact.voice.audio import ClockedSink, read_wav, resample, to_pcm16
from loopact.voice.playback import Player

MB = 1024 * 1024


def write_wav(path: Path, seconds: float, rate: int, width: int, channels: int) -> int:
    """A WAV file of a slow ramp, written in 1 MB blocks; returns its size in bytes."""
    block = (np.arange(MB, dtype=np.uint32) % 251 + 2).astype(np.uint8).tobytes()
    left = int(seconds * rate) * width * channels
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        while left > 0:
            w.writeframesraw(block[: min(left, len(block))])
            left -= len(block)
    return path.stat().st_size


async def peak_while(coro: object) -> tuple[object, float]:
    """What ``coro`` returns (or raises), and the peak of traced allocations meanwhile (MB)."""
    tracemalloc.start()
    try:
        try:
            result: object = await coro  # type: ignore[misc]
        except Exception as exc:  # the refusal is the result
            result = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak / MB


@pytest.fixture
async def controls(tmp_path: Path) -> object:
    sink = ClockedSink("test")
    player = Player(sink, None, EventBus())
    yield VoiceControls(player, None, tmp_path)
    player.stop()
    await player.close()
    await sink.close()


async def test_the_issues_48_mb_8_bit_8_khz_file_is_refused_from_its_header(
    controls: VoiceControls, tmp_path: Path
) -> None:
    size = write_wav(tmp_path / "long.wav", 48e6 / 8000, 8000, 1, 1)
    assert size > 47 * 1e6
    result, peak_mb = await peak_while(controls.play("long.wav"))
    assert isinstance(result, ToolError)
    assert str(result) == (
        "long.wav: 100 min (6000 s) of audio, longer than the 10 min (600 s) allowed"
    )
    assert peak_mb < 4, peak_mb  # nothing of its samples was read


async def test_the_largest_file_it_plays_is_converted_in_bounded_memory(
    controls: VoiceControls, tmp_path: Path
) -> None:
    """50 MB of 16-bit 44.1 kHz stereo (4.6 minutes): the output is 8.8 MB of 16 kHz mono;
    the load may hold that twice and one block, not the file as floats."""
    size = write_wav(tmp_path / "big.wav", 49e6 / (44100 * 4), 44100, 2, 2)
    result, peak_mb = await peak_while(controls.play("big.wav"))
    assert not isinstance(result, Exception), result
    seconds = result.metadata["duration_s"]  # type: ignore[attr-defined]
    assert seconds == pytest.approx(49e6 / (44100 * 4), abs=0.01)
    output_mb = seconds * 16000 * 2 / MB
    assert peak_mb < 2.5 * output_mb + 16, (peak_mb, output_mb, size)
    print(f"peak {peak_mb:.1f} MB for {size / 1e6:.0f} MB in, {output_mb:.1f} MB out")


def test_streamed_reading_gives_what_converting_the_whole_file_gives(tmp_path: Path) -> None:
    """The blocks of read_wav are the whole file's conversion (a file longer than a block)."""
    rng = np.random.default_rng(7)
    stereo = rng.integers(-20000, 20000, size=(200_000, 2)).astype("<i2")
    path = tmp_path / "s.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(44100)
        w.writeframes(stereo.tobytes())
    whole = to_pcm16(resample(stereo.astype(np.float64).mean(axis=1), 44100))
    pcm, notes = read_wav(path)
    assert notes == ["2-channel audio mixed down to mono"]
    got, want = np.frombuffer(pcm, "<i2"), np.frombuffer(whole, "<i2")
    assert got.size == want.size and int(np.max(np.abs(got.astype(int) - want))) <= 1
    with pytest.raises(AudioFormatError, match=r"4\.5 s of audio, longer than the 4\.0 s"):
        read_wav(path, max_s=4)  # from its header, before its samples are read

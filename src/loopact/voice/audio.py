"""The audio interface of loopact (SPEC F4, issue 16): 16 kHz mono PCM frames with timestamps.

Everything that hears or speaks goes through two small interfaces:

- an :class:`AudioSource` yields :class:`AudioFrame` values (20 ms of 16-bit little-endian mono
  PCM at 16 kHz, stamped with the monotonic time it was captured) until its input ends;
- an :class:`AudioSink` plays PCM like a sound card: :meth:`AudioSink.write` waits while the
  device buffer is full, :meth:`AudioSink.abort` drops what is still buffered at once (barge-in),
  and every 20 ms it actually played is reported to its listeners with the time it was played
  (the reference signal of the echo canceller, :mod:`loopact.voice.echo`).

Implementations: WAV files and raw PCM pipes (:mod:`loopact.voice.files`), a local sound device
through PortAudio (:mod:`loopact.voice.device`), the web console's microphone and speaker
(``loopact.channels.web``), ROS 2 topics (``loopact.nodes.ros2.audio``) and a simulated room for
tests (:mod:`loopact.voice.room`). Conversion of other formats (any rate, stereo) is
:func:`to_mono16k`.
"""

from __future__ import annotations

import asyncio
import io
import os
import stat
import time
import wave
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

import numpy as np

from loopact.errors import AudioFormatError
from loopact.voice.resampling import MonoConverter
from loopact.voice.resampling import StreamResampler as StreamResampler
from loopact.voice.resampling import lowpass_taps as lowpass_taps
from loopact.voice.resampling import resample as _resample

SAMPLE_RATE = 16_000
"""Samples per second of every frame (Hz)."""
FRAME_MS = 20
"""Duration of one frame (ms)."""
FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000
"""Samples in one frame (320)."""
FRAME_BYTES = FRAME_SAMPLES * 2
"""Bytes in one frame (640: 16-bit samples)."""
_CLIP_LEVEL = 32_000
_UNDERRUN_S = 0.04


@dataclass(frozen=True)
class AudioFrame:
    """20 ms of 16 kHz mono PCM (signed 16-bit little-endian).

    Attributes:
        pcm: ``FRAME_BYTES`` bytes (the last frame of an input may be shorter).
        t_s: Monotonic time (``time.monotonic()``, seconds) when its first sample was captured.
    """

    pcm: bytes
    t_s: float

    @property
    def samples(self) -> np.ndarray:
        """The samples as an int16 array."""
        return np.frombuffer(self.pcm, dtype="<i2")

    @property
    def duration_s(self) -> float:
        """Duration in seconds."""
        return len(self.pcm) / 2 / SAMPLE_RATE


class AudioSource(Protocol):
    """Where speech comes from: yields frames until the input ends (an endless device never)."""

    name: str

    def frames(self) -> AsyncIterator[AudioFrame]:
        """The frames, in capture order, paced like the real device (real time)."""
        ...

    async def close(self) -> None:
        """Stop capturing; safe to call twice."""
        ...


PlayedListener = Callable[[bytes, float], None]
"""Called with each played chunk (PCM) and the monotonic time its first sample was played."""


class AudioSink(Protocol):
    """Where speech goes: a device-like player with a small buffer."""

    name: str

    async def write(self, pcm: bytes) -> None:
        """Queue PCM for playing; waits while the device buffer is full (paces the caller)."""
        ...

    def abort(self) -> int:
        """Drop everything not played yet, now; returns how many samples were dropped."""
        ...

    async def drain(self) -> None:
        """Wait until everything written has been played."""
        ...

    def add_listener(self, fn: PlayedListener) -> None:
        """Report every played chunk to ``fn`` (echo reference, recording, tests)."""
        ...

    async def close(self) -> None:
        """Finish the output (a WAV file gets its header); safe to call twice."""
        ...


def frames_of(pcm: bytes, t0_s: float = 0.0) -> list[AudioFrame]:
    """Cut 16 kHz PCM into frames stamped from ``t0_s`` on (for tests and offline runs)."""
    return [
        AudioFrame(pcm[i : i + FRAME_BYTES], t0_s + i / 2 / SAMPLE_RATE)
        for i in range(0, len(pcm), FRAME_BYTES)
    ]


def duration_s(pcm: bytes) -> float:
    """Duration of 16 kHz mono PCM, in seconds."""
    return len(pcm) / 2 / SAMPLE_RATE


def rms(samples: np.ndarray) -> float:
    """Root mean square of int16 samples (0..32768)."""
    if samples.size == 0:
        return 0.0
    return float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))


def resample(samples: np.ndarray, rate_hz: int, to_hz: int = SAMPLE_RATE) -> np.ndarray:
    """Resample float samples from ``rate_hz`` to ``to_hz`` (default 16 kHz; anti-aliased when
    downsampling; :func:`loopact.voice.resampling.resample`)."""
    return _resample(samples, rate_hz, to_hz)


def to_pcm16(samples: np.ndarray) -> bytes:
    """Float samples to 16-bit little-endian PCM (rounded, clipped to the int16 range)."""
    return np.clip(np.round(samples), -32768, 32767).astype("<i2").tobytes()


def to_mono16k(data: np.ndarray, rate_hz: int, channels: int = 1) -> tuple[bytes, list[str]]:
    """Convert interleaved int16 samples of any rate and channel count to 16 kHz mono PCM.

    Args:
        data: Interleaved int16 samples (``channels`` per frame).
        rate_hz: Their sample rate (Hz).
        channels: Channels per frame (a stereo recording is mixed down).

    Returns:
        The PCM and notes for people about what was done or is wrong (8 kHz telephone audio
        upsampled, stereo mixed down, clipping), each a short sentence.

    Raises:
        AudioFormatError: No samples, or a sample rate below 8 kHz.
    """
    conversion = _Mono16k(rate_hz, channels)
    conversion.feed(data)
    return conversion.finish()


class _Mono16k:
    """:func:`to_mono16k` in blocks (:class:`~loopact.voice.resampling.MonoConverter`): the
    PCM so far and the counts its notes need, never the whole input as floats."""

    def __init__(self, rate_hz: int, channels: int) -> None:
        if rate_hz < 8000:
            raise AudioFormatError(
                f"a sample rate of {rate_hz} Hz is too low for speech (8 kHz min)"
            )
        self.rate_hz, self.channels = rate_hz, channels
        self._converter = MonoConverter(rate_hz, SAMPLE_RATE, channels)
        self._pcm = bytearray()
        self._clipped = 0

    @property
    def seconds(self) -> float:
        """Seconds of audio converted so far."""
        return len(self._pcm) / 2 / SAMPLE_RATE

    def feed(self, data: np.ndarray) -> None:
        """Convert the next block of interleaved int16 samples (whole frames)."""
        self._add(self._converter.feed(data))

    def _add(self, x: np.ndarray) -> None:
        self._clipped += int(np.count_nonzero(np.abs(x) >= _CLIP_LEVEL))
        self._pcm += to_pcm16(x)

    def finish(self) -> tuple[bytes, list[str]]:
        """The PCM and the notes (see :func:`to_mono16k`).

        Raises:
            AudioFormatError: No samples were fed.
        """
        if self._converter.samples_in == 0:
            raise AudioFormatError("the audio has no samples")
        self._add(self._converter.finish())
        notes: list[str] = []
        if self.channels > 1:
            notes.append(f"{self.channels}-channel audio mixed down to mono")
        if self.rate_hz < SAMPLE_RATE:
            notes.append(
                f"{self.rate_hz / 1000:g} kHz audio upsampled to 16 kHz: recognition may be worse"
            )
        samples = len(self._pcm) // 2
        clipped = self._clipped / samples if samples else 0.0
        if clipped > 0.005:
            notes.append(f"the audio is clipped ({clipped:.1%} of samples at full scale)")
        return bytes(self._pcm), notes


def _is_empty(source: str | Path | bytes | BinaryIO, stream: BinaryIO) -> bool:
    """True for no bytes at all: an empty ``bytes``, or a regular file of size 0 (a pipe's
    size says nothing, so a FIFO is never called empty here)."""
    if isinstance(source, bytes):
        return not source
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


READ_BLOCK_FRAMES = 65_536
"""Frames :func:`read_wav` reads and converts at a time (memory stays bounded by the output)."""


def read_wav(
    source: str | Path | bytes | BinaryIO, name: str | None = None, max_s: float | None = None
) -> tuple[bytes, list[str]]:
    """Read a PCM WAV file (any rate, 8/16/32-bit, mono or stereo) as 16 kHz mono PCM.

    The file is read and converted :data:`READ_BLOCK_FRAMES` frames at a time, so memory
    holds the 16 kHz output and one block, not the whole file as floats (issue 39 item 15).

    Args:
        source: A path, the file's bytes, or an open binary file (read from where it is;
            closed when done).
        name: What the error messages call it (default: the path, or ``audio``).
        max_s: The longest audio accepted, in seconds: a longer file is refused from its
            header before its samples are read (one whose writer left the length open is
            refused once it has passed it). None: no limit.

    Returns:
        The PCM and notes for people: a file cut short (fewer frames than its header says;
        what is there is used), then the notes of :func:`to_mono16k`.

    Raises:
        AudioFormatError: Not a readable PCM WAV file (names the file and the problem; an
            empty file is said to be empty), or longer than ``max_s``.
    """
    if name is None:
        name = str(source) if isinstance(source, (str, Path)) else "audio"
    try:
        if isinstance(source, bytes):
            stream: BinaryIO = io.BytesIO(source)
        elif isinstance(source, (str, Path)):
            stream = open(source, "rb")  # noqa: SIM115 - closed below
        else:
            stream = source
    except OSError as exc:
        raise AudioFormatError(f"{name}: cannot be read: {exc.strerror or exc}") from None
    if _is_empty(source, stream):
        stream.close()
        raise AudioFormatError(f"{name}: the file is empty (0 bytes)")
    head, size = _head(source, stream)
    try:
        with stream, wave.open(stream, "rb") as wav:
            rate, channels, width = wav.getframerate(), wav.getnchannels(), wav.getsampwidth()
            claimed = wav.getnframes()
            open_length = claimed * width * channels >= _STREAMED_BYTES
            if max_s is not None and not open_length and claimed > max_s * rate:
                raise AudioFormatError(
                    f"{name}: {_length(claimed / rate)} of audio, longer than the "
                    f"{_length(max_s)} allowed"
                )
            if width not in (1, 2, 4):
                raise AudioFormatError(
                    f"{name}: {8 * width}-bit samples are not supported (use 16-bit)"
                )
            try:
                conversion = _Mono16k(rate, channels)
            except AudioFormatError as exc:
                raise AudioFormatError(f"{name}: {exc}") from None
            present = 0
            while True:
                raw = wav.readframes(READ_BLOCK_FRAMES)
                frames = len(raw) // (width * channels)
                if frames == 0:
                    break
                present += frames
                conversion.feed(_int16(raw[: frames * width * channels], width))
                if max_s is not None and conversion.seconds > max_s:
                    raise AudioFormatError(
                        f"{name}: more than the {_length(max_s)} of audio allowed"
                    )
    except (wave.Error, EOFError) as exc:
        why = _why_not_wav(exc, head, size)
        raise AudioFormatError(f"{name}: not a PCM WAV file ({why})") from None
    notes = _cut_short(claimed, present, rate, width * channels)
    try:
        pcm, converted = conversion.finish()
    except AudioFormatError as exc:
        raise AudioFormatError(f"{name}: {exc}") from None
    return pcm, notes + converted


def _int16(raw: bytes, width: int) -> np.ndarray:
    """PCM samples of ``width`` bytes (8-bit unsigned, 16- or 32-bit signed) as int16."""
    if width == 2:
        return np.frombuffer(raw, dtype="<i2")
    if width == 1:
        return ((np.frombuffer(raw, dtype=np.uint8).astype(np.int16) - 128) << 8).astype(np.int16)
    return (np.frombuffer(raw, dtype="<i4") >> 16).astype(np.int16)


def _length(seconds: float) -> str:
    """``100 min (6000 s)``, ``4.5 s``."""
    return f"{seconds / 60:.0f} min ({seconds:.0f} s)" if seconds >= 120 else f"{seconds:.1f} s"


_RIFF_HEADER_BYTES = 12
"""``RIFF``, the size, ``WAVE``: how every WAV file starts."""


def _head(source: str | Path | bytes | BinaryIO, stream: BinaryIO) -> tuple[bytes, int | None]:
    """The first bytes of the audio (up to :data:`_RIFF_HEADER_BYTES`; fewer from a pipe that
    has not written them yet) and its size in bytes when known (not for a pipe)."""
    if isinstance(source, bytes):
        return source[:_RIFF_HEADER_BYTES], len(source)
    peek = getattr(stream, "peek", None)
    head = peek(_RIFF_HEADER_BYTES)[:_RIFF_HEADER_BYTES] if peek is not None else b""
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return head, None
    return head, st.st_size if stat.S_ISREG(st.st_mode) else None


def _why_not_wav(exc: Exception, head: bytes, size: int | None) -> str:
    """Why :mod:`wave` refused a file, for people (``wave`` raises a bare ``EOFError`` when
    the file ends inside its header, and speaks of chunks otherwise)."""
    if not head:
        return "no bytes at all"
    if head[:4] != b"RIFF"[: len(head)]:
        return f"it starts with {_shown(head[:8])}, not with a RIFF/WAVE header"
    if len(head) >= _RIFF_HEADER_BYTES and head[8:12] != b"WAVE":
        return f"a RIFF file of type {_shown(head[8:12])}, not WAVE"
    if isinstance(exc, EOFError) or not str(exc):
        why = "truncated: the file ends inside its header"
        return why if size is None else f"{why}, after {size} bytes"
    return str(exc) if size is None else f"{exc}; the file is {size} bytes"


def _shown(raw: bytes) -> str:
    """Bytes of a header as a person reads them, quoted: ``"not audi"``, ``"\\x00RIF"``."""
    return '"' + "".join(chr(b) if 32 <= b < 127 else f"\\x{b:02x}" for b in raw) + '"'


_STREAMED_BYTES = 0x7FFF_0000
"""A data size this large is the placeholder of a writer that could not seek back to fill in
the header (``espeak-ng --stdout``, ``arecord`` to a pipe): the length is unknown, not cut."""


def _cut_short(claimed: int, present: int, rate_hz: int, frame_bytes: int) -> list[str]:
    """A note when the file holds fewer frames than its header says (a truncated copy)."""
    if present >= claimed or claimed * frame_bytes >= _STREAMED_BYTES:
        return []
    return [
        f"the file is cut short: its header says {claimed} frames ({claimed / rate_hz:.2f} s), "
        f"{present} are present ({present / rate_hz:.2f} s); what is there is used"
    ]


def wav_bytes(pcm: bytes, rate_hz: int = SAMPLE_RATE) -> bytes:
    """A mono 16-bit WAV file holding ``pcm``."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate_hz)
        wav.writeframes(pcm)
    return buf.getvalue()


class ClockedSink:
    """A sink with a virtual sound card: it plays ``FRAME_MS`` of audio per tick of the
    monotonic clock and hands each played chunk to :meth:`emit` (files, pipes, the room).

    Subclasses implement :meth:`emit`. The device buffer holds ``buffer_ms`` of audio ahead
    of the playing position, so :meth:`abort` silences the output within one frame.

    Args:
        name: For messages (``reply.wav``).
        buffer_ms: How much audio may wait in the device buffer.
    """

    def __init__(self, name: str, buffer_ms: int = 60) -> None:
        self.name = name
        self._buffer = bytearray()
        self._limit = buffer_ms * SAMPLE_RATE // 1000 * 2
        self._listeners: list[PlayedListener] = []
        self._space = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._ticker: asyncio.Task[None] | None = None
        self._closed = False
        self.played_samples = 0

    def add_listener(self, fn: PlayedListener) -> None:
        """Report every played chunk to ``fn``."""
        self._listeners.append(fn)

    def emit(self, pcm: bytes, t_s: float) -> None:
        """Output one played chunk (override)."""

    async def write(self, pcm: bytes) -> None:
        """Queue ``pcm``; waits while more than ``buffer_ms`` is buffered."""
        if self._closed:
            return
        self._buffer.extend(pcm)
        self._idle.clear()
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.ensure_future(self._tick())
        while len(self._buffer) > self._limit and not self._closed:
            self._space.clear()
            await self._space.wait()

    def abort(self) -> int:
        """Drop the buffered audio now; returns the dropped sample count."""
        dropped = len(self._buffer) // 2
        self._buffer.clear()
        self._space.set()
        self._idle.set()
        return dropped

    async def drain(self) -> None:
        """Wait until the buffer has been played."""
        await self._idle.wait()

    async def _tick(self) -> None:
        next_t = time.monotonic()
        while self._buffer and not self._closed:
            chunk = bytes(self._buffer[:FRAME_BYTES])
            del self._buffer[:FRAME_BYTES]
            self._space.set()
            self.played_samples += len(chunk) // 2
            # Played back to back while the device buffer holds audio; after a stall longer
            # than that the device played silence meanwhile (an underrun), as a sound card does.
            now = time.monotonic()
            if now - next_t > _UNDERRUN_S:
                next_t = now
            self.emit(chunk, next_t)
            for fn in list(self._listeners):
                fn(chunk, next_t)
            next_t += len(chunk) / 2 / SAMPLE_RATE
            delay = next_t - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        self._idle.set()
        self._space.set()

    async def close(self) -> None:
        """Stop the clock (what is buffered is dropped; :meth:`drain` first to keep it)."""
        self._closed = True
        self._buffer.clear()
        self._space.set()
        self._idle.set()
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)


async def paced(pcm: bytes, realtime: bool = True) -> AsyncIterator[AudioFrame]:
    """Yield ``pcm`` as frames stamped with the monotonic clock, in real time when asked
    (a recording played into the pipeline like a microphone would deliver it)."""
    t0 = time.monotonic()
    for i in range(0, len(pcm), FRAME_BYTES):
        t = t0 + i / 2 / SAMPLE_RATE
        if realtime:  # a device hands a frame over once its last sample is captured
            delay = t + FRAME_MS / 1000 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        else:
            await asyncio.sleep(0)
        yield AudioFrame(pcm[i : i + FRAME_BYTES], t)

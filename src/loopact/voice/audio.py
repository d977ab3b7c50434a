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


def lowpass_taps(cutoff: float, taps: int = 63) -> np.ndarray:
    """A windowed-sinc low-pass FIR filter, unity gain at 0 Hz.

    Args:
        cutoff: The cut-off frequency as a fraction of the sample rate (0..0.5).
        taps: Filter length (odd: the delay is ``(taps - 1) / 2`` samples).
    """
    n = np.arange(taps) - (taps - 1) / 2
    h: np.ndarray = np.sinc(2 * cutoff * n) * np.hamming(taps)
    normalised: np.ndarray = h / h.sum()
    return normalised


def _lowpass(x: np.ndarray, cutoff: float, taps: int = 63) -> np.ndarray:
    """Windowed-sinc low-pass of ``x`` (float); ``cutoff`` as a fraction of its sample rate."""
    return np.convolve(x, lowpass_taps(cutoff, taps), mode="same")


def resample(samples: np.ndarray, rate_hz: int, to_hz: int = SAMPLE_RATE) -> np.ndarray:
    """Resample float samples from ``rate_hz`` to ``to_hz`` (anti-aliased when downsampling)."""
    if rate_hz == to_hz or samples.size == 0:
        return samples
    if to_hz < rate_hz:
        samples = _lowpass(samples, 0.5 * to_hz / rate_hz * 0.9)
    n_out = int(round(samples.size * to_hz / rate_hz))
    t_out = np.arange(n_out) * (rate_hz / to_hz)
    out: np.ndarray = np.interp(t_out, np.arange(samples.size), samples)
    return out


class StreamResampler:
    """:func:`resample` for a stream cut into blocks (a sound card's callbacks): the filter's
    history and the interpolation phase carry over from block to block, so the output is the
    same as resampling the whole stream at once, without clicks at block edges.

    Downsampling low-passes first (the same filter as :func:`resample`, delay 31 input
    samples); both ways interpolate linearly.

    Args:
        from_hz: Input sample rate (Hz).
        to_hz: Output sample rate (Hz).
    """

    def __init__(self, from_hz: int, to_hz: int) -> None:
        self.from_hz, self.to_hz = from_hz, to_hz
        self._step = from_hz / to_hz
        self._taps = lowpass_taps(0.5 * to_hz / from_hz * 0.9) if to_hz < from_hz else None
        self._history = np.zeros(0 if self._taps is None else self._taps.size - 1)
        self._prev = 0.0
        self._pos = 1.0  # where the next output sample lies; index 0 is the previous input

    def process(self, samples: np.ndarray) -> np.ndarray:
        """Resample the next block (int16 or float samples); returns float samples."""
        x = samples.astype(np.float64)
        if self._taps is not None:
            joined = np.concatenate([self._history, x])
            self._history = joined[joined.size - self._history.size :]
            x = np.convolve(joined, self._taps, mode="valid")
        buf = np.concatenate([[self._prev], x])
        last = buf.size - 1
        n = int((last - self._pos) // self._step) + 1 if self._pos <= last else 0
        at = self._pos + np.arange(n) * self._step
        out: np.ndarray = np.interp(at, np.arange(buf.size), buf)
        self._pos += n * self._step - last
        self._prev = float(buf[-1])
        return out


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
    notes: list[str] = []
    if data.size == 0:
        raise AudioFormatError("the audio has no samples")
    if rate_hz < 8000:
        raise AudioFormatError(f"a sample rate of {rate_hz} Hz is too low for speech (8 kHz min)")
    x = data.astype(np.float64)
    if channels > 1:
        x = x[: x.size - x.size % channels].reshape(-1, channels).mean(axis=1)
        notes.append(f"{channels}-channel audio mixed down to mono")
    if rate_hz != SAMPLE_RATE:
        if rate_hz < SAMPLE_RATE:
            notes.append(
                f"{rate_hz / 1000:g} kHz audio upsampled to 16 kHz: recognition may be worse"
            )
        x = resample(x, rate_hz)
    clipped = float(np.mean(np.abs(x) >= _CLIP_LEVEL)) if x.size else 0.0
    if clipped > 0.005:
        notes.append(f"the audio is clipped ({clipped:.1%} of samples at full scale)")
    pcm = np.clip(np.round(x), -32768, 32767).astype("<i2").tobytes()
    return pcm, notes


def _is_empty(source: str | Path | bytes, stream: BinaryIO) -> bool:
    """True for no bytes at all: an empty ``bytes``, or a regular file of size 0 (a pipe's
    size says nothing, so a FIFO is never called empty here)."""
    if isinstance(source, bytes):
        return not source
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def read_wav(source: str | Path | bytes, name: str | None = None) -> tuple[bytes, list[str]]:
    """Read a PCM WAV file (any rate, 8/16/32-bit, mono or stereo) as 16 kHz mono PCM.

    Args:
        source: A path or the file's bytes.
        name: What the error messages call it (default: the path, or ``audio`` for bytes).

    Returns:
        The PCM and notes for people: a file cut short (fewer frames than its header says;
        what is there is used), then the notes of :func:`to_mono16k`.

    Raises:
        AudioFormatError: Not a readable PCM WAV file (names the file and the problem; an
            empty file is said to be empty).
    """
    name = name or ("audio" if isinstance(source, bytes) else str(source))
    try:
        stream = io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")  # noqa: SIM115
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
            raw = wav.readframes(claimed)
    except (wave.Error, EOFError) as exc:
        why = _why_not_wav(exc, head, size)
        raise AudioFormatError(f"{name}: not a PCM WAV file ({why})") from None
    present = len(raw) // (width * channels)
    raw = raw[: present * width * channels]  # a file cut inside a frame
    notes = _cut_short(claimed, present, rate, width * channels)
    if width == 2:
        data = np.frombuffer(raw, dtype="<i2")
    elif width == 1:
        data = ((np.frombuffer(raw, dtype=np.uint8).astype(np.int16) - 128) << 8).astype(np.int16)
    elif width == 4:
        data = (np.frombuffer(raw, dtype="<i4") >> 16).astype(np.int16)
    else:
        raise AudioFormatError(f"{name}: {8 * width}-bit samples are not supported (use 16-bit)")
    try:
        pcm, converted = to_mono16k(data, rate, channels)
    except AudioFormatError as exc:
        raise AudioFormatError(f"{name}: {exc}") from None
    return pcm, notes + converted


_RIFF_HEADER_BYTES = 12
"""``RIFF``, the size, ``WAVE``: how every WAV file starts."""


def _head(source: str | Path | bytes, stream: BinaryIO) -> tuple[bytes, int | None]:
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

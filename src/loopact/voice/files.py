"""WAV files and raw PCM pipes as audio sources and sinks (issue 16: ``--audio-in/--audio-out``).

A file source plays its recording into the pipeline in real time, like a microphone (so a
reply and a second utterance overlap as they would in a room), and ends after the recording.
A raw pipe (``-``: stdin / stdout) carries signed 16-bit little-endian mono PCM at 16 kHz with
no header; on standard input a WAV header of that same format (``arecord`` writes one to a
pipe) is skipped, and a WAV stream of any other format is refused with what to do instead.
A file sink writes exactly what was played (an interrupted sentence is cut where playback
stopped); the gaps between replies are not written.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
import sys
import threading
import time
import wave
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from loopact.errors import AudioFormatError
from loopact.voice.audio import (
    FRAME_BYTES,
    SAMPLE_RATE,
    AudioFrame,
    ClockedSink,
    paced,
    read_wav,
)

_PIPE_READ = 4096


class WavFileSource:
    """A WAV file played into the pipeline like a microphone (real time by default).

    Args:
        path: The WAV file (any rate, mono or stereo, 8/16/32-bit PCM).
        realtime: Pace the frames at the recording's speed (False: as fast as possible).
        lead_in_s: Silence before the recording (lets the pipeline settle).
        tail_s: Silence after it, so the last utterance's end is heard.

    Attributes:
        notes: What was converted or is wrong with the recording (stereo, 8 kHz, clipping, cut
            short); the listener puts them into every utterance's ``speech_in`` notes.

    Raises:
        AudioFormatError: The file is missing or is not a PCM WAV file.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        realtime: bool = True,
        lead_in_s: float = 0.0,
        tail_s: float = 1.0,
    ) -> None:
        self.name = str(path)
        self.pcm, self.notes = read_wav(path)
        self._realtime = realtime
        self._lead = b"\0\0" * int(lead_in_s * SAMPLE_RATE)
        self._tail = b"\0\0" * int(tail_s * SAMPLE_RATE)
        self._closed = False

    async def frames(self) -> AsyncIterator[AudioFrame]:
        """The recording's frames, then ``tail_s`` of silence."""
        async for frame in paced(self._lead + self.pcm + self._tail, self._realtime):
            if self._closed:
                return
            yield frame

    async def close(self) -> None:
        """Stop early."""
        self._closed = True


class PcmPipeSource:
    """Raw 16 kHz mono s16le PCM from a pipe (``-``: standard input) until end of file.

    The producer paces it (another process's microphone); frames are stamped on arrival. A
    stream that starts with a WAV header (``RIFF`` ... ``WAVE``) is a WAV stream: its header
    is skipped when it says 16 kHz mono 16-bit PCM, and refused otherwise (:meth:`frames`).

    Args:
        stream: A binary stream (``sys.stdin.buffer`` when None).
        tail_s: Silence added at end of file, so the last utterance's end is heard.
    """

    def __init__(self, stream: BinaryIO | None = None, *, tail_s: float = 1.0) -> None:
        self.name = "stdin"
        self._stream = stream if stream is not None else sys.stdin.buffer
        self._tail_s = tail_s
        self._closed = False
        self.notes: list[str] = []

    async def frames(self) -> AsyncIterator[AudioFrame]:
        """Frames as the bytes arrive; then ``tail_s`` of silence in real time.

        The pipe is read on a daemon thread of its own, not on the loop's default executor: a
        producer that keeps the pipe open without writing must not block the process's exit
        (``asyncio.run`` waits for the default executor's threads; issue 22 item 8).

        Raises:
            AudioFormatError: The stream is a WAV stream of another format than 16 kHz mono
                16-bit PCM, or its WAV header is broken (the message says what to do).
        """
        chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self._start_reader(asyncio.get_running_loop(), chunks)
        pending = bytearray()
        header_done = False
        while not self._closed:
            chunk = await chunks.get()
            if not chunk:
                break
            pending.extend(chunk)
            if not header_done:
                header_done = self._skip_wav_header(pending, at_end=False)
                if not header_done:
                    continue
            while len(pending) >= FRAME_BYTES:
                yield AudioFrame(bytes(pending[:FRAME_BYTES]), time.monotonic())
                del pending[:FRAME_BYTES]
        if not header_done:
            self._skip_wav_header(pending, at_end=True)
        if len(pending) % 2:
            self.notes.append("the PCM stream ended in the middle of a sample")
            pending = pending[:-1]
        async for frame in paced(bytes(pending) + b"\0\0" * int(self._tail_s * SAMPLE_RATE)):
            yield frame

    def _skip_wav_header(self, pending: bytearray, *, at_end: bool) -> bool:
        """Drop a 16 kHz mono 16-bit WAV header from the start of ``pending``; False while
        more bytes are needed to tell. Raw PCM (no ``RIFF`` id) is left as it is.

        Raises:
            AudioFormatError: A WAV stream of another format, or a broken header.
        """
        try:
            skip = wav_stream_header(bytes(pending), at_end=at_end)
        except AudioFormatError as exc:
            self._closed = True  # the reader thread stops
            raise AudioFormatError(f"{self.name}: {exc}") from None
        if skip is None:
            return False
        del pending[:skip]
        return True

    def _start_reader(self, loop: asyncio.AbstractEventLoop, chunks: asyncio.Queue[bytes]) -> None:
        """Read the pipe on a daemon thread into ``chunks``; ``b""`` at end of file or error.

        A pipe with a file descriptor is read with :func:`os.read`, not through its buffered
        reader: a daemon thread blocked inside ``sys.stdin.buffer.read1`` holds that reader's
        lock, and a process that exits meanwhile (a refused WAV stream, exit code 2) aborts
        with "could not acquire lock for <stdin> at interpreter shutdown" (SIGABRT).
        """
        read = getattr(self._stream, "read1", self._stream.read)
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):  # an in-memory stream
            fd = -1
        if fd >= 0:

            def read(n: int) -> bytes:
                return os.read(fd, n)

        def pump() -> None:
            chunk = b"-"
            while chunk and not self._closed:
                try:
                    chunk = read(_PIPE_READ)
                except (OSError, ValueError) as exc:  # closed or broken pipe: end of input
                    self.notes.append(f"the PCM stream failed: {exc}")
                    chunk = b""
                try:
                    loop.call_soon_threadsafe(chunks.put_nowait, chunk)
                except RuntimeError:  # the loop is closed: nobody listens any more
                    return

        threading.Thread(target=pump, name="loopact-pcm-reader", daemon=True).start()

    async def close(self) -> None:
        """Stop reading (the pipe itself belongs to the caller)."""
        self._closed = True


class WavFileSink(ClockedSink):
    """Writes what is played into a 16 kHz mono WAV file (header completed on close).

    Raises:
        AudioFormatError: The file cannot be created.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(str(path))
        try:
            # opened here, not by wave.open(path): a failed wave.open(path) leaves a half-built
            # writer whose __del__ prints a traceback at exit (CPython's wave module)
            self._file = open(path, "wb")  # noqa: SIM115
        except OSError as exc:
            raise AudioFormatError(f"{path}: cannot be written: {exc.strerror or exc}") from None
        self._wav = wave.open(self._file, "wb")  # noqa: SIM115
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(SAMPLE_RATE)

    def emit(self, pcm: bytes, t_s: float) -> None:
        """Append the played chunk."""
        self._wav.writeframesraw(pcm)

    async def close(self) -> None:
        """Stop playing and finish the file."""
        await super().close()
        with contextlib.suppress(OSError, wave.Error):
            self._wav.close()
        with contextlib.suppress(OSError):
            self._file.close()


class PcmPipeSink(ClockedSink):
    """Writes what is played as raw 16 kHz mono s16le PCM to a pipe (``-``: standard output)."""

    def __init__(self, stream: BinaryIO | None = None) -> None:
        super().__init__("stdout")
        self._stream = stream if stream is not None else sys.stdout.buffer
        self.broken = False

    def emit(self, pcm: bytes, t_s: float) -> None:
        """Write the played chunk; a closed pipe stops the output, not the agent."""
        if self.broken:
            return
        try:
            self._stream.write(pcm)
            self._stream.flush()
        except (BrokenPipeError, OSError, ValueError):
            self.broken = True

    async def close(self) -> None:
        """Stop playing and flush."""
        await super().close()
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            self._stream.flush()


_MAX_WAV_HEADER = 64 * 1024
"""A WAV stream's chunks before its ``data`` chunk may take this many bytes (metadata)."""


def wav_stream_header(head: bytes, *, at_end: bool = False) -> int | None:
    """How many bytes of WAV header start ``head``, the first bytes of a raw PCM stream.

    Args:
        head: The bytes received so far.
        at_end: No more bytes will come (the stream ended).

    Returns:
        0 for raw PCM (no ``RIFF``/``WAVE`` ids), the header's length for a WAV stream of
        16 kHz mono 16-bit PCM (its ``data`` chunk follows), or None when more bytes are
        needed to tell.

    Raises:
        AudioFormatError: A WAV stream of any other format (rate, channels, sample width or
            encoding; the message says how to record or pass it instead), or a WAV header
            without ``fmt`` before ``data``, longer than 64 KiB, or cut off.
    """
    if not b"RIFF".startswith(head[:4]) or (len(head) >= 12 and head[8:12] != b"WAVE"):
        return 0
    if len(head) < 12:
        return 0 if at_end else None
    fmt: tuple[int, int, int, int] | None = None
    pos = 12
    while pos + 8 <= len(head):
        cid, size = head[pos : pos + 4], struct.unpack_from("<I", head, pos + 4)[0]
        if cid == b"data":
            if fmt is None:
                raise AudioFormatError("a WAV header without its fmt chunk before the data")
            _check_stream_format(*fmt)
            return pos + 8
        if cid == b"fmt ":
            if size < 16 or pos + 8 + 16 > len(head):
                break
            fmt = struct.unpack_from("<HHIxxxxxxH", head, pos + 8)
        pos += 8 + size + (size & 1)
        if pos > _MAX_WAV_HEADER:
            raise AudioFormatError(f"a WAV header of more than {_MAX_WAV_HEADER} bytes")
    if at_end:
        raise AudioFormatError("the WAV header ends before its data chunk")
    return None


def _check_stream_format(tag: int, channels: int, rate_hz: int, bits: int) -> None:
    """Refuse a WAV stream that is not 16 kHz mono 16-bit PCM (``-`` is not converted)."""
    if (tag, channels, rate_hz, bits) in ((1, 1, SAMPLE_RATE, 16), (0xFFFE, 1, SAMPLE_RATE, 16)):
        return
    what = (
        f"{rate_hz} Hz, {channels}-channel, {bits}-bit PCM"
        if tag in (1, 0xFFFE)
        else f"not PCM (WAV format {tag:#06x})"
    )
    raise AudioFormatError(
        f"a WAV stream of {what}; --audio-in - takes 16 kHz mono 16-bit PCM "
        "(arecord -f S16_LE -r 16000 -c 1): give a WAV file as --audio-in FILE.wav "
        "instead (any rate, mono or stereo, converted)"
    )


def open_source(spec: str, *, realtime: bool = True) -> WavFileSource | PcmPipeSource:
    """``--audio-in FILE|-``: a WAV file source, or raw PCM from standard input for ``-``.

    Raises:
        AudioFormatError: The file is missing or not a PCM WAV file.
    """
    if spec == "-":
        return PcmPipeSource()
    return WavFileSource(spec, realtime=realtime)


def open_sink(spec: str) -> WavFileSink | PcmPipeSink:
    """``--audio-out FILE|-``: a WAV file, or raw PCM on standard output for ``-``.

    Raises:
        AudioFormatError: The file cannot be created.
    """
    if spec == "-":
        return PcmPipeSink()
    return WavFileSink(spec)

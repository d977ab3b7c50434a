"""A local sound card through PortAudio (``sounddevice``, MIT; Debian ``libportaudio2``).

:class:`DeviceSource` and :class:`DeviceSink` open the default (or a named) input and output
at 16 kHz mono. A device that cannot open at 16 kHz (many USB and HDMI devices run only at
44.1 or 48 kHz) is opened at its own default rate, and the audio is resampled to and from
16 kHz on the way (:class:`~loopact.voice.audio.StreamResampler`; the microphone's rate is a
note of every utterance). A machine without a sound card, or without PortAudio, or a device
that opens at neither rate, gets an :class:`~loopact.errors.AudioDeviceError` that says so and
what to use instead, never a traceback.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np

from loopact._compat import wait_within
from loopact.errors import AudioDeviceError
from loopact.voice.audio import (
    FRAME_BYTES,
    FRAME_MS,
    SAMPLE_RATE,
    AudioFrame,
    PlayedListener,
    StreamResampler,
    to_pcm16,
)

_HINT = "use --audio-in FILE|- and --audio-out FILE|- instead, or the web console's microphone"


def _sounddevice() -> Any:
    try:
        import sounddevice
    except ImportError:
        raise AudioDeviceError(
            "no sound device support: pip install 'loopact[voice]' (sounddevice); " + _HINT
        ) from None
    except OSError as exc:  # sounddevice raises OSError when libportaudio is missing
        raise AudioDeviceError(
            f"PortAudio is not installed ({exc}): apt-get install libportaudio2; " + _HINT
        ) from None
    return sounddevice


def _check(sd: Any, device: str | None, kind: str) -> dict[str, Any]:
    """The device's PortAudio description; raises when it is missing or has no ``kind``."""
    try:
        devices = sd.query_devices()
        info: dict[str, Any] = dict(sd.query_devices(device, kind=kind))
    except Exception as exc:  # PortAudioError, ValueError: no such device
        count = len(devices) if "devices" in locals() else 0
        what = f"device {device!r}" if device else f"default {kind} device"
        raise AudioDeviceError(
            f"no sound card: the {what} is not available ({count} audio device(s) found; "
            f"{exc}); {_HINT}"
        ) from None
    channels = info.get("max_input_channels" if kind == "input" else "max_output_channels", 0)
    if not channels:
        raise AudioDeviceError(f"the audio device {info.get('name')!r} has no {kind}; {_HINT}")
    return info


def _open_stream(
    sd: Any,
    info: dict[str, Any],
    kind: str,
    device: str | None,
    callback: Callable[..., None],
    at_rate: Callable[[int], None],
) -> Any:
    """Open and start a mono int16 stream at 16 kHz, else at the device's default rate.

    ``at_rate(rate_hz)`` is called once the stream is open, before it starts (and calls
    ``callback``).

    Returns:
        The started stream.

    Raises:
        AudioDeviceError: It opens at neither rate (both errors are named).
    """
    factory = sd.RawInputStream if kind == "input" else sd.RawOutputStream
    what = "microphone" if kind == "input" else "speaker"
    rates = [SAMPLE_RATE]
    default = int(round(float(info.get("default_samplerate") or 0)))
    if default > 0 and default != SAMPLE_RATE:
        rates.append(default)
    errors = []
    for rate in rates:
        stream = None
        try:
            stream = factory(
                samplerate=rate,
                blocksize=rate * FRAME_MS // 1000,
                channels=1,
                dtype="int16",
                device=device,
                callback=callback,
            )
            at_rate(rate)
            stream.start()
            return stream
        except Exception as exc:  # PortAudioError: invalid sample rate, device busy, ...
            errors.append(f"at {rate} Hz: {exc}")
            if stream is not None:
                stream.close()
    raise AudioDeviceError(
        f"the {what} {info.get('name')!r} cannot be opened ({'; '.join(errors)}); {_HINT}"
    )


class DeviceSource:
    """The microphone: 20 ms frames of 16 kHz PCM from a PortAudio input stream.

    Args:
        device: A PortAudio device name or number (as ``python -m sounddevice`` lists them),
            or None for the default input.

    Attributes:
        rate_hz: The rate the device was opened at (Hz); 0 until :meth:`frames` opens it.
        notes: ``the microphone runs at 48000 Hz: resampled to 16 kHz`` when it does (the
            listener puts it into every utterance's ``speech_in`` notes).

    Raises:
        AudioDeviceError: No sound card / input device.
    """

    def __init__(self, device: str | None = None) -> None:
        self._sd = _sounddevice()
        self._info = _check(self._sd, device, "input")
        self.name = f"microphone {device or '(default)'}"
        self._device = device
        self._stream: Any = None
        self.rate_hz = 0
        self.notes: list[str] = []
        self._resampler: StreamResampler | None = None
        self._pending = bytearray()
        self._queue: asyncio.Queue[AudioFrame | None] = asyncio.Queue(maxsize=500)
        self._closed = False

    async def frames(self) -> AsyncIterator[AudioFrame]:
        """Frames as the device delivers them, until :meth:`close`.

        Raises:
            AudioDeviceError: The device opens neither at 16 kHz nor at its default rate.
        """
        if self._closed:
            return
        loop = asyncio.get_running_loop()

        def callback(indata: Any, frames: int, t: Any, status: Any) -> None:
            loop.call_soon_threadsafe(self._on_block, bytes(indata), time.monotonic())

        self._stream = _open_stream(
            self._sd, self._info, "input", self._device, callback, self._at_rate
        )
        while not self._closed:
            frame = await self._queue.get()
            if frame is None:
                return
            yield frame

    def _at_rate(self, rate_hz: int) -> None:
        self.rate_hz = rate_hz
        self._resampler = StreamResampler(rate_hz, SAMPLE_RATE) if rate_hz != SAMPLE_RATE else None
        self.notes = (
            []
            if rate_hz == SAMPLE_RATE
            else [f"the microphone runs at {rate_hz} Hz: resampled to 16 kHz"]
        )

    def _on_block(self, data: bytes, t_s: float) -> None:
        """One block from the device (``t_s``: when its last sample arrived), cut into frames
        stamped with the time of their first sample."""
        if self._closed:
            return
        if self._resampler is not None:
            data = to_pcm16(self._resampler.process(np.frombuffer(data, dtype="<i2")))
        self._pending.extend(data)
        while len(self._pending) >= FRAME_BYTES:
            first_s = t_s - len(self._pending) / 2 / SAMPLE_RATE
            frame = AudioFrame(bytes(self._pending[:FRAME_BYTES]), first_s)
            del self._pending[:FRAME_BYTES]
            if not self._queue.full():
                self._queue.put_nowait(frame)

    async def close(self) -> None:
        """Stop and close the input stream; :meth:`frames` ends. Safe to call twice."""
        self._closed = True
        if self._queue.full():
            self._queue.get_nowait()
        self._queue.put_nowait(None)
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.stop()
            stream.close()


class DeviceSink:
    """The speaker: a PortAudio output stream fed from a small buffer (``abort`` empties it).

    The buffer holds the device's own samples (resampled from 16 kHz when the device runs at
    another rate); the 16 kHz audio each callback played goes to the listeners (the echo
    canceller's reference).

    Args:
        device: A PortAudio device name or number, or None for the default output.
        buffer_ms: Audio held ahead of the device, milliseconds.

    Attributes:
        rate_hz: The rate the device runs at (Hz).

    Raises:
        AudioDeviceError: No sound card / output device, or it opens at no rate.
    """

    def __init__(self, device: str | None = None, buffer_ms: int = 60) -> None:
        self._sd = _sounddevice()
        info = _check(self._sd, device, "output")
        self.name = f"speaker {device or '(default)'}"
        self._lock = threading.Lock()  # the buffers are shared with PortAudio's thread
        self._buffer = bytearray()  # device-rate PCM
        self._reference = bytearray()  # the same audio at 16 kHz
        self._ref_owed = 0.0  # 16 kHz samples played but not reported yet (a fraction)
        self._listeners: list[PlayedListener] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._space = asyncio.Event()
        self._closed = False
        self._buffer_ms = buffer_ms
        self.rate_hz = SAMPLE_RATE
        self._limit = 0
        self._resampler: StreamResampler | None = None
        self._stream = _open_stream(self._sd, info, "output", device, self._callback, self._at_rate)

    def _at_rate(self, rate_hz: int) -> None:
        self.rate_hz = rate_hz
        self._limit = self._buffer_ms * rate_hz // 1000 * 2
        self._resampler = StreamResampler(SAMPLE_RATE, rate_hz) if rate_hz != SAMPLE_RATE else None

    def add_listener(self, fn: PlayedListener) -> None:
        """Report every played chunk (16 kHz PCM) to ``fn``."""
        self._listeners.append(fn)

    def _callback(self, outdata: Any, frames: int, t: Any, status: Any) -> None:
        n = frames * 2
        with self._lock:
            chunk = bytes(self._buffer[:n])
            del self._buffer[:n]
            self._ref_owed += len(chunk) / 2 * SAMPLE_RATE / self.rate_hz
            take = min(int(self._ref_owed), len(self._reference) // 2) * 2
            self._ref_owed -= take // 2
            reference = bytes(self._reference[:take])
            del self._reference[:take]
        outdata[: len(chunk)] = chunk
        outdata[len(chunk) :] = b"\0" * (n - len(chunk))
        if chunk and self._loop is not None:
            self._loop.call_soon_threadsafe(self._played, reference, time.monotonic())

    def _played(self, chunk: bytes, t_s: float) -> None:
        self._space.set()
        if not chunk:
            return
        for fn in list(self._listeners):
            fn(chunk, t_s)

    async def write(self, pcm: bytes) -> None:
        """Queue ``pcm`` (16 kHz); waits while the buffer is full."""
        self._loop = asyncio.get_running_loop()
        if self._closed:
            return
        out = pcm
        if self._resampler is not None:
            out = to_pcm16(self._resampler.process(np.frombuffer(pcm, dtype="<i2")))
        with self._lock:
            self._buffer.extend(out)
            self._reference.extend(pcm)
        while len(self._buffer) > self._limit:
            self._space.clear()
            try:
                await wait_within(self._space.wait(), 1.0)
            except asyncio.TimeoutError:
                return

    def abort(self) -> int:
        """Drop what is not played yet; returns the dropped 16 kHz sample count."""
        with self._lock:
            dropped = len(self._reference) // 2
            self._buffer.clear()
            self._reference.clear()
            self._ref_owed = 0.0
        self._space.set()
        return dropped

    async def drain(self) -> None:
        """Wait until the buffer is empty."""
        while self._buffer:  # noqa: ASYNC110 - the PortAudio thread empties it
            await asyncio.sleep(FRAME_BYTES / 2 / SAMPLE_RATE)

    async def close(self) -> None:
        """Stop and close the output stream. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._stream.stop()
        self._stream.close()

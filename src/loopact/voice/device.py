"""A local sound card through PortAudio (``sounddevice``, MIT; Debian ``libportaudio2``).

:func:`open_device` opens the default (or a named) input and output at 16 kHz mono. A machine
without a sound card, or without PortAudio, gets an :class:`~loopact.errors.AudioDeviceError`
that says so and what to use instead, never a traceback.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from loopact._compat import wait_within
from loopact.errors import AudioDeviceError
from loopact.voice.audio import FRAME_BYTES, FRAME_SAMPLES, SAMPLE_RATE, AudioFrame, PlayedListener

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


def _check(sd: Any, device: str | None, kind: str) -> None:
    try:
        devices = sd.query_devices()
        info = sd.query_devices(device, kind=kind)
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


class DeviceSource:
    """The microphone: 20 ms frames from a PortAudio input stream.

    Raises:
        AudioDeviceError: No sound card / input device.
    """

    def __init__(self, device: str | None = None) -> None:
        self._sd = _sounddevice()
        _check(self._sd, device, "input")
        self.name = f"microphone {device or '(default)'}"
        self._device = device
        self._stream: Any = None
        self._queue: asyncio.Queue[AudioFrame] = asyncio.Queue(maxsize=500)

    async def frames(self) -> AsyncIterator[AudioFrame]:
        """Frames as the device delivers them (endless)."""
        loop = asyncio.get_running_loop()

        def callback(indata: Any, frames: int, t: Any, status: Any) -> None:
            frame = AudioFrame(bytes(indata), time.monotonic() - frames / SAMPLE_RATE)
            loop.call_soon_threadsafe(self._put, frame)

        try:
            self._stream = self._sd.RawInputStream(
                samplerate=SAMPLE_RATE,
                blocksize=FRAME_SAMPLES,
                channels=1,
                dtype="int16",
                device=self._device,
                callback=callback,
            )
            self._stream.start()
        except Exception as exc:
            raise AudioDeviceError(f"the microphone cannot be opened: {exc}; {_HINT}") from None
        while True:
            yield await self._queue.get()

    def _put(self, frame: AudioFrame) -> None:
        if not self._queue.full():
            self._queue.put_nowait(frame)

    async def close(self) -> None:
        """Stop and close the input stream."""
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
            self._stream = None


class DeviceSink:
    """The speaker: a PortAudio output stream fed from a small buffer (``abort`` empties it).

    Raises:
        AudioDeviceError: No sound card / output device.
    """

    def __init__(self, device: str | None = None, buffer_ms: int = 60) -> None:
        self._sd = _sounddevice()
        _check(self._sd, device, "output")
        self.name = f"speaker {device or '(default)'}"
        self._buffer = bytearray()
        self._limit = buffer_ms * SAMPLE_RATE // 1000 * 2
        self._listeners: list[PlayedListener] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._space = asyncio.Event()
        try:
            self._stream = self._sd.RawOutputStream(
                samplerate=SAMPLE_RATE,
                blocksize=FRAME_SAMPLES,
                channels=1,
                dtype="int16",
                device=device,
                callback=self._callback,
            )
            self._stream.start()
        except Exception as exc:
            raise AudioDeviceError(f"the speaker cannot be opened: {exc}; {_HINT}") from None

    def add_listener(self, fn: PlayedListener) -> None:
        """Report every played chunk to ``fn``."""
        self._listeners.append(fn)

    def _callback(self, outdata: Any, frames: int, t: Any, status: Any) -> None:
        n = frames * 2
        chunk = bytes(self._buffer[:n])
        del self._buffer[:n]
        outdata[: len(chunk)] = chunk
        outdata[len(chunk) :] = b"\0" * (n - len(chunk))
        if chunk and self._loop is not None:
            self._loop.call_soon_threadsafe(self._played, chunk, time.monotonic())

    def _played(self, chunk: bytes, t_s: float) -> None:
        self._space.set()
        for fn in list(self._listeners):
            fn(chunk, t_s)

    async def write(self, pcm: bytes) -> None:
        """Queue ``pcm``; waits while the buffer is full."""
        self._loop = asyncio.get_running_loop()
        self._buffer.extend(pcm)
        while len(self._buffer) > self._limit:
            self._space.clear()
            try:
                await wait_within(self._space.wait(), 1.0)
            except asyncio.TimeoutError:
                return

    def abort(self) -> int:
        """Drop what is not played yet."""
        dropped = len(self._buffer) // 2
        self._buffer.clear()
        self._space.set()
        return dropped

    async def drain(self) -> None:
        """Wait until the buffer is empty."""
        while self._buffer:  # noqa: ASYNC110 - the PortAudio thread empties it
            await asyncio.sleep(FRAME_BYTES / 2 / SAMPLE_RATE)

    async def close(self) -> None:
        """Stop and close the output stream."""
        self._stream.stop()
        self._stream.close()

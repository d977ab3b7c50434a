"""A stand-in for the ``sounddevice`` module: one PortAudio device whose microphone hears a
given recording and whose speaker records what it is given, on its own threads with its own
clock, as PortAudio calls back (issue 16: the ``--voice`` path without a sound card)."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable
from typing import Any


class PortAudioError(Exception):
    """As ``sounddevice.PortAudioError``."""


class FakeSoundDevice(types.ModuleType):
    """Install with ``monkeypatch.setitem(sys.modules, "sounddevice", FakeSoundDevice(...))``.

    Args:
        rates_hz: The sample rates the device opens at (others: ``Invalid sample rate``).
        default_hz: Its default rate (``default_samplerate``).
        mic_pcm: What the microphone hears first, 16-bit mono PCM at the rate it is opened at
            (``mic_for(rate)``, when given, makes it per rate); silence follows.

    Attributes:
        opened: ``(kind, rate)`` of every stream opened, refused ones included.
        played: Every output sample the speaker was given, at its rate.
    """

    def __init__(
        self,
        rates_hz: set[int],
        default_hz: int,
        mic_for: Callable[[int], bytes] = lambda rate: b"",
        name: str = "Fake USB Audio",
    ) -> None:
        super().__init__("sounddevice")
        self.rates_hz, self.mic_for = rates_hz, mic_for
        self.info = {
            "name": name,
            "max_input_channels": 1,
            "max_output_channels": 2,
            "default_samplerate": float(default_hz),
        }
        self.opened: list[tuple[str, int]] = []
        self.played = bytearray()
        self.PortAudioError = PortAudioError
        fake = self

        class RawInputStream(_Stream):
            def __init__(self, **kw: Any) -> None:
                super().__init__(fake, "input", **kw)

        class RawOutputStream(_Stream):
            def __init__(self, **kw: Any) -> None:
                super().__init__(fake, "output", **kw)

        self.RawInputStream = RawInputStream
        self.RawOutputStream = RawOutputStream

    def query_devices(self, device: Any = None, kind: str | None = None) -> Any:
        if kind is None:
            return [self.info]
        if device not in (None, 0, self.info["name"]):
            raise ValueError(f"No {kind} device matching {device!r}")
        return self.info


class _Stream:
    def __init__(
        self,
        fake: FakeSoundDevice,
        kind: str,
        *,
        samplerate: int,
        blocksize: int,
        channels: int,
        dtype: str,
        device: Any,
        callback: Callable[..., None],
    ) -> None:
        fake.opened.append((kind, samplerate))
        if samplerate not in fake.rates_hz:
            raise PortAudioError("Error opening stream: Invalid sample rate [PaErrorCode -9997]")
        assert channels == 1 and dtype == "int16" and blocksize > 0
        self.fake, self.kind, self.rate, self.block = fake, kind, samplerate, blocksize
        self.callback = callback
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"fake-portaudio-{kind}")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        """One block per block duration of the device's own clock, as a sound card calls."""
        mic = self.fake.mic_for(self.rate) if self.kind == "input" else b""
        n = self.block * 2
        period_s = self.block / self.rate
        next_t = time.monotonic()
        at = 0
        while not self._stop.is_set():
            if self.kind == "input":
                block = mic[at : at + n].ljust(n, b"\0")
                at += n
                self.callback(memoryview(block), self.block, None, None)
            else:
                out = bytearray(n)
                self.callback(out, self.block, None, None)
                self.fake.played.extend(out)
            next_t += period_s
            self._stop.wait(max(0.0, next_t - time.monotonic()))

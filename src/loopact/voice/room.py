"""A simulated room for tests and benchmarks (issue 16): a speaker heard by a microphone.

:class:`Room` owns a sample clock. Its :attr:`Room.speaker` is a sink that plays in real time
(like a sound card) and records what it played on the room's timeline; its
:attr:`Room.microphone` is a source whose frames hold the user's recorded speech (placed at
chosen times) plus the speaker's sound delayed by ``echo_delay_ms`` and scaled by
``echo_gain`` (the robot hearing itself), plus faint noise. Everything runs through the real
pipeline; only the air between speaker and microphone is simulated.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import numpy as np

from loopact.voice.audio import FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, AudioFrame, ClockedSink


class _Speaker(ClockedSink):
    def __init__(self, room: Room) -> None:
        super().__init__("room speaker")
        self._room = room

    def emit(self, pcm: bytes, t_s: float) -> None:
        self._room._played(pcm, t_s)


class Room:
    """A speaker and a microphone in one simulated room.

    Args:
        echo_gain: How loud the speaker is at the microphone (0: not at all).
        echo_delay_ms: Speaker-to-microphone delay (air and buffers).
        noise_rms: Background noise at the microphone (int16 RMS).
        seed: Noise seed.

    Attributes:
        speaker: The sink to give the player.
        microphone: The source to give the listener.
        t0_s: Monotonic time of sample 0 of the room's timeline.
    """

    def __init__(
        self,
        echo_gain: float = 0.6,
        echo_delay_ms: float = 30.0,
        noise_rms: float = 20.0,
        seed: int = 0,
    ) -> None:
        self.echo_gain = echo_gain
        self.echo_delay = int(echo_delay_ms * SAMPLE_RATE / 1000)
        self.noise_rms = noise_rms
        self._rng = np.random.default_rng(seed)
        self.t0_s = time.monotonic()
        self._played_track = np.zeros(0, dtype=np.float64)
        self._user = np.zeros(0, dtype=np.float64)
        self.user_spans: list[tuple[float, float]] = []
        self.speaker = _Speaker(self)
        self.microphone = _Microphone(self)

    def at(self, t_s: float) -> int:
        """The room sample index of monotonic time ``t_s``."""
        return int(round((t_s - self.t0_s) * SAMPLE_RATE))

    def say(self, pcm: bytes, at_s: float) -> tuple[float, float]:
        """Put user speech on the microphone track, starting ``at_s`` seconds after ``t0_s``.

        Returns:
            The monotonic start and end times of the speech.
        """
        x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
        i = int(at_s * SAMPLE_RATE)
        if self._user.size < i + x.size:
            self._user = np.concatenate([self._user, np.zeros(i + x.size - self._user.size)])
        self._user[i : i + x.size] += x
        span = (self.t0_s + at_s, self.t0_s + at_s + x.size / SAMPLE_RATE)
        self.user_spans.append(span)
        return span

    def _played(self, pcm: bytes, t_s: float) -> None:
        x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
        i = max(0, self.at(t_s))
        if self._played_track.size < i + x.size:
            grow = i + x.size - self._played_track.size
            self._played_track = np.concatenate([self._played_track, np.zeros(grow)])
        self._played_track[i : i + x.size] = x

    def mic_samples(self, start: int, n: int) -> np.ndarray:
        """What the microphone hears for samples ``start .. start + n`` of the timeline."""
        out = self._rng.normal(0.0, self.noise_rms, n) if self.noise_rms else np.zeros(n)
        lo, hi = start, start + n
        if lo < self._user.size:
            seg = self._user[lo : min(hi, self._user.size)]
            out[: seg.size] += seg
        elo, ehi = lo - self.echo_delay, hi - self.echo_delay
        if ehi > 0 and elo < self._played_track.size:
            a, b = max(elo, 0), min(ehi, self._played_track.size)
            out[a - elo : b - elo] += self.echo_gain * self._played_track[a:b]
        return np.clip(np.round(out), -32768, 32767).astype("<i2")


class _Microphone:
    def __init__(self, room: Room) -> None:
        self.room = room
        self.name = "room microphone"
        self._closed = False
        self.until_s: float | None = None

    async def frames(self) -> AsyncIterator[AudioFrame]:
        """Frames in real time until :meth:`close` (or ``until_s`` after ``t0_s``)."""
        room = self.room
        k = max(0, room.at(time.monotonic()) // FRAME_SAMPLES)
        while not self._closed:
            start = k * FRAME_SAMPLES
            t = room.t0_s + start / SAMPLE_RATE
            if self.until_s is not None and t - room.t0_s >= self.until_s:
                return
            delay = t + FRAME_MS / 1000 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            yield AudioFrame(room.mic_samples(start, FRAME_SAMPLES).tobytes(), t)
            k += 1

    async def close(self) -> None:
        self._closed = True

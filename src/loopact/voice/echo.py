"""The robot's own voice must not trigger barge-in (issue 16): a small echo canceller.

The player reports every chunk it actually played, with the time it was played
(:meth:`EchoCanceller.add_reference`). For each microphone frame the canceller finds the delay
(0..``max_delay_ms``) at which the played signal best explains the recent microphone signal
(cross-correlation over ``window_ms``), fits a gain by least squares and subtracts the scaled,
delayed reference: what remains is what the robot did not say. The barge-in detector runs on
that residual and, while the robot speaks, also requires it to be louder than a fraction of
the echo it removed (the "gate on the playback signal" of the issue), so a residue of the
robot's voice in a reverberant room does not count as a person.

This is a single-path canceller: it removes a delayed, scaled copy of the played signal (a
speaker next to a microphone, the loopback of a sound card, a browser's own playback). For a
real room with strong reverberation put the operating system's echo canceller in front
(PulseAudio/PipeWire ``module-echo-cancel``, a conferencing microphone, a headset); see
docs/voice.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loopact.voice.audio import SAMPLE_RATE, AudioFrame

_JITTER = 4  # samples searched either side of the estimated delay, per frame


@dataclass(frozen=True)
class EchoResult:
    """One microphone frame after cancellation.

    Attributes:
        residual: The microphone samples minus the estimated echo (int16).
        echo_rms: RMS of the echo that was removed (0 when the robot was silent).
        delay_ms: The echo path delay in use.
    """

    residual: np.ndarray
    echo_rms: float
    delay_ms: float


class EchoCanceller:
    """Subtracts the robot's own played audio from the microphone signal.

    Args:
        max_delay_ms: Longest echo path delay searched (speaker -> microphone, buffers).
        window_ms: Microphone history used to estimate the delay.
        history_s: Reference audio kept.
    """

    def __init__(
        self, max_delay_ms: int = 300, window_ms: int = 200, history_s: float = 2.0
    ) -> None:
        self._max_delay = max_delay_ms * SAMPLE_RATE // 1000
        self._window = window_ms * SAMPLE_RATE // 1000
        self._keep = int(history_s * SAMPLE_RATE)
        self._ref = np.zeros(0, dtype=np.float64)
        self._origin: float | None = None  # time of absolute sample 0 (fixed: no drift)
        self._ref_i0 = 0  # absolute sample index of self._ref[0]
        self._mic = np.zeros(0, dtype=np.float64)
        self._mic_t0 = 0.0
        self._delay = 0
        self._last_ref_t = -1e9

    def _index(self, t_s: float) -> int:
        if self._origin is None:
            self._origin = t_s
        return int(round((t_s - self._origin) * SAMPLE_RATE))

    def add_reference(self, pcm: bytes, t_s: float) -> None:
        """Record a chunk the speaker played, starting at monotonic time ``t_s``."""
        x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
        start = self._index(t_s)
        end_now = self._ref_i0 + self._ref.size
        if self._ref.size == 0 or start - end_now > self._keep:
            self._ref, self._ref_i0 = x.copy(), start
        elif start >= end_now:
            self._ref = np.concatenate([self._ref, np.zeros(start - end_now), x])
        elif start >= self._ref_i0:
            self._ref = np.concatenate([self._ref[: start - self._ref_i0], x])
        else:
            return  # older than what is kept
        self._last_ref_t = t_s + x.size / SAMPLE_RATE
        if self._ref.size > self._keep:
            cut = self._ref.size - self._keep
            self._ref = self._ref[cut:]
            self._ref_i0 += cut

    def _ref_segment(self, t_s: float, n: int) -> np.ndarray:
        """``n`` reference samples starting at time ``t_s`` (zeros where none was played)."""
        i = self._index(t_s) - self._ref_i0
        out = np.zeros(n)
        lo, hi = max(i, 0), min(i + n, self._ref.size)
        if hi > lo:
            out[lo - i : hi - i] = self._ref[lo:hi]
        return out

    def process(self, frame: AudioFrame) -> EchoResult:
        """Cancel the echo in one microphone frame."""
        mic = frame.samples.astype(np.float64)
        n = mic.size
        if (
            self._mic.size == 0
            or abs(self._mic_t0 + self._mic.size / SAMPLE_RATE - frame.t_s) > 0.05
        ):
            self._mic = np.zeros(0)
            self._mic_t0 = frame.t_s
        self._mic = np.concatenate([self._mic, mic])
        if self._mic.size > self._window:
            cut = self._mic.size - self._window
            self._mic = self._mic[cut:]
            self._mic_t0 += cut / SAMPLE_RATE
        if frame.t_s - self._last_ref_t > self._max_delay / SAMPLE_RATE + 0.05:
            return EchoResult(frame.samples, 0.0, self._delay * 1000 / SAMPLE_RATE)
        self._estimate_delay()
        # the best fit within a few samples of the delay: clocks and buffers jitter
        wide = self._ref_segment(frame.t_s - (self._delay + _JITTER) / SAMPLE_RATE, n + 2 * _JITTER)
        best: tuple[float, np.ndarray] | None = None
        for k in range(2 * _JITTER + 1):
            ref = wide[2 * _JITTER - k : 2 * _JITTER - k + n]
            energy = float(ref @ ref)
            if energy < 1.0:
                continue
            gain = min(max(float(mic @ ref) / energy, 0.0), 4.0)
            echo = gain * ref
            left = float((mic - echo) @ (mic - echo))
            if best is None or left < best[0]:
                best = (left, echo)
        if best is None:
            return EchoResult(frame.samples, 0.0, self._delay * 1000 / SAMPLE_RATE)
        echo = best[1]
        residual = np.clip(np.round(mic - echo), -32768, 32767).astype(np.int16)
        echo_rms = float(np.sqrt(np.mean(echo**2)))
        return EchoResult(residual, echo_rms, self._delay * 1000 / SAMPLE_RATE)

    def _estimate_delay(self) -> None:
        m = self._mic
        if m.size < self._window // 2 or float(m @ m) < 1.0:
            return
        span = m.size + self._max_delay
        ref = self._ref_segment(self._mic_t0 - self._max_delay / SAMPLE_RATE, span)
        if float(ref @ ref) < 1.0:
            return
        size = 1 << int(np.ceil(np.log2(span + m.size)))
        corr = np.fft.irfft(np.fft.rfft(ref, size) * np.conj(np.fft.rfft(m, size)), size)
        lags = corr[: self._max_delay + 1]  # lag k: mic[t] ~ ref[t + max_delay - k]
        # normalise by the reference energy under each lag
        csum = np.concatenate([[0.0], np.cumsum(ref**2)])
        k = np.arange(self._max_delay + 1)
        ref_energy = csum[k + m.size] - csum[k]
        score = lags / np.sqrt(np.maximum(ref_energy, 1.0) * float(m @ m))
        best = int(np.argmax(score))
        if score[best] > 0.3:
            self._delay = self._max_delay - best

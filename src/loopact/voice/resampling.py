"""Sample-rate conversion and mixing to mono, whole or in blocks (SPEC F4; issue 39 item 15).

:func:`resample` converts a whole signal; :class:`StreamResampler` a live stream (a sound
card's callbacks; its filter delays the output by a few samples); :class:`MonoConverter` a
file read in blocks, with exactly the result :func:`resample` gives for the whole file, so that
a long WAV file is converted in bounded memory (``play_audio`` held 65 times a 48 MB file's
size while converting it whole).
"""

from __future__ import annotations

import math

import numpy as np

FILTER_TAPS = 63
"""Length of the anti-aliasing low-pass filter (odd: its delay is 31 samples)."""


def lowpass_taps(cutoff: float, taps: int = FILTER_TAPS) -> np.ndarray:
    """A windowed-sinc low-pass FIR filter, unity gain at 0 Hz.

    Args:
        cutoff: The cut-off frequency as a fraction of the sample rate (0..0.5).
        taps: Filter length (odd: the delay is ``(taps - 1) / 2`` samples).
    """
    n = np.arange(taps) - (taps - 1) / 2
    h: np.ndarray = np.sinc(2 * cutoff * n) * np.hamming(taps)
    normalised: np.ndarray = h / h.sum()
    return normalised


def _cutoff(rate_hz: int, to_hz: int) -> float:
    """The anti-aliasing cut-off for downsampling, a fraction of the input rate."""
    return 0.5 * to_hz / rate_hz * 0.9


def resample(samples: np.ndarray, rate_hz: int, to_hz: int) -> np.ndarray:
    """Resample float samples from ``rate_hz`` to ``to_hz`` (anti-aliased when downsampling)."""
    if rate_hz == to_hz or samples.size == 0:
        return samples
    if to_hz < rate_hz:
        samples = np.convolve(samples, lowpass_taps(_cutoff(rate_hz, to_hz)), mode="same")
    n_out = int(round(samples.size * to_hz / rate_hz))
    t_out = np.arange(n_out) * (rate_hz / to_hz)
    out: np.ndarray = np.interp(t_out, np.arange(samples.size), samples)
    return out


class StreamResampler:
    """:func:`resample` for a live stream cut into blocks (a sound card's callbacks): the
    filter's history and the interpolation phase carry over from block to block, without
    clicks at block edges.

    Downsampling low-passes first (the same filter as :func:`resample`, delay 31 input
    samples); both ways interpolate linearly.

    Args:
        from_hz: Input sample rate (Hz).
        to_hz: Output sample rate (Hz).
    """

    def __init__(self, from_hz: int, to_hz: int) -> None:
        self.from_hz, self.to_hz = from_hz, to_hz
        self._step = from_hz / to_hz
        self._taps = lowpass_taps(_cutoff(from_hz, to_hz)) if to_hz < from_hz else None
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


class MonoConverter:
    """Interleaved int16 samples of any rate and channel count to mono at ``to_hz``, fed in
    blocks of whole frames; the result is :func:`resample` of the whole mixed-down signal.

    The low-pass is the full convolution, streamed (the last ``taps - 1`` inputs carried
    over) and shifted by the filter's delay, as ``np.convolve(..., mode="same")`` is; the
    linear interpolation keeps its absolute output position. What it holds between blocks is
    those few samples, never the signal.

    Args:
        from_hz: Input sample rate (Hz).
        to_hz: Output sample rate (Hz).
        channels: Channels per frame (mixed down by their mean).
    """

    def __init__(self, from_hz: int, to_hz: int, channels: int = 1) -> None:
        self.from_hz, self.to_hz, self.channels = from_hz, to_hz, channels
        self._step = from_hz / to_hz
        self._taps = lowpass_taps(_cutoff(from_hz, to_hz)) if to_hz < from_hz else None
        size = 0 if self._taps is None else self._taps.size
        self._history = np.zeros(max(0, size - 1))
        self._skip = (size - 1) // 2 if size else 0  # the filter's delay, dropped once
        self.samples_in = 0  # mixed-down input samples so far
        self._seen = 0  # samples of the signal being interpolated so far
        self._prev: float | None = None
        self._next_out = 0  # index of the next output sample

    def feed(self, interleaved: np.ndarray) -> np.ndarray:
        """The output samples (float) that the next block of whole frames makes certain."""
        x = interleaved.astype(np.float64)
        if self.channels > 1:
            x = x[: x.size - x.size % self.channels].reshape(-1, self.channels).mean(axis=1)
        self.samples_in += x.size
        return self._interpolate(self._filter(x))

    def finish(self) -> np.ndarray:
        """The last output samples: the filter's tail, then up to the whole signal's length."""
        tail = self._interpolate(self._filter(np.zeros(self._delay())))
        n_out = int(round(self.samples_in * self.to_hz / self.from_hz))
        if self.from_hz == self.to_hz:
            n_out = self.samples_in
        extra = max(0, n_out - self._next_out)
        last = self._prev if self._prev is not None else 0.0
        out = np.concatenate([tail, np.full(extra, last)])
        over = self._next_out - n_out  # interpolation may have run one sample past the end
        return out[: out.size - over] if over > 0 else out

    def _delay(self) -> int:
        return 0 if self._taps is None else (self._taps.size - 1) // 2

    def _filter(self, x: np.ndarray) -> np.ndarray:
        if self._taps is None or x.size == 0:
            return x
        joined = np.concatenate([self._history, x])
        self._history = joined[joined.size - self._history.size :]
        y: np.ndarray = np.convolve(joined, self._taps, mode="valid")
        if self._skip:
            dropped = min(self._skip, y.size)
            y, self._skip = y[dropped:], self._skip - dropped
        return y

    def _interpolate(self, y: np.ndarray) -> np.ndarray:
        if self.from_hz == self.to_hz or y.size == 0:
            self._next_out += y.size
            if y.size:
                self._prev = float(y[-1])
            return y
        first = self._seen - (0 if self._prev is None else 1)  # absolute index of buf[0]
        buf = y if self._prev is None else np.concatenate([[self._prev], y])
        last = self._seen + y.size - 1  # absolute index of the newest sample
        end = math.floor(last / self._step) + 1  # outputs whose position is <= last ...
        while end > 0 and (end - 1) * self._step > last:
            end -= 1  # ... with the float products resample() uses
        while end * self._step <= last:
            end += 1
        at = np.arange(self._next_out, end) * self._step - first
        out: np.ndarray = np.interp(at, np.arange(buf.size), buf)
        self._next_out = max(self._next_out, end)
        self._seen += y.size
        self._prev = float(y[-1])
        return out

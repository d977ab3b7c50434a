"""Voice activity detection and end-of-utterance detection (issue 16).

:class:`Vad` classifies one 20 ms frame as speech or not: WebRTC's VAD (``webrtcvad-wheels``,
MIT, no model file) gated by an energy floor, so that near-silence and faint hiss never count.
:class:`Endpointer` turns the per-frame decisions into utterances: speech *onset* after
``onset_ms`` of speech within a short window (the barge-in signal: it does not wait for a
transcript), *end* after ``end_silence_ms`` of silence, with ``pre_roll_ms`` of audio kept from
before the onset. After ``early_ms`` of silence it reports a :class:`Pause` (the utterance so
far), so that the listener can start transcribing while it waits to be sure the person has
finished (speculative transcription: the 600 ms of end silence are no longer added to the
engine's time). An utterance longer than ``max_utterance_s`` is cut there (a 10-minute
recording is handled as a series of utterances, never as one huge upload).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from loopact.voice.audio import FRAME_MS, SAMPLE_RATE, AudioFrame, rms


class Vad:
    """Speech / not speech for one 20 ms frame of 16 kHz PCM.

    Args:
        aggressiveness: WebRTC VAD mode 0..3 (3 rejects the most non-speech).
        min_rms: Frames quieter than this RMS (int16 scale) are never speech.
    """

    def __init__(self, aggressiveness: int = 2, min_rms: float = 150.0) -> None:
        import webrtcvad

        self._vad = webrtcvad.Vad(aggressiveness)
        self.min_rms = min_rms

    def is_speech(self, samples: np.ndarray) -> bool:
        """True when the frame (exactly ``FRAME_SAMPLES`` int16 samples) holds speech."""
        if samples.size * 1000 // SAMPLE_RATE != FRAME_MS:
            return False
        if rms(samples) < self.min_rms:
            return False
        return bool(self._vad.is_speech(samples.astype("<i2").tobytes(), SAMPLE_RATE))


@dataclass
class Utterance:
    """One stretch of speech.

    Attributes:
        pcm: 16 kHz mono PCM, pre-roll included.
        start_s: Monotonic time of the speech onset (first speech frame).
        end_s: Monotonic time of the last speech frame's end.
        detected_s: When the onset was declared (``start_s`` + detection delay).
        truncated: Cut at ``max_utterance_s``.
        notes: What is wrong with it, for people (clipping, ...).
        speech_frames: Speech frames in it (a :class:`Pause` with the same count and
            ``start_s`` saw all of its speech).
    """

    pcm: bytes
    start_s: float
    end_s: float
    detected_s: float
    truncated: bool = False
    notes: list[str] = field(default_factory=list)
    speech_frames: int = 0

    @property
    def duration_s(self) -> float:
        """Duration of the PCM in seconds."""
        return len(self.pcm) / 2 / SAMPLE_RATE


@dataclass(frozen=True)
class Onset:
    """Speech began (the barge-in signal). ``start_s``: first speech frame; ``detected_s``:
    when it was declared."""

    start_s: float
    detected_s: float


@dataclass(frozen=True)
class Pause:
    """Speech stopped for ``early_ms`` inside an open utterance: perhaps its end.

    Attributes:
        pcm: The utterance so far (pre-roll included), 16 kHz mono PCM.
        start_s: Monotonic time of the utterance's onset.
        speech_frames: Speech frames so far; the :class:`Utterance` that ends with the same
            ``start_s`` and count had no speech after this pause.
    """

    pcm: bytes
    start_s: float
    speech_frames: int


class Endpointer:
    """Segments frames into utterances from per-frame speech decisions.

    Args:
        onset_ms: Speech needed within the last ``onset_window_ms`` to declare an onset.
        onset_window_ms: The window for ``onset_ms``.
        end_silence_ms: Silence that ends an utterance.
        pre_roll_ms: Audio kept from before the onset.
        max_utterance_s: Longest utterance; a longer one is cut and a new one starts.
        min_utterance_ms: Speech shorter than this is discarded (a cough, a click).
        early_ms: Silence after which a :class:`Pause` is reported (0: never; at least
            ``end_silence_ms``: never).
    """

    def __init__(
        self,
        *,
        onset_ms: int = 60,
        onset_window_ms: int = 100,
        end_silence_ms: int = 600,
        pre_roll_ms: int = 200,
        max_utterance_s: float = 30.0,
        min_utterance_ms: int = 200,
        early_ms: int = 200,
    ) -> None:
        self._onset_frames = max(1, onset_ms // FRAME_MS)
        self._window: deque[bool] = deque(maxlen=max(1, onset_window_ms // FRAME_MS))
        self._end_frames = max(1, end_silence_ms // FRAME_MS)
        self._pre: deque[AudioFrame] = deque(maxlen=max(1, pre_roll_ms // FRAME_MS))
        self._max_bytes = int(max_utterance_s * SAMPLE_RATE) * 2
        self._min_speech_frames = max(1, min_utterance_ms // FRAME_MS)
        early = early_ms // FRAME_MS
        self._early_frames = early if 0 < early < self._end_frames else 0
        self._active = False
        self._buf = bytearray()
        self._silence = 0
        self._speech_frames = 0
        self._start_s = 0.0
        self._detected_s = 0.0
        self._last_speech_end = 0.0

    @property
    def active(self) -> bool:
        """True while an utterance is open."""
        return self._active

    def push(self, frame: AudioFrame, speech: bool) -> list[Onset | Pause | Utterance | None]:
        """Feed one frame and its decision; returns what happened.

        The list holds an :class:`Onset` when speech began, a :class:`Pause` after
        ``early_ms`` of silence in an utterance, an :class:`Utterance` when one ended, and
        ``None`` when an open utterance was discarded as too short (a false start: the caller
        resumes what the onset interrupted).
        """
        out: list[Onset | Pause | Utterance | None] = []
        self._window.append(speech)
        if not self._active:
            self._pre.append(frame)
            if sum(self._window) >= self._onset_frames:
                self._active = True
                frames = list(self._pre)
                decisions = list(self._window)
                first = len(frames) - len(decisions) + decisions.index(True)
                self._start_s = frames[max(0, first)].t_s
                self._detected_s = frame.t_s + frame.duration_s
                self._buf = bytearray(b"".join(f.pcm for f in frames))
                self._pre.clear()
                self._silence = 0
                self._speech_frames = sum(self._window)
                self._last_speech_end = self._detected_s
                out.append(Onset(self._start_s, self._detected_s))
            return out
        self._buf.extend(frame.pcm)
        if speech:
            self._silence = 0
            self._speech_frames += 1
            self._last_speech_end = frame.t_s + frame.duration_s
        else:
            self._silence += 1
        if len(self._buf) >= self._max_bytes:
            out.append(self._finish(truncated=True))
        elif self._silence >= self._end_frames:
            out.append(self._finish(truncated=False))
        elif (
            self._early_frames
            and self._silence == self._early_frames
            and self._speech_frames >= self._min_speech_frames
        ):
            out.append(Pause(bytes(self._buf), self._start_s, self._speech_frames))
        return out

    def flush(self) -> Utterance | None:
        """End an open utterance at end of input (None when none is open or it is too short)."""
        if not self._active:
            return None
        return self._finish(truncated=False)

    def _finish(self, truncated: bool) -> Utterance | None:
        pcm = bytes(self._buf)
        speech_frames = self._speech_frames
        self._active = False
        self._buf = bytearray()
        self._window.clear()
        self._silence = 0
        self._speech_frames = 0
        if speech_frames < self._min_speech_frames and not truncated:
            return None
        return Utterance(
            pcm,
            self._start_s,
            self._last_speech_end,
            self._detected_s,
            truncated=truncated,
            speech_frames=speech_frames,
        )

"""Listening (SPEC F4, A6, issue 16): microphone frames -> echo canceller -> VAD -> utterances
-> speech to text -> the channel's handler, with barge-in on voice activity.

:class:`Listener` knows nothing of the agent: it calls ``on_transcript`` with every non-empty
transcript, and the voice channel (``loopact.channels.voice``) turns it into a command or a
stop. Barge-in happens on the *onset* of speech (voice activity for ``onset_ms``), never on a
transcript: the player pauses at once. If the utterance then turns out to be no speech (too
short, an empty transcript, an engine error), the pause is undone (a false interruption, as
LiveKit's users asked for); if it holds words, the handler decides.

Speculative transcription: with an engine that costs only CPU (``stt.speculative``, the
offline Whisper), the utterance so far is transcribed as soon as the endpointer reports a
:class:`~loopact.voice.vad.Pause` (200 ms of silence); when the utterance then ends without
more speech, that transcript is used, so the engine's time overlaps the end-of-utterance
silence instead of following it. Speech after the pause drops it. Endpoints that charge per
request (``OpenAISTT``) are never asked twice.

Events::

    {"type": "speech_in", "state": "started", "t_s": ..., "barge_in": true}
    {"type": "speech_in", "state": "ended", "duration_s": 1.6, "truncated": false, "notes": []}
    {"type": "speech_in", "state": "discarded", "reason": "too short"}
    {"type": "transcript", "text": "move forward one meter", "lang": "en", "engine": "whisper",
     "audio_s": 1.6, "elapsed_s": 0.4, "rtf": 0.25}
    {"type": "transcript", "text": "", "error": "...", "note": "..."}
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from loopact.errors import SpeechEngineError
from loopact.events import EventBus, EventType
from loopact.events.payloads import TranscriptPayload
from loopact.voice.audio import AudioFrame, AudioSource, rms
from loopact.voice.echo import EchoCanceller
from loopact.voice.playback import Player
from loopact.voice.stt import SpeechToText, Transcript
from loopact.voice.vad import Endpointer, Onset, Pause, Utterance, Vad

log = logging.getLogger(__name__)

TranscriptHandler = Callable[[Transcript], Awaitable[None]]


@dataclass
class ListenerStats:
    """What happened, for tests and benchmarks.

    Attributes:
        onsets: Monotonic times of speech onsets (first speech frame).
        barge_ins: ``(onset_s, detected_s)`` of onsets that paused the robot's voice.
        utterances: Utterances that ended.
        transcripts: Transcripts received (also empty ones).
        failed: Utterances whose transcription failed (engine error or timeout).
        heard: Transcripts with words (handed to the handler).
    """

    onsets: list[float] = field(default_factory=list)
    barge_ins: list[tuple[float, float]] = field(default_factory=list)
    utterances: int = 0
    transcripts: list[Transcript] = field(default_factory=list)
    failed: int = 0
    heard: int = 0


class Listener:
    """Turns a source's frames into transcripts.

    Args:
        source: The microphone (or file, pipe, page, topic).
        stt: The speech-to-text engine.
        player: The robot's voice (barge-in pauses it; its played audio is the echo
            reference), or None when nothing is spoken.
        bus: Where ``speech_in`` / ``transcript`` events go.
        on_transcript: Called with each non-empty transcript.
        vad: Frame classifier (a new :class:`Vad` when None).
        endpointer: Utterance segmentation (a new :class:`Endpointer` when None).
        barge_in: Pause the robot's voice on user speech.
        echo_gate: While the robot speaks, the residual after echo cancellation must be at
            least this fraction of the echo's RMS to count as a person speaking.
        lang: The agent's language (``en``/``zh``): a transcript in another one gets a note.
        speculative: Transcribe on a :class:`Pause` (None: when the engine says it is cheap,
            ``stt.speculative``).
    """

    def __init__(
        self,
        source: AudioSource,
        stt: SpeechToText,
        player: Player | None,
        bus: EventBus,
        on_transcript: TranscriptHandler,
        *,
        vad: Vad | None = None,
        endpointer: Endpointer | None = None,
        barge_in: bool = True,
        echo_gate: float = 0.5,
        lang: str | None = None,
        speculative: bool | None = None,
    ) -> None:
        self.source = source
        self.stt = stt
        self.player = player
        self.bus = bus
        self.on_transcript = on_transcript
        self.vad = vad or Vad()
        self.endpointer = endpointer or Endpointer()
        self.barge_in = barge_in
        self.echo_gate = echo_gate
        self.lang = lang
        self.echo = EchoCanceller()
        self._echo_levels: deque[float] = deque(maxlen=5)
        if player is not None:
            player.sink.add_listener(self.echo.add_reference)
        self.stats = ListenerStats()
        self._pending: set[asyncio.Task[None]] = set()
        self._chain: asyncio.Future[None] | None = None
        self._recorders: list[tuple[bytearray, int, asyncio.Future[bytes]]] = []
        self.muted = False
        if speculative is None:
            speculative = bool(getattr(stt, "speculative", False))
        self.speculative = speculative
        self._early: tuple[float, int, asyncio.Future[Transcript]] | None = None

    async def run(self) -> None:
        """Listen until the source ends; then wait for the last transcripts to be handled."""
        try:
            async for frame in self.source.frames():
                self.feed(frame)
        finally:
            utt = self.endpointer.flush()
            if utt is not None:
                self._utterance(utt)
            for buf, _n, fut in self._recorders:
                if not fut.done():
                    fut.set_result(bytes(buf))
            self._recorders.clear()
            self._drop_early()
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def feed(self, frame: AudioFrame) -> None:
        """Process one microphone frame (called for every frame, in order)."""
        self._record(frame)
        if self.muted:
            return
        result = self.echo.process(frame)
        residual = result.residual
        speech = self.vad.is_speech(residual)
        # the gate holds the echo level of the last frames: a frame the canceller could not
        # align still has to be louder than the robot's voice was a moment ago
        self._echo_levels.append(result.echo_rms)
        echo_level = max(self._echo_levels)
        if speech and echo_level > 0 and rms(residual) < self.echo_gate * echo_level:
            speech = False  # what is left is the robot's own voice
        clean = (
            AudioFrame(residual.astype("<i2").tobytes(), frame.t_s) if result.echo_rms else frame
        )
        for event in self.endpointer.push(clean, speech):
            if isinstance(event, Onset):
                self._onset(event)
            elif isinstance(event, Pause):
                self._speculate(event)
            elif isinstance(event, Utterance):
                self._utterance(event)
            else:
                self.bus.emit(EventType.SPEECH_IN, None, state="discarded", reason="too short")
                if self.player is not None:
                    self.player.recover()

    def _onset(self, onset: Onset) -> None:
        self.stats.onsets.append(onset.start_s)
        barged = False
        if self.barge_in and self.player is not None and self.player.playing:
            barged = self.player.barge_in()
            if barged:
                self.stats.barge_ins.append((onset.start_s, onset.detected_s))
        self.bus.emit(
            EventType.SPEECH_IN, None, state="started", t_s=round(onset.start_s, 3), barge_in=barged
        )

    def _utterance(self, utt: Utterance) -> None:
        self.stats.utterances += 1
        samples = np.frombuffer(utt.pcm, dtype="<i2")
        clipped = float(np.mean(np.abs(samples.astype(np.int32)) >= 32000)) if samples.size else 0
        if clipped > 0.005:
            utt.notes.append(f"the speech is clipped ({clipped:.1%} of samples at full scale)")
        # what was converted or is wrong with the whole input (a file's rate, channels,
        # length) holds for every utterance cut from it
        utt.notes[:0] = [str(n) for n in getattr(self.source, "notes", ())]
        if utt.truncated:
            utt.notes.append(
                f"an utterance longer than {utt.duration_s:.0f} s was cut there; "
                "the rest is heard as the next one"
            )
        self.bus.emit(
            EventType.SPEECH_IN,
            None,
            state="ended",
            duration_s=round(utt.duration_s, 3),
            t_s=round(utt.start_s, 3),
            truncated=utt.truncated,
            notes=utt.notes,
        )
        early = self._take_early(utt)
        task = asyncio.ensure_future(self._transcribe(utt, self._chain, early))
        self._chain = task
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    # ------------------------------------------------------------------ speculation
    def _speculate(self, pause: Pause) -> None:
        """Start transcribing the utterance so far (it may be complete)."""
        if not self.speculative:
            return
        self._drop_early()
        fut = asyncio.ensure_future(self.stt.transcribe(pause.pcm, None))
        fut.add_done_callback(_retrieve)
        self._early = (pause.start_s, pause.speech_frames, fut)

    def _take_early(self, utt: Utterance) -> asyncio.Future[Transcript] | None:
        """The speculative transcription of ``utt`` if it heard all of its speech."""
        early, self._early = self._early, None
        if early is None:
            return None
        start_s, frames, fut = early
        if start_s == utt.start_s and frames == utt.speech_frames and not fut.cancelled():
            return fut
        fut.cancel()
        return None

    def _drop_early(self) -> None:
        early, self._early = self._early, None
        if early is not None:
            early[2].cancel()

    async def _transcribe(
        self,
        utt: Utterance,
        before: asyncio.Future[None] | None,
        early: asyncio.Future[Transcript] | None = None,
    ) -> None:
        t_end = time.monotonic()
        try:
            # no language hint: the engine detects it (a Chinese command to an English agent)
            transcript: Transcript | None = await (
                early if early is not None else self.stt.transcribe(utt.pcm, None)
            )
            error = None
        except SpeechEngineError as exc:
            transcript, error = None, str(exc)
        except Exception as exc:  # an engine bug must not stop the listener
            log.exception("speech to text failed")
            transcript, error = None, f"speech to text failed: {type(exc).__name__}: {exc}"
        if before is not None:  # hand transcripts over in the order they were spoken
            with contextlib.suppress(Exception):
                await asyncio.shield(before)
        if transcript is None:
            self.stats.failed += 1
            self.bus.emit(
                EventType.TRANSCRIPT,
                None,
                text="",
                error=error,
                note="not understood; type the command instead",
            )
            if self.player is not None:
                self.player.recover()
            return
        self.stats.transcripts.append(transcript)
        data: TranscriptPayload = {
            "text": transcript.text,
            "lang": transcript.lang,
            "engine": transcript.engine,
            "audio_s": round(transcript.audio_s, 3),
            "elapsed_s": round(transcript.elapsed_s, 3),
            "rtf": round(transcript.rtf, 3),
            "latency_s": round(time.monotonic() - t_end, 3),
        }
        words = transcript.text.strip(" .,!?。！？…-")
        if not words:
            data["note"] = "no words recognised (silence or noise); nothing was sent"
        elif self.lang and transcript.lang != self.lang:
            data["note"] = f"heard {transcript.lang} while the agent language is {self.lang}"
        self.bus.emit(EventType.TRANSCRIPT, None, **data)
        if not words:
            if self.player is not None:
                self.player.recover()
            return
        self.stats.heard += 1
        # the whole utterance goes with its words (a model may hear it, SPEC B8)
        await self.on_transcript(dataclasses.replace(transcript, pcm=utt.pcm))

    # ------------------------------------------------------------------ recording
    def _record(self, frame: AudioFrame) -> None:
        if not self._recorders:
            return
        keep = []
        for buf, n, fut in self._recorders:
            buf.extend(frame.pcm)
            if len(buf) >= n or fut.done():
                if not fut.done():
                    fut.set_result(bytes(buf[:n]))
            else:
                keep.append((buf, n, fut))
        self._recorders = keep

    async def record(self, seconds: float) -> bytes:
        """The next ``seconds`` of microphone audio (shorter if the input ends)."""
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._recorders.append((bytearray(), int(seconds * 16000) * 2, fut))
        return await fut


def _retrieve(fut: asyncio.Future[Transcript]) -> None:
    """Mark a dropped speculative transcription's error as seen (it is never used)."""
    if not fut.cancelled():
        fut.exception()

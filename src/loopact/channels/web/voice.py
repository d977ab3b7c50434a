"""The web console's microphone and speaker (SPEC F4, F2, G3, issue 16).

Over the console's one WebSocket (``/ws``, behind the same token and origin checks as
everything else): the page sends its microphone as binary messages of 16 kHz mono s16le PCM
(at most :data:`MAX_FRAME_BYTES` each) and control messages
``{"type": "mic", "state": "start" | "stop", "mode": "ptt" | "handsfree"}``; the server sends
the robot's voice back as binary messages of the same format, paced in real time, and the
``speech_in`` / ``transcript`` / ``speech_out`` events as usual.

Push-to-talk: the page sends audio only while the button is held; releasing it ends the
utterance at once. Hands-free: the page streams continuously and voice activity detection ends
each utterance. Speech from the page's microphone while the robot speaks is a barge-in: the
robot stops talking at once (the page drops what it still had queued on ``speech_out`` paused
or stopped). The pipeline starts on the first ``mic start`` and speaks only the replies to the
commands spoken on the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from loopact.channels.agent_port import AgentPort
from loopact.channels.voice import VoiceChannel
from loopact.events import EventBus
from loopact.voice.audio import FRAME_BYTES, SAMPLE_RATE, AudioFrame, ClockedSink
from loopact.voice.listen import Listener
from loopact.voice.playback import Player
from loopact.voice.stt import SpeechToText
from loopact.voice.tts import TextToSpeech

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 64 * 1024
"""Largest binary message a page may send (2 s of audio)."""
_END_SILENCE_S = 0.8
_MAX_QUEUED = 500


class WebMicSource:
    """The pages' microphones as one source (frames stamped on arrival)."""

    name = "web microphone"

    def __init__(self) -> None:
        self._queue: asyncio.Queue[AudioFrame | None] = asyncio.Queue(_MAX_QUEUED)
        self._pending = bytearray()
        self._closed = False

    def push(self, pcm: bytes) -> None:
        """Add PCM from a page (cut into frames; a full queue drops the oldest frame)."""
        self._pending.extend(pcm)
        now = time.monotonic()
        while len(self._pending) >= FRAME_BYTES:
            chunk = bytes(self._pending[:FRAME_BYTES])
            del self._pending[:FRAME_BYTES]
            if self._queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    self._queue.get_nowait()
            self._queue.put_nowait(AudioFrame(chunk, now))

    def end_utterance(self) -> None:
        """Push-to-talk released: silence that ends the utterance now."""
        self._pending.clear()
        self.push(b"\0\0" * int(_END_SILENCE_S * SAMPLE_RATE))

    async def frames(self) -> AsyncIterator[AudioFrame]:
        """Frames as pages send them, until :meth:`close`."""
        while not self._closed:
            frame = await self._queue.get()
            if frame is None:
                return
            yield frame

    async def close(self) -> None:
        """End :meth:`frames`."""
        self._closed = True
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)


class WebSpeakerSink(ClockedSink):
    """The robot's voice to every page that has the speaker on (real-time paced)."""

    def __init__(self) -> None:
        super().__init__("web speaker")
        self.links: set[AudioLink] = set()

    def emit(self, pcm: bytes, t_s: float) -> None:
        """Send the played chunk to each listening page."""
        for link in list(self.links):
            link.send(pcm)


class AudioLink:
    """One page's audio over its WebSocket."""

    def __init__(self, voice: WebVoice) -> None:
        self.voice = voice
        self.outgoing: asyncio.Queue[bytes] = asyncio.Queue(_MAX_QUEUED)
        self.mic_on = False
        self.mode = "ptt"

    def send(self, pcm: bytes) -> None:
        """Queue audio for the page (dropped when the page lags far behind)."""
        if not self.outgoing.full():
            self.outgoing.put_nowait(pcm)

    def receive(self, data: bytes) -> str | None:
        """Audio from the page; returns an error text for the page, or None."""
        if len(data) > MAX_FRAME_BYTES:
            return f"audio message of {len(data)} bytes refused (at most {MAX_FRAME_BYTES})"
        if len(data) % 2:
            return "audio must be 16-bit PCM (an even number of bytes)"
        if not self.mic_on:
            return None  # late frames after release
        self.voice.source.push(data)
        return None

    def control(self, message: dict[str, Any]) -> str | None:
        """A ``mic`` control message; returns an error text, or None.

        Args:
            message: ``{"type": "mic", "state": "start"|"stop", "mode": "ptt"|"handsfree"}``
                (``mode`` only with ``start``; without it, push-to-talk). An unknown
                ``state`` or ``mode`` is refused and changes nothing.
        """
        if message.get("type") != "mic":
            return None
        refusal = self.voice.refusal
        if refusal is not None:
            return refusal
        state = message.get("state")
        mode = message.get("mode", "ptt")
        if state == "start" and mode not in ("ptt", "handsfree"):
            return f"mic mode {mode!r}: expected ptt or handsfree"
        if state == "start":
            self.voice.start()
            self.mode = str(mode)
            self.mic_on = True
        elif state == "stop":
            if self.mic_on and self.mode == "ptt":
                self.voice.source.end_utterance()
            self.mic_on = False
        else:
            return f"mic state {state!r}: expected start or stop"
        return None

    def close(self) -> None:
        """The page left."""
        self.voice.sink.links.discard(self)


class WebVoice:
    """The voice pipeline behind the console's microphone button.

    Args:
        agent: The agent.
        bus: Its event bus.
        stt: Builds the speech-to-text engine (on the first ``mic start``).
        tts: Builds the text-to-speech engine, or returns None (text replies only).
        refusal: Why voice is refused (G3: ``agent.modality`` without voice), or None.
        options: Builds the :class:`Listener` keyword arguments (``voice`` settings: VAD,
            end of utterance, barge-in, language); None for the defaults.
        to_model: What of a spoken command the model gets (``voice.to_model``: transcript,
            audio or both; SPEC B8).
    """

    def __init__(
        self,
        agent: AgentPort,
        bus: EventBus,
        stt: Callable[[], SpeechToText],
        tts: Callable[[], TextToSpeech | None],
        refusal: str | None = None,
        options: Callable[[], dict[str, Any]] | None = None,
        to_model: str = "transcript",
    ) -> None:
        self.agent = agent
        self.to_model = to_model
        self._options = options or dict
        self.bus = bus
        self._stt_factory = stt
        self._tts_factory = tts
        self.refusal = refusal
        self.source = WebMicSource()
        self.sink = WebSpeakerSink()
        self.player: Player | None = None
        self.listener: Listener | None = None
        self.channel: VoiceChannel | None = None
        self._task: asyncio.Task[None] | None = None
        self._stt: SpeechToText | None = None
        self._warm: asyncio.Future[None] | None = None

    def connect(self) -> AudioLink:
        """A new page: its audio link (it hears the robot's voice from now on)."""
        link = AudioLink(self)
        self.sink.links.add(link)
        return link

    def start(self) -> None:
        """Build and start the pipeline (once)."""
        if self._task is not None:
            return
        self.player = Player(self.sink, self._tts_factory(), self.bus)
        self.channel = VoiceChannel(
            self.agent, self.player, source="web", speak="own", to_model=self.to_model
        )
        self._stt = self._stt_factory()
        self.listener = Listener(
            self.source,
            self._stt,
            self.player,
            self.bus,
            self.channel.on_transcript,
            **self._options(),
        )
        self._task = asyncio.ensure_future(self.listener.run())
        warm_up = getattr(self._stt, "warm_up", None)
        if warm_up is not None:  # load the offline model now, not on the first utterance
            self._warm = asyncio.ensure_future(warm_up())
            self._warm.add_done_callback(_warmed)

    async def close(self) -> None:
        """Stop listening and speaking."""
        await self.source.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.player is not None:
            await self.player.close()
        if self.channel is not None:
            self.channel.close()
        if self._warm is not None:
            self._warm.cancel()
        if self._stt is not None:
            await self._stt.aclose()
        await self.sink.close()


def _warmed(fut: asyncio.Future[None]) -> None:
    """A model that cannot load is said by the first transcription (``transcript`` error)."""
    if not fut.cancelled() and fut.exception() is not None:
        log.warning("the speech model did not load: %s", fut.exception())


def parse_control(text: str) -> dict[str, Any] | None:
    """A page's JSON text message, or None when it is not a JSON object (nor one nested
    deeply enough to exhaust the decoder's recursion)."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None

"""Speaking replies (SPEC F4, issue 16): sentences synthesised ahead and played in order,
tagged with a generation id, with pause, resume, stop and barge-in.

Every reply gets a new *generation* (:meth:`Player.begin`); its sentences are synthesised as
soon as they arrive (while the previous one plays) and played in order. A sentence of an older
generation is never played: a new command drops the queued audio of the old reply (pipecat's
users saw stale sentences spoken after an interruption). Between two 20 ms frames the player
checks whether to pause or stop, and :meth:`AudioSink.abort` drops the device buffer, so
playback stops within a frame or two.

Barge-in (:meth:`Player.barge_in`) pauses at once and keeps the rest of the sentence: a false
interruption (a cough; no words) :meth:`Player.recover` resumes it, a real command
:meth:`Player.stop` drops it.

Events (``speech_out``, one per sentence when it starts, and one per change of state)::

    {"type": "speech_out", "task_id": "...", "state": "playing", "text": "...", "lang": "en",
     "engine": "espeak", "duration_s": 1.9, "gen": 3, "n": 1}
    {"type": "speech_out", "state": "paused" | "resumed" | "stopped" | "failed", "reason": ...}
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from loopact.errors import SpeechEngineError
from loopact.events import EventBus, EventType
from loopact.voice.audio import FRAME_BYTES, AudioSink
from loopact.voice.text import language_of
from loopact.voice.tts import Speech, TextToSpeech

log = logging.getLogger(__name__)


@dataclass
class _Item:
    gen: int
    n: int
    task_id: str | None
    text: str
    lang: str
    speech: asyncio.Future[Speech | None]
    pos: int = 0
    started: bool = False


@dataclass
class PlayerStats:
    """Counters for tests and benchmarks.

    Attributes:
        sentences: Sentences that started playing.
        stops: Playbacks stopped before their end.
        barge_ins: Barge-in pauses.
        stopped_at: Monotonic times at which playback went silent because of a pause/stop.
    """

    sentences: int = 0
    stops: int = 0
    barge_ins: int = 0
    stopped_at: list[float] = field(default_factory=list)


class Player:
    """Plays synthesised sentences on a sink.

    Args:
        sink: Where audio goes.
        tts: The speech engine, or None for no speech (text only).
        bus: Where ``speech_out`` events go.
    """

    def __init__(self, sink: AudioSink, tts: TextToSpeech | None, bus: EventBus) -> None:
        self.sink = sink
        self.tts = tts
        self.bus = bus
        self.gen = 0
        self._n = 0
        self._task_id: str | None = None
        self._queue: deque[_Item] = deque()
        self._current: _Item | None = None
        self._wake = asyncio.Event()
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._paused_by: str | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._worker: asyncio.Task[None] | None = None
        self._tts_failed = False
        self.stats = PlayerStats()
        self.last_write_s = 0.0

    # ------------------------------------------------------------------ state
    @property
    def playing(self) -> bool:
        """True while audio is coming out (a sentence is playing and not paused)."""
        return self._current is not None and self._current.started and self._paused_by is None

    @property
    def busy(self) -> bool:
        """True while anything is playing, paused or queued."""
        return self._current is not None or bool(self._queue)

    @property
    def paused(self) -> str | None:
        """Why playback is paused (``barge-in``, ``user``), or None."""
        return self._paused_by

    async def wait_idle(self) -> None:
        """Wait until everything queued has been played (or dropped)."""
        await self._idle.wait()
        await self.sink.drain()

    # ------------------------------------------------------------------ input
    def begin(self, task_id: str | None) -> int:
        """Start a new reply: older generations' audio is dropped. Returns the generation."""
        self.gen += 1
        self._n = 0
        self._task_id = task_id
        stale = [i for i in self._queue if i.gen != self.gen]
        for item in stale:
            self._queue.remove(item)
            item.speech.cancel()
        if self._current is not None and self._current.gen != self.gen:
            self._halt("stopped", "new reply", self._current)
        return self.gen

    def say(self, text: str, lang: str | None = None, task_id: str | None = None) -> None:
        """Queue one sentence of the current reply (synthesis starts now)."""
        text = text.strip()
        if not text or self.tts is None or self._tts_failed:
            return
        self._n += 1
        lang = lang or language_of(text)
        fut = asyncio.ensure_future(self._synth(text, lang))
        self._queue.append(_Item(self.gen, self._n, task_id or self._task_id, text, lang, fut))
        self._kick()

    def play_pcm(self, pcm: bytes, label: str, task_id: str | None = None) -> None:
        """Queue recorded audio (the ``play`` tool) as its own generation."""
        self.begin(task_id)
        fut: asyncio.Future[Speech | None] = asyncio.get_running_loop().create_future()
        fut.set_result(Speech(pcm, label, "", "file", 0.0))
        self._n += 1
        self._queue.append(_Item(self.gen, self._n, task_id, label, "", fut))
        self._kick()

    async def _synth(self, text: str, lang: str) -> Speech | None:
        assert self.tts is not None
        try:
            return await self.tts.synthesize(text, lang)
        except asyncio.TimeoutError:
            self._event("failed", text=text, error=f"{self.tts.name}: speech synthesis timed out")
        except SpeechEngineError as exc:
            if not self._tts_failed:
                self._tts_failed = "not installed" in str(exc)
                self._event("failed", text=text, error=str(exc))
        return None

    def _kick(self) -> None:
        self._idle.clear()
        self._wake.set()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._run())

    # ------------------------------------------------------------------ controls
    def pause(self, reason: str = "user") -> bool:
        """Pause now (the rest of the sentence is kept); False when nothing plays."""
        if self._current is None or self._paused_by is not None:
            return False
        self._paused_by = reason
        self._resumed.clear()
        self._rewind()
        self.stats.stopped_at.append(time.monotonic())
        self._event("paused", reason=reason, item=self._current)
        return True

    def resume(self) -> bool:
        """Resume a paused sentence; False when nothing is paused."""
        if self._paused_by is None:
            return False
        self._paused_by = None
        self._resumed.set()
        self._event("resumed", item=self._current)
        return True

    def stop(self, reason: str = "user") -> bool:
        """Stop now and drop everything queued; False when nothing was playing or queued."""
        had = self.busy
        for item in self._queue:
            item.speech.cancel()
        self._queue.clear()
        if self._current is not None:
            self._halt("stopped", reason, self._current)
        elif had:
            self._event("stopped", reason=reason)
        self._paused_by = None
        self._resumed.set()
        return had

    def barge_in(self) -> bool:
        """The user started speaking over the robot: pause at once (False if silent)."""
        if not self.playing:
            return False
        self.stats.barge_ins += 1
        return self.pause("barge-in")

    def recover(self) -> bool:
        """A barge-in turned out to be no speech: resume what it paused."""
        if self._paused_by != "barge-in":
            return False
        return self.resume()

    def _rewind(self) -> None:
        dropped = self.sink.abort()
        if self._current is not None:
            self._current.pos = max(0, self._current.pos - dropped * 2)

    def _halt(self, state: str, reason: str, item: _Item) -> None:
        if self._paused_by is None:
            self.sink.abort()
            self.stats.stopped_at.append(time.monotonic())
        self.stats.stops += 1
        item.speech.cancel()
        self._event(state, reason=reason, item=item)  # with the generation it was part of
        item.gen = -1  # the worker sees it is dropped
        self._current = None
        self._paused_by = None
        self._resumed.set()

    # ------------------------------------------------------------------ worker
    async def _run(self) -> None:
        while self._queue:
            item = self._queue.popleft()
            self._current = item
            try:
                speech = await item.speech
            except asyncio.CancelledError:
                speech = None
            if speech is None or item.gen != self.gen:
                if self._current is item:
                    self._current = None
                continue
            await self._play(item, speech)
            if self._current is item:
                self._current = None
        self._idle.set()

    async def _play(self, item: _Item, speech: Speech) -> None:
        pcm = speech.pcm
        while item.pos < len(pcm):
            if item.gen != self.gen:
                return
            if self._paused_by is not None:
                await self._resumed.wait()
                continue
            if not item.started:
                item.started = True
                self.stats.sentences += 1
                self._event(
                    "playing",
                    item=item,
                    engine=speech.engine,
                    duration_s=round(speech.duration_s, 3),
                    synth_s=round(speech.elapsed_s, 3),
                )
            chunk = pcm[item.pos : item.pos + FRAME_BYTES]
            item.pos += len(chunk)
            self.last_write_s = time.monotonic()
            await self.sink.write(chunk)

    def _event(self, state: str, item: _Item | None = None, **data: Any) -> None:
        fields: dict[str, Any] = {"state": state, "gen": self.gen}
        task_id = self._task_id
        if item is not None:
            fields.update(
                text=item.text, lang=item.lang, gen=item.gen if item.gen >= 0 else None, n=item.n
            )
            task_id = item.task_id
        fields.update(data)
        self.bus.emit(EventType.SPEECH_OUT, task_id, **fields)

    async def close(self) -> None:
        """Stop playing and end the worker."""
        self.stop("shutdown")
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker

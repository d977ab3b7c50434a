"""The voice channel (SPEC F4, A6, issue 16): spoken commands in, replies spoken as they stream.

:class:`VoiceChannel` joins a :class:`~loopact.voice.listen.Listener` (microphone ->
transcripts) and a :class:`~loopact.voice.playback.Player` (the robot's voice) to the agent:

- a transcript that is only "stop" / "停" / "停止" stops the robot's voice and goes to
  :meth:`Agent.submit`, which stops the task and the robot without the model (the one stop path
  of the runtime); any other transcript is submitted as a command (``source="voice"``) and
  preempts the running task like a typed one; with ``to_model`` ``audio`` or ``both`` the
  utterance itself goes with it as a WAV clip, instead of or beside its transcript, for a model
  that hears audio (SPEC B8; a model that does not gets the transcript);
- every task's reply is spoken sentence by sentence from its ``text_delta`` events while it
  streams, each task in its own generation (a new task drops the old reply's audio);
- a reply that did not stream (a bound's fallback text) is spoken from its ``reply`` event;
- issue 41: what the agent says with ``send_message`` / ``say`` (a ``message`` event:
  continuous mode talks this way) is spoken too, with barge-in like every reply;
  "emergency stop" / "紧急停止" latches the robot's emergency stop (the operator's panel)
  and stops the task; while a confirmation waits and ``voice`` may answer
  (``confirm.channels``), the question is spoken and a spoken yes/no (是, 好, 否, 不)
  answers it; the emergency stop's latch and release and an operator's takeover are said.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from loopact.agent.confirm import parse_answer
from loopact.agent.runtime import is_stop
from loopact.channels.agent_port import AgentPort
from loopact.channels.panel_text import panel_line
from loopact.events import Event, EventType
from loopact.events.payloads import DeltaPayload, TaskEndPayload, TextPayload
from loopact.i18n import t
from loopact.llm.messages import Audio
from loopact.voice.audio import duration_s, wav_bytes
from loopact.voice.listen import Listener
from loopact.voice.playback import Player
from loopact.voice.stt import Transcript
from loopact.voice.text import SentenceSplitter

log = logging.getLogger(__name__)

_SPOKEN_STOP = re.compile(r"(?:stop|停止|停)+")
_SPOKEN_ESTOP = re.compile(r"(?:emergencystop|estop|紧急停止|紧急停|急停)+")
_NOT_WORDS = re.compile(r"[\s.,;:!?…\-—'\"。，、；：！？]+")


def is_spoken_stop(text: str) -> bool:
    """True when a transcript is only stop words, as a speech engine writes them: "Stop!",
    "Stop, stop!", "停，停！" (the engine's punctuation and repeats ignored; a typed command
    is judged by :func:`~loopact.agent.runtime.is_stop`). "Stop it" is a command."""
    compact = _NOT_WORDS.sub("", text).lower()
    return bool(compact) and (is_stop(text) or _SPOKEN_STOP.fullmatch(compact) is not None)


def is_spoken_estop(text: str) -> bool:
    """True when a transcript is only "emergency stop" / "紧急停止" (also "e-stop", "急停"),
    as a speech engine writes it: "Emergency stop!", "Emergency, stop." (issue 41)."""
    compact = _NOT_WORDS.sub("", text).lower()
    return bool(compact) and _SPOKEN_ESTOP.fullmatch(compact) is not None


class VoiceChannel:
    """Speech in and out for one agent.

    Args:
        agent: The agent.
        player: The robot's voice, or None (transcripts only).
        listener: Set with :meth:`attach_listener` (it needs this channel's handler).
        source: The ``source`` of submitted commands.
        speak: ``all`` speaks every task's reply; ``own`` only the replies to the commands
            this channel submitted (the web console's microphone).
        to_model: What of a spoken command goes to the model (``voice.to_model``):
            ``transcript``, ``audio`` (the clip instead of its words) or ``both``.
        panel: The robot's emergency stop (issue 41), or None without a robot.

    Attributes:
        outcomes: ``task_end`` statuses of the tasks that voice commands started, in order.
    """

    def __init__(
        self,
        agent: AgentPort,
        player: Player | None,
        source: str = "voice",
        speak: str = "all",
        to_model: str = "transcript",
        panel: Any = None,
    ) -> None:
        self.agent = agent
        self.panel = panel
        self.lang = agent.options.lang
        self.to_model = to_model
        self.speak = speak
        self.player = player
        self.source = source
        self.listener: Listener | None = None
        self._splitters: dict[str, SentenceSplitter] = {}
        self._streamed: dict[str, str] = {}
        self._spoken_any: dict[str, bool] = {}
        self._voice_tasks: set[str] = set()
        self.outcomes: list[tuple[str, str]] = []
        self.submitted = 0
        self._unsubscribe = agent.bus.subscribe(self._on_event)
        self._changed = asyncio.Event()

    async def on_transcript(self, transcript: Transcript) -> None:
        """Handle one transcript: an emergency stop, a stop, a confirmation answer, or a
        command that preempts the running task."""
        text = transcript.text.strip()
        if is_spoken_estop(text):
            if self.player is not None:
                self.player.stop("emergency stop")
            self.agent.stop(self.source)  # the task too; then the latch, which is said
            if self.panel is not None:
                await self.panel.latch(self.source, f"spoken: {text}")
            return
        if self._answered(text):
            return
        if is_spoken_stop(text):
            if self.player is not None:
                self.player.stop("spoken stop")
            self.agent.submit(text if is_stop(text) else "stop", source=self.source)
            return
        if self.player is not None:
            self.player.stop("new command")
        task_id = self.agent.submit(text, source=self.source, audio=self._clips(transcript, text))
        self.submitted += 1
        if task_id is not None:
            self._voice_tasks.add(task_id)
        self._changed.set()

    def _answered(self, text: str) -> bool:
        """A spoken yes/no while a confirmation waits (issue 41); True when it answered."""
        said = parse_answer(text)
        pending = self.agent.broker.pending
        if said is None or said[0] is not None or not pending:
            return False
        if self.player is not None:
            self.player.stop("answer")
        self.agent.answer_confirmation(pending[0], said[1], self.source)
        return True

    def _clips(self, transcript: Transcript, text: str) -> tuple[Audio, ...]:
        """The spoken clip that goes to the model with the command (``to_model``), if any."""
        if self.to_model == "transcript" or not transcript.pcm:
            return ()
        clip = Audio(
            wav_bytes(transcript.pcm),
            "wav",
            duration_s(transcript.pcm),
            transcript=text,
            instead_of_text=self.to_model == "audio",
        )
        return (clip,)

    # ------------------------------------------------------------------ speaking
    def _on_event(self, ev: Event) -> None:
        player = self.player
        tid = ev.task_id or ""
        typ = ev.type
        if self.speak == "own" and tid not in self._voice_tasks and typ != EventType.STOP:
            return
        if typ == EventType.TASK_START:
            self._splitters[tid] = SentenceSplitter()
            self._streamed[tid] = ""
            if player is not None:
                player.begin(ev.task_id)
        elif typ == EventType.TEXT_DELTA:
            delta = str(ev.payload(DeltaPayload).get("text", ""))
            self._streamed[tid] = self._streamed.get(tid, "") + delta
            splitter = self._splitters.setdefault(tid, SentenceSplitter())
            for sentence in splitter.feed(delta):
                self._say(sentence, ev.task_id)
        elif typ == EventType.MODEL_REQUEST:
            self._streamed[tid] = ""
        elif typ == EventType.MODEL_RETRY:
            self._splitters.get(tid, SentenceSplitter()).reset()
        elif typ == EventType.MODEL_RESPONSE:
            pending = self._splitters.get(tid)
            rest = pending.flush() if pending is not None else None
            if rest:
                self._say(rest, ev.task_id)
        elif typ == EventType.REPLY:
            reply = str(ev.payload(TextPayload).get("text", "")).strip()
            if reply and reply != self._streamed.get(tid, "").strip():
                splitter = SentenceSplitter()
                for sentence in splitter.feed(reply + "\n"):
                    self._say(sentence, ev.task_id)
        elif typ == EventType.MESSAGE:
            self._say_message(ev)
        elif typ == EventType.CONFIRM_REQUEST and self.agent.broker.may_answer(self.source):
            self._say(t("confirm.spoken", self.lang, name=str(ev.data.get("name"))), ev.task_id)
        elif typ in (EventType.GOVERNOR, EventType.CONFIRM_REFUSED):
            said = panel_line(ev, self.lang)
            decision = ev.data.get("decision")
            if said and (typ == EventType.GOVERNOR and decision != "estop_reset_refused"):
                self._say(said, ev.task_id)
        elif typ == EventType.STOP:
            if player is not None:
                player.stop("stop")
        elif typ == EventType.TASK_END:
            self._splitters.pop(tid, None)
            self._streamed.pop(tid, None)
            if tid in self._voice_tasks:
                self._voice_tasks.discard(tid)
                self.outcomes.append((tid, str(ev.payload(TaskEndPayload).get("status"))))
            self._changed.set()

    def _say_message(self, ev: Event) -> None:
        """``send_message`` / ``say``: spoken, unless it is the reply that streamed already."""
        text = str(ev.data.get("text", "")).strip()
        tid = ev.task_id or ""
        if not text or text == self._streamed.get(tid, "").strip():
            return
        splitter = SentenceSplitter()
        for sentence in splitter.feed(text + "\n"):
            self._say(sentence, ev.task_id)

    def _say(self, sentence: str, task_id: str | None) -> None:
        if self.player is not None:
            self.player.say(sentence, task_id=task_id)

    # ------------------------------------------------------------------ running
    async def wait_done(self) -> None:
        """Wait until the agent is idle and everything has been spoken (end of an input file)."""
        while True:
            await self.agent.wait_idle()
            if self.player is not None:
                await self.player.wait_idle()
            await asyncio.sleep(0)
            if not self.agent.busy and (self.player is None or not self.player.busy):
                return

    def exit_code(self) -> int:
        """``--once`` exit code over the voice commands: 1 if any failed, else 3 if any ended
        on a bound, else 0 (preempted tasks count as handled)."""
        statuses = {status for _tid, status in self.outcomes}
        if "failed" in statuses:
            return 1
        if "bounded" in statuses:
            return 3
        return 0

    def status(self) -> dict[str, Any]:
        """For ``/status``: playing, paused, generation."""
        player = self.player
        return {
            "playing": bool(player and player.playing),
            "paused": player.paused if player else None,
            "gen": player.gen if player else 0,
        }

    def close(self) -> None:
        """Stop following the agent's events."""
        self._unsubscribe()

"""Barge-in and the robot's own voice, through the real pipeline in a simulated room
(issue 16 acceptance 3, and barge-in itself): espeak-ng speech, the real VAD and echo
canceller, the real player and sink clock, the real agent on the real OpenAI provider against
the scripted model server (transcripts from its ``transcriptions`` lane)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.agent.helpers import Recorder, make_agent
from tests.voice.helpers import needs_espeak, speak

from loopact.channels.voice import VoiceChannel
from loopact.voice.listen import Listener
from loopact.voice.playback import Player
from loopact.voice.room import Room
from loopact.voice.stt import OpenAISTT
from loopact.voice.tts import EspeakTTS

pytestmark = needs_espeak

LONG_REPLY = (
    "The room is about five meters wide. There is a red box near the wall. "
    "A green ball lies on the floor to the left. The door is behind you. "
    "The floor is clear between us."
)


class Rig:
    def __init__(self, agent: Any, rec: Recorder, room: Room) -> None:
        self.agent, self.rec, self.room = agent, rec, room
        self.player = Player(room.speaker, EspeakTTS(rate_wpm=200), agent.bus)
        self.channel = VoiceChannel(agent, self.player)
        self.stt = OpenAISTT(agent.model.base_url, "whisper-1", "k", timeout_s=10)
        self.listener = Listener(
            room.microphone, self.stt, self.player, agent.bus, self.channel.on_transcript
        )


@pytest.fixture
async def rig_factory(tmp_path: Path) -> AsyncIterator[Any]:
    rigs: list[tuple[Rig, asyncio.Future[Any], asyncio.Future[Any]]] = []

    def make(server: Any, room: Room) -> Rig:
        agent, rec = make_agent(server, tmp_path)
        rig = Rig(agent, rec, room)
        rigs.append(
            (
                rig,
                asyncio.ensure_future(agent.run()),
                asyncio.ensure_future(rig.listener.run()),
            )
        )
        return rig

    yield make
    for rig, agent_task, listen_task in rigs:
        await rig.room.microphone.close()
        await asyncio.gather(listen_task, return_exceptions=True)
        await rig.player.close()
        await rig.agent.close()
        agent_task.cancel()
        await asyncio.gather(agent_task, return_exceptions=True)
        await rig.stt.aclose()
        await rig.room.speaker.close()


def _done(rig: Rig, n_tasks: int) -> Any:
    def pred(ev: Any) -> bool:
        return len(rig.rec.of("task_end")) >= n_tasks

    return pred


async def test_the_robots_own_reply_in_its_microphone_causes_no_barge_in(
    scripted_server: Any, rig_factory: Any
) -> None:
    server = scripted_server(
        {
            "turns": [{"text": LONG_REPLY, "chunk_size": 12, "chunk_delay_s": 0.05}],
            "lanes": {"transcriptions": [{"text": "Tell me about the room."}]},
        }
    )
    room = Room(echo_gain=0.9, echo_delay_ms=40, noise_rms=20)
    room.say(speak("tell me about the room"), at_s=0.3)
    rig = rig_factory(server, room)
    await rig.rec.wait_for(_done(rig, 1), timeout=60)
    await asyncio.wait_for(rig.player.wait_idle(), 60)
    playing = [e for e in rig.rec.of("speech_out") if e.data["state"] == "playing"]
    assert len(playing) == 5
    # the robot heard itself loudly: its played audio reached the microphone
    track = room._played_track
    heard = room.mic_samples(0, track.size).astype(np.float64)
    voiced = np.abs(track) > 500
    assert voiced.sum() > 16000 * 3
    assert np.sqrt(np.mean(heard[voiced] ** 2)) > 2000
    # ... and never took it for a person: no onset, no pause, every sentence played to its end
    onsets = [e for e in rig.rec.of("speech_in") if e.data["state"] == "started"]
    assert len(onsets) == 1  # the user's own command only
    assert rig.player.stats.barge_ins == 0
    assert [e.data["state"] for e in rig.rec.of("speech_out")] == ["playing"] * 5
    played_s = rig.room.speaker.played_samples / 16000
    assert abs(played_s - sum(e.data["duration_s"] for e in playing)) < 0.1


async def test_user_speech_over_the_reply_stops_playback_at_once(
    scripted_server: Any, rig_factory: Any
) -> None:
    server = scripted_server(
        {
            "turns": [
                {"text": LONG_REPLY, "chunk_size": 12, "chunk_delay_s": 0.05},
                {"text": "Hello."},
            ],
            "lanes": {
                "transcriptions": [{"text": "Tell me about the room."}, {"text": "Say hello."}]
            },
        }
    )
    room = Room(echo_gain=0.9, echo_delay_ms=40, noise_rms=20)
    room.say(speak("tell me about the room"), at_s=0.3)
    rig = rig_factory(server, room)
    await rig.rec.wait_for(
        lambda e: e.type == "speech_out" and e.data["state"] == "playing", timeout=60
    )
    # the person talks over the robot 1.5 s into its reply
    start_s, _end = room.say(speak("say hello"), at_s=time.monotonic() - room.t0_s + 1.5)
    paused = await rig.rec.wait_for(
        lambda e: e.type == "speech_out" and e.data["state"] == "paused", timeout=30
    )
    assert paused.data["reason"] == "barge-in"
    stop_s = rig.player.stats.stopped_at[0]
    # voice activity, not a transcript, stopped it: within a few frames of the onset
    assert 0 < stop_s - start_s < 0.3, stop_s - start_s
    await rig.rec.wait_for(_done(rig, 2), timeout=60)
    await asyncio.wait_for(rig.player.wait_idle(), 30)
    states = [(e.data["state"], e.data.get("text")) for e in rig.rec.of("speech_out")]
    assert ("stopped", paused.data["text"]) in states  # the old reply was dropped ...
    assert states[-1] == ("playing", "Hello.")  # ... and the new one spoken
    ends = [e.data["status"] for e in rig.rec.of("task_end")]
    assert ends == ["completed", "completed"] or ends[0] == "preempted"

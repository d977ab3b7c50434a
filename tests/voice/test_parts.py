"""The voice parts on their own (issue 16): sentences of a streaming reply and their language,
the echo canceller, onset detection, the player's generations and controls, the playback tools."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from tests.agent.helpers import Recorder
from tests.voice.helpers import needs_espeak, silence, speak

from loopact.channels.voice_tools import VoiceControls, make_voice_tools
from loopact.errors import ToolError
from loopact.events import EventBus
from loopact.testing.audio_protocol import spoken_wav
from loopact.voice.audio import AudioFrame, ClockedSink, read_wav, wav_bytes
from loopact.voice.echo import EchoCanceller
from loopact.voice.playback import Player
from loopact.voice.stt import WhisperSTT
from loopact.voice.text import SentenceSplitter, language_of, speakable
from loopact.voice.tts import Speech
from loopact.voice.vad import Endpointer, Onset, Vad


def test_sentences_come_out_as_soon_as_they_are_complete() -> None:
    s = SentenceSplitter()
    out: list[str] = []
    for piece in [
        "I moved 1.",
        "5 m for",
        "ward. The way is ",
        "clear! 前面",
        "没有障碍。还",
        "有吗",
    ]:
        out += s.feed(piece)
    assert out == ["I moved 1.5 m forward.", "The way is clear!", "前面没有障碍。"]
    assert s.flush() == "还有吗"
    assert speakable("**Done** — see [the map](http://x/y).") == "Done — see the map."
    assert language_of("向前走一米") == "zh" and language_of("go 2 m") == "en"
    assert language_of("好的 OK") == "zh" and language_of("123") == "en"


def test_the_echo_canceller_removes_a_delayed_scaled_copy_and_keeps_a_voice() -> None:
    played = np.frombuffer(read_wav(spoken_wav("robot talking " * 4))[0], dtype="<i2")
    user = np.frombuffer(read_wav(spoken_wav("person"))[0], dtype="<i2")[:8000] * 0.5
    delay = 480  # 30 ms
    ec = EchoCanceller()
    t0 = 100.0
    residual_echo, residual_user = [], []
    for k in range(0, played.size - 640, 320):
        t = t0 + k / 16000
        ec.add_reference(played[k : k + 320].tobytes(), t)
        mic = 0.7 * played[k - delay : k - delay + 320] if k >= delay else np.zeros(320)
        speaking = 16000 <= k < 16000 + user.size - 320
        if speaking:
            mic = mic + user[k - 16000 : k - 16000 + 320]
        frame = AudioFrame(np.round(mic).astype("<i2").tobytes(), t)
        res = ec.process(frame)
        if k > 8000:
            (residual_user if speaking else residual_echo).append(
                np.sqrt(np.mean(res.residual.astype(float) ** 2)) / max(res.echo_rms, 1.0)
            )
    assert np.median(residual_echo) < 0.1  # the robot's own voice is gone
    assert np.median(residual_user) > 0.5  # a person speaking over it is not


def test_onset_is_declared_within_a_few_frames_of_speech() -> None:
    voice = read_wav(spoken_wav("hello there"))[0]
    pcm = b"\0\0" * 8000 + voice + b"\0\0" * 16000
    vad, ep = Vad(), Endpointer()
    onsets = []
    for i in range(0, len(pcm), 640):
        frame = AudioFrame(pcm[i : i + 640], i / 32000)
        onsets += [e for e in ep.push(frame, vad.is_speech(frame.samples)) if isinstance(e, Onset)]
    assert len(onsets) == 1
    assert 0.5 <= onsets[0].start_s < 0.56
    assert onsets[0].detected_s - 0.5 < 0.12


class FakeTTS:
    """Speech of a fixed length per sentence (what the player is tested on is timing)."""

    name = "tone"

    async def synthesize(self, text: str, lang: str) -> Speech:
        return Speech(read_wav(spoken_wav(text))[0], text, lang, self.name, 0.0)

    async def aclose(self) -> None:
        pass


async def test_generations_pause_resume_and_stop() -> None:
    bus = EventBus()
    rec = Recorder()
    bus.subscribe(rec)
    sink = ClockedSink("test")
    player = Player(sink, FakeTTS(), bus)
    player.begin("t1")
    player.say("An old sentence that goes on for a while.")
    player.say("Another old one.")
    await rec.wait_for(lambda e: e.type == "speech_out" and e.data["state"] == "playing")
    assert player.pause() and not player.playing and player.paused == "user"
    at_pause = sink.played_samples
    await asyncio.sleep(0.1)
    assert sink.played_samples - at_pause <= 320  # silent within a frame
    assert player.resume()
    player.begin("t2")  # a new reply: the old generation is dropped, queued audio too
    player.say("New.")
    await asyncio.wait_for(player.wait_idle(), 10)
    states = [(e.data["state"], e.data.get("text")) for e in rec.of("speech_out")]
    assert states == [
        ("playing", "An old sentence that goes on for a while."),
        ("paused", "An old sentence that goes on for a while."),
        ("resumed", "An old sentence that goes on for a while."),
        ("stopped", "An old sentence that goes on for a while."),
        ("playing", "New."),
    ]
    # the stopped sentence keeps its generation (it said gen null while paused said 1)
    assert [e.data["gen"] for e in rec.of("speech_out")] == [1, 1, 1, 1, 2]
    assert not player.stop()  # nothing left
    await player.close()
    await sink.close()


async def test_playback_tools_play_and_record_inside_the_workspace(tmp_path: Path) -> None:
    bus = EventBus()
    sink = ClockedSink("test")
    player = Player(sink, FakeTTS(), bus)
    (tmp_path / "hello.wav").write_bytes(wav_bytes(read_wav(spoken_wav("hello"))[0]))
    controls = VoiceControls(player, None, tmp_path)
    tools = {t.name: t for t in make_voice_tools(controls)}
    assert set(tools) == {"play_audio", "pause_audio", "resume_audio", "stop_audio", "record_audio"}
    result = await controls.play("hello.wav")
    assert result.ok and result.metadata["duration_s"] == pytest.approx(0.33, abs=0.02)
    await asyncio.wait_for(player.wait_idle(), 10)
    assert sink.played_samples == pytest.approx(0.325 * 16000, abs=400)
    with pytest.raises(ToolError, match="outside the workspace"):
        await controls.play("../../etc/passwd")
    with pytest.raises(ToolError, match="no microphone"):
        await controls.record(1.0)
    assert controls.pause() == "nothing is playing"
    await player.close()
    await sink.close()


async def test_play_audio_reads_and_decodes_off_the_event_loop(tmp_path: Path) -> None:
    """A WAV is read and resampled on a worker thread: the loop keeps turning meanwhile."""
    bus = EventBus()
    sink = ClockedSink("test")
    player = Player(sink, FakeTTS(), bus)
    (tmp_path / "long.wav").write_bytes(wav_bytes(silence(20.0) * 3, rate_hz=48000))
    controls = VoiceControls(player, None, tmp_path)
    playing = asyncio.ensure_future(controls.play("long.wav"))
    turns = 0
    while not playing.done():
        turns += 1
        await asyncio.sleep(0)
    assert playing.result().ok
    assert turns > 2  # decoded on the loop, the task would have finished within one turn
    assert player.stop()
    await player.close()
    await sink.close()


@needs_espeak
async def test_offline_whisper_encodes_a_window_as_long_as_the_utterance() -> None:
    from loopact.voice.stt import _compression_ratio

    pcm = speak("move forward one meter") + silence(0.6)
    texts = []
    for window_s in (10.0, 30.0):  # loopact's default, Whisper's fixed window
        stt = WhisperSTT(window_s=window_s)
        t = await stt.transcribe(pcm)
        await stt.aclose()
        texts.append(t.text.lower())
        assert stt.fallbacks == 0
    assert all("forward" in x and "meter" in x for x in texts), texts
    # the guard against a short window's loops: Whisper's own compression-ratio test
    assert _compression_ratio("Find the green ball. " * 20) > 2.4
    assert _compression_ratio("Move forward one meter and then turn left.") < 2.4

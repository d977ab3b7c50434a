"""Issue 16 points not covered elsewhere: the OpenAI-compatible speech endpoint behind the
robot's voice (and what it does when the endpoint fails), a spoken "停" stopping a running task
through the voice channel without the model, the terminal's playback commands, and the
modality setting (G3) refusing image uploads in the web console.

Real parts throughout: the scripted model server over HTTP (chat, ``/audio/transcriptions``,
``/audio/speech``), the real agent and provider, WebRTC VAD, the player with a clocked sink,
the real web console on a free port.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from PIL import Image as PILImage
from rich.console import Console
from tests.agent.helpers import Recorder, make_agent
from tests.channels.test_web_api import StandInAgent
from tests.voice.helpers import needs_espeak, silence, speak

from loopact.channels.terminal import TerminalChannel
from loopact.channels.voice import VoiceChannel, is_spoken_stop
from loopact.channels.voice_tools import VoiceControls, console_commands
from loopact.channels.web import WebSettings, serve_console
from loopact.events import EventBus
from loopact.testing.audio_protocol import spoken_wav
from loopact.vision.gate import ImageGate
from loopact.voice.audio import AudioFrame, ClockedSink, paced, read_wav, wav_bytes
from loopact.voice.listen import Listener
from loopact.voice.playback import Player
from loopact.voice.stt import OpenAISTT, Transcript
from loopact.voice.tts import OpenAITTS


def _speaking(rec: Recorder, state: str) -> list[Any]:
    return [e for e in rec.of("speech_out") if e.data["state"] == state]


async def test_the_speech_endpoint_speaks_and_a_failing_one_is_said_and_skipped(
    scripted_server: Any,
) -> None:
    server = scripted_server(
        {
            "turns": [],
            "lanes": {
                "speech": [
                    {"text": ""},
                    {"error": {"status": 503, "message": "voice busy"}},
                    {"text": "", "delay_s": 5},
                    {"text": ""},
                ]
            },
        }
    )
    bus = EventBus()
    rec = Recorder()
    bus.subscribe(rec)
    sink = ClockedSink("test")
    tts = OpenAITTS(server.base_url, "tts-1", "alloy", "k", timeout_s=0.5)
    player = Player(sink, tts, bus)
    sentences = ["The first sentence.", "A second one.", "A slow third.", "The last one."]
    player.begin("t1")
    for sentence in sentences:  # as a streaming reply gives them: one after the other
        player.say(sentence)
        await rec.wait_for(
            lambda e, s=sentence: (
                e.type == "speech_out"  # type: ignore[misc]
                and e.data["state"] in ("playing", "failed")
                and e.data["text"] == s
            )
        )
    await asyncio.wait_for(player.wait_idle(), 20)
    playing = _speaking(rec, "playing")
    failed = _speaking(rec, "failed")
    assert [e.data["text"] for e in playing] == ["The first sentence.", "The last one."]
    assert all(e.data["engine"] == "openai" for e in playing)
    assert [e.data["text"] for e in failed] == ["A second one.", "A slow third."]
    assert "HTTP 503" in failed[0].data["error"] and "voice busy" in failed[0].data["error"]
    assert "did not answer within 0.5 s" in failed[1].data["error"]
    # the 24 kHz WAVs came out as 16 kHz audio of the same length, all of it played
    said = ("The first sentence.", "The last one.")
    expected = [len(read_wav(spoken_wav(s))[0]) // 2 for s in said]
    assert [round(e.data["duration_s"] * 16000) for e in playing] == pytest.approx(expected, abs=2)
    assert sink.played_samples == pytest.approx(sum(expected), abs=320)
    speech_requests = [r for r in server.requests if r.path == "/v1/audio/speech"]
    assert [r.body["input"] for r in speech_requests] == sentences
    assert all(r.body["response_format"] == "wav" for r in speech_requests)
    await player.close()
    await tts.aclose()
    await sink.close()


class _TwoUtterances:
    """A microphone: the first utterance, then silence until ``gate`` is set, then the second
    utterance and a second of silence (fed as fast as the pipeline takes them)."""

    name = "test microphone"

    def __init__(self, first: bytes, second: bytes, gate: asyncio.Event) -> None:
        self.first = silence(0.3) + first + silence(1.0)
        self.second = second + silence(1.0)
        self.gate = gate

    async def frames(self) -> AsyncIterator[AudioFrame]:
        async for frame in paced(self.first, realtime=False):
            yield frame
        while not self.gate.is_set():  # room silence until the reply streams
            await asyncio.sleep(0.02)
            yield AudioFrame(silence(0.02), time.monotonic())
        async for frame in paced(self.second, realtime=False):
            yield frame

    async def close(self) -> None:
        pass


@needs_espeak
async def test_a_spoken_ting_stops_the_running_task_without_the_model(
    scripted_server: Any, tmp_path: Path
) -> None:
    story = " ".join(f"This is sentence number {n} of a long story." for n in range(1, 30))
    server = scripted_server(
        {
            "turns": [{"text": story, "chunk_size": 8, "chunk_delay_s": 0.1}],
            "lanes": {"transcriptions": [{"text": "Tell me a story."}, {"text": "停。"}]},
        }
    )
    agent, rec = make_agent(server, tmp_path)
    runner = asyncio.ensure_future(agent.run())
    sink = ClockedSink("test")
    player = Player(sink, None, agent.bus)  # no TTS needed: the reply's audio is not the point
    channel = VoiceChannel(agent, player)
    spoke = asyncio.Event()
    agent.bus.subscribe(lambda e: e.type == "text_delta" and spoke.set())
    mic = _TwoUtterances(speak("tell me a story"), speak("停", voice="cmn"), spoke)
    stt = OpenAISTT(server.base_url, "whisper-1", "k", timeout_s=10)
    listener = Listener(mic, stt, player, agent.bus, channel.on_transcript)
    try:
        await asyncio.wait_for(listener.run(), 60)
        stop = await rec.wait_for(lambda e: e.type == "stop", timeout=20)
        end = await rec.wait_for(lambda e: e.type == "task_end", timeout=20)
        start = rec.of("task_start")[0]
        assert stop.data["source"] == "voice" and stop.task_id == start.task_id
        assert end.task_id == start.task_id and end.data["status"] == "preempted", end.data
        transcripts = [e.data["text"] for e in rec.of("transcript")]
        assert transcripts == ["Tell me a story.", "停。"]
        # one model request (the story); the stop went nowhere near the model
        assert len([r for r in server.requests if r.path == "/v1/chat/completions"]) == 1
        assert len(rec.of("task_start")) == 1
        streamed = "".join(str(e.data["text"]) for e in rec.of("text_delta"))
        assert 0 < len(streamed) < len(story)  # the story was cut off
    finally:
        channel.close()
        await player.close()
        await stt.aclose()
        await sink.close()
        await agent.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


def test_a_spoken_stop_is_recognised_as_the_engine_writes_it() -> None:
    # faster-whisper tiny.en writes espeak-ng's "stop stop" as "Stop, stop!" (measured)
    for said in ("Stop!", "Stop, stop!", "stop? ", "停，停！", "停停", "停止。", "STOP..."):
        assert is_spoken_stop(said), said
    for said in ("Stop it.", "stop the music", "don't stop", "", " . ", "停车"):
        assert not is_spoken_stop(said), said


async def test_a_repeated_spoken_stop_stops_the_task_without_the_model(
    scripted_server: Any, tmp_path: Path
) -> None:
    story = " ".join(f"This is sentence number {n} of a long story." for n in range(1, 30))
    server = scripted_server([{"text": story, "chunk_size": 8, "chunk_delay_s": 0.1}])
    agent, rec = make_agent(server, tmp_path)
    runner = asyncio.ensure_future(agent.run())
    sink = ClockedSink("test")
    player = Player(sink, None, agent.bus)
    channel = VoiceChannel(agent, player)
    try:
        await channel.on_transcript(Transcript("Tell me a story.", "en", "openai", 1.0, 0.1))
        await rec.wait_for(lambda e: e.type == "text_delta", timeout=20)
        await channel.on_transcript(Transcript("Stop, stop!", "en", "openai", 1.0, 0.1))
        stop = await rec.wait_for(lambda e: e.type == "stop", timeout=20)
        end = await rec.wait_for(lambda e: e.type == "task_end", timeout=20)
        assert stop.data["source"] == "voice" and end.data["status"] == "preempted"
        assert len(server.requests) == 1 and len(rec.of("task_start")) == 1  # no model request
    finally:
        channel.close()
        await player.close()
        await sink.close()
        await agent.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


async def test_terminal_playback_commands(tmp_path: Path) -> None:
    bus = EventBus()
    rec = Recorder()
    bus.subscribe(rec)
    sink = ClockedSink("test")
    player = Player(sink, None, bus)
    pcm = read_wav(spoken_wav("a long enough recording to pause in the middle"))[0]
    (tmp_path / "hello.wav").write_bytes(wav_bytes(pcm))
    commands = console_commands(VoiceControls(player, None, tmp_path))
    out = io.StringIO()
    agent = StandInAgent()
    agent.options = type("Options", (), {"lang": "en"})()  # type: ignore[attr-defined]
    term = TerminalChannel(agent, Console(file=out, width=200), commands=commands)  # type: ignore[arg-type]

    async def typed(line: str) -> str:
        before = len(out.getvalue())
        assert term._handle(line)
        await asyncio.gather(*list(term._commands_running))
        return out.getvalue()[before:].strip()

    assert await typed("/play") == "usage: /play FILE.wav"
    assert (await typed("/play hello.wav")).startswith("playing hello.wav")
    await rec.wait_for(lambda e: e.type == "speech_out" and e.data["state"] == "playing")
    assert await typed("/pause") == "paused"
    assert player.paused == "user" and not player.playing
    assert await typed("/resume") == "resumed"
    assert await typed("/stopaudio") == "stopped"
    assert [e.data["state"] for e in rec.of("speech_out")] == [
        "playing",
        "paused",
        "resumed",
        "stopped",
    ]
    assert await typed("/stopaudio") == "nothing was playing"
    # errors are one line each, the terminal goes on
    assert "outside the workspace" in await typed("/play ../elsewhere.wav")
    # worded for the person at the terminal, not the model's "use file_list" hint
    assert await typed("/play nope.wav") == f"no file 'nope.wav' in the workspace {tmp_path}"
    (tmp_path / "sounds").mkdir()
    assert await typed("/play sounds") == (
        f"'sounds' is a folder of the workspace {tmp_path}: give a .wav file"
    )
    (tmp_path / "notes.wav").write_text("not audio")
    assert "not a PCM WAV file" in await typed("/play notes.wav")
    assert "no microphone" in await typed("/record 2")
    assert await typed("/record soon") == "usage: /record SECONDS [FILE.wav]"
    assert agent.submitted == []
    await player.close()
    await sink.close()


def _png() -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", (64, 48), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("modality", "status"),
    [("text", 415), ("voice+text", 415), ("image+text", 200), ("any", 200)],
)
async def test_the_modality_setting_refuses_image_uploads(modality: str, status: int) -> None:
    web = await serve_console(
        StandInAgent(), None, port=0, settings=WebSettings(gate=ImageGate(), modality=modality)
    )
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{web.port}", timeout=20) as c:
            r = await c.post("/api/upload", files={"file": ("red.png", _png(), "image/png")})
        assert r.status_code == status, r.text
        if status == 415:
            assert r.json()["detail"] == (
                f"images are refused: agent.modality is {modality!r} "
                "(set image+text or any to send pictures)"
            )
        else:
            assert r.json()["width_px"] == 64
    finally:
        await web.stop()


async def test_the_web_consoles_microphone_follows_the_voice_settings(
    scripted_server: Any, tmp_path: Path
) -> None:
    from contextlib import AsyncExitStack

    from loopact.app.web import _with_voice
    from loopact.channels.web.settings import WebSettings as Settings
    from loopact.config import Config

    cfg = Config.model_validate(
        {
            "voice": {"barge_in": False, "end_silence_ms": 300, "stt": {"engine": "openai"}},
            "model": {"base_url": scripted_server({"turns": []}).base_url},
        }
    )
    agent, _rec = make_agent(scripted_server({"turns": []}), tmp_path)
    async with AsyncExitStack() as stack:
        settings = _with_voice(Settings(), cfg, agent, stack)  # type: ignore[arg-type]
        settings.voice.start()
        listener = settings.voice.listener
        assert listener.barge_in is False and not listener.speculative
        assert listener.endpointer._end_frames == 15  # 300 ms of 20 ms frames
    await agent.close()

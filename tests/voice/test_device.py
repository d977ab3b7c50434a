"""The sound-card path behind ``--voice`` (``loopact.voice.device``, SPEC F4, issue 16), with
a stand-in ``sounddevice`` module (tests/voice/fake_sounddevice.py) whose threads call back
as PortAudio does: frames flow in and out, a device that does not open at 16 kHz is opened at
its own rate and resampled, and one that opens at no rate is a clear error."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.agent.helpers import make_agent
from tests.voice.fake_sounddevice import FakeSoundDevice
from tests.voice.helpers import needs_espeak, speak

from loopact.channels.voice import VoiceChannel
from loopact.errors import AudioDeviceError
from loopact.voice.audio import SAMPLE_RATE, AudioFrame, resample, to_pcm16
from loopact.voice.device import DeviceSink, DeviceSource
from loopact.voice.listen import Listener
from loopact.voice.playback import Player
from loopact.voice.stt import OpenAISTT
from loopact.voice.tts import EspeakTTS


def tone(freq_hz: float, seconds: float, rate_hz: int, level: float = 8000.0) -> bytes:
    t = np.arange(int(seconds * rate_hz)) / rate_hz
    return to_pcm16(level * np.sin(2 * np.pi * freq_hz * t))


def peak_hz(pcm: bytes, rate_hz: int) -> float:
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    return float(np.argmax(spectrum) * rate_hz / x.size)


def voiced(pcm: bytes) -> int:
    """Samples above the silence floor."""
    return int((np.abs(np.frombuffer(pcm, dtype="<i2")) > 200).sum())


async def take(source: DeviceSource, seconds: float) -> list[AudioFrame]:
    """The first ``seconds`` of frames (a broken stream fails by timeout, never hangs)."""
    frames: list[AudioFrame] = []

    async def collect() -> None:
        async for frame in source.frames():
            frames.append(frame)
            if len(frames) * 0.02 >= seconds:
                return

    await asyncio.wait_for(collect(), 30)
    return frames


async def played_until(sink: DeviceSink, got: list[bytes], n_bytes: int) -> None:
    """Wait until the sink's listeners were told of ``n_bytes`` played (timeout: fail)."""
    done = asyncio.Event()

    def on_played(chunk: bytes, t_s: float) -> None:
        got.append(chunk)
        if sum(map(len, got)) >= n_bytes:
            done.set()

    sink.add_listener(on_played)
    await asyncio.wait_for(done.wait(), 30)


async def test_a_16_khz_device_passes_frames_in_and_out_unchanged(monkeypatch: Any) -> None:
    said = tone(300, 0.4, SAMPLE_RATE) + tone(700, 0.2, SAMPLE_RATE)
    fake = FakeSoundDevice({SAMPLE_RATE, 48000}, 48000, mic_for=lambda rate: said)
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    source, sink = DeviceSource(), DeviceSink()
    try:
        frames = await take(source, 0.8)
        heard = b"".join(f.pcm for f in frames)
        assert {len(f.pcm) for f in frames} == {640} and heard[: len(said)] == said
        assert heard[len(said) :] == b"\0" * (len(heard) - len(said))  # then the quiet room
        stamps = [f.t_s for f in frames]
        assert stamps == sorted(stamps)
        assert source.rate_hz == sink.rate_hz == SAMPLE_RATE and source.notes == []
        reply = tone(440, 0.5, SAMPLE_RATE)
        got: list[bytes] = []
        waiting = asyncio.ensure_future(played_until(sink, got, len(reply)))
        await sink.write(reply)
        await sink.drain()
        await waiting
        assert b"".join(got) == reply  # the echo canceller's reference: what was played
        start = bytes(fake.played).index(reply[:64])
        assert bytes(fake.played)[start : start + len(reply)] == reply
    finally:
        await source.close()
        await sink.close()
    assert fake.opened == [("output", SAMPLE_RATE), ("input", SAMPLE_RATE)]


@pytest.mark.parametrize("rate_hz", [44100, 48000])
async def test_a_device_that_refuses_16_khz_runs_at_its_own_rate_resampled(
    monkeypatch: Any, rate_hz: int
) -> None:
    fake = FakeSoundDevice({rate_hz}, rate_hz, mic_for=lambda rate: tone(440, 0.6, rate))
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    source, sink = DeviceSource(), DeviceSink()
    try:
        frames = await take(source, 1.0)
        heard = b"".join(f.pcm for f in frames)
        assert {len(f.pcm) for f in frames} == {640}
        assert abs(voiced(heard) - 0.6 * SAMPLE_RATE) < 0.01 * SAMPLE_RATE  # 0.6 s at 16 kHz
        assert abs(peak_hz(heard[: int(0.6 * SAMPLE_RATE) * 2], SAMPLE_RATE) - 440) < 3
        assert source.notes == [f"the microphone runs at {rate_hz} Hz: resampled to 16 kHz"]
        reply = tone(440, 0.5, SAMPLE_RATE)
        got: list[bytes] = []
        waiting = asyncio.ensure_future(played_until(sink, got, len(reply) - 8))
        await sink.write(reply)
        await sink.drain()
        await waiting
        reference = b"".join(got)
        assert abs(len(reference) - len(reply)) <= 8 and reference[:4000] == reply[:4000]
        out = bytes(fake.played)
        assert abs(voiced(out) - 0.5 * rate_hz) < 0.01 * rate_hz  # 0.5 s at the device's rate
        assert abs(peak_hz(out, rate_hz) - 440) < 3
    finally:
        await source.close()
        await sink.close()
    assert fake.opened == [  # the speaker opens at once, the microphone when it is read
        ("output", SAMPLE_RATE),
        ("output", rate_hz),
        ("input", SAMPLE_RATE),
        ("input", rate_hz),
    ]


async def test_a_device_that_opens_at_no_rate_is_a_clear_error(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "sounddevice", FakeSoundDevice(set(), 44100))
    refused = (
        "cannot be opened (at 16000 Hz: Error opening stream: Invalid sample rate "
        "[PaErrorCode -9997]; at 44100 Hz: Error opening stream: Invalid sample rate "
        "[PaErrorCode -9997]); use --audio-in FILE|- and --audio-out FILE|- instead, or the "
        "web console's microphone"
    )
    with pytest.raises(AudioDeviceError) as err:
        DeviceSink()
    assert str(err.value) == f"the speaker 'Fake USB Audio' {refused}"
    source = DeviceSource()
    with pytest.raises(AudioDeviceError) as err:
        await take(source, 0.1)
    assert str(err.value) == f"the microphone 'Fake USB Audio' {refused}"
    await source.close()


@pytest.fixture
async def device_rig(monkeypatch: Any, tmp_path: Path) -> AsyncIterator[Any]:
    """A 48 kHz device whose microphone hears "say hello" (espeak-ng), wired as ``--voice``
    wires it: listener, agent, voice channel, player."""
    said = speak("say hello")
    fake = FakeSoundDevice(
        {48000},
        48000,
        mic_for=lambda rate: to_pcm16(resample(np.frombuffer(said, "<i2"), 16000, rate)),
    )
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    parts: dict[str, Any] = {"fake": fake}

    def make(server: Any) -> Any:
        agent, rec = make_agent(server, tmp_path)
        source, sink = DeviceSource(), DeviceSink()
        player = Player(sink, EspeakTTS(rate_wpm=200), agent.bus)
        channel = VoiceChannel(agent, player)
        stt = OpenAISTT(server.base_url, "whisper-1", "k", timeout_s=10)
        listener = Listener(source, stt, player, agent.bus, channel.on_transcript)
        parts.update(agent=agent, rec=rec, source=source, sink=sink, player=player, stt=stt)
        parts["tasks"] = [asyncio.ensure_future(agent.run()), asyncio.ensure_future(listener.run())]
        return parts

    yield make
    if "tasks" in parts:
        await parts["source"].close()
        await asyncio.gather(parts["tasks"][1], return_exceptions=True)
        await parts["player"].close()
        await parts["agent"].close()
        parts["tasks"][0].cancel()
        await asyncio.gather(parts["tasks"][0], return_exceptions=True)
        await parts["stt"].aclose()
        await parts["sink"].close()


@needs_espeak
async def test_speech_from_a_48_khz_microphone_is_heard_and_the_reply_spoken(
    scripted_server: Any, device_rig: Any
) -> None:
    server = scripted_server(
        {
            "turns": [{"text": "Hello there.", "expect": {"last_user_contains": "hello"}}],
            "lanes": {"transcriptions": [{"text": "Say hello."}]},
        }
    )
    rig = device_rig(server)
    rec = rig["rec"]
    await rec.wait_for(lambda e: e.type == "task_end", timeout=60)
    await asyncio.wait_for(rig["player"].wait_idle(), 30)
    await rig["sink"].drain()
    ended = next(e for e in rec.of("speech_in") if e.data["state"] == "ended")
    assert "the microphone runs at 48000 Hz: resampled to 16 kHz" in ended.data["notes"]
    assert 0.5 < ended.data["duration_s"] < 3.0
    upload = server.requests[0]  # the utterance went to the transcription endpoint
    assert upload.path.endswith("/audio/transcriptions")
    playing = [e for e in rec.of("speech_out") if e.data["state"] == "playing"]
    assert [e.data["text"] for e in playing] == ["Hello there."]
    # the speaker got the spoken reply at 48 kHz: as long as espeak-ng's 16 kHz audio said
    seconds = playing[0].data["duration_s"]
    assert voiced(bytes(rig["fake"].played)) > 0.3 * seconds * 48000

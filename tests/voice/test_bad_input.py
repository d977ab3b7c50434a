"""Bad audio and failing engines (issue 16, "Bad input"): clear messages, the turn goes on in
text (G2), nothing crashes. The pipeline is the real one; transcripts come from the scripted
model server's transcription endpoint (or offline Whisper where the issue asks for it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.agent.helpers import Recorder
from tests.voice.helpers import needs_espeak, noise, silence, speak

from loopact.errors import AudioFormatError, SpeechEngineError
from loopact.events import EventBus
from loopact.testing.audio_protocol import spoken_wav
from loopact.voice.audio import AudioFrame, ClockedSink, paced, read_wav, wav_bytes
from loopact.voice.listen import Listener
from loopact.voice.playback import Player
from loopact.voice.stt import OpenAISTT, Transcript
from loopact.voice.tts import EspeakTTS, OpenAITTS
from loopact.voice.vad import Endpointer, Utterance, Vad


class PcmSource:
    """A recording fed as fast as the pipeline takes it (not paced), then silence."""

    name = "test recording"

    def __init__(self, pcm: bytes) -> None:
        self.pcm = pcm + silence(1.0)

    async def frames(self) -> AsyncIterator[AudioFrame]:
        async for frame in paced(self.pcm, realtime=False):
            yield frame

    async def close(self) -> None:
        pass


async def _listen(pcm: bytes, server: Any, timeout_s: float = 10.0) -> tuple[Recorder, list[str]]:
    bus = EventBus()
    rec = Recorder()
    bus.subscribe(rec)
    heard: list[str] = []

    async def on_transcript(t: Transcript) -> None:
        heard.append(t.text)

    stt = OpenAISTT(server.base_url, "whisper-1", "k", timeout_s=timeout_s)
    try:
        await Listener(PcmSource(pcm), stt, None, bus, on_transcript, lang="en").run()
    finally:
        await stt.aclose()
    return rec, heard


async def test_silence_gives_no_utterance_and_no_request(scripted_server: Any) -> None:
    server = scripted_server({"turns": [], "lanes": {"transcriptions": []}})
    rec, heard = await _listen(silence(3.0) + noise(2.0, level=20), server)
    assert rec.of("speech_in") == [] and heard == []
    assert server.requests == []


@needs_espeak
async def test_noise_and_an_empty_transcript_send_nothing(scripted_server: Any) -> None:
    rng = np.random.default_rng(3)
    loud_noise = rng.normal(0, 3000, 16000 * 2).astype("<i2").tobytes()
    server = scripted_server(
        {"turns": [], "lanes": {"transcriptions": [{"text": ""}, {"text": " ... "}]}}
    )
    # the VAD may or may not take loud noise for speech; speech it certainly takes
    rec, heard = await _listen(speak("hello") + silence(1.0) + speak("there") + loud_noise, server)
    ended = [e for e in rec.of("speech_in") if e.data["state"] == "ended"]
    assert len(ended) >= 2
    notes = [e.data.get("note", "") for e in rec.of("transcript")]
    assert all("no words recognised" in n for n in notes[:2]), notes
    assert heard == []  # nothing reached the agent


@needs_espeak
async def test_clipped_speech_is_said_and_still_transcribed(scripted_server: Any) -> None:
    loud = np.frombuffer(speak("move forward"), dtype="<i2").astype(np.int32) * 12
    clipped = np.clip(loud, -32768, 32767).astype("<i2").tobytes()
    server = scripted_server({"turns": [], "lanes": {"transcriptions": [{"text": "move forward"}]}})
    rec, heard = await _listen(clipped, server)
    ended = next(e for e in rec.of("speech_in") if e.data["state"] == "ended")
    assert any("clipped" in n for n in ended.data["notes"])
    assert heard == ["move forward"]


@needs_espeak
def test_8_khz_and_stereo_wav_files_are_converted_with_a_note(tmp_path: Path) -> None:
    import wave

    mono16 = np.frombuffer(speak("turn left"), dtype="<i2")
    # 8 kHz telephone audio
    path8 = tmp_path / "phone.wav"
    with wave.open(str(path8), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(mono16[::2].tobytes())
    pcm, notes = read_wav(path8)
    assert any("8 kHz" in n and "upsampled" in n for n in notes)
    assert abs(len(pcm) / 2 - mono16.size) < 4
    # a stereo recording with the voice on the left channel only
    path2 = tmp_path / "stereo.wav"
    stereo = np.stack([mono16, np.zeros_like(mono16)], axis=1).reshape(-1)
    with wave.open(str(path2), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(stereo.tobytes())
    pcm2, notes2 = read_wav(path2)
    assert "2-channel audio mixed down to mono" in notes2
    assert np.array_equal(np.frombuffer(pcm2, dtype="<i2"), (mono16 / 2).round().astype("<i2"))


def test_not_a_wav_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.wav"
    bad.write_text("these are not samples")
    with pytest.raises(AudioFormatError, match=r"notes\.wav: not a PCM WAV file"):
        read_wav(bad)
    with pytest.raises(AudioFormatError, match="cannot be read"):
        read_wav(tmp_path / "missing.wav")
    with pytest.raises(AudioFormatError, match="no samples"):
        read_wav(wav_bytes(b""))
    (tmp_path / "empty.wav").write_bytes(b"")
    with pytest.raises(AudioFormatError, match=r"empty\.wav: the file is empty \(0 bytes\)$"):
        read_wav(tmp_path / "empty.wav")
    with pytest.raises(AudioFormatError, match=r"^reply: the file is empty \(0 bytes\)$"):
        read_wav(b"", name="reply")


def test_a_file_that_is_not_wav_says_why(tmp_path: Path) -> None:
    """Newcomer report: a text file or a 30-byte cut of a WAV read 'not a PCM WAV file ()'
    (``wave`` raises a bare EOFError); the message now gives the reason, from a path or bytes."""
    good = wav_bytes(silence(0.1))
    cases = [
        (b"these are not samples\n", 'it starts with "these ar", not with a RIFF/WAVE header'),
        (b"ab\x01", 'it starts with "ab\\x01", not with a RIFF/WAVE header'),
        (good[:30], "truncated: the file ends inside its header, after 30 bytes"),
        (good[:6], "truncated: the file ends inside its header, after 6 bytes"),
        (good[:40], "fmt chunk and/or data chunk missing; the file is 40 bytes"),
        (b"RIFF\x10\x00\x00\x00AVI LIST", 'a RIFF file of type "AVI ", not WAVE'),
    ]
    path = tmp_path / "in.wav"
    for raw, why in cases:
        path.write_bytes(raw)
        for source, name in ((path, str(path)), (raw, "audio")):
            with pytest.raises(AudioFormatError) as raised:
                read_wav(source)
            assert str(raised.value) == f"{name}: not a PCM WAV file ({why})"


@needs_espeak
def test_a_truncated_wav_is_said_to_be_cut_short_and_what_is_there_is_used(
    tmp_path: Path,
) -> None:
    import subprocess

    from tests.voice.helpers import ESPEAK

    whole = wav_bytes(speak("move forward one meter"))
    frames = (len(whole) - 44) // 2
    cut = tmp_path / "cut.wav"
    cut.write_bytes(whole[: 44 + 2 * 8000 + 1])  # 8000 frames and half of the next one
    pcm, notes = read_wav(cut)
    assert len(pcm) == 2 * 8000
    assert notes == [
        f"the file is cut short: its header says {frames} frames ({frames / 16000:.2f} s), "
        "8000 are present (0.50 s); what is there is used"
    ]
    assert read_wav(whole)[1] == []  # a whole file: no note
    # a writer that cannot seek back (espeak-ng to a pipe) leaves a placeholder length: no note
    streamed = subprocess.run(
        [str(ESPEAK), "--stdout", "hello"], capture_output=True, check=True, timeout=30
    ).stdout
    assert read_wav(streamed)[1] == []


def test_a_ten_minute_recording_is_cut_into_bounded_utterances() -> None:
    voice = read_wav(spoken_wav("x" * 900))[0]  # ~58 s of voice-like sound, no pause
    pcm = voice * 10 + silence(1.0)  # ten minutes of talking
    vad, ep = Vad(), Endpointer(max_utterance_s=30.0)
    utterances: list[Utterance] = []
    for i in range(0, len(pcm), 640):
        frame = AudioFrame(pcm[i : i + 640], i / 32000)
        for ev in ep.push(frame, vad.is_speech(frame.samples)):
            if isinstance(ev, Utterance):
                utterances.append(ev)
    assert len(utterances) >= 19
    assert all(u.duration_s <= 30.2 for u in utterances)
    assert sum(u.truncated for u in utterances) >= 18


@needs_espeak
async def test_a_transcript_in_the_other_language_is_said_and_still_used(
    scripted_server: Any,
) -> None:
    server = scripted_server({"turns": [], "lanes": {"transcriptions": [{"text": "向前走一米"}]}})
    rec, heard = await _listen(speak("xiang qian zou yi mi"), server)
    transcript = rec.of("transcript")[0]
    assert transcript.data["lang"] == "zh"
    assert "heard zh while the agent language is en" in transcript.data["note"]
    assert heard == ["向前走一米"]


@needs_espeak
async def test_a_transcription_endpoint_that_times_out_is_said_and_listening_goes_on(
    scripted_server: Any,
) -> None:
    server = scripted_server(
        {
            "turns": [],
            "lanes": {"transcriptions": [{"text": "late", "delay_s": 3}, {"text": "stop"}]},
        }
    )
    rec, heard = await _listen(speak("turn left") + silence(1.0) + speak("stop"), server, 1.0)
    first, second = rec.of("transcript")
    assert "did not answer within 1 s" in first.data["error"]
    assert "type the command instead" in first.data["note"]
    assert second.data["text"] == "stop"
    assert heard == ["stop"]


class NullSink(ClockedSink):
    def __init__(self) -> None:
        super().__init__("null")


async def test_a_missing_tts_engine_is_said_once_and_replies_stay_text() -> None:
    bus = EventBus()
    rec = Recorder()
    bus.subscribe(rec)
    tts = EspeakTTS(binary="espeak-ng-not-installed")
    with pytest.raises(Exception, match="not installed: apt-get install espeak-ng"):
        tts.check()
    sink = NullSink()
    player = Player(sink, tts, bus)
    player.begin("t1")
    player.say("First sentence.")
    player.say("Second sentence.")
    await asyncio.wait_for(player.wait_idle(), 10)
    player.say("Third sentence.")  # after a missing engine nothing more is tried
    await asyncio.wait_for(player.wait_idle(), 10)
    failed = [e for e in rec.of("speech_out") if e.data["state"] == "failed"]
    assert len(failed) == 1
    assert "espeak-ng-not-installed is not installed" in failed[0].data["error"]
    assert sink.played_samples == 0
    await player.close()
    await sink.close()


PROXY_PAGE = (
    "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><center>"
    "<h1>502 Bad Gateway</h1></center><hr><center>nginx/1.25.3</center></body></html>"
)


@pytest.mark.parametrize("lane", ["transcriptions", "speech"])
async def test_a_proxy_error_page_is_told_by_its_title(scripted_server: Any, lane: str) -> None:
    """Issue 22 "Also" for the speech endpoints: the status and the page's title, never its
    HTML (the SDK's own message quoted the whole page)."""
    page = {"error": {"status": 502, "body": PROXY_PAGE}}
    server = scripted_server({"turns": [], "lanes": {lane: [page]}})
    engine: Any
    if lane == "transcriptions":
        engine = OpenAISTT(server.base_url, "whisper-1", "k", timeout_s=10)
        call = engine.transcribe(silence(0.5), "en")
    else:
        engine = OpenAITTS(server.base_url, api_key="k", timeout_s=10)
        call = engine.synthesize("hello", "en")
    try:
        with pytest.raises(SpeechEngineError) as failed:
            await call
    finally:
        await engine.aclose()
    message = str(failed.value)
    assert message.endswith("answered HTTP 502: 502 Bad Gateway (an HTML page)"), message
    assert "<" not in message and "nginx" not in message

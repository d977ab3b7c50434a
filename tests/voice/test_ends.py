"""Audio ends and controls not covered elsewhere (issue 16): raw PCM pipes both ways, Chinese
speech from espeak-ng, recording into the workspace, and the web console's push-to-talk link."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import textwrap
import wave
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import make_agent
from tests.voice.helpers import needs_espeak, silence, speak

from loopact.app.voice import voice_refusal
from loopact.channels.voice_tools import VoiceControls
from loopact.channels.web.voice import MAX_FRAME_BYTES, WebVoice
from loopact.events import EventBus
from loopact.testing.audio_protocol import spoken_wav
from loopact.voice.audio import read_wav, wav_bytes
from loopact.voice.files import PcmPipeSink, PcmPipeSource, WavFileSource
from loopact.voice.listen import Listener
from loopact.voice.stt import OpenAISTT, Transcript
from loopact.voice.tts import EspeakTTS


async def test_raw_pcm_pipes_in_and_out() -> None:
    pcm = read_wav(spoken_wav("hello pipe"))[0]
    r, w = os.pipe()
    with os.fdopen(w, "wb") as writer:
        writer.write(pcm + b"\x01")  # and half a sample at the end
    source = PcmPipeSource(os.fdopen(r, "rb"), tail_s=0.1)
    got = b"".join([f.pcm async for f in source.frames()])
    assert got.startswith(pcm[: len(pcm) // 640 * 640])
    assert len(got) >= len(pcm) and "in the middle of a sample" in source.notes[0]
    out = io.BytesIO()
    sink = PcmPipeSink(out)  # type: ignore[arg-type]
    await sink.write(pcm)
    await sink.drain()
    await sink.close()
    assert out.getvalue() == pcm


async def test_a_wav_header_on_the_pcm_pipe_is_skipped_or_refused() -> None:
    import numpy as np

    from loopact.errors import AudioFormatError

    pcm = read_wav(spoken_wav("hello pipe"))[0]

    async def through_pipe(data: bytes) -> bytes:
        r, w = os.pipe()
        with os.fdopen(w, "wb") as writer:
            writer.write(data)
        source = PcmPipeSource(os.fdopen(r, "rb"), tail_s=0.0)
        return b"".join([f.pcm async for f in source.frames()])

    assert await through_pipe(wav_bytes(pcm)) == pcm  # the 44 header bytes are not samples
    assert await through_pipe(pcm) == pcm  # raw PCM as before
    with pytest.raises(AudioFormatError, match=r"^stdin: a WAV stream of 8000 Hz, 1-channel"):
        await through_pipe(wav_bytes(pcm, rate_hz=8000))
    stereo = io.BytesIO()
    with wave.open(stereo, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.repeat(np.frombuffer(pcm, dtype="<i2"), 2).tobytes())
    with pytest.raises(AudioFormatError, match="16000 Hz, 2-channel, 16-bit PCM"):
        await through_pipe(stereo.getvalue())
    with pytest.raises(AudioFormatError, match="ends before its data chunk"):
        await through_pipe(wav_bytes(pcm)[:30])


def test_a_silent_open_pipe_does_not_block_exit(tmp_path: Path) -> None:
    """A producer that keeps the PCM pipe open without writing: the process still exits."""
    code = textwrap.dedent(
        """
        import asyncio, os, threading
        from loopact.voice.files import PcmPipeSource

        async def main():
            r, _w = os.pipe()
            source = PcmPipeSource(os.fdopen(r, "rb"))
            frames = source.frames().__aiter__()
            waiting = asyncio.ensure_future(frames.__anext__())
            while not any(t.name == "loopact-pcm-reader" for t in threading.enumerate()):
                await asyncio.sleep(0.01)
            waiting.cancel()
            await source.close()
            print("ended", flush=True)

        asyncio.run(main())
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ended", proc.stderr


@needs_espeak
async def test_espeak_speaks_chinese_with_the_mandarin_voice() -> None:
    tts = EspeakTTS()
    zh = await tts.synthesize("我向前走了一米。", "zh")
    en = await tts.synthesize("I moved one meter.", "en")
    assert zh.lang == "zh" and 0.8 < zh.duration_s < 5.0
    assert en.duration_s > 0.5 and zh.pcm != en.pcm


@needs_espeak
async def test_record_audio_writes_a_wav_into_the_workspace(tmp_path: Path) -> None:
    wav = tmp_path / "mic.wav"
    wav.write_bytes(wav_bytes(speak("recording test") + silence(2.0)))
    bus = EventBus()

    async def ignore(_t: Transcript) -> None:
        return None

    stt = OpenAISTT("http://127.0.0.1:9/v1", timeout_s=0.5)  # never reached: nothing to say
    listener = Listener(WavFileSource(wav, tail_s=0.0), stt, None, bus, ignore)
    listener.muted = True  # only recording
    controls = VoiceControls(None, listener, tmp_path / "ws")
    runner = asyncio.ensure_future(listener.run())
    result = await asyncio.wait_for(controls.record(1.0, "rec/one.wav"), 20)
    await runner
    await stt.aclose()
    assert result.ok and result.metadata["path"] == "rec/one.wav"
    with wave.open(str(tmp_path / "ws" / "rec" / "one.wav")) as w:
        assert (w.getframerate(), w.getnchannels()) == (16000, 1)
        assert w.getnframes() == 16000
    with pytest.raises(Exception, match="must end in .wav"):
        await controls.record(1.0, "x.mp3")


@needs_espeak
async def test_push_to_talk_release_ends_the_utterance_and_sends_the_command(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        {
            "turns": [{"text": "Turning.", "expect": {"last_user_contains": "turn left"}}],
            "lanes": {"transcriptions": [{"text": "turn left"}]},
        }
    )
    agent, rec = make_agent(server, tmp_path)
    runner = asyncio.ensure_future(agent.run())
    voice = WebVoice(
        agent, agent.bus, lambda: OpenAISTT(server.base_url, timeout_s=10), lambda: None
    )
    link = voice.connect()
    try:
        # an unknown mode is refused like an unknown state, and starts nothing (finding 9)
        bad = link.control({"type": "mic", "state": "start", "mode": "weird"})
        assert bad == "mic mode 'weird': expected ptt or handsfree"
        assert link.control({"type": "mic", "state": "bogus"}) == (
            "mic state 'bogus': expected start or stop"
        )
        assert not link.mic_on and voice.listener is None
        assert link.control({"type": "mic", "state": "start", "mode": "ptt"}) is None
        pcm = speak("turn left")
        for i in range(0, len(pcm), 2048):
            assert link.receive(pcm[i : i + 2048]) is None
        assert "refused" in str(link.receive(b"\0" * (MAX_FRAME_BYTES + 2)))
        assert "16-bit" in str(link.receive(b"\0\0\0"))
        link.control({"type": "mic", "state": "stop"})  # released: no need to wait for silence
        start = await rec.wait_for(lambda e: e.type == "task_start", timeout=30)
        assert start.data == {"text": "turn left", "source": "web"}
        await rec.wait_for(lambda e: e.type == "task_end", timeout=30)
        refusal = voice_refusal("text")
        assert refusal == (
            "agent.modality is 'text': spoken requests are refused; set agent.modality to "
            "voice+text (or any)"
        )
        refused = WebVoice(agent, agent.bus, voice._stt_factory, lambda: None, refusal)
        assert refused.connect().control({"type": "mic", "state": "start"}) == refusal
    finally:
        link.close()
        await voice.close()
        await agent.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)

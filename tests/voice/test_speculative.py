"""Speculative transcription (issue 16, first-audio target): the utterance so far is
transcribed at the first pause (200 ms of silence) instead of after the end-of-utterance
silence (600 ms); more speech after the pause drops that transcript. Real VAD and endpointer,
transcripts from the scripted model server's transcription endpoint, whose uploads show what
was transcribed when."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
from tests.agent.helpers import Recorder
from tests.voice.helpers import needs_espeak, silence, speak

from loopact.events import EventBus
from loopact.voice.audio import AudioFrame, paced, read_wav
from loopact.voice.listen import Listener
from loopact.voice.stt import OpenAISTT, Transcript, WhisperSTT
from loopact.voice.vad import Endpointer, Pause, Utterance, Vad

pytestmark = needs_espeak


class GatedSource:
    """Audio parts fed as fast as the pipeline takes them; a callable part holds the
    microphone until it returns True (an observable event, not a delay)."""

    name = "test microphone"

    def __init__(self, parts: list[bytes | Callable[[], bool]]) -> None:
        self.parts = parts

    async def frames(self) -> AsyncIterator[AudioFrame]:
        for part in self.parts:
            if isinstance(part, bytes):
                async for frame in paced(part, realtime=False):
                    yield frame
                continue
            while not part():  # no frames meanwhile: no audio time passes
                await asyncio.sleep(0.01)

    async def close(self) -> None:
        pass


def _voiced(pcm: bytes) -> bytes:
    """espeak-ng's speech without its own leading and trailing silence."""
    x = np.frombuffer(pcm, dtype="<i2")
    loud = np.flatnonzero(np.abs(x) > 300)
    return x[loud[0] : loud[-1] + 1].tobytes()


def _uploads(server: Any) -> list[bytes]:
    """The PCM of each audio upload, in order."""
    out = []
    for r in server.requests:
        if r.path == "/v1/audio/transcriptions":
            raw = r.raw_body
            out.append(read_wav(raw[raw.index(b"RIFF") :])[0])
    return out


async def _listen(server: Any, source: GatedSource) -> tuple[Recorder, list[str]]:
    bus = EventBus()
    rec = Recorder()
    bus.subscribe(rec)
    heard: list[str] = []

    async def on_transcript(t: Transcript) -> None:
        heard.append(t.text)

    stt = OpenAISTT(server.base_url, "whisper-1", "k", timeout_s=10)
    listener = Listener(source, stt, None, bus, on_transcript, speculative=True)
    try:
        await asyncio.wait_for(listener.run(), 60)
    finally:
        await stt.aclose()
    return rec, heard


def test_the_endpointer_reports_a_pause_before_the_end() -> None:
    pcm = silence(0.3) + speak("move forward") + silence(1.0)
    vad, ep = Vad(), Endpointer()
    events: list[Any] = []
    for i in range(0, len(pcm), 640):
        frame = AudioFrame(pcm[i : i + 640], i / 32000)
        events += [(e, frame.t_s) for e in ep.push(frame, vad.is_speech(frame.samples))]
    pauses = [(e, t) for e, t in events if isinstance(e, Pause)]
    ends = [(e, t) for e, t in events if isinstance(e, Utterance)]
    assert len(ends) == 1 and len(pauses) >= 1
    pause, t_pause = pauses[-1]
    utt, t_end = ends[0]
    assert abs((t_end - t_pause) - 0.4) < 0.03  # 200 ms of silence, then 600 ms
    assert (pause.start_s, pause.speech_frames) == (utt.start_s, utt.speech_frames)
    assert utt.pcm.startswith(pause.pcm) and len(utt.pcm) - len(pause.pcm) == 0.4 * 32000
    assert Endpointer(early_ms=0).push(AudioFrame(silence(0.02), 0.0), False) == []


async def test_an_utterance_that_ends_at_the_pause_is_transcribed_once_from_the_pause(
    scripted_server: Any,
) -> None:
    server = scripted_server({"turns": [], "lanes": {"transcriptions": [{"text": "turn left"}]}})
    speech = speak("turn left")
    rec, heard = await _listen(server, GatedSource([silence(0.3), speech, silence(1.0)]))
    assert heard == ["turn left"]
    (upload,) = _uploads(server)  # one request: the speculative one was used
    ended = next(e for e in rec.of("speech_in") if e.data["state"] == "ended")
    # the upload is the utterance up to the pause: 400 ms shorter than the whole utterance
    assert abs(len(upload) / 32000 - (ended.data["duration_s"] - 0.4)) < 0.03


async def test_speech_after_the_pause_drops_the_early_transcript(scripted_server: Any) -> None:
    server = scripted_server(
        {
            "turns": [],
            "lanes": {
                "transcriptions": [{"text": "move forward"}, {"text": "move forward one meter"}]
            },
        }
    )
    first, second = _voiced(speak("move forward")), _voiced(speak("one meter"))
    sent = lambda: len(_uploads(server)) == 1  # noqa: E731 - the speculative upload arrived
    source = GatedSource([silence(0.3), first, silence(0.3), sent, second, silence(1.0)])
    rec, heard = await _listen(server, source)
    assert heard == ["move forward one meter"]
    uploads = _uploads(server)
    assert len(uploads) == 2 and len(uploads[1]) > len(uploads[0]) + len(second)
    assert [e.data["text"] for e in rec.of("transcript")] == ["move forward one meter"]


async def test_offline_whisper_is_speculative_and_an_endpoint_is_not() -> None:
    assert WhisperSTT.speculative is True and OpenAISTT.speculative is False

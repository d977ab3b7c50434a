"""The scripted server's audio endpoints (issue 16): transcripts from the script's
``transcriptions`` lane, a WAV for a text, errors in the real shapes; through the openai SDK."""

from __future__ import annotations

import io
import wave
from typing import Any

import openai
import pytest

from loopact.errors import ScriptError
from loopact.testing import ScriptedModelServer
from loopact.voice.audio import wav_bytes


def _client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)


def test_transcriptions_answer_from_their_lane_in_upload_order(scripted_server: Any) -> None:
    server = scripted_server(
        {
            "turns": [{"text": "chat answer"}],
            "lanes": {"transcriptions": [{"text": "move forward"}, {"text": "停"}]},
        }
    )
    client = _client(server)
    audio = ("a.wav", wav_bytes(b"\0\0" * 1600))
    first = client.audio.transcriptions.create(model="whisper-1", file=audio, language="en")
    text = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="text")
    assert first.text == "move forward" and str(text) == "停"
    # the chat turn was not taken by the uploads
    chat = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert chat.choices[0].message.content == "chat answer"
    upload = server.requests[0]
    assert upload.turn_index == 0 and b"RIFF" in upload.raw_body


def test_transcription_errors_and_a_missing_lane() -> None:
    with ScriptedModelServer(
        {"lanes": {"transcriptions": [{"error": {"status": 503, "message": "busy"}}]}}
    ) as server:
        client = _client(server)
        with pytest.raises(openai.APIStatusError) as info:
            client.audio.transcriptions.create(model="w", file=("a.wav", wav_bytes(b"\0\0")))
        assert info.value.status_code == 503
        server.assert_consumed()
    with (
        ScriptedModelServer({"turns": []}) as server,
        pytest.raises(openai.BadRequestError, match="no 'transcriptions' lane"),
    ):
        _client(server).audio.transcriptions.create(model="w", file=("a.wav", wav_bytes(b"\0\0")))
    with ScriptedModelServer({"lanes": {"transcriptions": [{"text": "unused"}]}}) as server:
        pass
    with pytest.raises(ScriptError, match="1 of 1 turns of lane 'transcriptions' not consumed"):
        server.assert_consumed()


def test_speech_returns_a_wav_whose_length_follows_the_text(scripted_server: Any) -> None:
    server = scripted_server({"turns": []})
    client = _client(server)
    durations = []
    for text in ("Hi.", "This sentence is quite a lot longer than the first one."):
        data = client.audio.speech.create(
            model="tts-1", voice="alloy", input=text, response_format="wav"
        ).content
        with wave.open(io.BytesIO(data)) as wav:
            assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
            durations.append(wav.getnframes() / 24000)
    assert 0.3 <= durations[0] < 0.5 and 3.0 < durations[1] < 4.5
    raw = client.audio.speech.create(
        model="tts-1", voice="alloy", input="Hi there.", response_format="pcm"
    ).content
    assert len(raw) == int(0.065 * 9 * 24000) * 2
    with pytest.raises(openai.BadRequestError, match="only wav and pcm"):
        client.audio.speech.create(model="tts-1", voice="alloy", input="x", response_format="mp3")
    assert all(r.turn_index is None for r in server.requests)

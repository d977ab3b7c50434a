"""Audio content parts (issue 46 item 7, SPEC B8): a spoken clip goes to an OpenAI-compatible
model that hears audio as an ``input_audio`` part; every other provider and model gets its
transcript. The scripted server checks the part's shape as a real server does."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from tests.llm.test_openai_chat import collect, make_model

from loopact.errors import ModelFatalError
from loopact.llm.anthropic_messages import to_anthropic_messages
from loopact.llm.base import Capabilities, ModelRequest
from loopact.llm.messages import Audio, Message, history_summary
from loopact.llm.tokens import estimate_message_tokens
from loopact.voice.audio import wav_bytes

WAV = wav_bytes(b"\x01\x00" * 16_000)  # one second of 16 kHz mono PCM
HEARS = Capabilities(audio_input=True)


def clip(instead: bool) -> Audio:
    return Audio(WAV, "wav", 1.0, transcript="turn left", instead_of_text=instead)


def request(instead: bool) -> ModelRequest:
    message = Message.user("turn left", audio=(clip(instead),))
    return ModelRequest(messages=(Message.system("You drive a robot."), message))


async def test_the_clip_instead_of_its_transcript(scripted_server: Any) -> None:
    server = scripted_server([{"text": "Turning.", "expect": {"audio": True}}])
    await collect(make_model(server, capabilities=HEARS), request(instead=True))
    content = server.requests[0].json()["messages"][-1]["content"]
    assert content == [
        {
            "type": "input_audio",
            "input_audio": {"data": base64.b64encode(WAV).decode("ascii"), "format": "wav"},
        }
    ]


async def test_the_clip_beside_its_transcript(scripted_server: Any) -> None:
    server = scripted_server([{"text": "Turning.", "expect": {"audio": True}}])
    await collect(make_model(server, capabilities=HEARS), request(instead=False))
    content = server.requests[0].json()["messages"][-1]["content"]
    assert [p["type"] for p in content] == ["text", "input_audio"]
    assert content[0]["text"] == "turn left"


@pytest.mark.parametrize("instead", [True, False])
async def test_a_model_that_does_not_hear_gets_the_transcript(
    scripted_server: Any, instead: bool
) -> None:
    server = scripted_server([{"text": "Turning.", "expect": {"audio": False}}])
    await collect(make_model(server), request(instead))
    assert server.requests[0].json()["messages"][-1]["content"] == "turn left"
    system, messages = to_anthropic_messages(request(instead).messages)
    assert messages[-1]["content"] == [{"type": "text", "text": "turn left"}]


async def test_the_server_refuses_audio_as_a_model_without_audio_input_does(
    scripted_server: Any,
) -> None:
    server = scripted_server([{"extras": {"openai": {"reject_audio": True}}}])
    with pytest.raises(ModelFatalError, match="audio input is not supported"):
        await collect(make_model(server, capabilities=HEARS), request(instead=True))


async def test_a_malformed_input_audio_part_is_refused(scripted_server: Any) -> None:
    server = scripted_server([{}])
    model = make_model(server, capabilities=HEARS)
    bad = Audio(WAV, "ogg", 1.0, transcript="x", instead_of_text=True)  # type: ignore[arg-type]
    req = ModelRequest(messages=(Message.user("", audio=(bad,)),))
    with pytest.raises(ModelFatalError, match="input_audio.format"):
        await collect(model, req)


def test_traces_snapshots_and_token_estimates_know_the_clip() -> None:
    message = request(instead=True).messages[-1]
    assert message.text == "" and message.audio == [clip(True)]
    summary = history_summary([message])[0]["content"]
    assert summary == [
        {
            "type": "audio",
            "sha256": clip(True).sha256,
            "bytes": len(WAV),
            "format": "wav",
            "duration_s": 1.0,
            "transcript": "turn left",
        }
    ]
    assert estimate_message_tokens([message]) >= 10  # a second of audio, about 10 tokens


async def test_dify_gets_the_transcript(scripted_server: Any) -> None:
    from loopact.llm.dify import DifyModel

    server = scripted_server([{"text": "Turning."}])
    model = DifyModel(base_url=server.base_url, api_key="app-k", send_system_prompt=False)
    events = [e async for e in model.stream(request(instead=True))]
    await model.aclose()
    assert events and server.requests[0].json()["query"] == "turn left"

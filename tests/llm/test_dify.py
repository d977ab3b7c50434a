"""Dify chat-messages provider through real HTTP against the scripted server (SPEC B3, X2)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loopact.agent.actiontext import parse_actions
from loopact.errors import ModelFatalError, ModelRetryableError, ScriptError
from loopact.llm.base import (
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolSpec,
)
from loopact.llm.dify import DifyModel
from loopact.llm.messages import Image, Message
from loopact.testing import ScriptedModelServer
from loopact.testing.dify_protocol import DifyProtocol

JPEG = Image(b"\xff\xd8\xff\xe0fake-jpeg-bytes\xff\xd9", media_type="image/jpeg")
MOVE = ToolSpec(
    "move_forward",
    "Drive straight ahead.",
    {
        "type": "object",
        "properties": {"distance_m": {"type": "number"}},
        "required": ["distance_m"],
    },
)


class Served:
    def __init__(self, server: ScriptedModelServer, proto: DifyProtocol) -> None:
        self.server = server
        self.proto = proto

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.server.requests if r.path == "/v1/chat-messages"]


@pytest.fixture
def dify() -> Iterator[Callable[[Any], Served]]:
    started: list[ScriptedModelServer] = []

    def start(script: Any) -> Served:
        proto = DifyProtocol()
        s = ScriptedModelServer(script, protocols=[proto]).start()
        started.append(s)
        return Served(s, proto)

    yield start
    problems = []
    for s in started:
        s.stop()
        try:
            s.assert_consumed()
        except ScriptError as exc:
            problems.append(str(exc))
    assert not problems, problems


def model_for(served: Served) -> DifyModel:
    return DifyModel("my-app", base_url=served.server.base_url, api_key="app-secret")


async def run(model: DifyModel, *messages: Message) -> list[ModelEvent]:
    return [e async for e in model.stream(ModelRequest(messages=messages, tools=(MOVE,)))]


def done_of(events: list[ModelEvent]) -> ResponseDone:
    assert isinstance(events[-1], ResponseDone)
    return events[-1]


async def test_conversation_id_lifecycle(dify: Callable[[Any], Served]) -> None:
    d = dify([{"text": "hello"}, {"text": "again"}, {"text": "fresh"}])
    model = model_for(d)
    history = [
        Message.system("You drive a robot. Actions: move_forward(distance_m)"),
        Message.user("hi"),
    ]
    first = done_of(await run(model, *history))
    assert model.conversation_id == "conv-scripted-1"
    assert first.message.provider_data["dify"]["conversation_id"] == "conv-scripted-1"
    history += [first.message, Message.user("once more")]
    await run(model, *history)
    model.reset()
    assert model.conversation_id == ""
    await run(model, Message.system("sys"), Message.user("new task"))
    await model.aclose()
    bodies = d.chat_bodies()
    assert [b["conversation_id"] for b in bodies] == ["", "conv-scripted-1", ""]
    # First request of a conversation carries the system prompt; later ones only the new text.
    assert bodies[0]["query"] == "You drive a robot. Actions: move_forward(distance_m)\n\nhi"
    assert bodies[1]["query"] == "once more"
    assert bodies[2]["query"] == "sys\n\nnew task"
    for b in bodies:
        assert b["response_mode"] == "streaming" and b["inputs"] == {} and b["user"] == "loopact"
        assert "files" not in b
    assert d.server.requests[0].headers["authorization"] == "Bearer app-secret"


async def test_image_uploaded_first_and_referenced_by_id(dify: Callable[[Any], Served]) -> None:
    d = dify([{"text": "I see it."}, {"text": "ok"}])
    model = model_for(d)
    history = [Message.user("what is this?", images=[JPEG])]
    done = done_of(await run(model, *history))
    # A tool result with the same image later: not uploaded again.
    history += [done.message, Message.tool("c1", "seewhat", "frame", images=(JPEG,))]
    await run(model, *history)
    await model.aclose()
    paths = [r.path for r in d.server.requests]
    assert paths == ["/v1/files/upload", "/v1/chat-messages", "/v1/chat-messages"]
    assert len(d.proto.uploads) == 1
    up = d.proto.uploads[0]
    assert up["size"] == len(JPEG.data) and up["sha256"] == JPEG.sha256
    assert up["mime_type"] == "image/jpeg" and up["user"] == "loopact"
    ref = {"type": "image", "transfer_method": "local_file", "upload_file_id": up["id"]}
    bodies = d.chat_bodies()
    assert bodies[0]["files"] == [ref]
    assert bodies[1]["files"] == [ref]
    assert bodies[1]["query"] == "Result of seewhat: frame"


async def test_error_event_raises_fatal_naming_code(dify: Callable[[Any], Served]) -> None:
    d = dify(
        [
            {
                "text": "partial",
                "extras": {
                    "dify": {
                        "error": {
                            "code": "provider_quota_exceeded",
                            "message": "Your quota is used up",
                            "status": 400,
                        }
                    }
                },
            }
        ]
    )
    model = model_for(d)
    with pytest.raises(ModelFatalError) as err:
        await run(model, Message.user("go"))
    await model.aclose()
    assert "provider_quota_exceeded" in str(err.value)
    assert "Your quota is used up" in str(err.value)
    assert err.value.status == 400
    assert model.conversation_id == ""


async def test_think_kept_apart_and_workflow_events_ignored(
    dify: Callable[[Any], Served],
) -> None:
    d = dify(
        [
            {
                "reasoning": "The box is 1 m ahead.",
                "text": "Driving to the box.",
                "tool_calls": [{"name": "move_forward", "arguments": {"distance_m": 1.0}}],
                "chunk_size": 4,
                "usage": {"prompt_tokens": 30, "completion_tokens": 12},
                "extras": {
                    "dify": {
                        "event": "agent_message",
                        "events_before": [
                            {
                                "event": "workflow_started",
                                "workflow_run_id": "w1",
                                "data": {"id": "w1"},
                            },
                            {"event": "node_started", "data": {"node_id": "n1", "title": "LLM"}},
                            {"event": "agent_thought", "thought": "", "tool": "", "position": 1},
                        ],
                        "events_after": [
                            {"event": "node_finished", "data": {"node_id": "n1"}},
                            {
                                "event": "message_file",
                                "id": "f9",
                                "type": "image",
                                "url": "http://x/f9",
                                "belongs_to": "assistant",
                            },
                            {"event": "workflow_finished", "data": {"status": "succeeded"}},
                            {"event": "tts_message", "audio": ""},
                        ],
                    }
                },
            }
        ]
    )
    model = model_for(d)
    events = await run(model, Message.user("go to the box"))
    await model.aclose()
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert reasoning == "The box is 1 m ahead."
    assert text == "Driving to the box.\nmove_forward(distance_m=1.0)"
    done = done_of(events)
    assert done.message.text == text and done.message.reasoning == reasoning
    assert done.message.tool_calls == ()
    assert done.usage.input_tokens == 30 and done.usage.output_tokens == 12
    assert done.message.provider_data["dify"]["files"][0]["id"] == "f9"
    # The answer is action text (SPEC A5): it parses into the tool call.
    parsed = parse_actions(done.message.text, [MOVE])
    assert parsed.call is not None and parsed.call.arguments == {"distance_m": 1.0}
    assert parsed.progress == "Driving to the box."


async def test_http_errors_and_cut_stream(dify: Callable[[Any], Served]) -> None:
    d = dify(
        [
            {"error": {"status": 429, "message": "too fast", "retry_after": "2"}},
            {"error": {"status": 400, "message": "bad param", "code": "invalid_param"}},
            {"text": "a long answer that will be cut", "chunk_size": 3, "cut_after_chunks": 4},
            {"raw_chunks": ['{"event": "message", "answer": "no end"}']},
        ]
    )
    model = model_for(d)
    with pytest.raises(ModelRetryableError) as e1:
        await run(model, Message.user("x"))
    assert e1.value.status == 429 and e1.value.retry_after_s == 2.0
    with pytest.raises(ModelFatalError) as e2:
        await run(model, Message.user("x"))
    assert "invalid_param: bad param" in str(e2.value) and "app-secret" not in str(e2.value)
    with pytest.raises(ModelRetryableError, match="cut"):
        await run(model, Message.user("x"))
    with pytest.raises(ModelRetryableError, match="before message_end"):
        await run(model, Message.user("x"))
    await model.aclose()


async def test_blocking_mode_served(dify: Callable[[Any], Served]) -> None:
    """The scripted protocol answers blocking requests with Dify's JSON shape."""
    import httpx2

    d = dify([{"text": "whole answer", "usage": {"prompt_tokens": 3, "completion_tokens": 2}}])
    async with httpx2.AsyncClient() as client:
        r = await client.post(
            f"{d.server.base_url}/chat-messages",
            json={
                "inputs": {},
                "query": "q",
                "response_mode": "blocking",
                "conversation_id": "",
                "user": "u",
            },
        )
    body = r.json()
    assert r.status_code == 200
    assert body["answer"] == "whole answer" and body["conversation_id"] == "conv-scripted-1"
    assert body["metadata"]["usage"]["total_tokens"] == 5


async def test_nothing_new_to_send_is_fatal() -> None:
    model = DifyModel(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ModelFatalError, match="nothing new"):
        await run(model, Message.user("hi"), Message.assistant("hello"))
    await model.aclose()


async def test_default_server_speaks_all_three_protocols(
    scripted_server: Callable[[Any], ScriptedModelServer],
) -> None:
    """The shared fixture's server (default protocols) serves Dify beside OpenAI/Anthropic."""
    from loopact.llm.anthropic import AnthropicModel

    s = scripted_server([{"text": "from dify"}, {"text": "from anthropic"}])
    dify_model = DifyModel(base_url=s.base_url, api_key="k")
    done = done_of(await run(dify_model, Message.user("hi")))
    await dify_model.aclose()
    claude = AnthropicModel("c", base_url=s.base_url, api_key="k")  # trailing /v1 tolerated
    events = [e async for e in claude.stream(ModelRequest(messages=(Message.user("hi"),)))]
    await claude.aclose()
    assert done.message.text == "from dify"
    assert done_of(events).message.text == "from anthropic"
    assert [r.path for r in s.requests] == ["/v1/chat-messages", "/v1/messages"]


async def test_vanished_conversation_is_forgotten(dify: Callable[[Any], Served]) -> None:
    d = dify(
        [
            {"text": "hello"},
            {"error": {"status": 404, "message": "Conversation Not Exists.", "code": "not_found"}},
            {"text": "fresh start"},
        ]
    )
    model = model_for(d)
    history = [Message.system("sys"), Message.user("hi")]
    done = done_of(await run(model, *history))
    history += [done.message, Message.user("next")]
    with pytest.raises(ModelRetryableError, match="no longer exists"):
        await run(model, *history)
    assert model.conversation_id == ""
    assert done_of(await run(model, *history)).message.text == "fresh start"
    await model.aclose()
    bodies = d.chat_bodies()
    assert [b["conversation_id"] for b in bodies] == ["", "conv-scripted-1", ""]
    assert bodies[2]["query"] == "sys\n\nnext"

"""Dify event shapes real servers send, over real HTTP into the real provider and loop (SPEC B3,
B5, B6; issue 22).

Each test replays a shape Dify (or a proxy in front of it) sends that the happy-path tests do
not: ``message_end`` metadata that is not an object, ``error`` events of a transient failure
(Dify's own ``internal_server_error``, a model provider's rate limit passed through as
``completion_request_error``), an event whose data is cut, and a conversation (and its files)
lost after a server restart.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.errors import ModelFatalError, ModelRetryableError
from loopact.llm.base import ModelEvent, ModelRequest, ResponseDone
from loopact.llm.dify import DifyModel
from loopact.llm.messages import Image, Message
from loopact.testing import ScriptedModelServer
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]
WRITE = 'file_write(path="a.txt", content="hi")'
JPEG = Image(b"\xff\xd8\xff\xe0fake-jpeg-bytes\xff\xd9", media_type="image/jpeg")


def model_for(server: ScriptedModelServer) -> DifyModel:
    return DifyModel(base_url=server.base_url, api_key="app-k", request_timeout_s=10)


async def collect(model: DifyModel, *messages: Message) -> list[ModelEvent]:
    return [e async for e in model.stream(ModelRequest(messages=messages))]


def agent_for(server: ScriptedModelServer, workspace: Path) -> tuple[Agent, Recorder]:
    agent = Agent(
        model_for(server),
        ToolRegistry(make_builtin_tools(workspace)),
        AgentOptions(
            bounds=Bounds(backoff_base_s=0.01, backoff_max_s=0.05),
            workspace=workspace,
            auto_approve=True,
        ),
    )
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


def event(**data: Any) -> str:
    return json.dumps({"conversation_id": "conv-1", **data})


@pytest.mark.parametrize(
    "metadata",
    ["oops", {"usage": [1, 2]}, {"usage": "12 tokens"}, [], {"usage": {"prompt_tokens": "7"}}],
    ids=["string", "usage-list", "usage-string", "list", "counts-as-text"],
)
async def test_message_end_metadata_of_any_shape_ends_the_answer(
    scripted_server: Factory, metadata: Any
) -> None:
    """A ``message_end`` whose ``metadata`` or ``usage`` is not an object failed the task
    with "internal error: AttributeError: 'str' object has no attribute 'get'"."""
    server = scripted_server(
        [
            {
                "raw_chunks": [
                    event(event="message", answer="hello"),
                    event(event="message_end", metadata=metadata),
                ]
            }
        ]
    )
    model = model_for(server)
    events = await collect(model, Message.user("hi"))
    await model.aclose()
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.message.text == "hello"
    assert done.usage.input_tokens == (7 if metadata == {"usage": {"prompt_tokens": "7"}} else 0)
    assert model.conversation_id == "conv-1"


TRANSIENT = [
    ("internal_server_error", "Internal Server Error, please contact support.", 500),
    ("completion_request_error", "[openai] Rate Limit Error, Error code: 429 - slow down", 400),
    ("completion_request_error", "[anthropic] Server Unavailable Error, Overloaded", 400),
    ("completion_request_error", "[ollama] Connection Error, connection refused", 400),
    ("too_many_requests", "Too many requests. Please try again later.", 429),
]


@pytest.mark.parametrize(
    ("code", "message", "status"),
    TRANSIENT,
    ids=["internal-error", "rate-limit", "unavailable", "connection", "429"],
)
async def test_a_transient_error_event_is_retried(
    scripted_server: Factory, tmp_path: Path, code: str, message: str, status: int
) -> None:
    """Dify streams a model provider's rate limit or outage as an ``error`` event (status
    400, ``completion_request_error``, the provider's error class in the message) and its
    own crash as ``internal_server_error`` 500: the task failed at once ("The model request
    failed: Dify error ...") where a retry succeeds."""
    error = {"code": code, "message": message, "status": status}
    server = scripted_server(
        [{"extras": {"dify": {"error": error}}}, {"text": WRITE}, {"text": "finishtask()"}]
    )
    agent, rec = agent_for(server, tmp_path / "ws")
    outcome = await agent.run_task("write hi into a.txt")
    await agent.close()
    assert outcome.status == "completed", outcome
    assert (tmp_path / "ws" / "a.txt").read_text() == "hi"
    (retry,) = rec.of("model_retry")
    assert f"Dify error {code}: {message}" in retry.data["error"]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            "provider_quota_exceeded",
            "Your quota for Dify Hosted Model Provider has been exhausted.",
        ),
        ("invalid_param", "Run failed: Node LLM run failed: bad prompt"),
        ("completion_request_error", "[openai] Bad Request Error, context length exceeded"),
        ("completion_request_error", "[openai] Incorrect model credentials provided"),
    ],
    ids=["quota", "invalid-param", "bad-request", "credentials"],
)
async def test_an_error_event_a_retry_cannot_fix_stays_fatal(
    scripted_server: Factory, code: str, message: str
) -> None:
    error = {"code": code, "message": message, "status": 400}
    server = scripted_server([{"extras": {"dify": {"error": error}}}])
    model = model_for(server)
    with pytest.raises(ModelFatalError) as info:
        await collect(model, Message.user("go"))
    await model.aclose()
    assert str(info.value) == f"Dify error {code}: {message}" and info.value.status == 400


async def test_http_400_of_a_provider_rate_limit_is_retryable(scripted_server: Factory) -> None:
    """The same rate limit raised before the stream starts is an HTTP 400 with that code."""
    message = "[openai] Rate Limit Error, Error code: 429"
    error = {"status": 400, "code": "completion_request_error", "message": message}
    server = scripted_server([{"error": error}])
    model = model_for(server)
    with pytest.raises(ModelRetryableError, match="Rate Limit Error") as info:
        await collect(model, Message.user("go"))
    await model.aclose()
    assert info.value.status == 400


async def test_an_event_cut_mid_json_is_retried(scripted_server: Factory, tmp_path: Path) -> None:
    """An event whose data is cut (``{"event": "message", "answer": "le_wr``, a proxy's
    buffer limit) failed the task at once as "malformed Dify event"; like a cut stream on
    every other provider it is worth a retry (SPEC B5)."""
    cut = '{"event": "message", "conversation_id": "conv-1", "answer": "le_wr'
    server = scripted_server(
        [
            {"raw_chunks": [event(event="message", answer="fi"), cut]},
            {"text": WRITE},
            {"text": "finishtask()"},
        ]
    )
    agent, rec = agent_for(server, tmp_path / "ws")
    outcome = await agent.run_task("write hi into a.txt")
    await agent.close()
    assert outcome.status == "completed", outcome
    (retry,) = rec.of("model_retry")
    assert "Dify stream was cut: malformed chunk" in retry.data["error"]


async def test_a_lost_conversation_uploads_its_images_again(scripted_server: Factory) -> None:
    """A Dify that lost a conversation (HTTP 404 "Conversation Not Exists.", a server
    restarted on a fresh database) may have lost the files uploaded for it: the retry's new
    conversation uploads the image again instead of citing a file id the server may not know."""
    lost = {"status": 404, "message": "Conversation Not Exists.", "code": "not_found"}
    server = scripted_server([{"text": "a box"}, {"error": lost}, {"text": "still a box"}])
    model = model_for(server)
    history = [Message.user("what is this?", images=[JPEG])]
    done = await collect(model, *history)
    assert isinstance(done[-1], ResponseDone)
    history += [done[-1].message, Message.tool("c1", "seewhat", "frame", images=(JPEG,))]
    with pytest.raises(ModelRetryableError, match="no longer exists"):
        await collect(model, *history)
    again = await collect(model, *history)
    await model.aclose()
    assert isinstance(again[-1], ResponseDone) and again[-1].message.text == "still a box"
    paths = [r.path for r in server.requests]
    assert paths == [
        "/v1/files/upload",
        "/v1/chat-messages",
        "/v1/chat-messages",
        "/v1/files/upload",
        "/v1/chat-messages",
    ]
    chats = [r.json() for r in server.requests if r.path.endswith("/chat-messages")]
    assert chats[2]["conversation_id"] == ""
    assert chats[2]["files"][0]["upload_file_id"] != chats[0]["files"][0]["upload_file_id"]

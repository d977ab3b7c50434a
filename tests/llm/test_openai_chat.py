"""The OpenAI-compatible provider over real HTTP (SPEC B1, B4, B5, B6, B7, B8, X1).

Every test talks to ``loopact.testing.ScriptedModelServer`` through the real ``openai`` SDK.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from loopact.errors import ModelFatalError, ModelRetryableError
from loopact.llm.accumulate import TRUNCATED_ERROR
from loopact.llm.base import (
    Capabilities,
    Model,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallReady,
    ToolSpec,
)
from loopact.llm.httperrors import parse_retry_after
from loopact.llm.messages import Image, Message, ToolCall, Usage
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.llm.openai_messages import NO_VISION_NOTE
from loopact.testing import ScriptedModelServer

Factory = Callable[[Any], ScriptedModelServer]
TIMEOUT_S = 10.0

WAIT = ToolSpec(
    "wait", "Wait a while.", {"type": "object", "properties": {"s": {"type": "number"}}}
)
LOOK = ToolSpec("look", "Take a picture.", {"type": "object", "properties": {}})
HELLO = ModelRequest(messages=(Message.system("You are a robot."), Message.user("hello")))
WITH_TOOLS = ModelRequest(messages=HELLO.messages, tools=(WAIT, LOOK))


def make_model(server: ScriptedModelServer, **kwargs: Any) -> OpenAIChatModel:
    kwargs.setdefault("api_key", "sk-test-secret-123")
    kwargs.setdefault("request_timeout_s", TIMEOUT_S)
    return OpenAIChatModel("scripted", server.base_url, **kwargs)


async def collect(model: OpenAIChatModel, request: ModelRequest) -> list[ModelEvent]:
    async def run() -> list[ModelEvent]:
        return [e async for e in model.stream(request)]

    try:
        return await asyncio.wait_for(run(), TIMEOUT_S)
    finally:
        await model.aclose()


def done(events: list[ModelEvent]) -> ResponseDone:
    assert isinstance(events[-1], ResponseDone)
    assert sum(isinstance(e, ResponseDone) for e in events) == 1
    return events[-1]


def ready(events: list[ModelEvent]) -> list[ToolCallReady]:
    return [e for e in events if isinstance(e, ToolCallReady)]


def raw(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    c: dict[str, Any] = {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    c.update(extra)
    return json.dumps(c)


async def test_implements_model_protocol(scripted_server: Factory) -> None:
    model = make_model(scripted_server([]))
    assert isinstance(model, Model)
    assert model.provider == "openai"
    model.reset()
    assert "sk-test" not in repr(model)
    await model.aclose()


async def test_text_and_reasoning_content(scripted_server: Factory) -> None:
    server = scripted_server(
        [
            {
                "text": "Hello there, human.",
                "reasoning": "The user greets me.",
                "chunk_size": 4,
                "usage": {"prompt_tokens": 12, "completion_tokens": 7},
            }
        ]
    )
    events = await collect(make_model(server), HELLO)
    d = done(events)
    assert d.message.text == "Hello there, human."
    assert d.message.reasoning == "The user greets me."
    assert len([e for e in events if isinstance(e, TextDelta)]) > 1
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "The user greets me."
    assert d.finish_reason == "stop"
    assert d.usage == Usage(12, 7)
    body = server.requests[0].json()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "tools" not in body
    assert body["messages"] == [
        {"role": "system", "content": "You are a robot."},
        {"role": "user", "content": "hello"},
    ]
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-secret-123"


async def test_reasoning_field_and_no_stream_usage(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"text": "ok", "reasoning": "hmm", "reasoning_field": "reasoning", "usage_chunk": False}]
    )
    model = make_model(server, capabilities=Capabilities(stream_usage=False))
    d = done(await collect(model, HELLO))
    assert (d.message.reasoning, d.message.text) == ("hmm", "ok")
    assert "stream_options" not in server.requests[0].json()


async def test_split_think_tags(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "<think>I should wave.</think>\n\nHi!", "chunk_size": 3}])
    events = await collect(make_model(server), HELLO)
    d = done(events)
    assert d.message.reasoning == "I should wave."
    assert d.message.text == "Hi!"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hi!"


async def test_tool_calls_chunked_arguments(scripted_server: Factory) -> None:
    server = scripted_server(
        [
            {
                "tool_calls": [
                    {"id": "call_1", "name": "wait", "arguments": {"s": 1.5}},
                    {"id": "call_2", "name": "look", "arguments": {}},
                ],
                "chunk_size": 3,
                "expect": {"tools": ["wait", "look"]},
            }
        ]
    )
    events = await collect(make_model(server), WITH_TOOLS)
    rs = ready(events)
    assert [(r.index, r.call.id, r.call.name, r.call.arguments) for r in rs] == [
        (0, "call_1", "wait", {"s": 1.5}),
        (1, "call_2", "look", {}),
    ]
    d = done(events)
    assert d.finish_reason == "tool_calls"
    assert d.message.tool_calls == tuple(r.call for r in rs)
    assert [t["function"]["name"] for t in server.requests[0].json()["tools"]] == ["wait", "look"]


async def test_merged_fragments_and_new_id_on_same_index(scripted_server: Factory) -> None:
    chunks = [
        raw(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "wait", "arguments": ""},
                    }
                ],
            }
        ),
        raw({"tool_calls": [{"index": 0, "function": {"arguments": '{"s":'}}]}),
        raw({"tool_calls": [{"index": 0, "function": {"arguments": " 2}"}}]}),
        raw(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "look", "arguments": "{}"},
                    }
                ]
            }
        ),
        raw(finish="tool_calls"),
    ]
    events = await collect(make_model(scripted_server([{"raw_chunks": chunks}])), WITH_TOOLS)
    assert [(r.index, r.call.id, r.call.name, r.call.arguments) for r in ready(events)] == [
        (0, "call_a", "wait", {"s": 2}),
        (1, "call_b", "look", {}),
    ]


async def test_empty_id_and_name_and_arguments_as_object(scripted_server: Factory) -> None:
    chunks = [
        raw(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "",
                        "type": "function",
                        "function": {"name": "wait", "arguments": {"s": 4}},
                    }
                ]
            }
        ),
        raw({"tool_calls": [{"index": 0, "id": "", "function": {"name": ""}}]}),
        raw(finish="tool_calls"),
    ]
    events = await collect(make_model(scripted_server([{"raw_chunks": chunks}])), WITH_TOOLS)
    (r,) = ready(events)
    assert r.call.name == "wait"
    assert r.call.arguments == {"s": 4}
    assert r.call.id.startswith("call_") and len(r.call.id) > len("call_")


async def test_usage_only_chunk(scripted_server: Factory) -> None:
    chunks = [
        raw({"content": "done"}, finish="stop"),
        json.dumps(
            {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [],
                "usage": {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42},
            }
        ),
    ]
    d = done(await collect(make_model(scripted_server([{"raw_chunks": chunks}])), HELLO))
    assert d.usage == Usage(40, 2)
    assert d.message.text == "done"


@pytest.mark.parametrize("finish", ["stop", None])
async def test_calls_honoured_with_stop_or_no_finish(
    scripted_server: Factory, finish: str | None
) -> None:
    server = scripted_server(
        [
            {
                "tool_calls": [{"id": "c1", "name": "wait", "arguments": {"s": 1}}],
                "finish_reason": finish,
            }
        ]
    )
    d = done(await collect(make_model(server), WITH_TOOLS))
    assert [c.name for c in d.message.tool_calls] == ["wait"]
    assert d.finish_reason == (finish or "")


async def test_length_truncation(scripted_server: Factory) -> None:
    server = scripted_server(
        [
            {
                "tool_calls": [
                    {"id": "c1", "name": "wait", "arguments": '{"s": 1}'},
                    {"id": "c2", "name": "wait", "arguments": '{"s": 2, "note": "cut'},
                ],
                "finish_reason": "length",
            }
        ]
    )
    events = await collect(make_model(server), WITH_TOOLS)
    assert [r.call.id for r in ready(events)] == ["c1"]
    d = done(events)
    assert [c.id for c in d.message.tool_calls] == ["c1"]
    assert [(c.id, c.error) for c in d.truncated_calls] == [("c2", TRUNCATED_ERROR)]


async def test_tool_call_markup_in_text(scripted_server: Factory) -> None:
    text = 'Let me wait.<tool_call>{"name": "wait", "arguments": {"s": 2}}</tool_call>'
    server = scripted_server([{"text": text, "chunk_size": 5}])
    events = await collect(make_model(server), WITH_TOOLS)
    (r,) = ready(events)
    assert (r.call.name, r.call.arguments) == ("wait", {"s": 2})
    d = done(events)
    assert d.message.text == "Let me wait."
    assert "tool_call" not in "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_bare_json_only_without_native_tools(scripted_server: Factory) -> None:
    text = '```json\n{"name": "wait", "arguments": {"s": 5}}\n```'
    server = scripted_server([{"text": text}, {"text": text}])
    native = done(await collect(make_model(server), WITH_TOOLS))
    assert native.message.tool_calls == ()
    assert native.message.text == text
    plain_model = make_model(server, capabilities=Capabilities(native_tool_calls=False))
    plain = done(await collect(plain_model, WITH_TOOLS))
    assert [(c.name, c.arguments) for c in plain.message.tool_calls] == [("wait", {"s": 5})]
    assert plain.message.text == ""
    body = server.requests[1].json()
    assert "tools" not in body
    assert "<tool_call>" in body["messages"][0]["content"]
    assert "wait" in body["messages"][0]["content"]


async def test_cut_stream_is_retryable(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"text": "a long answer that will be cut", "chunk_size": 2, "cut_after_chunks": 3}]
    )
    model = make_model(server)
    seen: list[ModelEvent] = []
    with pytest.raises(ModelRetryableError, match="model stream was cut") as info:
        async for e in model.stream(HELLO):
            seen.append(e)
    await model.aclose()
    assert not any(isinstance(e, ResponseDone) for e in seen)
    assert "sk-test-secret-123" not in str(info.value)


async def test_malformed_chunk_is_retryable(scripted_server: Factory) -> None:
    server = scripted_server([{"raw_chunks": [raw({"content": "ok"}), "this is not json"]}])
    with pytest.raises(ModelRetryableError, match="model stream was cut"):
        await collect(make_model(server), HELLO)


async def test_429_with_retry_after(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"error": {"status": 429, "message": "slow down", "retry_after": "7"}}]
    )
    with pytest.raises(ModelRetryableError) as info:
        await collect(make_model(server), HELLO)
    assert info.value.status == 429
    assert info.value.retry_after_s == 7.0
    assert "slow down" in str(info.value)


@pytest.mark.parametrize("status", [408, 409, 500, 503])
async def test_transient_status_is_retryable(scripted_server: Factory, status: int) -> None:
    server = scripted_server([{"error": {"status": status, "message": "try later"}}])
    with pytest.raises(ModelRetryableError) as info:
        await collect(make_model(server), HELLO)
    assert info.value.status == status
    assert info.value.retry_after_s is None


@pytest.mark.parametrize("status", [401, 403, 404, 422])
async def test_other_4xx_is_fatal(scripted_server: Factory, status: int) -> None:
    server = scripted_server([{"error": {"status": status, "message": "no way"}}])
    with pytest.raises(ModelFatalError) as info:
        await collect(make_model(server), HELLO)
    assert info.value.status == status
    assert "no way" in str(info.value)


async def test_400_is_fatal(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"error": {"status": 400, "message": "bad key sk-test-secret-123 in messages"}}]
    )
    with pytest.raises(ModelFatalError) as info:
        await collect(make_model(server), HELLO)
    assert info.value.status == 400
    assert "bad key" in str(info.value)
    assert "sk-test-secret-123" not in str(info.value)
    assert not isinstance(info.value, ModelRetryableError)


async def test_connection_refused_is_retryable() -> None:
    model = OpenAIChatModel("m", "http://127.0.0.1:9/v1", None, request_timeout_s=5.0)
    with pytest.raises(ModelRetryableError, match="connection"):
        await collect(model, HELLO)


async def test_no_api_key_sends_placeholder(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "ok"}])
    await collect(OpenAIChatModel("m", server.base_url, None), HELLO)
    assert server.requests[0].headers["authorization"] == "Bearer none"


def _png(tag: bytes) -> Image:
    return Image(data=b"\x89PNG" + tag, media_type="image/png", width_px=2, height_px=2)


def _history() -> tuple[Message, ...]:
    call = ToolCall(id="call_9", name="look", arguments={})
    return (
        Message.system("sys"),
        Message.user("what is this?", images=[_png(b"u")]),
        Message.assistant("Looking.", tool_calls=[call, ToolCall(id="call_10", name="wait")]),
        Message.tool("call_9", "look", "a red cup", images=(_png(b"t"),)),
        Message.tool("call_10", "wait", "waited"),
    )


async def test_images_as_content_parts_and_tool_images_in_user_message(
    scripted_server: Factory,
) -> None:
    server = scripted_server([{"text": "a cup"}])
    await collect(make_model(server), ModelRequest(messages=_history(), tools=(LOOK, WAIT)))
    msgs = server.requests[0].json()["messages"]
    url_u = "data:image/png;base64," + base64.b64encode(b"\x89PNGu").decode()
    url_t = "data:image/png;base64," + base64.b64encode(b"\x89PNGt").decode()
    assert msgs[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": url_u}},
        ],
    }
    assert msgs[2]["role"] == "assistant"
    assert msgs[2]["content"] == "Looking."
    assert [c["id"] for c in msgs[2]["tool_calls"]] == ["call_9", "call_10"]
    assert msgs[2]["tool_calls"][0]["function"] == {"name": "look", "arguments": "{}"}
    assert msgs[3] == {"role": "tool", "tool_call_id": "call_9", "content": "a red cup"}
    assert msgs[4] == {"role": "tool", "tool_call_id": "call_10", "content": "waited"}
    assert msgs[5] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Images from tool look (call call_9):"},
            {"type": "image_url", "image_url": {"url": url_t}},
        ],
    }
    assert len(msgs) == 6
    assert "reasoning" not in json.dumps(msgs)


async def test_no_vision_replaces_images_with_note(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "ok"}])
    model = make_model(server, capabilities=Capabilities(vision=False))
    await collect(model, ModelRequest(messages=_history(), tools=(LOOK, WAIT)))
    msgs = server.requests[0].json()["messages"]
    assert "image_url" not in json.dumps(msgs)
    assert msgs[1] == {"role": "user", "content": "what is this?\n" + NO_VISION_NOTE}
    assert msgs[3]["content"] == "a red cup\n" + NO_VISION_NOTE
    assert len(msgs) == 5


async def test_call_ready_before_stream_ends(scripted_server: Factory) -> None:
    """X1: call 0 is yielded at the chunk that completes it, not at the end of the stream.

    Chunks arriving after call 0 (a text delta, then call 1 in fragments) produce events that
    must come after call 0's ToolCallReady; a provider that held calls until the end would
    yield the text delta first.
    """
    chunks = [
        raw(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c0",
                        "type": "function",
                        "function": {"name": "look", "arguments": ""},
                    }
                ]
            }
        ),
        raw({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        raw({"content": "and now"}),
        raw(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "wait", "arguments": '{"s"'},
                    }
                ]
            }
        ),
        raw({"tool_calls": [{"index": 1, "function": {"arguments": ": 3}"}}]}),
        raw(finish="tool_calls"),
    ]
    server = scripted_server([{"raw_chunks": chunks, "chunk_delay_s": 0.02}])
    events = await collect(make_model(server), WITH_TOOLS)
    order = [(e.kind, e.call.id if isinstance(e, ToolCallReady) else "") for e in events]
    assert order == [
        ("tool_call_delta", ""),
        ("tool_call_ready", "c0"),
        ("text_delta", ""),
        ("tool_call_delta", ""),
        ("tool_call_delta", ""),
        ("tool_call_ready", "c1"),
        ("response_done", ""),
    ]


async def test_call_ready_is_observed_while_server_still_streaming(
    scripted_server: Factory,
) -> None:
    """X1, observed from the outside: when call 0 is yielded the server has not finished."""
    server = scripted_server(
        [
            {
                "tool_calls": [
                    {"id": "c0", "name": "look", "arguments": {}},
                    {"id": "c1", "name": "wait", "arguments": {"s": 1, "note": "x" * 40}},
                ],
                "chunk_size": 2,
                "chunk_delay_s": 0.01,
            }
        ]
    )
    model = make_model(server)
    gen = model.stream(WITH_TOOLS)
    try:
        first = await asyncio.wait_for(_first_ready(gen), TIMEOUT_S)
        assert first.index == 0 and first.call.id == "c0"
        rest = await asyncio.wait_for(_drain(gen), TIMEOUT_S)
    finally:
        await model.aclose()
    later_ready = [e for e in rest if isinstance(e, ToolCallReady)]
    assert [e.call.id for e in later_ready] == ["c1"]
    assert isinstance(rest[-1], ResponseDone)


async def _first_ready(gen: AsyncIterator[ModelEvent]) -> ToolCallReady:
    async for e in gen:
        if isinstance(e, ToolCallReady):
            return e
    raise AssertionError("no ToolCallReady")


async def _drain(gen: AsyncIterator[ModelEvent]) -> list[ModelEvent]:
    return [e async for e in gen]


async def test_early_stop_closes_stream(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "x" * 200, "chunk_size": 1}])
    model = make_model(server)
    gen = model.stream(HELLO)
    first = await asyncio.wait_for(gen.__anext__(), TIMEOUT_S)
    assert isinstance(first, TextDelta)
    await asyncio.wait_for(gen.aclose(), TIMEOUT_S)  # type: ignore[attr-defined]
    await model.aclose()


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    past = parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert past == 0.0
    future = parse_retry_after({"retry-after": "Fri, 01 Jan 2100 00:00:00 GMT"})
    assert future is not None and future > 1e9


def test_constructor_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="model name"):
        OpenAIChatModel("", None, None)
    with pytest.raises(ValueError, match="request_timeout_s"):
        OpenAIChatModel("m", None, None, request_timeout_s=0)

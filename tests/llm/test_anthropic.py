"""Anthropic Messages provider through real HTTP against the scripted server (SPEC B2, X2)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loopact.errors import ModelFatalError, ModelRetryableError, ScriptError
from loopact.llm.anthropic import AnthropicModel, AnthropicStreamState, to_anthropic_messages
from loopact.llm.base import (
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallReady,
    ToolSpec,
)
from loopact.llm.messages import Image, Message, ThinkingBlock, ToolCall
from loopact.testing import ScriptedModelServer
from loopact.testing.anthropic_protocol import AnthropicMessagesProtocol

WAIT = ToolSpec(
    "wait",
    "Wait a while.",
    {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
)
SEE = ToolSpec("seewhat", "Look through the camera.", {"type": "object", "properties": {}})
PNG = Image(b"\x89PNG\r\n\x1a\nfake-image-bytes", media_type="image/png", width_px=2, height_px=2)


@pytest.fixture
def server() -> Iterator[Callable[[Any], ScriptedModelServer]]:
    started: list[ScriptedModelServer] = []

    def start(script: Any) -> ScriptedModelServer:
        s = ScriptedModelServer(script, protocols=[AnthropicMessagesProtocol()]).start()
        started.append(s)
        return s

    yield start
    problems = []
    for s in started:
        s.stop()
        try:
            s.assert_consumed()
        except ScriptError as exc:
            problems.append(str(exc))
    assert not problems, problems


def model_for(server: ScriptedModelServer, **kw: Any) -> AnthropicModel:
    # --base-url is the API root: the SDK appends /v1/messages.
    root = server.base_url.removesuffix("/v1")
    return AnthropicModel("claude-test", base_url=root, api_key="sk-test", **kw)


async def collect(model: AnthropicModel, request: ModelRequest) -> list[ModelEvent]:
    events = [e async for e in model.stream(request)]
    await model.aclose()
    return events


def req(*messages: Message, tools: tuple[ToolSpec, ...] = (WAIT, SEE)) -> ModelRequest:
    return ModelRequest(messages=messages, tools=tools)


async def test_text_streams_in_pieces(server: Callable[[Any], ScriptedModelServer]) -> None:
    s = server(
        [
            {
                "text": "Hello there, robot friend.",
                "chunk_size": 5,
                "usage": {"prompt_tokens": 11, "completion_tokens": 7},
            }
        ]
    )
    events = await collect(
        model_for(s), req(Message.system("Be brief."), Message.user("hi"), tools=())
    )
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["Hello", " ther", "e, ro", "bot f", "riend", "."]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message.text == "Hello there, robot friend."
    assert done.finish_reason == "stop"
    assert (done.usage.input_tokens, done.usage.output_tokens) == (11, 7)
    body = s.requests[0].json()
    assert s.requests[0].path == "/v1/messages"
    assert "sk-test" in (
        s.requests[0].headers.get("x-api-key", "") + s.requests[0].headers.get("authorization", "")
    )
    assert body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["stream"] is True and body["max_tokens"] == 2048
    assert "tools" not in body


async def test_tool_use_with_json_pieces_is_ready_before_the_end(
    server: Callable[[Any], ScriptedModelServer],
) -> None:
    s = server(
        [
            {
                "text": "Waiting.",
                "tool_calls": [
                    {"id": "toolu_a", "name": "wait", "arguments": {"seconds": 1.5}},
                    {"id": "toolu_b", "name": "seewhat", "arguments": ""},
                ],
                "chunk_size": 3,
                "expect": {"tools": ["wait", "seewhat"]},
            }
        ]
    )
    events = await collect(model_for(s), req(Message.user("wait then look")))
    ready = [(i, e) for i, e in enumerate(events) if isinstance(e, ToolCallReady)]
    assert [e.call.name for _, e in ready] == ["wait", "seewhat"]
    assert [e.index for _, e in ready] == [0, 1]
    assert ready[0][1].call.id == "toolu_a"
    assert ready[0][1].call.arguments == {"seconds": 1.5}
    assert ready[0][1].call.raw_arguments == '{"seconds": 1.5}'
    # The no-argument call sent one empty partial_json: arguments are {} without an error.
    assert ready[1][1].call.arguments == {} and ready[1][1].call.error is None
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.finish_reason == "tool_calls"
    assert [c.id for c in done.message.tool_calls] == ["toolu_a", "toolu_b"]
    body = s.requests[0].json()
    assert body["tools"][0] == {
        "name": "wait",
        "description": "Wait a while.",
        "input_schema": WAIT.parameters,
    }


async def test_thinking_signature_passed_back_unchanged(
    server: Callable[[Any], ScriptedModelServer],
) -> None:
    sig = "EqQBCgIYAhIM+sig/with==padding"
    s = server(
        [
            {
                "reasoning": "The user wants a wait.",
                "text": "",
                "tool_calls": [{"id": "toolu_1", "name": "wait", "arguments": {"seconds": 2}}],
                "extras": {"anthropic": {"thinking_signature": sig}},
            },
            {"text": "Done waiting."},
        ]
    )
    model = model_for(s, thinking_budget_tokens=1024)
    history = [Message.user("please wait 2 s")]
    events = [e async for e in model.stream(req(*history))]
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert reasoning == "The user wants a wait."
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message.thinking == (ThinkingBlock("The user wants a wait.", sig),)
    assert done.message.reasoning == "The user wants a wait."
    history += [done.message, Message.tool("toolu_1", "wait", "waited 2 s")]
    events2 = [e async for e in model.stream(req(*history))]
    await model.aclose()
    assert isinstance(events2[-1], ResponseDone) and events2[-1].message.text == "Done waiting."
    first = s.requests[0].json()
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    second = s.requests[1].json()
    assert second["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The user wants a wait.", "signature": sig},
            {"type": "tool_use", "id": "toolu_1", "name": "wait", "input": {"seconds": 2}},
        ],
    }
    assert second["messages"][2]["content"][0]["tool_use_id"] == "toolu_1"


async def test_tool_results_with_images_become_tool_result_blocks(
    server: Callable[[Any], ScriptedModelServer],
) -> None:
    s = server([{"text": "I see a red box."}])
    history = [
        Message.system("You drive a robot."),
        Message.user("look around"),
        Message.assistant(
            "Looking.",
            tool_calls=[
                ToolCall("toolu_1", "seewhat", {}),
                ToolCall("toolu_2", "wait", {"seconds": 1}),
            ],
        ),
        Message.tool("toolu_1", "seewhat", "one frame", images=(PNG,)),
        Message.tool("toolu_2", "wait", "waited"),
        Message.user("and?"),
    ]
    await collect(model_for(s), req(*history))
    msgs = s.requests[0].json()["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    results = msgs[2]["content"]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            {"type": "text", "text": "one frame"},
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": base64.b64encode(PNG.data).decode(),
                },
            },
        ],
    }
    assert results[1]["tool_use_id"] == "toolu_2"
    assert results[2] == {"type": "text", "text": "and?"}  # merged after the results


def test_conversion_never_drops_or_reorders_tool_pairs() -> None:
    history = [
        Message.user("a"),
        Message.user("b"),
        Message.assistant("", tool_calls=[ToolCall("t1", "x", {}), ToolCall("t2", "y", {})]),
        Message.tool("t1", "x", "r1"),
        Message.tool("t2", "y", "r2"),
        Message.assistant("", tool_calls=[ToolCall("t3", "z", {"k": 1})]),
        Message.tool("t3", "z", ""),
        Message.assistant("final"),
    ]
    system, msgs = to_anthropic_messages(history)
    assert system == ""
    assert [m["role"] for m in msgs] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert [b["text"] for b in msgs[0]["content"]] == ["a", "b"]
    uses = [b["id"] for m in msgs for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in msgs for b in m["content"] if b["type"] == "tool_result"]
    assert uses == results == ["t1", "t2", "t3"]
    assert msgs[4]["content"][0]["content"] == [{"type": "text", "text": "(no output)"}]
    _, no_vision = to_anthropic_messages([Message.user("see", images=[PNG])], vision=False)
    assert no_vision[0]["content"][1]["text"].startswith("[image omitted")


async def test_http_errors_map_to_retryable_and_fatal(
    server: Callable[[Any], ScriptedModelServer],
) -> None:
    s = server(
        [
            {"error": {"status": 429, "message": "slow down", "retry_after": "3"}},
            {"error": {"status": 529, "message": "busy"}},
            {"error": {"status": 400, "message": "bad thing"}},
            {"error": {"status": 401, "message": "who are you"}},
        ]
    )
    model = model_for(s)
    with pytest.raises(ModelRetryableError) as e1:
        [e async for e in model.stream(req(Message.user("x")))]
    assert e1.value.status == 429 and e1.value.retry_after_s == 3.0
    assert "rate_limit_error: slow down" in str(e1.value)
    with pytest.raises(ModelRetryableError) as e2:
        [e async for e in model.stream(req(Message.user("x")))]
    assert e2.value.status == 529
    with pytest.raises(ModelFatalError) as e3:
        [e async for e in model.stream(req(Message.user("x")))]
    assert e3.value.status == 400 and "bad thing" in str(e3.value)
    with pytest.raises(ModelFatalError) as e4:
        [e async for e in model.stream(req(Message.user("x")))]
    assert e4.value.status == 401 and "sk-test" not in str(e4.value)
    await model.aclose()


async def test_cut_stream_is_retryable(server: Callable[[Any], ScriptedModelServer]) -> None:
    s = server([{"text": "a long answer that gets cut", "chunk_size": 4, "cut_after_chunks": 5}])
    seen: list[ModelEvent] = []
    model = model_for(s)
    with pytest.raises(ModelRetryableError, match="cut"):
        async for e in model.stream(req(Message.user("x"))):
            seen.append(e)
    await model.aclose()
    assert not any(isinstance(e, ResponseDone) for e in seen)


async def test_error_event_in_stream(server: Callable[[Any], ScriptedModelServer]) -> None:
    s = server(
        [
            {
                "raw_chunks": [
                    '{"type": "message_start", "message": {"id": "m", "type": "message", '
                    '"role": "assistant", "model": "x", "content": [], "stop_reason": null, '
                    '"stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}}',
                    '{"type": "error", "error": '
                    '{"type": "overloaded_error", "message": "Overloaded"}}',
                ]
            },
            {
                "raw_chunks": [
                    '{"type": "error", "error": '
                    '{"type": "invalid_request_error", "message": "nope"}}',
                ]
            },
        ]
    )
    model = model_for(s)
    with pytest.raises(ModelRetryableError, match="overloaded_error"):
        [e async for e in model.stream(req(Message.user("x")))]
    with pytest.raises(ModelFatalError, match="nope"):
        [e async for e in model.stream(req(Message.user("x")))]
    await model.aclose()


def test_truncated_tool_call_is_not_usable() -> None:
    state = AnthropicStreamState()
    events: list[ModelEvent] = []
    for ev in [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "wait", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"seconds": 1'},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "max_tokens"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]:
        events += state.feed(ev)
    assert not any(isinstance(e, ToolCallReady) for e in events)
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.finish_reason == "length"
    assert done.message.tool_calls == ()
    assert done.truncated_calls[0].name == "wait" and done.truncated_calls[0].error


def test_broken_json_is_repaired_when_not_truncated() -> None:
    state = AnthropicStreamState()
    events: list[ModelEvent] = []
    for ev in [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "wait", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{'seconds': 1,}"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]:
        events += state.feed(ev)
    ready = [e for e in events if isinstance(e, ToolCallReady)]
    assert len(ready) == 1 and ready[0].call.arguments == {"seconds": 1}


async def test_non_streaming_endpoint_shape(server: Callable[[Any], ScriptedModelServer]) -> None:
    """The scripted protocol also answers non-streaming requests (as the SDK parses them)."""
    import anthropic

    s = server(
        [
            {
                "reasoning": "hm",
                "text": "ok",
                "tool_calls": [{"id": "toolu_9", "name": "wait", "arguments": {"seconds": 1}}],
            }
        ]
    )
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url=s.base_url.removesuffix("/v1"), max_retries=0
    )
    msg = await client.messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    )
    await client.close()
    assert [b.type for b in msg.content] == ["thinking", "text", "tool_use"]
    assert msg.stop_reason == "tool_use"
    assert msg.content[2].input == {"seconds": 1}  # type: ignore[union-attr]


async def test_tool_less_request_declares_used_tools_forbidden(
    server: Callable[[Any], ScriptedModelServer],
) -> None:
    """The final no-tools request (A2) still defines the tools its history used."""
    s = server([{"text": "Final answer."}])
    history = [
        Message.user("look"),
        Message.assistant("", tool_calls=[ToolCall("toolu_1", "seewhat", {})]),
        Message.tool("toolu_1", "seewhat", "a red box"),
    ]
    await collect(model_for(s), req(*history, tools=()))
    body = s.requests[0].json()
    assert [t["name"] for t in body["tools"]] == ["seewhat"]
    assert body["tool_choice"] == {"type": "none"}


async def test_a_required_call_is_tool_choice_any_except_with_thinking(
    server: Callable[[Any], ScriptedModelServer],
) -> None:
    """``ModelRequest.tool_choice="required"`` (a step of a split instruction, issue 13)."""
    wait_call = {"tool_calls": [{"id": "toolu_1", "name": "wait", "arguments": {"seconds": 1}}]}
    s = server([wait_call, wait_call])
    forced = ModelRequest(messages=(Message.user("wait"),), tools=(WAIT,), tool_choice="required")
    await collect(model_for(s), forced)
    await collect(model_for(s, thinking_budget_tokens=1024), forced)
    plain, thinking = (r.json() for r in s.requests)
    assert plain["tool_choice"] == {"type": "any"}
    assert "tool_choice" not in thinking  # the API refuses a forced tool with thinking


@pytest.mark.parametrize("status", [408, 409, 500, 503])
async def test_more_retryable_statuses(
    server: Callable[[Any], ScriptedModelServer], status: int
) -> None:
    s = server(
        [
            {
                "error": {
                    "status": status,
                    "message": "try later",
                    "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT",
                }
            }
        ]
    )
    model = model_for(s)
    with pytest.raises(ModelRetryableError) as err:
        [e async for e in model.stream(req(Message.user("x")))]
    await model.aclose()
    assert err.value.status == status
    assert err.value.retry_after_s == 0.0  # an HTTP date in the past: retry now

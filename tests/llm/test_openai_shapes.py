"""OpenAI-compatible shapes real servers send, through the scripted server over HTTP (issue 22,
SPEC B1, B5, B6).

Each test replays what a named server sends (vLLM, llama.cpp / llama-cpp-python, Ollama,
DashScope, OpenRouter, Azure, FastAPI-based gateways, Gemini's compatibility endpoint, iFlytek
Spark) into the real :class:`~loopact.llm.openai_chat.OpenAIChatModel`: error bodies without
``error.message``, surrogate pairs cut between deltas, the legacy ``function_call`` delta,
``refusal``, finish reasons that are no answer, and error objects sent with HTTP 200.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import make_agent

from loopact.errors import ModelError, ModelFatalError, ModelRetryableError
from loopact.llm.base import (
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)
from loopact.llm.messages import Message, ToolCall
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer

Factory = Callable[[Any], ScriptedModelServer]

NOTE = ToolSpec(
    "note", "Write a note.", {"type": "object", "properties": {"text": {"type": "string"}}}
)
REQUEST = ModelRequest(
    messages=(Message.system("You are a robot."), Message.user("note a smile")), tools=(NOTE,)
)
JSON = "application/json"
DONE = "data: [DONE]\n\n"


def model(server: ScriptedModelServer) -> OpenAIChatModel:
    return OpenAIChatModel("scripted", server.base_url, api_key="sk-x", request_timeout_s=10)


async def collect(server: ScriptedModelServer) -> list[ModelEvent]:
    m = model(server)
    try:
        return [e async for e in m.stream(REQUEST)]
    finally:
        await m.aclose()


async def failure(server: ScriptedModelServer) -> ModelError:
    with pytest.raises(ModelError) as info:
        await collect(server)
    return info.value


def final(events: list[ModelEvent]) -> ResponseDone:
    assert isinstance(events[-1], ResponseDone)
    return events[-1]


def sse(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    """One ``chat.completion.chunk`` as an SSE event. ``json.dumps`` writes a lone surrogate
    as its escape (``\\ud83d``), as a gateway cutting strings by UTF-16 unit sends it."""
    payload = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return f"data: {json.dumps(payload)}\n\n"


def error_turn(status: int, body: str, content_type: str = JSON) -> dict[str, Any]:
    return {"error": {"status": status, "body": body, "content_type": content_type}}


def lone_surrogates(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


# --- HTTP error bodies without error.message -----------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (404, '{"detail": "model not found"}', "model not found"),  # FastAPI / vLLM routes
        (400, '{"detail": {"message": "prompt too long"}}', "prompt too long"),
        (
            422,  # FastAPI request validation (llama-cpp-python, LiteLLM)
            json.dumps(
                {
                    "detail": [
                        {"loc": ["body", "messages", 0, "role"], "msg": "Field required"},
                        {"loc": ["body", "model"], "msg": "Input should be a string"},
                    ]
                }
            ),
            "body.messages.0.role: Field required; body.model: Input should be a string",
        ),
        (400, '{"error": {"code": "context_length_exceeded"}}', "context_length_exceeded"),
        (
            400,  # Gemini's OpenAI-compatible endpoint wraps its error in a list
            '[{"error": {"code": 400, "message": "API key not valid", "status": "X"}}]',
            "API key not valid",
        ),
        (401, '{"msg": "token expired"}', "token expired"),
        (404, "", "(empty body)"),
    ],
    ids=["detail", "detail-object", "fastapi-422", "code-only", "list", "msg", "empty"],
)
async def test_a_json_error_body_is_told_by_its_text(
    scripted_server: Factory, status: int, body: str, said: str
) -> None:
    """Before: ``HTTP 404: Error code: 404`` (the SDK's message names only ``error.message``),
    the server's words lost."""
    server = scripted_server([error_turn(status, body)])
    exc = await failure(server)
    assert isinstance(exc, ModelFatalError)
    assert exc.status == status
    assert f"HTTP {status}" in str(exc)
    assert said in str(exc)
    assert "Error code" not in str(exc)
    assert "{'" not in str(exc)  # never a Python repr of the body


async def test_a_404_names_the_url_it_asked(scripted_server: Factory) -> None:
    """A 404 with no words of its own is mostly a base URL without ``/v1``: say which URL
    (never its user info, which holds credentials)."""
    server = scripted_server([error_turn(404, "<html><title>Not Found</title></html>", "")])
    base = server.base_url.replace("http://", "http://bob:pw-secret@")
    m = OpenAIChatModel("scripted", base, api_key="sk-x", request_timeout_s=10)
    try:
        with pytest.raises(ModelFatalError) as info:
            [e async for e in m.stream(REQUEST)]
    finally:
        await m.aclose()
    assert f"POST {server.base_url}/chat/completions:" in str(info.value)
    assert "Not Found (an HTML page)" in str(info.value)
    assert "secret" not in str(info.value)


async def test_cannot_reach_names_the_url_without_its_user_info() -> None:
    """Before: "cannot reach http://bob:pw-secret@127.0.0.1:9/v1/" quoted the password."""
    m = OpenAIChatModel("m", "http://bob:pw-secret@127.0.0.1:9/v1", None, request_timeout_s=5)
    try:
        with pytest.raises(ModelRetryableError) as info:
            [e async for e in m.stream(REQUEST)]
    finally:
        await m.aclose()
    assert "cannot reach http://127.0.0.1:9/v1/" in str(info.value)
    assert "secret" not in str(info.value)


# --- surrogate pairs cut between deltas ---------------------------------------------------------


async def test_a_surrogate_pair_split_across_deltas_is_one_character(
    scripted_server: Factory,
) -> None:
    """Before: each half was U+FFFD in the reply, the reasoning and the arguments, and the
    deltas carried lone surrogates (which a terminal cannot print)."""
    args = '{"text": "\ud83d', '\ude00!"}'
    wire = [
        sse({"role": "assistant", "reasoning_content": "a \ud83d"}),
        sse({"reasoning_content": "\ude00 b"}),
        sse({"content": "smile \ud83d"}),
        sse({"content": "\ude00 done \ud83d"}),  # a high half right at the end of a delta
        sse({"content": "\ude01"}),
        sse({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "note"}}]}),
        sse({"tool_calls": [{"index": 0, "function": {"arguments": args[0]}}]}),
        sse({"tool_calls": [{"index": 0, "function": {"arguments": args[1]}}]}),
        sse({}, "tool_calls"),
        DONE,
    ]
    events = await collect(scripted_server([{"wire": wire}]))
    done = final(events)
    assert done.message.text == "smile \U0001f600 done \U0001f601"
    assert done.message.reasoning == "a \U0001f600 b"
    assert [c.arguments for c in done.message.tool_calls] == [{"text": "\U0001f600!"}]
    streamed = [e.text for e in events if isinstance(e, (TextDelta, ReasoningDelta))]
    streamed += [e.text for e in events if isinstance(e, ToolCallDelta)]
    assert not any(lone_surrogates(t) for t in streamed)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == done.message.text


async def test_a_half_pair_at_the_end_is_one_replacement_character(
    scripted_server: Factory,
) -> None:
    wire = [sse({"content": "cut \ud83d"}), sse({}, "stop"), DONE]
    events = await collect(scripted_server([{"wire": wire}]))
    assert final(events).message.text == "cut \ufffd"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "cut \ufffd"


# --- the legacy function_call delta -----------------------------------------------------------


async def test_a_legacy_function_call_delta_is_a_tool_call(scripted_server: Factory) -> None:
    """Gateways translating to the deprecated functions API stream ``delta.function_call``
    and finish with ``function_call``. Before: no call, the task "completed" with "I could
    not produce a final answer."."""
    wire = [
        sse({"role": "assistant", "function_call": {"name": "note", "arguments": ""}}),
        sse({"function_call": {"arguments": '{"text": '}}),
        sse({"function_call": {"arguments": '"hi"}'}}),
        sse({}, "function_call"),
        DONE,
    ]
    done = final(await collect(scripted_server([{"wire": wire}])))
    assert [(c.name, c.arguments, c.error) for c in done.message.tool_calls] == [
        ("note", {"text": "hi"}, None)
    ]
    assert done.message.tool_calls[0].id  # one is made up: the history needs it


async def test_a_legacy_function_call_in_a_json_body_is_a_tool_call(
    scripted_server: Factory,
) -> None:
    message = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "note", "arguments": '{"text": "hi"}'},
    }
    body = {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}
    done = final(await collect(scripted_server([{"wire": [json.dumps(body)]}])))
    assert [(c.name, c.arguments) for c in done.message.tool_calls] == [("note", {"text": "hi"})]


# --- call ids that change within one call -----------------------------------------------------


def call_delta(ref: dict[str, Any], name: str | None = None, args: str = "") -> str:
    function: dict[str, Any] = {"arguments": args}
    if name is not None:
        function["name"] = name
    return sse({"tool_calls": [{**ref, "type": "function", "function": function}]})


ARGS = '{"text": "hi there"}'


@pytest.mark.parametrize(
    "wire",
    [
        [  # Poolside: the first chunk's id, then another id on every argument piece
            call_delta({"index": 0, "id": "call_A"}, "note"),
            call_delta({"index": 0, "id": "call_B"}, args=ARGS[:9]),
            call_delta({"index": 0, "id": "call_B"}, args=ARGS[9:]),
        ],
        [  # the same, with no index at all
            call_delta({"id": "call_A"}, "note"),
            call_delta({"id": "call_B"}, args=ARGS[:9]),
            call_delta({"id": "call_C"}, args=ARGS[9:]),
        ],
        [  # Atlas: the call announced twice with two ids, then its arguments
            call_delta({"index": 0, "id": "call_A"}, "note"),
            call_delta({"index": 0, "id": "call_B"}, "note"),
            call_delta({"index": 0}, args=ARGS),
        ],
    ],
    ids=["new-id-per-piece", "new-id-per-piece-no-index", "announced-twice"],
)
async def test_an_id_that_changes_within_one_call_is_still_one_call(
    scripted_server: Factory, wire: list[str]
) -> None:
    """Before: the call ran with ``{}`` as soon as the second id came, and the arguments
    went to a second call (which named no tool, or ran again)."""
    server = scripted_server([{"wire": [*wire, sse({}, "tool_calls"), DONE]}])
    done = final(await collect(server))
    assert [(c.name, c.arguments, c.error) for c in done.message.tool_calls] == [
        ("note", {"text": "hi there"}, None)
    ]


async def test_calls_of_one_tool_on_one_index_stay_apart(scripted_server: Factory) -> None:
    """Servers that put every call on index 0 with ids of their own (LiteLLM, Ollama): two
    calls of the same tool are still two calls."""
    calls = [
        {"id": "c1", "name": "note", "arguments": {"text": "one"}},
        {"id": "c2", "name": "note", "arguments": {"text": "two"}},
    ]
    server = scripted_server([{"tool_calls": calls, "extras": {"openai": {"reuse_index": True}}}])
    done = final(await collect(server))
    assert [(c.id, c.arguments) for c in done.message.tool_calls] == [
        ("c1", {"text": "one"}),
        ("c2", {"text": "two"}),
    ]


async def test_empty_call_placeholders_are_no_calls(scripted_server: Factory) -> None:
    """Gateways that put an empty ``function_call`` / ``tool_calls`` entry in every chunk of a
    plain answer: nothing names a call, so there is none (not a failed call that "names no
    tool")."""
    empty = {"function_call": {"name": None, "arguments": ""}}
    wire = [
        sse({"role": "assistant", "content": "Hel", **empty}),
        sse({"content": "lo.", "tool_calls": [{"index": 0, "function": {"arguments": ""}}]}),
        sse({}, "stop"),
        DONE,
    ]
    done = final(await collect(scripted_server([{"wire": wire}])))
    assert done.message.text == "Hello."
    assert done.message.tool_calls == ()


# --- refusal and finish reasons that are no answer ----------------------------------------------


async def test_a_streamed_refusal_is_the_answer(scripted_server: Factory) -> None:
    """OpenAI streams a refusal in ``delta.refusal`` with ``content: null``. Before: the reply
    was "I could not produce a final answer."."""
    wire = [
        sse({"role": "assistant", "content": None, "refusal": ""}),
        sse({"refusal": "I can't help"}),
        sse({"refusal": " with that."}),
        sse({}, "stop"),
        DONE,
    ]
    events = await collect(scripted_server([{"wire": wire}]))
    assert final(events).message.text == "I can't help with that."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "I can't help with that."


async def test_a_refusal_in_a_json_body_is_the_answer(scripted_server: Factory) -> None:
    message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    body = {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}
    done = final(await collect(scripted_server([{"wire": [json.dumps(body)]}])))
    assert done.message.text == "I can't help with that."


async def test_a_content_filter_stop_is_a_clear_error_not_a_half_answer(
    scripted_server: Factory,
) -> None:
    """Azure and DeepSeek end a filtered answer with ``finish_reason: content_filter``.
    Before: the cut-off start ("I will now") was the reply of a completed task."""
    server = scripted_server([{"text": "I will now", "finish_reason": "content_filter"}])
    exc = await failure(server)
    assert isinstance(exc, ModelFatalError)
    assert "content filter" in str(exc) and "content_filter" in str(exc)


async def test_calls_before_a_content_filter_stop_are_kept(scripted_server: Factory) -> None:
    call = {"name": "note", "arguments": {"text": "hi"}}
    server = scripted_server([{"tool_calls": [call], "finish_reason": "content_filter"}])
    done = final(await collect(server))
    assert [c.arguments for c in done.message.tool_calls] == [{"text": "hi"}]
    assert done.finish_reason == "content_filter"


@pytest.mark.parametrize("reason", ["error", "abort"])
async def test_an_error_or_abort_finish_is_a_retryable_cut(
    scripted_server: Factory, reason: str
) -> None:
    """OpenRouter ends a failed generation with ``finish_reason: error``, vLLM an aborted one
    with ``abort``. Before: the partial text was the answer."""
    server = scripted_server([{"text": "The answer is", "finish_reason": reason}])
    exc = await failure(server)
    assert isinstance(exc, ModelRetryableError)
    assert f"finish_reason '{reason}'" in str(exc)


# --- errors that cannot succeed are not retried -------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("insufficient_quota", "insufficient_quota"),  # OpenAI
        ("exceeded_current_quota_error", None),  # Moonshot (Kimi): a suspended account
    ],
)
async def test_a_429_for_an_exhausted_quota_is_not_retried(
    scripted_server: Factory, kind: str, code: str | None
) -> None:
    """An exhausted quota comes with 429 but no retry can succeed. Before: three tries, then
    the same error."""
    message = "You exceeded your current quota, please check your plan and billing details."
    server = scripted_server(
        [{"error": {"status": 429, "message": message, "type": kind, "code": code}}]
    )
    exc = await failure(server)
    assert isinstance(exc, ModelFatalError)
    assert exc.status == 429
    assert "exceeded your current quota" in str(exc)


async def test_a_plain_429_is_still_retried(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"error": {"status": 429, "message": "slow down", "retry_after": "2"}}]
    )
    exc = await failure(server)
    assert isinstance(exc, ModelRetryableError)
    assert exc.retry_after_s == 2.0


@pytest.mark.parametrize(
    ("payload", "fatal", "said"),
    [
        (
            {"error": {"message": "Invalid API key", "code": "invalid_api_key"}},
            True,
            "Invalid API key",
        ),
        ({"error": {"message": "Unauthorized", "code": 401}}, True, "Unauthorized"),
        ({"error": {"message": "No such model", "code": "404"}}, True, "No such model"),
        (
            {"error": {"message": "Provider returned error", "code": 502}},
            False,
            "Provider returned error",
        ),
        ({"error": {"message": "Rate limited", "code": 429}}, False, "Rate limited"),
        (
            {"error": {"message": "Provider disconnected", "code": "server_error"}},
            False,
            "disconnected",
        ),
        (  # vLLM's own error shape, sent as an event when a request fails after the headers
            {"object": "error", "message": "max_tokens is too large", "code": 400},
            True,
            "max_tokens is too large",
        ),
    ],
    ids=["invalid-key", "401", "404-text", "502", "429", "server-error", "vllm-object"],
)
@pytest.mark.parametrize("where", ["json-body", "sse-data", "sse-error-event"])
async def test_an_error_object_with_status_200_is_classified_by_its_code(
    scripted_server: Factory, payload: dict[str, Any], fatal: bool, said: str, where: str
) -> None:
    """Gateways (one-api, OpenRouter) send an error object with HTTP 200, as the whole body or
    as a stream event; its ``code`` says whether a retry can help. Before: every such error was
    retried three times, a wrong API key too."""
    data = json.dumps(payload)
    wire = {
        "json-body": [data],
        "sse-data": [sse({"content": "Hel"}), f"data: {data}\n\n", DONE],
        "sse-error-event": [f"event: error\ndata: {data}\n\n"],
    }[where]
    exc = await failure(scripted_server([{"wire": wire}]))
    assert isinstance(exc, ModelFatalError if fatal else ModelRetryableError)
    assert said in str(exc)
    assert "model stream reported an error" in str(exc)


async def test_a_chunk_that_is_a_code_and_message_is_an_error(scripted_server: Factory) -> None:
    """iFlytek Spark's OpenAI endpoint sends ``{"code": 10013, "message": ...}`` instead of a
    chunk. Before: "answered HTTP 200 without any completion chunk"."""
    wire = ['data: {"code": 10013, "message": "input content audit failed", "sid": "s1"}\n\n', DONE]
    exc = await failure(scripted_server([{"wire": wire}]))
    assert isinstance(exc, ModelRetryableError)
    assert "model stream reported an error: input content audit failed (code 10013)" in str(exc)


# --- reasoning sent back with tool calls --------------------------------------------------------


async def test_reasoning_goes_back_with_the_tool_calls_it_led_to(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """Kimi K2.5 and DeepSeek V4 in thinking mode answer HTTP 400 "thinking is enabled but
    reasoning_content is missing in assistant tool call message" to a history without it.
    Before: every task that used a tool failed in its second round with that error."""
    call = {"id": "call_w", "name": "file_write", "arguments": {"path": "a.txt", "content": "hi"}}
    server = scripted_server(
        [
            {"reasoning": "The user wants a file.", "tool_calls": [call]},
            {"text": "Wrote it.", "extras": {"openai": {"require_reasoning_content": True}}},
        ]
    )
    agent, _ = make_agent(server, tmp_path, auto_approve=True)
    try:
        outcome = await agent.run_task("write hi to a.txt")
    finally:
        await agent.close()
    assert outcome.status == "completed" and outcome.reply == "Wrote it."
    sent = [m for m in server.requests[1].json()["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in sent] == ["The user wants a file."]


def test_reasoning_is_not_sent_to_openai_or_azure() -> None:
    """api.openai.com's chat completions have no ``reasoning_content``; a history carried
    over from a reasoning provider must not put one in its request."""
    history = (
        Message.user("note hi"),
        Message.assistant(
            text="",
            tool_calls=(ToolCall(id="c1", name="note", arguments={"text": "hi"}),),
            reasoning="thinking",
        ),
    )
    request = ModelRequest(messages=history, tools=(NOTE,))
    official = OpenAIChatModel("gpt-4o-mini", None, api_key="sk-x")
    azure = OpenAIChatModel("gpt-4o", "https://x.openai.azure.com/openai/v1", api_key="sk-x")
    compatible = OpenAIChatModel("kimi-k2.5", "http://127.0.0.1:1/v1", api_key="sk-x")
    assert "reasoning_content" not in official.build_body(request)["messages"][1]
    assert "reasoning_content" not in azure.build_body(request)["messages"][1]
    assert compatible.build_body(request)["messages"][1]["reasoning_content"] == "thinking"


LLAMA_CPP_ERROR = (
    'error: {"code":400,"message":"the request exceeds the available context size. try '
    'increasing the context size or enable context shift","type":"invalid_request_error"}\n\n'
)


@pytest.mark.parametrize("done", [True, False], ids=["then-done", "alone"])
async def test_llama_cpp_error_field_is_the_error(scripted_server: Factory, done: bool) -> None:
    """llama.cpp builds of 2025 sent a stream's error as the non-standard SSE field
    ``error:`` (fixed by ggml-org/llama.cpp PR 16109), which SSE decoders drop. Before:
    "answered HTTP 200 without any completion chunk", three tries, the real message lost."""
    wire = [LLAMA_CPP_ERROR, *([DONE] if done else [])]
    exc = await failure(scripted_server([{"wire": wire}]))
    assert isinstance(exc, ModelFatalError)
    assert "model stream reported an error: the request exceeds the available context" in str(exc)


async def test_a_last_event_without_its_blank_line_is_read(scripted_server: Factory) -> None:
    """A body that ends right after its last ``data:`` line (no blank line, no ``[DONE]``).
    Before: by the letter of the SSE specification the event was dropped, and a complete
    answer was "answered HTTP 200 without any stream events", three tries."""
    last = sse({"content": "Hello there."}, "stop").rstrip("\n")
    events = await collect(scripted_server([{"wire": [sse({"role": "assistant"}), last]}]))
    assert final(events).message.text == "Hello there."


async def test_a_body_ending_inside_an_event_is_a_retryable_cut(scripted_server: Factory) -> None:
    """A server that closes cleanly in the middle of an event: the half event is an error,
    never a shorter answer taken for the whole one."""
    wire = [sse({"content": "Hello"}), 'data: {"choices": [{"index": 0, "delta": {"cont']
    exc = await failure(scripted_server([{"wire": wire}]))
    assert isinstance(exc, ModelRetryableError)
    assert "malformed chunk" in str(exc)


# --- through the agent --------------------------------------------------------------------------


async def test_the_agent_runs_a_legacy_function_call_and_says_the_refusal(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """What the user sees: the file is written from a ``function_call`` delta, and the model's
    refusal on the next task is the reply."""
    args = json.dumps({"path": "notes/a.txt", "content": "hi \ud83d\ude00"})
    server = scripted_server(
        [
            {
                "wire": [
                    sse({"function_call": {"name": "file_write", "arguments": args[:20]}}),
                    sse({"function_call": {"arguments": args[20:]}}),
                    sse({}, "function_call"),
                    DONE,
                ]
            },
            {"text": "Wrote it."},
            {"wire": [sse({"content": None, "refusal": "I can't help with that."}, "stop"), DONE]},
        ]
    )
    agent, _ = make_agent(server, tmp_path, auto_approve=True)
    try:
        first = await agent.run_task("write hi to notes/a.txt")
        second = await agent.run_task("do something bad")
    finally:
        await agent.close()
    assert (tmp_path / "notes" / "a.txt").read_text(encoding="utf-8") == "hi \U0001f600"
    assert first.status == "completed" and first.reply == "Wrote it."
    assert second.status == "completed" and second.reply == "I can't help with that."

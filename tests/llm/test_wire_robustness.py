"""Response bodies the way real servers send them, through every provider (issue 22, SPEC B5, B6).

Each test replays a shape public bug reports describe (vLLM, Ollama, llama.cpp, gateways,
proxies) through the scripted model server over real HTTP into the real provider code:
data-less SSE blocks (item 7), a JSON body to a stream request (item 5), a 200 that carries
nothing, an invalid UTF-8 byte, tiny TCP writes, HTML error pages.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import make_agent

from loopact.agent import Bounds
from loopact.errors import ContextOverflow, ModelError, ModelFatalError, ModelRetryableError
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.base import Model, ModelEvent, ModelRequest, ResponseDone, TextDelta, ToolSpec
from loopact.llm.dify import DifyModel
from loopact.llm.httperrors import status_error
from loopact.llm.messages import Message
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer
from loopact.tools.base import tool

Factory = Callable[[Any], ScriptedModelServer]

WAIT = ToolSpec(
    "wait", "Wait a while.", {"type": "object", "properties": {"seconds": {"type": "number"}}}
)
REQUEST = ModelRequest(
    messages=(Message.system("You are a robot."), Message.user("wait a second")), tools=(WAIT,)
)
CALL = {"id": "call_w", "name": "wait", "arguments": {"seconds": 1.5}}


def openai_model(server: ScriptedModelServer) -> Model:
    return OpenAIChatModel("scripted", server.base_url, api_key="sk-x", request_timeout_s=10)


def anthropic_model(server: ScriptedModelServer) -> Model:
    return AnthropicModel("scripted", server.root_url, api_key="sk-x", request_timeout_s=10)


def dify_model(server: ScriptedModelServer) -> Model:
    return DifyModel(base_url=server.base_url, api_key="app-x", request_timeout_s=10)


PROVIDERS = {"openai": openai_model, "anthropic": anthropic_model, "dify": dify_model}


async def collect(model: Model, request: ModelRequest = REQUEST) -> list[ModelEvent]:
    try:
        return [e async for e in model.stream(request)]
    finally:
        await model.aclose()


def final(events: list[ModelEvent]) -> ResponseDone:
    assert isinstance(events[-1], ResponseDone)
    return events[-1]


def assert_waits(done: ResponseDone, provider: str, text: str) -> None:
    """The response is ``text`` plus the call wait(seconds=1.5), in the provider's form."""
    if provider == "dify":  # no native calls: the call is an action line of the answer
        assert done.message.text == f"{text}\nwait(seconds=1.5)"
        return
    assert done.message.text == text
    assert [(c.name, c.arguments) for c in done.message.tool_calls] == [("wait", {"seconds": 1.5})]


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    payload = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return json.dumps(payload, ensure_ascii=False)


# --- item 7: SSE blocks without data ---------------------------------------------------------


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize(
    "sse",
    [
        {"retry_ms": 3000},
        {"event_ids": True, "comment_every": 1},
        {"retry_ms": 0, "event_ids": True, "comment_every": 2, "comment": ""},
    ],
    ids=["retry-first", "ids-and-pings", "everything"],
)
async def test_data_less_sse_blocks_dispatch_no_event(
    scripted_server: Factory, provider: str, sse: dict[str, Any]
) -> None:
    """A ``retry:`` block, ``id:`` lines and ``: ping`` comments are no events (item 7): on
    the openai SDK's decoder every retry failed with "malformed chunk: Expecting value"."""
    server = scripted_server([{"text": "Waiting now.", "tool_calls": [CALL], "sse": sse}])
    assert_waits(final(await collect(PROVIDERS[provider](server))), provider, "Waiting now.")


async def test_sse_fields_the_specification_allows(scripted_server: Factory) -> None:
    """CRLF and CR line ends, a field without a space, an ``event:``-only block, a comment
    inside an event, multi-line data: all per the SSE specification."""
    first = chunk({"role": "assistant", "content": "Hel"})
    server = scripted_server(
        [
            {
                "wire": [
                    "event: ping\r\n\r\n",
                    f"data:{first}\r\n\r\n",
                    ": keep-alive\rid: 7\r\r",
                    f": inside\ndata: {chunk({'content': 'lo'})}\n\n",
                    'data: {"id": "c", "object": "chat.completion.chunk", "created": 1,\n'
                    'data: "model": "m", "choices": [{"index": 0, "delta": {}, '
                    '"finish_reason": "stop"}]}\n\n',
                    "data: [DONE]\n\n",
                ]
            }
        ]
    )
    done = final(await collect(openai_model(server)))
    assert done.message.text == "Hello" and done.finish_reason == "stop"


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("as_json", [False, True], ids=["sse", "json-body"])
async def test_a_leading_byte_order_mark_is_ignored(
    scripted_server: Factory, provider: str, as_json: bool
) -> None:
    """The SSE specification ignores one leading U+FEFF: read as part of the first line it
    turned ``data:`` into an unknown field and the first event was lost; before a JSON body
    the decoder refused it. Sent in 1-byte writes too, so the mark arrives cut."""
    turn = {"text": "Waiting now.", "tool_calls": [CALL], "stream_as_json": as_json}
    probe = scripted_server([turn])
    assert_waits(final(await collect(PROVIDERS[provider](probe))), provider, "Waiting now.")
    raw = _raw_stream(probe)
    if not as_json:  # the first event left out, so that the one the mark would hide matters
        raw = raw.split(b"\n\n", 1)[1]
    marked = "\ufeff".encode() + raw
    for write_size in (None, 1):
        extra = {"write_size": write_size} if write_size else {}
        server = scripted_server([{"wire": [{"hex": marked.hex()}], **extra}])
        assert_waits(final(await collect(PROVIDERS[provider](server))), provider, "Waiting now.")


async def test_blank_data_and_a_spaced_done_are_no_chunks(scripted_server: Factory) -> None:
    """``data:`` lines holding only whitespace carry no JSON (keep-alives some proxies send),
    and ``data:  [DONE]`` with an extra space still ends the stream."""
    server = scripted_server(
        [
            {
                "wire": [
                    f"data: {chunk({'role': 'assistant', 'content': 'Hel'})}\n\n",
                    "data:  \n\n",
                    "data: \t\ndata: \n\n",
                    f"data: {chunk({'content': 'lo'}, 'stop')}\n\n",
                    "data:  [DONE] \n\n",
                    "data: {not json, never read}\n\n",
                ]
            }
        ]
    )
    done = final(await collect(openai_model(server)))
    assert done.message.text == "Hello" and done.finish_reason == "stop"


# --- item 5: a JSON body for a stream request --------------------------------------------------


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_stream_request_answered_with_a_json_body(
    scripted_server: Factory, provider: str
) -> None:
    """The whole non-streaming response is the response, tool calls included (item 5)."""
    server = scripted_server(
        [{"text": "Waiting now.", "tool_calls": [CALL], "stream_as_json": True}]
    )
    assert_waits(final(await collect(PROVIDERS[provider](server))), provider, "Waiting now.")


async def test_streamed_calls_without_index_or_id_stay_apart(scripted_server: Factory) -> None:
    """Each call whole in a chunk of its own, with neither ``index`` nor ``id``: a delta that
    names a tool starts a new call (the second was dropped as a late piece of the first)."""
    turn_spec = ToolSpec("turn", "Turn.", {"type": "object", "properties": {}})
    pieces = [
        {"function": {"name": "turn", "arguments": '{"angle_deg": 90}'}},
        {"function": {"name": "wait", "arguments": '{"seconds": '}},
        {"function": {"name": "wait", "arguments": "1.5}"}},  # a name repeated mid-call
        {"function": {"name": "wait", "arguments": ""}},  # ... and after it: no new call
    ]
    chunks = [chunk({"tool_calls": [p]}) for p in pieces] + [chunk({}, "tool_calls")]
    server = scripted_server([{"raw_chunks": chunks}])
    request = ModelRequest(messages=REQUEST.messages, tools=(turn_spec, WAIT))
    done = final(await collect(openai_model(server), request))
    assert [(c.name, c.arguments, c.error) for c in done.message.tool_calls] == [
        ("turn", {"angle_deg": 90}, None),
        ("wait", {"seconds": 1.5}, None),
    ]


async def test_calls_of_a_json_body_without_index_or_id_stay_apart(
    scripted_server: Factory,
) -> None:
    """In a whole ``chat.completion`` every entry of ``tool_calls`` is one complete call; some
    servers give them neither ``index`` nor ``id``. They were merged into one call: the
    first tool with the last one's arguments."""
    turn_spec = ToolSpec("turn", "Turn.", {"type": "object", "properties": {}})
    calls = [
        {"type": "function", "function": {"name": "turn", "arguments": '{"angle_deg": 90}'}},
        {"type": "function", "function": {"name": "wait", "arguments": {"seconds": 1.5}}},
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    body = {
        "id": "c",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    server = scripted_server([{"wire": [json.dumps(body)]}])
    request = ModelRequest(messages=REQUEST.messages, tools=(turn_spec, WAIT))
    done = final(await collect(openai_model(server), request))
    assert [(c.name, c.arguments, c.error) for c in done.message.tool_calls] == [
        ("turn", {"angle_deg": 90}, None),
        ("wait", {"seconds": 1.5}, None),
    ]
    assert len({c.id for c in done.message.tool_calls}) == 2


@pytest.mark.parametrize(
    "turn",
    [
        {"stream_as_json": True, "content_type": "text/event-stream"},
        {"content_type": "application/json"},
        {"content_type": "text/plain; charset=utf-8"},
    ],
    ids=["json-labelled-sse", "sse-labelled-json", "sse-labelled-text"],
)
async def test_the_body_decides_not_the_content_type(
    scripted_server: Factory, turn: dict[str, Any]
) -> None:
    server = scripted_server([{"text": "Waiting now.", "tool_calls": [CALL], **turn}])
    done = final(await collect(openai_model(server)))
    assert done.message.text == "Waiting now." and done.message.tool_calls[0].name == "wait"


@pytest.mark.parametrize(
    "wire",
    [
        [],
        ["\n\n"],
        [": ping\n\n", "retry: 100\n\n"],
        ["<html><head><title>Captive portal</title></head><body>log in</body></html>"],
        ["data: [DONE]\n\n"],
        ['{"object": "list", "data": []}'],
    ],
    ids=["empty", "blank", "only-pings", "html", "only-done", "other-json"],
)
async def test_a_200_that_carries_nothing_is_retryable(
    scripted_server: Factory, wire: list[str]
) -> None:
    """Neither events nor a completion: a malformed response worth a retry, never an empty
    answer ("I could not produce a final answer.", item 5)."""
    server = scripted_server([{"wire": wire}])
    with pytest.raises(ModelRetryableError) as info:
        await collect(openai_model(server))
    assert "HTTP 200" in str(info.value) or "not a chat completion" in str(info.value)
    assert "<html" not in str(info.value)


ROLE = f"data: {chunk({'role': 'assistant', 'content': ''})}\n\n"


@pytest.mark.parametrize(
    "wire",
    [
        [ROLE, 'event: error\ndata: {"message": "model overloaded", "code": 503}\n\n'],
        ['event: error\ndata: {"error": {"message": "model overloaded"}}\n\n'],
        [ROLE, "event: error\ndata: model overloaded\n\n", "data: [DONE]\n\n"],
    ],
    ids=["message-after-a-chunk", "error-object", "plain-text"],
)
async def test_an_sse_error_event_is_a_retryable_error(
    scripted_server: Factory, wire: list[str]
) -> None:
    """``event: error`` (gateways, LiteLLM-style proxies) is the server's error whatever its
    data holds: a JSON message without an ``error`` key used to end the response as an
    empty answer ("I could not produce a final answer.")."""
    server = scripted_server([{"wire": wire}])
    with pytest.raises(ModelRetryableError, match="reported an error: model overloaded"):
        await collect(openai_model(server))


async def test_a_stream_of_events_that_are_no_completion_chunks_is_retryable(
    scripted_server: Factory,
) -> None:
    """JSON events of another API (a Responses-style stream from a wrong base URL) are no
    completion: a clear malformed-response error, never an empty answer."""
    delta = '{"type": "response.output_text.delta", "delta": "Hello"}'
    server = scripted_server([{"wire": [f"data: {delta}\n\n", "data: [DONE]\n\n"]}])
    with pytest.raises(ModelRetryableError) as info:
        await collect(openai_model(server))
    assert "without any completion chunk" in str(info.value)
    assert "response.output_text.delta" in str(info.value)


async def test_agent_runs_the_call_from_a_json_body(
    scripted_server: Factory, tmp_path: Path
) -> None:
    ran: list[float] = []

    @tool
    async def wait(seconds: float) -> str:
        """Wait a while."""
        ran.append(seconds)
        return "waited"

    server = scripted_server(
        [{"tool_calls": [CALL], "stream_as_json": True}, {"text": "Done waiting."}]
    )
    agent, _ = make_agent(server, tmp_path, tools=[])
    agent.registry.remove("wait")
    agent.registry.add(wait)
    outcome = await agent.run_task("wait 1.5 s")
    await agent.close()
    assert ran == [1.5]
    assert outcome.status == "completed" and outcome.reply == "Done waiting."


# --- bytes: invalid UTF-8 and tiny writes -------------------------------------------------------


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_an_invalid_utf8_byte_is_replaced_and_the_stream_goes_on(
    scripted_server: Factory, provider: str
) -> None:
    """A stray byte used to fail the request three times; now it is one U+FFFD."""
    # The protocol's own bytes for the turn, sent again with the "é" broken into 0xff.
    probe = scripted_server([{"text": "café ok", "tool_calls": [CALL]}])
    assert_waits(final(await collect(PROVIDERS[provider](probe))), provider, "café ok")
    raw = _raw_stream(probe)
    broken = raw.replace("é".encode(), b"\xff")
    assert broken != raw
    server = scripted_server([{"wire": [{"hex": broken.hex()}], "write_size": 5}])
    assert_waits(final(await collect(PROVIDERS[provider](server))), provider, "caf\ufffd ok")


async def test_a_lone_surrogate_from_the_model_does_not_poison_the_history(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """JSON may escape a lone surrogate ("\\udcff", as a broken proxy or model sends); kept
    in the history it failed every later request with UnicodeEncodeError. It is U+FFFD."""
    lone = "\udcff"
    server = scripted_server(
        [
            {"tool_calls": [{"id": "c1", "name": "file_list", "arguments": {"path": "a" + lone}}]},
            {"text": "done " + lone},
            {"text": "second"},
        ]
    )
    agent, _ = make_agent(server, tmp_path)
    first = await agent.run_task("list the files")
    second = await agent.run_task("and again")
    await agent.close()
    assert (first.status, second.status) == ("completed", "completed"), (first, second)
    assert first.reply == "done \ufffd" and second.reply == "second"
    sent = json.dumps(server.requests[2].body["messages"], ensure_ascii=False)
    assert "a\ufffd" in sent and "done \ufffd" in sent


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_one_byte_tcp_writes(scripted_server: Factory, provider: str) -> None:
    """Lines, JSON and multi-byte characters cut across TCP writes reassemble exactly."""
    server = scripted_server(
        [{"text": "Ich warte — 稍等", "tool_calls": [CALL], "write_size": 1, "chunk_size": 5}]
    )
    events = await collect(PROVIDERS[provider](server))
    assert_waits(final(events), provider, "Ich warte — 稍等")
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == final(events).message.text


# --- connection reuse ---------------------------------------------------------------------------


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_requests_reuse_one_connection(scripted_server: Factory, provider: str) -> None:
    """The body is read to its end after the final event, so HTTP/1.1 keep-alive carries the
    next request (a new connection per round costs a TLS handshake on a remote endpoint)."""
    server = scripted_server([{"text": "hi", "sse": {"comment_every": 1}}] * 4)
    model = PROVIDERS[provider](server)
    try:
        for _ in range(4):
            [e async for e in model.stream(REQUEST)]
    finally:
        await model.aclose()
    assert len({r.client_port for r in server.requests}) == 1


# --- HTML error pages ----------------------------------------------------------------------------

PAGE_502 = (
    "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title><style>body{x:1}</style>"
    "</head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.25.3</center>"
    "</body></html>" + "<!-- padding -->" * 40
)
PAGE_403 = "<html><body>\n<h1>Access denied</h1>\n<p>Your IP is blocked.</p></body></html>"


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_an_html_error_page_is_told_by_its_title(
    scripted_server: Factory, provider: str
) -> None:
    server = scripted_server(
        [{"error": {"status": 502, "body": PAGE_502}}, {"error": {"status": 403, "body": PAGE_403}}]
    )
    with pytest.raises(ModelRetryableError) as retryable:
        await collect(PROVIDERS[provider](server))
    with pytest.raises(ModelFatalError) as fatal:
        await collect(PROVIDERS[provider](server))
    for exc, status, words in ((retryable, 502, "502 Bad Gateway"), (fatal, 403, "Access denied")):
        message = str(exc.value)
        assert f"HTTP {status}" in message and f"{words} (an HTML page)" in message
        assert "<" not in message and "nginx" not in message
        assert isinstance(exc.value, ModelError) and exc.value.status == status


async def test_agent_retries_past_a_proxy_page(scripted_server: Factory, tmp_path: Path) -> None:
    server = scripted_server([{"error": {"status": 503, "body": PAGE_502}}, {"text": "Hello."}])
    agent, rec = make_agent(server, tmp_path, bounds=Bounds(backoff_base_s=0.01))
    outcome = await agent.run_task("hi")
    await agent.close()
    assert outcome.reply == "Hello."
    (retry,) = rec.of("model_retry")
    assert "HTTP 503: 502 Bad Gateway (an HTML page)" in retry.data["error"]


def _raw_stream(server: ScriptedModelServer) -> bytes:
    """Re-render the server's first turn as its protocol would send it (bytes on the wire)."""
    from loopact.testing.server import default_protocols

    request = server.requests[-1]
    proto = next(p for p in default_protocols() if request.path in p.paths)
    plan = proto.render(server.script.turns[0], request)
    if plan.chunks is None:  # a whole JSON body (stream_as_json)
        assert plan.body is not None
        return plan.body
    return b"".join(plan.chunks)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_a_huge_error_page_is_not_read_to_its_end(
    scripted_server: Factory, provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A 40 MB error page (a proxy's, a broken server's) was read whole into memory before
    the error was raised (issue 21 item 6's family; the SDKs read an error's whole body);
    its first 64 KB say what it is, then the connection is closed."""
    page = "<html><head><title>400 Request Rejected</title></head><body>" + "x" * 40_000_000
    server = scripted_server([{"error": {"status": 400, "body": page}}])
    with caplog.at_level(logging.DEBUG, logger="loopact.testing.framing"):
        with pytest.raises(ModelFatalError, match="400 Request Rejected"):
            await collect(PROVIDERS[provider](server))
        server.stop()  # its handler has finished: written all, or found the reader gone
    assert "client went away" in caplog.text


@pytest.mark.parametrize(
    ("status", "message", "codes", "window"),
    [
        # OpenAI, and llama-cpp-python's server in its shape
        (
            400,
            "This model's maximum context length is 8192 tokens. However, you requested "
            "9000 tokens",
            {"context_length_exceeded"},
            8192,
        ),
        # vLLM
        (
            400,
            "This model's maximum context length is 4096 tokens. However, you requested "
            "5000 tokens (4000 in the messages, 1000 in the completion).",
            set(),
            4096,
        ),
        # llama.cpp's own server
        (
            400,
            "the request exceeds the available context size, try increasing it",
            {"exceed_context_size_error"},
            None,
        ),
        (413, "Input is too long for requested model.", set(), None),  # Bedrock-style proxy
        (400, "prompt is too long: 208310 tokens > 200000 maximum", set(), 200_000),
    ],
)
def test_context_overflow_is_told_from_the_error_and_names_the_window(
    status: int, message: str, codes: set[str], window: int | None
) -> None:
    err = status_error(status, message, {}, frozenset(codes))
    assert isinstance(err, ContextOverflow) and not err.retryable
    assert err.context_tokens == window


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "Invalid value for 'temperature'"),
        (401, "maximum context length is 8192 tokens"),  # an auth error is never an overflow
        (500, "context length exceeded"),  # a server error stays retryable
    ],
)
def test_other_errors_are_not_context_overflows(status: int, message: str) -> None:
    assert not isinstance(status_error(status, message, {}), ContextOverflow)

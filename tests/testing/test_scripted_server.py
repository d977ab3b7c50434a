"""The scripted model server speaks the real OpenAI protocol (SPEC X2), driven by the openai SDK."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from loopact.errors import ScriptError
from loopact.testing import Script, ScriptedModelServer, Turn

Factory = Callable[[Any], ScriptedModelServer]
USER: Any = [{"role": "user", "content": "hello robot"}]


def client(server: ScriptedModelServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test-key", max_retries=0)


async def collect(server: ScriptedModelServer, **kwargs: Any) -> list[Any]:
    async with client(server) as c:
        stream = await c.chat.completions.create(
            model="m", messages=kwargs.pop("messages", USER), stream=True, timeout=10, **kwargs
        )
        return [chunk async for chunk in stream]


def deltas(chunks: list[Any]) -> list[dict[str, Any]]:
    return [c.choices[0].delta.model_dump(exclude_none=True) for c in chunks if c.choices]


def raw_http(server: ScriptedModelServer, body: dict[str, Any]) -> bytes:
    """POST with a plain socket and return everything the server sent until it closed."""
    payload = json.dumps(body).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        f"Connection: close\r\n\r\n"
    ).encode() + payload
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while block := sock.recv(65536):
            data += block
    return data


def http_chunks(data: bytes) -> tuple[bytes, list[bytes], bool]:
    """Split a chunked response into (headers, chunk payloads, saw the terminating 0-chunk)."""
    head, _, rest = data.partition(b"\r\n\r\n")
    chunks: list[bytes] = []
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return head, chunks, True
        chunks.append(rest[:size])
        assert rest[size : size + 2] == b"\r\n"
        rest = rest[size + 2 :]
    return head, chunks, False


async def test_streaming_text_in_chunks(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "Hello there, human.", "chunk_size": 5}])
    chunks = await collect(server)
    ds = deltas(chunks)
    assert ds[0] == {"role": "assistant", "content": ""}
    pieces = [d["content"] for d in ds[1:] if d.get("content")]
    assert pieces == ["Hello", " ther", "e, hu", "man."]
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    assert server.remaining == 0
    assert server.requests[0].body["messages"] == USER


async def test_reasoning_fields(scripted_server: Factory) -> None:
    server = scripted_server(
        [
            {"reasoning": "let me think", "text": "ok", "chunk_size": 100},
            {"reasoning": "hmm", "reasoning_field": "reasoning", "text": "<think>x</think>ok"},
        ]
    )
    first = deltas(await collect(server))
    assert [d.get("reasoning_content") for d in first if "reasoning_content" in d] == [
        "let me think"
    ]
    order = [k for d in first for k in d if k in ("reasoning_content", "content") and d[k]]
    assert order == ["reasoning_content", "content"]
    second = deltas(await collect(server))
    assert any(d.get("reasoning") == "hmm" for d in second)
    assert not any("reasoning_content" in d for d in second)
    assert "".join(d.get("content", "") for d in second) == "<think>x</think>ok"


async def test_streamed_tool_calls_follow_openai_chunk_shape(scripted_server: Factory) -> None:
    args = {"x_m": 1.5, "y_m": -2.0, "label": "kitchen door"}
    server = scripted_server(
        [
            {
                "text": "Going.",
                "chunk_size": 8,
                "tool_calls": [
                    {"id": "call_a", "name": "navigate", "arguments": args},
                    {"name": "wait", "arguments": '{"seconds": 1,}'},
                ],
            }
        ]
    )
    chunks = await collect(server)
    calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    heads = [tc for tc in calls if tc.id is not None]
    assert [(h.index, h.id, h.type, h.function.name, h.function.arguments) for h in heads] == [
        (0, "call_a", "function", "navigate", ""),
        (1, "call_1_1", "function", "wait", ""),
    ]
    tails = [tc for tc in calls if tc.id is None]
    assert all(t.type is None and t.function.name is None for t in tails)
    by_index: dict[int, str] = {0: "", 1: ""}
    for tc in calls:
        by_index[tc.index] += tc.function.arguments or ""
    assert json.loads(by_index[0]) == args
    assert by_index[1] == '{"seconds": 1,}'
    assert len([t for t in tails if t.index == 0]) > 1  # arguments really arrive in pieces
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_non_streaming_completion(scripted_server: Factory) -> None:
    server = scripted_server(
        [
            {
                "text": "",
                "reasoning": "plan",
                "tool_calls": [{"id": "c1", "name": "wait", "arguments": {"seconds": 2}}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 5, "reasoning_tokens": 2},
            },
            {"text": "done", "finish_reason": "length"},
        ]
    )
    async with client(server) as c:
        first = await c.chat.completions.create(model="m", messages=USER, timeout=10)
        second = await c.chat.completions.create(model="m", messages=USER, timeout=10)
    msg = first.choices[0].message
    assert msg.content is None
    assert msg.model_dump()["reasoning_content"] == "plan"
    assert msg.tool_calls is not None
    assert [(t.id, t.function.name, json.loads(t.function.arguments)) for t in msg.tool_calls] == [
        ("c1", "wait", {"seconds": 2})
    ]
    assert first.choices[0].finish_reason == "tool_calls"
    assert first.usage is not None
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (12, 5)
    assert first.usage.total_tokens == 17
    assert first.usage.completion_tokens_details is not None
    assert first.usage.completion_tokens_details.reasoning_tokens == 2
    assert second.choices[0].message.content == "done"
    assert second.choices[0].finish_reason == "length"


async def test_error_with_retry_after(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"error": {"status": 429, "message": "slow down", "retry_after": 3}}, {"text": "ok"}]
    )
    async with client(server) as c:
        with pytest.raises(openai.RateLimitError) as info:
            await c.chat.completions.create(model="m", messages=USER, stream=True, timeout=10)
        assert info.value.status_code == 429
        assert info.value.response.headers["retry-after"] == "3"
        assert "slow down" in info.value.message
        assert server.remaining == 1  # the error consumed its turn
        ok = await c.chat.completions.create(model="m", messages=USER, timeout=10)
    assert ok.choices[0].message.content == "ok"


async def test_server_error_status(scripted_server: Factory) -> None:
    server = scripted_server([{"error": {"status": 503, "message": "overloaded"}}])
    async with client(server) as c:
        with pytest.raises(openai.InternalServerError) as info:
            await c.chat.completions.create(model="m", messages=USER, timeout=10)
    assert info.value.status_code == 503
    assert "retry-after" not in info.value.response.headers


async def test_usage_chunk(scripted_server: Factory) -> None:
    usage = {"prompt_tokens": 40, "completion_tokens": 7}
    server = scripted_server(
        [
            {"text": "a", "usage": usage},
            {"text": "b", "usage": usage},
            {"text": "c", "usage": usage, "usage_chunk": True},
        ]
    )
    asked = await collect(server, stream_options={"include_usage": True})
    assert asked[-1].choices == []
    assert asked[-1].usage is not None
    assert (asked[-1].usage.prompt_tokens, asked[-1].usage.completion_tokens) == (40, 7)
    assert all(c.usage is None for c in asked[:-1])
    not_asked = await collect(server)
    assert all(c.usage is None and c.choices for c in not_asked)
    forced = await collect(server)
    assert forced[-1].usage is not None and forced[-1].usage.total_tokens == 47


async def test_default_usage_is_a_rough_count(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "x" * 40}])
    async with client(server) as c:
        reply = await c.chat.completions.create(model="m", messages=USER, timeout=10)
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 10
    assert reply.usage.prompt_tokens == len(server.requests[0].raw_body) // 4


async def test_finish_reason_null_sends_none(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "cut short", "finish_reason": None}])
    chunks = await collect(server)
    assert "".join(d.get("content", "") for d in deltas(chunks)) == "cut short"
    assert all(c.choices[0].finish_reason is None for c in chunks)


async def test_raw_chunks_sent_verbatim(scripted_server: Factory) -> None:
    odd = {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "odd"}, "finish_reason": None}],
    }
    raws = [json.dumps(odd), "this is not json"]
    server = scripted_server([{"raw_chunks": raws}, {"raw_chunks": ['{"not": "complete"']}])
    async with httpx2.AsyncClient(timeout=10) as http:
        async with http.stream(
            "POST",
            server.base_url + "/chat/completions",
            json={"model": "m", "messages": USER, "stream": True},
        ) as response:
            lines = [line async for line in response.aiter_lines() if line]
        plain = await http.post(
            server.base_url + "/chat/completions", json={"model": "m", "messages": USER}
        )
    assert lines == [f"data: {raws[0]}", "data: this is not json", "data: [DONE]"]
    assert plain.content == b'{"not": "complete"'


async def test_raw_chunk_parsed_by_sdk(scripted_server: Factory) -> None:
    chunk = {
        "id": "",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "from raw"}, "finish_reason": "stop"}],
    }
    server = scripted_server([{"raw_chunks": [json.dumps(chunk)]}])
    chunks = await collect(server)
    assert [c.choices[0].delta.content for c in chunks] == ["from raw"]


async def test_cut_stream_is_a_transport_error(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "abcdefghijkl", "chunk_size": 2, "cut_after_chunks": 3}])
    received: list[str] = []
    async with client(server) as c:
        stream = await c.chat.completions.create(model="m", messages=USER, stream=True, timeout=10)
        with pytest.raises(openai.APIConnectionError) as info:
            async for chunk in stream:
                received.append(chunk.choices[0].delta.content or "")
    assert received == ["", "ab", "cd"]
    cause = info.value.__cause__ or info.value.__context__
    assert isinstance(cause, httpx2.TransportError)


def test_cut_stream_framing_has_no_final_chunk(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "abcdef", "chunk_size": 2, "cut_after_chunks": 2}])
    head, chunks, terminated = http_chunks(raw_http(server, {"messages": USER, "stream": True}))
    assert b"transfer-encoding: chunked" in head.lower()
    assert len(chunks) == 2
    assert not terminated


def test_one_http_chunk_per_sse_event(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"text": "abcdef", "chunk_size": 2, "tool_calls": [{"name": "t", "arguments": {}}]}]
    )
    head, chunks, terminated = http_chunks(raw_http(server, {"messages": USER, "stream": True}))
    assert head.startswith(b"HTTP/1.1 200")
    assert b"content-type: text/event-stream" in head.lower()
    assert terminated
    # role, 3 text pieces, tool head, 1 argument piece ("{}"), finish, [DONE]
    assert len(chunks) == 8
    for chunk in chunks:
        assert chunk.startswith(b"data: ") and chunk.endswith(b"\n\n")
        assert chunk.count(b"\n\n") == 1
    assert chunks[-1] == b"data: [DONE]\n\n"


def test_non_streaming_cut(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "hi", "cut_after_chunks": 0}])
    with (
        httpx2.Client(timeout=10) as http,
        pytest.raises(httpx2.TransportError),
    ):
        http.post(server.base_url + "/chat/completions", json={"messages": USER})


async def test_exhausted_script_fails() -> None:
    async with ScriptedModelServer([{"text": "only"}]) as server, client(server) as c:
        await c.chat.completions.create(model="m", messages=USER, timeout=10)
        with pytest.raises(openai.InternalServerError) as info:
            await c.chat.completions.create(model="m", messages=USER, timeout=10)
    assert info.value.status_code == 500
    assert "scripted model server: script exhausted after 1 turns (request 2)" in str(info.value)
    assert len(server.requests) == 2 and server.requests[1].turn_index is None
    with pytest.raises(ScriptError, match=r"script exhausted after 1 turns \(request 2\)"):
        server.assert_consumed()


def test_unconsumed_script_fails() -> None:
    with ScriptedModelServer([{"text": "a"}, {"text": "b"}]) as server:
        with httpx2.Client(timeout=10) as http:
            reply = http.post(server.base_url + "/chat/completions", json={"messages": USER})
        assert reply.json()["choices"][0]["message"]["content"] == "a"
        assert server.remaining == 1
        with pytest.raises(ScriptError, match=r"1 of 2 turns not consumed .*turn 2"):
            server.assert_consumed()


async def test_expect_mismatch_is_reported_and_response_still_served() -> None:
    tools: Any = [{"type": "function", "function": {"name": "wait", "parameters": {}}}]
    script = [
        {"text": "one", "expect": {"tools": ["wait", "look"], "contains": "hello"}},
        {"text": "two", "expect": {"no_tools": True, "last_user_contains": "bye"}},
        {"text": "three", "expect": {"tools": ["wait"], "last_user_contains": "robot"}},
    ]
    with ScriptedModelServer(script) as server:
        async with client(server) as c:
            replies = [
                await c.chat.completions.create(model="m", messages=USER, tools=tools, timeout=10)
                for _ in range(3)
            ]
    assert [r.choices[0].message.content for r in replies] == ["one", "two", "three"]
    with pytest.raises(ScriptError) as info:
        server.assert_consumed()
    text = str(info.value)
    assert "turn 1 (request 1) expect failed: tools ['look'] not offered" in text
    assert "turn 2 (request 2) expect failed: expected no tools, got ['wait']" in text
    assert "last user message does not contain 'bye'" in text
    assert "turn 3" not in text
    assert len(server.failures) == 2


async def test_expect_match_passes(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"text": "ok", "expect": {"no_tools": True, "contains": "hello", "stream": True}}]
    )
    await collect(server)


def test_authorization_recorded_but_masked() -> None:
    with ScriptedModelServer([{"text": "a"}]) as server:
        with httpx2.Client(timeout=10) as http:
            http.post(
                server.base_url + "/chat/completions",
                json={"messages": USER},
                headers={"Authorization": "Bearer sk-very-secret"},
            )
        server.assert_consumed()
    request = server.requests[0]
    assert request.headers["authorization"] == "Bearer sk-very-secret"
    assert "sk-very-secret" not in repr(request)
    assert "sk-very-secret" not in repr(server.requests)
    assert request.masked_headers()["authorization"] == "Bearer ***"


def test_unknown_path_is_a_failure() -> None:
    with ScriptedModelServer([]) as server:
        with httpx2.Client(timeout=10) as http:
            reply = http.post(server.base_url + "/completions", json={"prompt": "x"})
        assert reply.status_code == 404
        with pytest.raises(ScriptError, match="no protocol serves POST /v1/completions"):
            server.assert_consumed()


def test_script_loading_and_validation(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"text": "hi"}, {"tool_calls": [{"name": "t"}]}]}))
    script = Script.load(path)
    assert [t.text for t in script.turns] == ["hi", ""]
    assert script.turns[1].resolved_finish_reason() == "tool_calls"
    assert Script.load([Turn(text="x")]).turns[0].resolved_finish_reason() == "stop"
    assert Turn(finish_reason=None).resolved_finish_reason() is None

    with pytest.raises(ScriptError, match=r"turn 2: tool_calls\.0\.name: Field required"):
        Script.load([{"text": "ok"}, {"tool_calls": [{"arguments": {}}]}])
    with pytest.raises(ScriptError, match=r"turn 1: txt: Extra inputs are not permitted"):
        Script.load([{"txt": "typo"}])
    with pytest.raises(ScriptError, match=r"turn 1: error\.status"):
        Script.load([{"error": {"status": 200}}])
    bad = tmp_path / "bad.json"
    bad.write_text("{turns: []")
    with pytest.raises(ScriptError, match="bad.json is not valid JSON"):
        ScriptedModelServer(bad)
    with pytest.raises(ScriptError, match="cannot read script file"):
        Script.load(tmp_path / "missing.json")
    with pytest.raises(ScriptError, match="expected an object"):
        Script.load(42)  # type: ignore[arg-type]


def test_sync_sdk_client_and_base_url(scripted_server: Factory) -> None:
    server = scripted_server({"turns": [{"text": "sync ok"}]})
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    assert server.root_url == f"http://127.0.0.1:{server.port}"
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as c:
        reply = c.chat.completions.create(model="m", messages=USER, timeout=10)
    assert reply.choices[0].message.content == "sync ok"


def test_fixture_fails_a_test_that_leaves_turns(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((Path(__file__).parents[1] / "conftest.py").read_text())
    pytester.makepyfile(
        """
        import json, urllib.request

        def post(server):
            req = urllib.request.Request(
                server.base_url + "/chat/completions",
                data=json.dumps({"messages": []}).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(req, timeout=10) as reply:
                return json.load(reply)

        def test_consumed(scripted_server):
            server = scripted_server([{"text": "a"}])
            assert post(server)["choices"][0]["message"]["content"] == "a"

        def test_leaves_a_turn(scripted_server):
            scripted_server({"turns": [{"text": "a"}, {"text": "b"}]})
        """
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ScriptError*2 of 2 turns not consumed*"])


@pytest.mark.parametrize("burst", [1, 20], ids=["one signal", "a burst of signals"])
def test_serve_forever_until_ctrl_c(tmp_path: Path, burst: int) -> None:
    """A burst (SIGINT and SIGTERM back to back, as ``kill`` of a process group and then its
    parent sends) ends it once, cleanly: a newcomer's audit saw a second signal arrive inside
    the first one's handler and hang the server for good (that race is rare; the handler
    that took a lock is gone)."""
    path = tmp_path / "demo.json"
    path.write_text(json.dumps({"turns": [{"text": "from the cli"}, {"text": "unused"}]}))
    code = (
        "import sys; from loopact.testing.server import serve_forever; "
        "serve_forever(sys.argv[1], port=0)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        match = re.search(r"at (http://127\.0\.0\.1:\d+/v1)", banner)
        assert match, f"no URL in {banner!r} (stderr: {proc.stderr.read() if proc.stderr else ''})"
        with httpx2.Client(timeout=10) as http:
            reply = http.post(match.group(1) + "/chat/completions", json={"messages": USER})
        assert reply.json()["choices"][0]["message"]["content"] == "from the cli"
        for n in range(burst):
            proc.send_signal(signal.SIGINT if n % 2 == 0 else signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 0, (out, err)
    assert "Traceback" not in err, err
    assert "1 of 2 turns not consumed" in out


async def test_stop_wakes_a_delayed_response() -> None:
    server = ScriptedModelServer([{"text": "late", "delay_s": 300}]).start()
    try:
        async with client(server) as c:
            pending = asyncio.ensure_future(
                c.chat.completions.create(model="m", messages=USER, timeout=30)
            )
            for _ in range(500):  # wait (bounded) until the request has arrived
                if server.requests:
                    break
                await asyncio.sleep(0.01)
            assert server.requests, "request never reached the server"
            await asyncio.to_thread(server.stop)
            with pytest.raises(openai.APIConnectionError):
                await asyncio.wait_for(pending, timeout=10)
    finally:
        server.stop()


async def test_concurrent_requests_each_get_one_turn(scripted_server: Factory) -> None:
    server = scripted_server([{"text": f"t{i}", "chunk_size": 1} for i in range(12)])

    async def one(c: openai.AsyncOpenAI) -> str:
        stream = await c.chat.completions.create(model="m", messages=USER, stream=True, timeout=10)
        return "".join([ch.choices[0].delta.content or "" async for ch in stream if ch.choices])

    async with client(server) as c:
        answers = await asyncio.gather(*(one(c) for _ in range(12)))
    assert sorted(answers) == sorted(f"t{i}" for i in range(12))
    assert sorted(r.turn_index for r in server.requests if r.turn_index is not None) == list(
        range(12)
    )


async def test_load_replaces_the_script_of_a_running_server() -> None:
    """Issue 20: one server serves many short runs; load() starts the new script afresh."""
    with ScriptedModelServer([{"text": "one"}, {"text": "never"}]) as server:
        port = server.port
        async with client(server) as c:
            first = await c.chat.completions.create(model="m", messages=USER, timeout=10)
            assert first.choices[0].message.content == "one"
            server.load([{"text": "two"}])
            assert server.requests == [] and server.failures == [] and server.remaining == 1
            again = await c.chat.completions.create(model="m", messages=USER, timeout=10)
            assert again.choices[0].message.content == "two"
        assert server.port == port and [r.turn_index for r in server.requests] == [0]
        server.assert_consumed()
        with pytest.raises(ScriptError, match="txt"):
            server.load([{"txt": "typo"}])
        assert server.script.turns[0].text == "two"  # a bad script leaves the old one

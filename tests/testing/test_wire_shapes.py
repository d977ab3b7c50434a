"""The scripted model server sends the odd shapes real servers send (issue 22, SPEC X2).

Raw bytes, tiny TCP writes, data-less SSE lines, JSON bodies to stream requests, HTML error
pages, interleaved parallel tool calls, and the Anthropic API's refusal of whitespace-only
text blocks. Checked on the wire with a plain socket, so the checks do not depend on a client.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

from loopact.testing import ScriptedModelServer

Factory = Callable[[Any], ScriptedModelServer]


def post(server: ScriptedModelServer, path: str, body: dict[str, Any]) -> tuple[bytes, list[bytes]]:
    """POST with a plain socket; returns (head, the body as the list of socket reads)."""
    payload = json.dumps(body).encode()
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode() + payload
    reads: list[bytes] = []
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request)
        while block := sock.recv(65536):
            reads.append(block)
    data = b"".join(reads)
    head, _, _ = data.partition(b"\r\n\r\n")
    return head, reads


def dechunk(data: bytes) -> list[bytes]:
    """The payloads of a chunked body (after the head)."""
    _, _, rest = data.partition(b"\r\n\r\n")
    out = []
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return out


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_wire_sends_exact_bytes_including_invalid_utf8(scripted_server: Factory) -> None:
    server = scripted_server(
        [{"wire": ["retry: 3000\n\n", {"hex": "64 61 74 61 3a 20 ff 0a 0a"}, "data: [DONE]\n\n"]}]
    )
    head, reads = post(server, "/v1/chat/completions", CHAT)
    assert b"200 OK" in head and b"text/event-stream" in head
    assert dechunk(b"".join(reads)) == [b"retry: 3000\n\n", b"data: \xff\n\n", b"data: [DONE]\n\n"]


def test_write_size_splits_every_chunk_into_tiny_writes(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "héllo wörld", "chunk_size": 50, "write_size": 1}])
    _, reads = post(server, "/v1/chat/completions", CHAT)
    payloads = dechunk(b"".join(reads))
    assert payloads and all(len(p) == 1 for p in payloads)
    text = b"".join(payloads).decode()
    assert '"content": "héllo wörld"' in text and text.endswith("data: [DONE]\n\n")

    def cuts_a_character(piece: bytes) -> bool:
        try:
            piece.decode()
        except UnicodeDecodeError:
            return True
        return False

    assert any(cuts_a_character(p) for p in payloads)  # "é" is two bytes, cut by the writes


def test_sse_shape_adds_retry_ids_and_comments(scripted_server: Factory) -> None:
    server = scripted_server(
        [
            {
                "text": "ab",
                "chunk_size": 1,
                "sse": {"retry_ms": 3000, "event_ids": True, "comment_every": 1},
            }
        ]
    )
    _, reads = post(server, "/v1/chat/completions", CHAT)
    payloads = dechunk(b"".join(reads))
    assert payloads[0].startswith(b"retry: 3000\n\nid: 1\ndata: {")
    assert all(p.endswith(b"\n\n: ping\n\n") for p in payloads)
    assert payloads[-1] == b"id: %d\ndata: [DONE]\n\n: ping\n\n" % len(payloads)


def test_stream_as_json_answers_a_stream_request_with_a_completion(
    scripted_server: Factory,
) -> None:
    server = scripted_server(
        [
            {
                "tool_calls": [{"id": "c1", "name": "wait", "arguments": {"s": 1}}],
                "stream_as_json": True,
            }
        ]
    )
    head, reads = post(server, "/v1/chat/completions", CHAT)
    assert b"application/json" in head
    body = json.loads(b"".join(reads).partition(b"\r\n\r\n")[2])
    assert body["object"] == "chat.completion"
    call = body["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "wait", "arguments": '{"s": 1}'}


def test_error_body_sends_a_proxy_html_page(scripted_server: Factory) -> None:
    page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    server = scripted_server([{"error": {"status": 502, "body": page}}])
    head, reads = post(server, "/v1/chat/completions", CHAT)
    assert head.startswith(b"HTTP/1.1 502") and b"text/html" in head
    assert b"".join(reads).endswith(page.encode())


def test_interleaved_and_reused_index_tool_calls(scripted_server: Factory) -> None:
    calls = [
        {"id": "a", "name": "move", "arguments": {"distance_m": 10.5}},
        {"id": "b", "name": "turn", "arguments": {"angle_deg": 90}},
    ]
    server = scripted_server(
        [
            {
                "tool_calls": calls,
                "chunk_size": 8,
                "extras": {"openai": {"interleave_calls": True}},
            },
            {"tool_calls": calls, "extras": {"openai": {"reuse_index": True}}},
        ]
    )
    events = []
    for _ in range(2):
        _, reads = post(server, "/v1/chat/completions", CHAT)
        payloads = dechunk(b"".join(reads))
        deltas = [json.loads(p[6:]) for p in payloads if p.startswith(b"data: {")]
        events.append(
            [tc for d in deltas for c in d["choices"] for tc in c["delta"].get("tool_calls", [])]
        )
    interleaved = events[0]
    assert [tc.get("id") for tc in interleaved[:2]] == ["a", "b"]
    order = [tc["index"] for tc in interleaved[2:]]
    assert order[:4] == [0, 1, 0, 1]
    args = {
        i: "".join(tc["function"]["arguments"] for tc in interleaved if tc["index"] == i)
        for i in (0, 1)
    }
    assert json.loads(args[0]) == {"distance_m": 10.5} and json.loads(args[1]) == {"angle_deg": 90}
    assert {tc["index"] for tc in events[1]} == {0}
    assert [tc["id"] for tc in events[1] if "id" in tc] == ["a", "b"]


def test_anthropic_refuses_whitespace_only_text_blocks(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "never sent"}, {"text": "fine"}])
    bad = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}]},
            {"role": "user", "content": "go on"},
        ],
    }
    head, reads = post(server, "/v1/messages", bad)
    assert head.startswith(b"HTTP/1.1 400")
    error = json.loads(b"".join(reads).partition(b"\r\n\r\n")[2])["error"]
    assert error["message"] == "messages: text content blocks must contain non-whitespace text"
    bad["messages"][1]["content"] = [{"type": "text", "text": "ok"}]
    head, _ = post(server, "/v1/messages", bad)
    assert head.startswith(b"HTTP/1.1 200")

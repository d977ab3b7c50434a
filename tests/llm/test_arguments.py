"""Streamed tool-call arguments are collected in linear work (issue 21 item 7; SPEC B5, B7).

Appending every fragment to one string and re-parsing it at every ``}`` cost O(n²): 1 MB of
arguments in 8-character pieces took 10.4 s, 2 MB passed 60 s. The collector
(:class:`loopact.llm.arguments.ArgumentBuffer`) counts the characters it scans, copies and
decodes (``work_chars``); these tests stream about 1 MB of arguments in 8-character pieces
through the scripted model server (real HTTP) into the real OpenAI provider and hold that
count to a small multiple of the arguments' size, and to 4x when the size is 4x, with no
clock. The arguments are a list of small objects, so a collector that re-parses at every
``}`` or joins its fragments at every piece would do quadratic work here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from loopact.llm.arguments import ArgumentBuffer
from loopact.llm.base import ModelRequest, ToolCallReady, ToolSpec
from loopact.llm.messages import Message, ToolCall
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer

Factory = Callable[[Any], ScriptedModelServer]

PATH = ToolSpec(
    "follow_path",
    "Follow a path of points.",
    {
        "type": "object",
        "properties": {"points": {"type": "array", "items": {"type": "object"}}},
        "required": ["points"],
    },
)
REQUEST = ModelRequest(
    messages=(Message.system("You are a robot."), Message.user("follow this path")),
    tools=(PATH,),
)
PIECE_CHARS = 8
"""Characters per streamed argument piece: what real servers send (issue 21 item 7)."""
WORK_PER_CHAR = 4
"""Work allowed per argument character: scanning each piece once, joining the pieces once
and decoding the text once is 3; a quadratic collector needs thousands at 1 MB."""


def path_arguments(chars: int) -> dict[str, Any]:
    """``{"points": [{"x_m": .., "y_m": ..}, ...]}`` of at most ``chars`` characters of JSON
    (as ``json.dumps`` writes it), within 30 of it."""
    points: list[dict[str, float]] = []
    used = len(json.dumps({"points": []}))
    k = 0
    while True:
        point = {"x_m": round(k * 0.01, 2), "y_m": -3.5}
        more = len(json.dumps(point)) + (2 if points else 0)  # ", " before all but the first
        if used + more > chars:
            return {"points": points}
        points.append(point)
        used += more
        k += 1


async def stream_call(
    scripted_server: Factory, monkeypatch: pytest.MonkeyPatch, arguments: dict[str, Any]
) -> tuple[ToolCall, list[ArgumentBuffer]]:
    """Stream one call with ``arguments`` in 8-character pieces through the real provider;
    the call that came out, and every argument collector the provider made for it."""
    buffers: list[ArgumentBuffer] = []
    made = ArgumentBuffer.__init__

    def spy(self: ArgumentBuffer, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        buffers.append(self)

    monkeypatch.setattr(ArgumentBuffer, "__init__", spy)
    call = {"id": "call_p", "name": "follow_path", "arguments": arguments}
    server = scripted_server([{"tool_calls": [call], "chunk_size": PIECE_CHARS}])
    model = OpenAIChatModel("scripted", server.base_url, api_key="sk-x", request_timeout_s=120)
    try:
        ready = [e.call async for e in model.stream(REQUEST) if isinstance(e, ToolCallReady)]
    finally:
        await model.aclose()
    monkeypatch.undo()
    assert len(ready) == 1 and ready[0].error is None, ready
    return ready[0], buffers


async def test_a_megabyte_of_arguments_in_8_character_pieces_is_linear_work(
    scripted_server: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """About 1 MB in 131,000 pieces: the call comes out whole, its collector did at most 4
    characters of work per character, decoded it once, and did 4x the work of a quarter of
    the arguments, not 16x (the size, not its square)."""
    per_char: list[float] = []
    for chars in (250_000, 1_000_000):
        args = path_arguments(chars)
        size = len(json.dumps(args))
        assert chars - 30 <= size <= chars  # within MAX_ARGUMENT_CHARS: collected, not refused
        call, buffers = await stream_call(scripted_server, monkeypatch, args)
        assert call.arguments == args and len(call.raw_arguments or "") == size
        assert max(b.size for b in buffers) == size  # one collector saw every piece
        work = sum(b.work_chars for b in buffers)
        assert work <= WORK_PER_CHAR * size, f"{work:,} characters of work for {size:,}"
        assert sum(b.parse_attempts for b in buffers) <= 1
        per_char.append(work / size)
    assert per_char[1] <= per_char[0] * 1.1, per_char  # 4x the size, at most 4.4x the work

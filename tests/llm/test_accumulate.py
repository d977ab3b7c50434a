"""Pure stream accumulation, chunk by chunk (SPEC B5, B7, X1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopact.errors import ModelRetryableError
from loopact.llm.accumulate import (
    TRUNCATED_ERROR,
    StreamState,
    accumulate_chunk,
    finish_stream,
    new_state,
)
from loopact.llm.base import (
    ModelEvent,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
)
from loopact.llm.messages import Usage


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    c.update(extra)
    return c


def tc(
    index: int | None, id: str | None = None, name: str | None = None, args: Any = None
) -> dict[str, Any]:
    d: dict[str, Any] = {"function": {}}
    if index is not None:
        d["index"] = index
    if id is not None:
        d["id"] = id
        d["type"] = "function"
    if name is not None:
        d["function"]["name"] = name
    if args is not None:
        d["function"]["arguments"] = args
    return d


def run(chunks: list[dict[str, Any]], state: StreamState | None = None) -> list[ModelEvent]:
    st = state or new_state()
    events: list[ModelEvent] = []
    for c in chunks:
        events.extend(accumulate_chunk(c, st))
    events.extend(finish_stream(st))
    return events


def done(events: list[ModelEvent]) -> ResponseDone:
    last = events[-1]
    assert isinstance(last, ResponseDone)
    assert sum(isinstance(e, ResponseDone) for e in events) == 1
    return last


def ready(events: list[ModelEvent]) -> list[ToolCallReady]:
    return [e for e in events if isinstance(e, ToolCallReady)]


def test_text_and_reasoning_fields() -> None:
    events = run(
        [
            chunk({"role": "assistant", "reasoning_content": "think "}),
            chunk({"reasoning": "more"}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}, finish="stop"),
        ]
    )
    assert [e for e in events if isinstance(e, ReasoningDelta)] == [
        ReasoningDelta("think "),
        ReasoningDelta("more"),
    ]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    d = done(events)
    assert d.message.text == "Hello"
    assert d.message.reasoning == "think more"
    assert d.finish_reason == "stop"
    assert d.message.tool_calls == ()


def test_think_tags_split_across_chunks() -> None:
    events = run(
        [
            chunk({"content": "<th"}),
            chunk({"content": "ink>plan</th"}),
            chunk({"content": "ink>\n\nGo"}),
        ]
    )
    d = done(events)
    assert d.message.reasoning == "plan"
    assert d.message.text == "Go"
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(texts) == "Go"


def test_fragments_merged_by_index() -> None:
    events = run(
        [
            chunk({"tool_calls": [tc(0, "call_a", "move", "")]}),
            chunk({"tool_calls": [tc(0, args='{"x": ')]}),
            chunk({"tool_calls": [tc(0, args="1.5, ")]}),
            chunk({"tool_calls": [tc(0, args='"y": 2}')]}),
            chunk(finish="tool_calls"),
        ]
    )
    (r,) = ready(events)
    assert r.index == 0
    assert r.call.id == "call_a" and r.call.name == "move"
    assert r.call.arguments == {"x": 1.5, "y": 2}
    assert r.call.raw_arguments == '{"x": 1.5, "y": 2}'
    assert done(events).message.tool_calls == (r.call,)


def test_call_ready_as_soon_as_arguments_complete() -> None:
    st = new_state()
    evs = accumulate_chunk(chunk({"tool_calls": [tc(0, "c0", "look", '{"a":')]}), st)
    assert evs == [ToolCallDelta(0, '{"a":', "look")]
    evs = accumulate_chunk(chunk({"tool_calls": [tc(0, args=' {"b": 1}}')]}), st)
    assert evs[0] == ToolCallDelta(0, ' {"b": 1}}', "look")
    assert len(evs) == 2 and isinstance(evs[1], ToolCallReady)
    assert evs[1].call.arguments == {"a": {"b": 1}}
    # a partial object ending in "}" is not complete yet
    evs = accumulate_chunk(chunk({"tool_calls": [tc(1, "c1", "go", '{"p": {"q": 1}')]}), st)
    assert ready(evs) == []
    evs = accumulate_chunk(chunk({"tool_calls": [tc(1, args="}")]}), st)
    assert [e.index for e in evs if isinstance(e, ToolCallReady)] == [1]
    d = done(finish_stream(st))
    assert [c.id for c in d.message.tool_calls] == ["c0", "c1"]


def test_a_later_index_does_not_complete_an_earlier_call() -> None:
    """Issue 22 item 1: index 1 starting proves nothing about call 0 (servers interleave)."""
    st = new_state()
    # Call 0 has no arguments text yet: it may still come after call 1's pieces.
    assert ready(accumulate_chunk(chunk({"tool_calls": [tc(0, "c0", "stop_robot", "")]}), st)) == []
    evs = accumulate_chunk(chunk({"tool_calls": [tc(1, "c1", "wait", '{"s": 1}')]}), st)
    assert ready(evs) == []  # call 1 is complete, but waits for call 0 (call order)
    evs = accumulate_chunk(chunk({"tool_calls": [tc(0, args='{"why": "done"}')]}), st)
    assert [(e.index, e.call.id) for e in ready(evs)] == [(0, "c0"), (1, "c1")]
    assert ready(evs)[0].call.arguments == {"why": "done"}
    # Nothing ever came: the end of the stream completes it as a call without arguments.
    st = new_state()
    accumulate_chunk(chunk({"tool_calls": [tc(0, "c0", "stop_robot", "")]}), st)
    accumulate_chunk(chunk({"tool_calls": [tc(1, "c1", "wait", '{"s": 1}')]}), st)
    evs = finish_stream(st)
    assert [(e.call.id, e.call.arguments) for e in ready(evs)] == [
        ("c0", {}),
        ("c1", {"s": 1}),
    ]


def test_new_id_on_same_index_starts_new_call() -> None:
    events = run(
        [
            chunk({"tool_calls": [tc(0, "call_1", "a", '{"k": 1')]}),
            chunk({"tool_calls": [tc(0, "call_2", "b", '{"k": 2}')]}),
        ]
    )
    calls = [r.call for r in ready(events)]
    assert [(c.id, c.name) for c in calls] == [("call_1", "a"), ("call_2", "b")]
    assert calls[0].arguments == {"k": 1}  # repaired when the next call started
    assert [r.index for r in ready(events)] == [0, 1]


def test_same_id_repeated_on_every_chunk_is_one_call() -> None:
    events = run(
        [
            chunk({"tool_calls": [tc(0, "call_1", "a", '{"k"')]}),
            chunk({"tool_calls": [tc(0, "call_1", "", ": 1}")]}),
        ]
    )
    (r,) = ready(events)
    assert r.call.arguments == {"k": 1}


def test_empty_id_and_name_count_as_absent() -> None:
    events = run(
        [
            chunk({"tool_calls": [tc(0, "call_x", "grab", "")]}),
            chunk({"tool_calls": [tc(0, "", "", '{"o": "cup"}')]}),
        ]
    )
    (r,) = ready(events)
    assert (r.call.id, r.call.name, r.call.arguments) == ("call_x", "grab", {"o": "cup"})


def test_missing_id_is_generated() -> None:
    events = run([chunk({"tool_calls": [tc(0, None, "grab", '{"o": 1}')]})])
    (r,) = ready(events)
    assert r.call.id.startswith("call_") and len(r.call.id) > 8


def test_arguments_as_object() -> None:
    events = run([chunk({"tool_calls": [tc(0, "c", "move", {"x": 1})]}, finish="tool_calls")])
    (r,) = ready(events)
    assert r.call.arguments == {"x": 1}
    assert json.loads(r.call.raw_arguments) == {"x": 1}


def test_missing_index_with_distinct_ids() -> None:
    events = run(
        [
            chunk({"tool_calls": [tc(None, "a1", "a", '{"x": 1}')]}),
            chunk({"tool_calls": [tc(None, "b1", "b", '{"y": 2}')]}),
        ]
    )
    assert [(r.index, r.call.name) for r in ready(events)] == [(0, "a"), (1, "b")]


def test_usage_only_final_chunk() -> None:
    events = run(
        [
            chunk({"content": "hi"}, finish="stop"),
            {"id": "x", "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 3}},
        ]
    )
    d = done(events)
    assert d.usage == Usage(11, 3)
    assert d.message.text == "hi"


def test_calls_honoured_with_finish_stop_and_without_finish() -> None:
    for finish in ("stop", None):
        events = run([chunk({"tool_calls": [tc(0, "c", "wait", '{"s": 1}')]}, finish=finish)])
        d = done(events)
        assert [c.name for c in d.message.tool_calls] == ["wait"]
        assert d.finish_reason == (finish or "")


def test_repair_at_end_of_stream() -> None:
    events = run([chunk({"tool_calls": [tc(0, "c", "wait", "{'s': 1,")]}, finish="tool_calls")])
    (r,) = ready(events)
    assert r.call.arguments == {"s": 1}
    assert r.call.error is None


def test_unrepairable_arguments_yield_error_call() -> None:
    events = run([chunk({"tool_calls": [tc(0, "c", "wait", "not json")]}, finish="tool_calls")])
    (r,) = ready(events)
    assert r.call.arguments == {}
    assert r.call.error is not None and "JSON" in r.call.error
    assert done(events).message.tool_calls == (r.call,)


def test_length_truncation_is_not_usable() -> None:
    events = run(
        [
            chunk({"tool_calls": [tc(0, "c0", "a", '{"x": 1}')]}),
            chunk({"tool_calls": [tc(1, "c1", "b", '{"text": "a long te')]}, finish="length"),
        ]
    )
    assert [r.call.id for r in ready(events)] == ["c0"]
    d = done(events)
    assert [c.id for c in d.message.tool_calls] == ["c0"]
    assert len(d.truncated_calls) == 1
    t = d.truncated_calls[0]
    assert (t.id, t.name, t.error) == ("c1", "b", TRUNCATED_ERROR)
    assert t.raw_arguments == '{"text": "a long te'
    assert d.finish_reason == "length"


def test_tool_call_block_in_text() -> None:
    st = new_state(tool_names=["wait"])
    evs = accumulate_chunk(chunk({"content": 'Waiting. <tool_call>{"name": "wa'}), st)
    assert [e.text for e in evs if isinstance(e, TextDelta)] == ["Waiting. "]
    evs = accumulate_chunk(chunk({"content": 'it", "arguments": {"s": 1}}</tool_call>'}), st)
    (r,) = [e for e in evs if isinstance(e, ToolCallReady)]
    assert (r.index, r.call.name, r.call.arguments) == (0, "wait", {"s": 1})
    d = done(finish_stream(st))
    assert d.message.text == "Waiting. "
    assert d.message.tool_calls == (r.call,)


def test_truncated_tool_call_block() -> None:
    events = run(
        [chunk({"content": '<tool_call>{"name": "say", "arguments": {"t": "hel'}, finish="length")]
    )
    d = done(events)
    assert ready(events) == []
    assert d.message.tool_calls == ()
    assert len(d.truncated_calls) == 1 and d.truncated_calls[0].name == "say"


def test_bare_json_only_without_native_tools() -> None:
    content = '{"name": "wait", "arguments": {"s": 3}}'
    native = run([chunk({"content": content})], new_state(["wait"], native_tool_calls=True))
    assert done(native).message.tool_calls == ()
    assert done(native).message.text == content
    plain = run([chunk({"content": content})], new_state(["wait"], native_tool_calls=False))
    d = done(plain)
    assert [(c.name, c.arguments) for c in d.message.tool_calls] == [("wait", {"s": 3})]
    assert d.message.text == ""
    assert [e for e in plain if isinstance(e, TextDelta)] == []


def test_bare_json_hold_back_releases_text_that_is_not_a_call() -> None:
    st = new_state(["wait"], native_tool_calls=False)
    evs = accumulate_chunk(chunk({"content": "Result: {"}), st)
    assert [e.text for e in evs if isinstance(e, TextDelta)] == ["Result: "]
    accumulate_chunk(chunk({"content": '"x": 1}'}), st)
    d = done(finish_stream(st))
    assert d.message.text == 'Result: {"x": 1}'
    assert d.message.tool_calls == ()


@pytest.mark.parametrize(
    "bad",
    [
        ["not", "a", "dict"],
        {"choices": "nope"},
        {"choices": [{"index": 0, "delta": "text"}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": "x"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "0"}]}}]},
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 5}}]}}
            ]
        },
    ],
)
def test_malformed_chunk_raises_retryable(bad: Any) -> None:
    with pytest.raises(ModelRetryableError, match="model stream was cut"):
        accumulate_chunk(bad, new_state())


def test_each_call_exactly_once_in_order() -> None:
    chunks = [
        chunk({"tool_calls": [tc(i, f"c{i}", "t", "")]})
        if j == 0
        else chunk({"tool_calls": [tc(i, args=p)]})
        for i in range(4)
        for j, p in enumerate(["", '{"i": ', f"{i}", "}"])
    ]
    events = run(chunks)
    rs = ready(events)
    assert [r.index for r in rs] == [0, 1, 2, 3]
    assert [r.call.arguments for r in rs] == [{"i": i} for i in range(4)]
    assert done(events).message.tool_calls == tuple(r.call for r in rs)

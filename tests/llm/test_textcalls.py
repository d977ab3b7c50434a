"""Tool calls written as text (SPEC B4, B5, B7)."""

from __future__ import annotations

import re

from loopact.llm.markup import cut_stray_markup
from loopact.llm.messages import ToolCall
from loopact.llm.textcalls import (
    ToolCallTagParser,
    find_bare_json_calls,
    new_call_id,
    parse_tool_call_block,
)


def feed_all(chunks: list[str]) -> list[str | ToolCall]:
    p = ToolCallTagParser()
    out: list[str | ToolCall] = []
    for c in chunks:
        out.extend(p.feed(c))
    out.extend(p.flush())
    return out


def test_block_is_cut_out_of_text() -> None:
    items = feed_all(['Sure. <tool_call>{"name": "wait", "arguments": {"s": 1}}</tool_call> ok'])
    text = "".join(i for i in items if isinstance(i, str))
    calls = [i for i in items if isinstance(i, ToolCall)]
    assert text == "Sure.  ok"
    assert len(calls) == 1
    assert calls[0].name == "wait"
    assert calls[0].arguments == {"s": 1}
    assert calls[0].error is None
    assert re.fullmatch(r"call_[0-9a-f]{24}", calls[0].id)


def test_block_split_across_chunks_is_ready_at_closing_tag() -> None:
    p = ToolCallTagParser()
    assert p.feed("go <tool_") == ["go "]
    assert p.feed('call>{"name": "move", "argu') == []
    assert p.in_block
    assert p.feed('ments": {"x": 1}}</tool_') == []
    items = p.feed("call>rest")
    assert isinstance(items[0], ToolCall)
    assert items[0].arguments == {"x": 1}
    assert items[1:] == ["rest"]


def test_two_blocks_in_order() -> None:
    items = feed_all(
        [
            '<tool_call>{"name": "a", "arguments": {}}</tool_call>\n'
            '<tool_call>{"name": "b", "parameters": {"k": "v"}}</tool_call>'
        ]
    )
    calls = [i for i in items if isinstance(i, ToolCall)]
    assert [c.name for c in calls] == ["a", "b"]
    assert calls[1].arguments == {"k": "v"}
    assert calls[0].id != calls[1].id


def test_arguments_as_json_text_and_repair() -> None:
    call = parse_tool_call_block('{"name": "a", "arguments": "{\\"x\\": 1,}"}')
    assert call.arguments == {"x": 1}
    assert call.error is None
    call = parse_tool_call_block("{'name': 'a', 'arguments': {'x': 2,}}")
    assert call.name == "a"
    assert call.arguments == {"x": 2}


def test_broken_block_is_an_error_call() -> None:
    call = parse_tool_call_block('"name": "grab" and then nonsense')
    assert call.name == "grab"
    assert call.error is not None and "<tool_call>" in call.error
    nameless = parse_tool_call_block('{"arguments": {"x": 1}}')
    assert nameless.error == "the tool call names no tool"


def test_unclosed_block_at_end_is_parsed() -> None:
    items = feed_all(['<tool_call>{"name": "a", "arguments": {"x": 1}}'])
    assert len(items) == 1 and isinstance(items[0], ToolCall)
    assert items[0].arguments == {"x": 1}


def test_partial_open_tag_text_is_released_at_end() -> None:
    assert feed_all(["value <tool"]) == ["value ", "<tool"]


def test_bare_json_known_tool() -> None:
    rest, calls = find_bare_json_calls('{"name": "wait", "arguments": {"s": 2}}', {"wait"})
    assert rest == ""
    assert len(calls) == 1 and calls[0].name == "wait" and calls[0].arguments == {"s": 2}


def test_bare_json_in_fence_with_prose() -> None:
    text = 'I will wait.\n```json\n{"name": "wait", "parameters": {"s": 1}}\n```\nDone.'
    rest, calls = find_bare_json_calls(text, {"wait"})
    assert [c.name for c in calls] == ["wait"]
    assert calls[0].arguments == {"s": 1}
    assert "```" not in rest and "I will wait." in rest and "Done." in rest


def test_bare_json_unknown_tool_is_text() -> None:
    text = '{"name": "rm_rf", "arguments": {}}'
    assert find_bare_json_calls(text, {"wait"}) == (text, [])


def test_plain_json_answer_is_text() -> None:
    text = 'The result is {"x": 1, "name": "not a tool"}'
    assert find_bare_json_calls(text, {"wait"}) == (text, [])


def test_two_bare_calls() -> None:
    text = '{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {"k": 1}}'
    rest, calls = find_bare_json_calls(text, {"a", "b"})
    assert [c.name for c in calls] == ["a", "b"]
    assert rest == ""


def test_new_call_ids_are_unique() -> None:
    ids = {new_call_id() for _ in range(100)}
    assert len(ids) == 100


# --- open models' own markup (issue 39 item 2) ------------------------------------------


def _calls(items: list[str | ToolCall]) -> list[tuple[str, dict[str, object], str | None]]:
    return [(c.name, c.arguments, c.error) for c in items if isinstance(c, ToolCall)]


def test_qwen3_coder_function_markup_with_and_without_the_wrapper() -> None:
    block = "<function=note>\n<parameter=text>\n a\nb \n</parameter>\n</function>"
    for text in (f"<tool_call>\n{block}\n</tool_call>", f"ok {block}"):
        for size in (1, 3, 1000):
            items = feed_all([text[i : i + size] for i in range(0, len(text), size)])
            assert _calls(items) == [("note", {"text": " a\nb "}, None)], (text, size)
    no_args = feed_all(["<tool_call><function=status></function></tool_call>"])
    assert _calls(no_args) == [("status", {}, None)]


def test_glm_markup_and_a_bare_tool_name() -> None:
    text = "<tool_call>turn\n<arg_key>angle_deg</arg_key>\n<arg_value>90</arg_value>\n</tool_call>"
    assert _calls(feed_all([text])) == [("turn", {"angle_deg": "90"}, None)]
    assert _calls(feed_all(["<tool_call>get_time\n</tool_call>"])) == [("get_time", {}, None)]


def test_kimi_k2_section_with_two_calls_and_a_lone_call() -> None:
    section = (
        "<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.turn:0"
        '<|tool_call_argument_begin|>{"angle_deg": 90}<|tool_call_end|>\n'
        "<|tool_call_begin|>functions.status:1<|tool_call_argument_begin|>{}<|tool_call_end|>"
        "<|tool_calls_section_end|>"
    )
    for size in (1, 4, 1000):
        items = feed_all([section[i : i + size] for i in range(0, len(section), size)])
        assert _calls(items) == [("turn", {"angle_deg": 90}, None), ("status", {}, None)]
        assert "".join(i for i in items if isinstance(i, str)) == ""
    lone = '<|tool_call_begin|>turn:3<|tool_call_argument_begin|>{"a": 1}<|tool_call_end|>'
    assert _calls(feed_all([lone])) == [("turn", {"a": 1}, None)]


def test_ambiguous_markup_is_one_failed_nameless_call() -> None:
    cases = {
        "<tool_call><function=a><parameter=x>1</parameter><parameter=x>2</parameter>"
        "</function></tool_call>": "given twice",
        "<tool_call><function=a><parameter=x>1</function></tool_call>": "unclosed",
        "<tool_call><function=a b><parameter=x>1</parameter></function></tool_call>": "",
        "<tool_call>a <arg_key>x</arg_key> hello <arg_value>1</arg_value></tool_call>": "",
        "<tool_call>two words<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>": "",
        "<|tool_calls_section_begin|>junk<|tool_call_begin|>a:0<|tool_call_argument_begin|>{}"
        "<|tool_call_end|><|tool_calls_section_end|>": "text between",
        "<|tool_calls_section_begin|><|tool_call_begin|>a:0<|tool_call_argument_begin|>[1]"
        "<|tool_call_end|><|tool_calls_section_end|>": "not a JSON object",
    }
    for text, needle in cases.items():
        (call,) = [i for i in feed_all([text]) if isinstance(i, ToolCall)]
        assert call.error is not None and "could not be read" in call.error, text
        assert needle in call.error, (text, call.error)
        assert call.arguments == {}, text


def test_stray_markup_is_cut_from_the_answer_and_becomes_a_failed_call() -> None:
    text, call = cut_stray_markup("I will note it.\nnote<arg_key>t</arg_key><arg_value>x")
    assert text == "I will note it."
    assert call is not None and call.name == "" and "<arg_key>" in (call.error or "")
    fenced = "The format is:\n```\n<|tool_call_begin|>NAME<|tool_call_end|>\n```\nThat is all."
    assert cut_stray_markup(fenced) == (fenced, None)
    assert cut_stray_markup("no markup, a < b > c") == ("no markup, a < b > c", None)

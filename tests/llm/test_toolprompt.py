"""Compact tool catalogue and GBNF call grammar for text tool calls (issue 6; SPEC B4, B7)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from loopact.llm.base import Capabilities, ModelRequest, ResponseDone, ToolSpec
from loopact.llm.messages import Message, ToolCall, ToolOutcome
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.llm.openai_messages import (
    REFUSAL_AS_TEXT,
    TOOL_RESULT_AS_TEXT,
    describe_tools_as_text,
)
from loopact.llm.small_model import SmallModelPolicy, needs_small_model_policy, previous_calls
from loopact.llm.toolprompt import (
    MAX_EXAMPLES,
    REFUSAL_INSTRUCTION,
    REPLY_TOOL,
    RESULT_INSTRUCTION,
    answer_only_grammar,
    compact_schema,
    describe_tool,
    describe_tools_compact,
    echoes_instruction,
    pick_examples,
    tool_call_grammar,
)

MOVE = ToolSpec(
    "move_forward",
    "Drive straight ahead by a distance. Stops for obstacles.",
    {
        "type": "object",
        "properties": {
            "distance_m": {"type": "number", "description": "How far, in metres (> 0)."},
            "speed_mps": {"type": "number", "default": 0.2, "description": "Speed in m/s."},
        },
        "required": ["distance_m"],
        "additionalProperties": False,
    },
)
NAV = ToolSpec(
    "navigation",
    "Go to a named place.",
    {
        "type": "object",
        "properties": {"waypoint": {"type": "string", "enum": ["kitchen", "door"]}},
        "required": ["waypoint"],
    },
)
STOP = ToolSpec(
    "stop", "Stop now.", {"type": "object", "properties": {}, "additionalProperties": False}
)
COLOR = ToolSpec(
    "detect_objects",
    "Find coloured objects.\n\nLong second paragraph that should not be shown.",
    {
        "type": "object",
        "properties": {
            "color": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "min_area_px": {"type": "integer", "minimum": 0},
        },
    },
)


def small_model(*args: Any, **kwargs: Any) -> OpenAIChatModel | SmallModelPolicy:
    """The provider as loopact builds it for these capabilities (``app.model.make_model``):
    with the small-model policy on constrained text-call endpoints."""
    inner = OpenAIChatModel(*args, **kwargs)
    return SmallModelPolicy(inner) if needs_small_model_policy(inner.capabilities) else inner


def rules(grammar: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in grammar.splitlines():
        name, sep, body = line.partition(" ::= ")
        if sep:
            assert name not in out, f"rule {name} defined twice"
            out[name] = body
    return out


def test_compact_schema_keeps_types_defaults_enums_and_first_sentences() -> None:
    move = compact_schema(MOVE)
    assert move == {
        "name": "move_forward",
        "description": "Drive straight ahead by a distance.",
        "parameters": {
            "type": "object",
            "properties": {
                "distance_m": {"type": "number", "description": "How far, in metres (> 0)."},
                "speed_mps": {"type": "number", "description": "Speed in m/s.", "default": 0.2},
            },
            "required": ["distance_m"],
        },
    }
    color = compact_schema(COLOR)
    assert color["description"] == "Find coloured objects."
    assert color["parameters"]["properties"]["color"] == {"type": "string"}
    assert color["parameters"]["properties"]["min_area_px"] == {"type": "integer"}
    nav = compact_schema(NAV)["parameters"]["properties"]["waypoint"]
    assert nav == {"enum": ["kitchen", "door"]}
    line = describe_tool(MOVE)
    assert "\n" not in line and json.loads(line) == {"type": "function", "function": move}


def test_catalogue_lists_every_tool_in_the_hermes_layout() -> None:
    text = describe_tools_compact([STOP, MOVE, NAV])
    lines = text.splitlines()
    inside = lines[lines.index("<tools>") + 1 : lines.index("</tools>")]
    assert [json.loads(x)["function"]["name"] for x in inside] == [
        "stop",
        "move_forward",
        "navigation",
    ]
    assert "<tool_call></tool_call>" in text and "centimetres: divide by 100" in text
    assert "turn around -> 180" in text and "calling a function first" in text
    # The provider's text-tool section is this compact form, without raw-schema noise.
    assert describe_tools_as_text((STOP, MOVE, NAV)) == text
    assert '"additionalProperties"' not in text


def test_grammar_rules_are_all_defined_and_reachable() -> None:
    g = tool_call_grammar([MOVE, NAV, STOP, COLOR])
    r = rules(g)
    assert r["root"] == "answer | call"
    referenced = set()
    for body in r.values():
        without_literals = re.sub(r'"(?:[^"\\]|\\.)*"', " ", body)
        without_classes = re.sub(r"\[(?:[^\]\\]|\\.)*\]", " ", without_literals)
        referenced |= set(re.findall(r"[a-z][a-z0-9-]*", without_classes))
    missing = referenced - set(r)
    assert not missing, f"undefined rules: {missing}"
    assert r["call"] == ("call-move-forward | call-navigation | call-stop | call-detect-objects")
    assert r["call-stop"].startswith('"{\\"name\\": \\"stop\\", \\"arguments\\": "')
    # Answer text cannot start like a call, a fence or a tag, and holds no braces.
    assert r["answer"] == "[^<{`# \\t\\n] [^<{`]*"
    assert rules(answer_only_grammar())["root"] == "answer"


def test_grammar_encodes_schema_constraints() -> None:
    r = rules(tool_call_grammar([MOVE, NAV, STOP, COLOR]))
    # Required key first, optional ones after it; numbers are JSON numbers.
    assert r["args-move-forward-obj"].startswith('"{" ws args-move-forward-distance-m-kv')
    assert r["args-move-forward-distance-m-kv"].endswith("number")
    # enum values are the only choices for the waypoint.
    assert r["args-navigation-waypoint-enum"] == '"\\"kitchen\\"" | "\\"door\\""'
    # A closed object without properties can only be {}.
    assert r["empty-object"] == '"{" ws "}"'
    # minimum >= 0 allows no minus sign; anyOf becomes alternatives.
    assert r["args-detect-objects-min-area-px-kv"].endswith("nonnegint")
    assert r["args-detect-objects-color-alt"] == "string | null"


def test_grammar_call_count_and_bad_input() -> None:
    assert (
        rules(tool_call_grammar([MOVE], max_calls=3))["root"] == 'answer | call ( "\\n" call ){0,2}'
    )
    with pytest.raises(ValueError, match="at least one tool"):
        tool_call_grammar([])
    with pytest.raises(ValueError, match="max_calls"):
        tool_call_grammar([MOVE], max_calls=0)


def _body(caps: Capabilities, tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
    model = small_model("m", base_url="http://127.0.0.1:9/v1", capabilities=caps)
    req = ModelRequest(messages=(Message.system("sys"), Message.user("go")), tools=tools)
    return model.build_body(req)


def test_provider_sends_grammar_only_for_constrained_text_calls() -> None:
    text_caps = Capabilities(
        native_tool_calls=False, constrained_decoding=True, parallel_tool_calls=False
    )
    body = _body(text_caps, (MOVE, STOP))
    # First round of a task: a call is required; the reply pseudo-tool keeps words possible.
    assert body["grammar"] == tool_call_grammar((MOVE, STOP, REPLY_TOOL), require_call=True)
    assert body["grammar"].startswith("root ::= call\n")
    assert "tools" not in body
    assert describe_tool(MOVE) in body["messages"][0]["content"]
    assert describe_tool(REPLY_TOOL) in body["messages"][0]["content"]
    assert "grammar" not in _body(text_caps, ())  # the final, tool-less round is free text
    assert "grammar" not in _body(Capabilities(native_tool_calls=False), (MOVE,))
    native = _body(Capabilities(constrained_decoding=True), (MOVE,))
    assert "grammar" not in native and native["tools"][0]["function"]["name"] == "move_forward"


def test_a_required_call_leaves_words_out_of_the_grammar_but_not_the_catalogue() -> None:
    """``tool_choice: "required"`` (a step of a split instruction, issue 13): the grammar
    allows only the offered tools, the catalogue (the cached prompt prefix) is unchanged;
    native tool-call endpoints get OpenAI's ``tool_choice``."""
    text_caps = Capabilities(
        native_tool_calls=False, constrained_decoding=True, parallel_tool_calls=False
    )
    model = small_model("m", base_url="http://127.0.0.1:9/v1", capabilities=text_caps)
    msgs = _after_call({"distance_m": 1})
    auto = model.build_body(ModelRequest(messages=msgs, tools=(MOVE, STOP)))
    req = ModelRequest(messages=msgs, tools=(MOVE, STOP), tool_choice="required")
    forced = model.build_body(req)
    assert forced["grammar"] == tool_call_grammar((MOVE, STOP), require_call=True)
    assert auto["grammar"] == tool_call_grammar((MOVE, STOP, REPLY_TOOL))
    assert forced["messages"] == auto["messages"]
    assert describe_tool(REPLY_TOOL) in forced["messages"][0]["content"]
    assert "tool_choice" not in forced and "tool_choice" not in auto
    native = small_model("m", base_url="http://127.0.0.1:9/v1")
    assert native.build_body(req)["tool_choice"] == "required"
    assert "tool_choice" not in native.build_body(ModelRequest(messages=msgs, tools=(MOVE,)))
    no_tools = ModelRequest(messages=msgs, tool_choice="required")
    assert "tool_choice" not in native.build_body(no_tools)


def _after_call(args: dict[str, Any], ok: bool = True) -> tuple[Message, ...]:
    call = ToolCall(id="call_1", name="move_forward", arguments=args)
    result = '{"ok": true, "data": {"x_m": 0.997}}' if ok else '{"ok": false, "error": "fence"}'
    return (
        Message.system("sys"),
        Message.user("move forward one meter"),
        Message.assistant("", tool_calls=[call]),
        Message.tool("call_1", "move_forward", result, outcome=ToolOutcome(ok)),
    )


TEXT_CAPS = Capabilities(
    native_tool_calls=False, constrained_decoding=True, parallel_tool_calls=False
)


async def _run(server: Any, messages: tuple[Message, ...]) -> ResponseDone:
    model = small_model("m", base_url=server.base_url, capabilities=TEXT_CAPS, request_timeout_s=10)
    events = [e async for e in model.stream(ModelRequest(messages=messages, tools=(MOVE, STOP)))]
    await model.aclose()
    assert sum(isinstance(e, ResponseDone) for e in events) == 1
    done = events[-1]
    assert isinstance(done, ResponseDone)
    return done


async def test_repeated_call_after_its_result_becomes_an_answer(scripted_server: Any) -> None:
    # Arguments copied from the result (0.997) still count as a repeat of the same tool.
    repeat = '{"name": "move_forward", "arguments": {"distance_m": 0.997}}'
    server = scripted_server([{"text": repeat}, {"text": "I moved forward one metre."}])
    done = await _run(server, _after_call({"distance_m": 1}))
    assert done.message.tool_calls == ()
    assert done.message.text == "I moved forward one metre."
    first, second = (r.json() for r in server.requests)
    assert first["grammar"] == tool_call_grammar((MOVE, STOP, REPLY_TOOL), max_calls=1)
    assert second["grammar"] == answer_only_grammar()
    assert second["messages"] == first["messages"]


async def test_a_new_call_after_a_result_goes_through(scripted_server: Any) -> None:
    server = scripted_server([{"text": '{"name": "stop", "arguments": {}}'}])
    done = await _run(server, _after_call({"distance_m": 1}))
    assert [(c.name, c.arguments) for c in done.message.tool_calls] == [("stop", {})]
    assert len(server.requests) == 1


async def test_the_exact_failed_call_again_becomes_an_answer(scripted_server: Any) -> None:
    same = '{"name": "move_forward", "arguments": {"distance_m": 50}}'
    server = scripted_server([{"text": same}, {"text": "That is outside the fence."}])
    done = await _run(server, _after_call({"distance_m": 50}, ok=False))
    assert done.message.tool_calls == () and done.message.text == "That is outside the fence."
    assert len(server.requests) == 2


def test_a_call_is_required_again_after_a_refusal_for_units() -> None:
    model = small_model("m", base_url="http://127.0.0.1:9/v1", capabilities=TEXT_CAPS)
    call = ToolCall(id="c1", name="move_forward", arguments={"distance_m": 2, "speed_mps": 10})
    units = json.dumps({"ok": False, "error": "Not run: ...", "metadata": {"error_kind": "units"}})
    refused = (
        Message.system("sys"),
        Message.user("go 2 meters in 10 seconds"),
        Message.assistant("", tool_calls=[call]),
        Message.tool("c1", "move_forward", units, outcome=ToolOutcome(False, "units")),
    )
    body = model.build_body(ModelRequest(messages=refused, tools=(MOVE, STOP)))
    assert body["grammar"].startswith("root ::= call\n")
    # the refusal goes back as the bare result block: it was not run, there is nothing to tell
    assert body["messages"][-1] == {
        "role": "user",
        "content": REFUSAL_AS_TEXT.format(text=units),
    }
    assert "Tell the user" not in body["messages"][-1]["content"]
    # after any other result (here a failure the tool itself reported) words are free again
    for messages in (_after_call({"distance_m": 1}), _after_call({"distance_m": 50}, ok=False)):
        body = model.build_body(ModelRequest(messages=messages, tools=(MOVE, STOP)))
        assert body["grammar"].startswith("root ::= answer | call\n")
        result = messages[-1].text
        assert body["messages"][-1]["content"] == TOOL_RESULT_AS_TEXT.format(text=result)


def _refused_for_units() -> tuple[Message, ...]:
    call = ToolCall(id="c1", name="move_forward", arguments={"distance_m": 50})
    units = json.dumps({"ok": False, "error": "Not run: ...", "metadata": {"error_kind": "units"}})
    return (
        Message.system("sys"),
        Message.user("drive at 50 m/s"),
        Message.assistant("", tool_calls=[call]),
        Message.tool("c1", "move_forward", units, outcome=ToolOutcome(False, "units")),
    )


async def test_an_answer_that_copies_the_prompts_instruction_is_asked_again(
    scripted_server: Any,
) -> None:
    """The 0.5B brain answered "drive at 50 m/s" with the refusal's instruction line
    (2026-12-02): that is not passed on; the answer-only re-ask shows the refusal as a
    result to tell the user about, and its answer is the response."""
    echo = json.dumps({"name": "reply", "arguments": {"text": REFUSAL_INSTRUCTION}})
    server = scripted_server([{"text": echo}, {"text": "I cannot go 50 m/s."}])
    done = await _run(server, _refused_for_units())
    assert done.message.tool_calls == () and done.message.text == "I cannot go 50 m/s."
    first, second = (r.json() for r in server.requests)
    assert first["grammar"].startswith("root ::= call\n")  # a call was required
    assert second["grammar"] == answer_only_grammar()
    assert first["messages"][-1]["content"].endswith(REFUSAL_INSTRUCTION)
    assert second["messages"][-1]["content"].endswith(RESULT_INSTRUCTION)
    assert second["messages"][:-1] == first["messages"][:-1]


async def test_an_answer_quoting_the_result_is_not_an_echo(scripted_server: Any) -> None:
    server = scripted_server([{"text": "Moved forward 1 m; tell the user it is done."}])
    done = await _run(server, _after_call({"distance_m": 1}))
    assert done.message.text == "Moved forward 1 m; tell the user it is done."
    assert len(server.requests) == 1


def test_echoes_instruction_ignores_case_and_punctuation_but_not_short_words() -> None:
    assert echoes_instruction("call one of those functions instead")
    assert echoes_instruction("  Call one of those functions!  ")
    assert echoes_instruction("<tool_response>x</tool_response> " + RESULT_INSTRUCTION)
    assert not echoes_instruction("one")  # too short to be a copy
    assert not echoes_instruction("The robot turned left 90 degrees.")
    assert not echoes_instruction("")


async def test_retrying_a_failed_call_goes_through(scripted_server: Any) -> None:
    retry = '{"name": "move_forward", "arguments": {"distance_m": 0.5}}'
    server = scripted_server([{"text": retry}])
    done = await _run(server, _after_call({"distance_m": 50}, ok=False))
    assert [(c.name, c.arguments) for c in done.message.tool_calls] == [
        ("move_forward", {"distance_m": 0.5})
    ]
    assert len(server.requests) == 1


def test_previous_calls_only_when_results_end_the_history() -> None:
    history = _after_call({"distance_m": 1})
    assert [(c.name, ok) for c, ok in previous_calls(history)] == [("move_forward", True)]
    assert previous_calls(history[:3]) == ()  # the call has no result yet
    assert previous_calls((*history, Message.user("and now?"))) == ()
    failed = previous_calls(_after_call({"distance_m": 50}, ok=False))
    assert [(c.name, ok) for c, ok in failed] == [("move_forward", False)]


def test_current_task_only_drops_earlier_tasks() -> None:
    first = _after_call({"distance_m": 1})
    history = (*first, Message.assistant("Moved 1 m."), Message.user("turn left 90 degrees"))
    model = small_model(
        "m", base_url="http://127.0.0.1:9/v1", capabilities=TEXT_CAPS, current_task_only=True
    )
    sent = model.build_body(ModelRequest(messages=history, tools=(MOVE,)))["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[1]["content"] == "turn left 90 degrees"
    # Within the current task, calls and their results are kept.
    within = (*history, Message.assistant("", tool_calls=[ToolCall(id="c2", name="stop")]))
    within = (*within, Message.tool("c2", "stop", '{"ok": true}', outcome=ToolOutcome(True)))
    sent = model.build_body(ModelRequest(messages=within, tools=(MOVE,)))["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    full = small_model("m", base_url="http://127.0.0.1:9/v1", capabilities=TEXT_CAPS)
    assert len(full.build_body(ModelRequest(messages=history, tools=(MOVE,)))["messages"]) == 6


def test_a_call_is_required_only_in_the_first_round_of_a_task() -> None:
    model = small_model("m", base_url="http://127.0.0.1:9/v1", capabilities=TEXT_CAPS)
    first = ModelRequest(messages=(Message.system("sys"), Message.user("go")), tools=(MOVE,))
    later = ModelRequest(messages=_after_call({"distance_m": 1}), tools=(MOVE,))
    assert model.requires_call(first) and not model.requires_call(later)
    # later rounds: text or a call, same catalogue (llama.cpp keeps its prompt cache)
    assert model.build_body(later)["grammar"] == tool_call_grammar((MOVE, REPLY_TOOL))
    assert (
        model.build_body(later)["messages"][0]["content"]
        == model.build_body(first)["messages"][0]["content"]
    )
    # a new instruction after a finished task starts a new first round
    again = ModelRequest(messages=(*later.messages, Message.user("stop")), tools=(MOVE,))
    assert model.requires_call(again)
    # a user tool named "reply" wins: no pseudo-tool, no required call
    own = ToolSpec("reply", "Send a reply to the operator.", {"type": "object"})
    assert not model.requires_call(ModelRequest(messages=first.messages, tools=(MOVE, own)))
    # native tool calls and unconstrained text calls are never forced
    for caps in (Capabilities(constrained_decoding=True), Capabilities(native_tool_calls=False)):
        plain = small_model("m", base_url="http://127.0.0.1:9/v1", capabilities=caps)
        assert not isinstance(plain, SmallModelPolicy)  # make_model wraps only constrained ones
        m = SmallModelPolicy(plain)
        assert not m.requires_call(first) and m.shape(first) is first


async def _first_round(server: Any) -> list[Any]:
    model = small_model("m", base_url=server.base_url, capabilities=TEXT_CAPS, request_timeout_s=10)
    req = ModelRequest(messages=(Message.system("s"), Message.user("hi")), tools=(MOVE, STOP))
    events = [e async for e in model.stream(req)]
    await model.aclose()
    return events


async def test_a_reply_call_comes_back_as_answer_text(scripted_server: Any) -> None:
    reply = '{"name": "reply", "arguments": {"text": "Hello! How can I help?"}}'
    server = scripted_server([{"text": reply}])
    events = await _first_round(server)
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message.tool_calls == () and done.message.text == "Hello! How can I help?"
    assert done.finish_reason == "stop"
    assert [e.text for e in events if e.kind == "text_delta"] == ["Hello! How can I help?"]
    assert not any(e.kind == "tool_call_ready" for e in events)
    assert server.requests[0].json()["grammar"].startswith("root ::= call")


async def test_a_robot_call_in_the_first_round_goes_through(scripted_server: Any) -> None:
    server = scripted_server([{"text": '{"name": "move_forward", "arguments": {"distance_m": 1}}'}])
    events = await _first_round(server)
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert [(c.name, c.arguments) for c in done.message.tool_calls] == [
        ("move_forward", {"distance_m": 1})
    ]
    ready = [e for e in events if e.kind == "tool_call_ready"]
    assert [e.call.name for e in ready] == ["move_forward"]


def test_tool_examples_are_listed_after_the_catalogue() -> None:
    look = ToolSpec(
        "seewhat",
        "Look through the camera.",
        {"type": "object", "properties": {}},
        examples=(("what is in front of you?", {}),),
    )
    text = describe_tools_compact((MOVE, look))
    tail = text.split("Examples:", 1)[1].strip().splitlines()
    assert tail == ["User: what is in front of you?", '{"name": "seewhat", "arguments": {}}']
    assert "Examples:" not in describe_tools_compact((MOVE,))
    many = ToolSpec("t", "T.", {}, examples=tuple((f"do {i}", {}) for i in range(30)))
    listed = describe_tools_compact((many,)).split("Examples:", 1)[1]
    assert listed.count("User: ") == MAX_EXAMPLES
    assert "examples" not in json.dumps(look.openai())  # not sent to native tool APIs


def test_every_tool_shows_its_first_example_before_any_tool_its_second() -> None:
    """A long catalogue: one example of each tool first, so the last tools are not cut."""
    tools = [
        ToolSpec(f"t{i}", "T.", {}, examples=tuple((f"{r}{i}", {}) for r in "abcd"))
        for i in range(7)
    ]
    listed = describe_tools_compact(tools).split("Examples:", 1)[1]
    users = [line[len("User: ") :] for line in listed.splitlines() if line.startswith("User: ")]
    assert MAX_EXAMPLES == 24
    assert users[:7] == [f"a{i}" for i in range(7)]
    assert users[7:14] == [f"b{i}" for i in range(7)]
    assert users[14:21] == [f"c{i}" for i in range(7)]
    assert users[21:] == ["d0", "d1", "d2"] and len(users) == MAX_EXAMPLES


def test_the_reply_example_is_never_cut() -> None:
    """More tools than example slots: the reply tool, last in the catalogue, keeps its one."""
    tools = [
        ToolSpec(f"t{i}", "T.", {}, examples=((f"a{i}", {}), (f"b{i}", {}))) for i in range(30)
    ]
    picked = pick_examples([*tools, REPLY_TOOL], limit=10)
    assert [text for text, _ in picked] == [*(f"a{i}" for i in range(9)), "hi there"]
    assert picked[-1][1]["name"] == "reply"
    few = pick_examples([tools[0], tools[1], REPLY_TOOL], limit=10)
    assert [text for text, _ in few] == ["a0", "a1", "hi there", "b0", "b1"]
    assert pick_examples([REPLY_TOOL], limit=1) == [
        ("hi there", {"name": "reply", "arguments": {"text": "Hello! How can I help?"}})
    ]
    assert pick_examples([*tools, REPLY_TOOL], limit=0) == []


def test_the_tool_decorator_carries_examples() -> None:
    from loopact.tools.base import tool

    @tool(examples=[("add two and three", {"a": 2, "b": 3})])
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add.spec().examples == (("add two and three", {"a": 2, "b": 3}),)


def test_tool_results_reach_text_call_models_as_tool_response_blocks() -> None:
    messages = _after_call({"distance_m": 1})
    model = small_model("m", base_url="http://127.0.0.1:9/v1", capabilities=TEXT_CAPS)
    sent = model.build_body(ModelRequest(messages=messages, tools=(MOVE,)))["messages"]
    assert sent[-1]["role"] == "user"
    assert sent[-1]["content"] == (
        '<tool_response>\n{"ok": true, "data": {"x_m": 0.997}}\n</tool_response>\n'
        "Tell the user in one short sentence what this result shows."
    )
    native = small_model("m", base_url="http://127.0.0.1:9/v1")
    sent = native.build_body(ModelRequest(messages=messages, tools=(MOVE,)))["messages"]
    assert sent[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"ok": true, "data": {"x_m": 0.997}}',
    }


def test_tool_choice_none_and_allowed_tools_on_every_wire() -> None:
    """The two request fields the small-model policy speaks through (issue 14): ``"none"``
    keeps the tools described but allows words only; ``allowed_tools`` narrows what may be
    called (a grammar on constrained endpoints, the offered list elsewhere)."""
    from loopact.llm.anthropic import AnthropicModel

    msgs = (Message.system("sys"), Message.user("go"))
    text = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", capabilities=TEXT_CAPS)
    words = ModelRequest(messages=msgs, tools=(MOVE, STOP), tool_choice="none")
    assert text.build_body(words)["grammar"] == answer_only_grammar()
    assert describe_tool(MOVE) in text.build_body(words)["messages"][0]["content"]
    only_stop = ModelRequest(
        messages=msgs, tools=(MOVE, STOP), tool_choice="required", allowed_tools=("stop",)
    )
    assert text.build_body(only_stop)["grammar"] == tool_call_grammar((STOP,), require_call=True)
    native = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1")
    assert native.build_body(words)["tool_choice"] == "none"
    assert [t["function"]["name"] for t in native.build_body(only_stop)["tools"]] == ["stop"]
    claude = AnthropicModel("claude", base_url="http://127.0.0.1:9", api_key="k")
    assert claude.request_params(words)["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in claude.request_params(only_stop)["tools"]] == ["stop"]

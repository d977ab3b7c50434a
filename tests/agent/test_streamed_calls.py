"""Tool calls the way real servers stream them, through the agent loop (issue 22, issue 21).

Interleaved parallel calls (issue 22 item 1), whitespace-only Anthropic text blocks (item 2),
oversized (issue 21 item 7) and deeply nested arguments (item 9), and a stream that sends only
arguments for longer than the idle timeout (item 8). The model is the scripted server over
real HTTP; the provider code is the real one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder, make_agent

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.arguments import MAX_ARGUMENT_CHARS
from loopact.llm.base import Capabilities, Model
from loopact.llm.dify import DifyModel
from loopact.testing import ScriptedModelServer
from loopact.tools.base import Tool, tool
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]
FAST = Bounds(backoff_base_s=0.01, backoff_max_s=0.05)


def motion_tools(log: list[tuple[str, dict[str, Any]]]) -> list[Tool]:
    @tool(safety="motion")
    async def move_forward(distance_m: float) -> str:
        """Drive straight ahead.

        Args:
            distance_m: How far, in metres.
        """
        log.append(("move_forward", {"distance_m": distance_m}))
        return f"moved {distance_m} m"

    @tool(safety="motion")
    async def turn(angle_deg: float) -> str:
        """Turn on the spot.

        Args:
            angle_deg: Angle in degrees, left positive.
        """
        log.append(("turn", {"angle_deg": angle_deg}))
        return f"turned {angle_deg} degrees"

    @tool
    async def note(text: str) -> str:
        """Keep a note.

        Args:
            text: The note.
        """
        log.append(("note", {"text": text[:20]}))
        return "noted"

    return [move_forward, turn, note]


CALLS = [
    {"id": "a", "name": "move_forward", "arguments": {"distance_m": 10.5}},
    {"id": "b", "name": "turn", "arguments": {"angle_deg": 90}},
]


# --- issue 22 item 1: parallel calls whose argument pieces interleave -------------------------


@pytest.mark.parametrize(
    "shape",
    [
        {"chunk_size": 16, "extras": {"openai": {"interleave_calls": True}}},
        {"chunk_size": 3, "extras": {"openai": {"interleave_calls": True}}},
        {"chunk_size": 16, "extras": {"openai": {"interleave_calls": True}}, "write_size": 7},
        {"chunk_size": 5, "extras": {"openai": {"reuse_index": True}}},
        {"chunk_size": 16, "extras": {"openai": {"interleave_calls": True, "omit_index": True}}},
    ],
    ids=[
        "prefix-that-repairs",
        "empty-when-next-declared",
        "tiny-writes",
        "reused-index",
        "by-id-without-index",
    ],
)
async def test_interleaved_parallel_calls_run_with_their_whole_arguments(
    scripted_server: Factory, tmp_path: Path, shape: dict[str, Any]
) -> None:
    """Call 0 is not complete because index 1 appeared: with 16-character pieces its text
    was ``{"distance_m": 1`` then (repaired into distance 1), with 3-character pieces ``{``."""
    log: list[tuple[str, dict[str, Any]]] = []
    server = scripted_server([{"tool_calls": CALLS, **shape}, {"text": "Moved and turned."}])
    agent, rec = make_agent(server, tmp_path, tools=motion_tools(log), bounds=FAST)
    outcome = await agent.run_task("drive 10.5 m, then turn left 90 degrees")
    await agent.close()
    assert log == [("move_forward", {"distance_m": 10.5}), ("turn", {"angle_deg": 90})]
    assert [e.data["arguments"] for e in rec.of("tool_call")] == [
        {"distance_m": 10.5},
        {"angle_deg": 90},
    ]
    assert all(e.data["ok"] for e in rec.of("tool_result"))
    assert outcome.status == "completed" and outcome.reply == "Moved and turned."


async def test_sequential_calls_still_start_before_the_stream_ends(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """X1 kept for the common case: call 0 runs while call 1 is still streaming."""
    log: list[tuple[str, dict[str, Any]]] = []
    calls = [CALLS[0], {"id": "n", "name": "note", "arguments": {"text": "x" * 400}}]
    server = scripted_server(
        [{"tool_calls": calls, "chunk_size": 4, "chunk_delay_s": 0.005}, {"text": "ok"}]
    )
    agent, rec = make_agent(server, tmp_path, tools=motion_tools(log), bounds=FAST)
    await agent.run_task("drive and note")
    await agent.close()
    types = rec.types()
    first_result = types.index("tool_result")
    assert types.index("model_response") > first_result  # call 0 finished mid-stream
    assert log[0] == ("move_forward", {"distance_m": 10.5})


# --- issue 22 item 2: whitespace-only Anthropic text blocks ------------------------------------


@pytest.mark.parametrize("text", ["\n\n", " ", "\t\n "])
async def test_whitespace_text_before_a_tool_use_is_not_sent_back(
    scripted_server: Factory, tmp_path: Path, text: str
) -> None:
    """The API refuses ``{"type": "text", "text": "\\n\\n"}`` in a request (HTTP 400)."""
    log: list[tuple[str, dict[str, Any]]] = []
    server = scripted_server([{"text": text, "tool_calls": [CALLS[1]]}, {"text": "Turned left."}])
    registry = ToolRegistry(motion_tools(log))
    model = AnthropicModel("scripted", server.root_url, api_key="sk-x", request_timeout_s=10)
    agent = Agent(model, registry, AgentOptions(bounds=FAST, workspace=tmp_path))
    outcome = await agent.run_task("turn left")
    await agent.close()
    assert outcome.status == "completed" and outcome.reply == "Turned left."
    second = server.requests[1].json()
    assistant = [m for m in second["messages"] if m["role"] == "assistant"][0]
    assert [b["type"] for b in assistant["content"]] == ["tool_use"]


# --- issue 21 item 7: arguments past the size limit --------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic", "text"])
async def test_oversized_arguments_are_one_failed_call(
    scripted_server: Factory, tmp_path: Path, provider: str
) -> None:
    """2 MB of arguments: not collected, not run; the error says why and the task goes on."""
    log: list[tuple[str, dict[str, Any]]] = []
    big = {"id": "n", "name": "note", "arguments": {"text": "y" * (2 * MAX_ARGUMENT_CHARS)}}
    if provider == "text":
        body = json.dumps({"name": "note", "arguments": big["arguments"]})
        first: dict[str, Any] = {"text": f"<tool_call>{body}</tool_call>", "chunk_size": 65536}
    else:
        first = {"tool_calls": [big], "chunk_size": 65536}
    # Not the output bounds (those stop reading far earlier): the argument cap is the test.
    first["usage"] = {"prompt_tokens": 100, "completion_tokens": 100}
    server = scripted_server([first, {"text": "The note was too long."}])
    bounds = Bounds(backoff_base_s=0.01, max_tokens_round=10**6, token_budget=10**7)
    agent, rec = _agent(server, tmp_path, provider, motion_tools(log), bounds=bounds)
    outcome = await agent.run_task("note this")
    await agent.close()
    assert log == []
    (result,) = rec.of("tool_result")
    assert result.data["ok"] is False
    assert "longer than the limit of 1,000,000 characters" in result.data["error"]
    assert outcome.status == "completed" and outcome.reply == "The note was too long."


async def test_an_action_line_past_its_limit_is_one_failed_call(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """Action text (Dify): a call line longer than 4,000 characters was taken for prose and
    became the task's reply; it is one failed call that says the limit."""
    log: list[tuple[str, dict[str, Any]]] = []
    first = {"text": 'Noting it.\nnote(text="' + "y" * 5000 + '")', "chunk_size": 1000}
    server = scripted_server([first, {"text": "The note was too long."}])
    agent, rec = _agent(server, tmp_path, "dify", motion_tools(log))
    outcome = await agent.run_task("note this")
    await agent.close()
    assert log == []
    (result,) = rec.of("tool_result")
    assert result.data["ok"] is False
    assert "longer than the limit of 4,000 characters" in result.data["error"]
    assert outcome.status == "completed" and outcome.reply == "The note was too long."


# --- issue 21 item 9: arguments nested too deeply ----------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic", "text", "dify"])
async def test_deeply_nested_arguments_are_one_failed_call(
    scripted_server: Factory, tmp_path: Path, provider: str
) -> None:
    """~1,000 levels ended the whole task with "internal error: RecursionError"."""
    log: list[tuple[str, dict[str, Any]]] = []
    deep = '{"text": ' + "[" * 1000 + "]" * 1000 + "}"
    if provider == "text":
        first: dict[str, Any] = {
            "text": '<tool_call>{"name": "note", "arguments": ' + deep + "}</tool_call>",
            "chunk_size": 500,
        }
    elif provider == "dify":  # an action line: Python's parser refuses 200 nested brackets
        first = {"text": "note(text=" + "[" * 1000 + "]" * 1000 + ")", "chunk_size": 500}
    else:
        first = {"tool_calls": [{"id": "d", "name": "note", "arguments": deep}], "chunk_size": 500}
    server = scripted_server([first, {"text": "Those arguments were too deep."}])
    agent, rec = _agent(server, tmp_path, provider, motion_tools(log))
    outcome = await agent.run_task("note this")
    await agent.close()
    assert log == []
    (result,) = rec.of("tool_result")
    assert result.data["ok"] is False and "arguments nested too deeply" in result.data["error"]
    assert outcome.status == "completed" and outcome.reply == "Those arguments were too deep."


DEEP = "[" * 1000 + "]" * 1000  # json.loads gives up at about 1,000 levels: RecursionError
_CHUNK = '{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": '
_CALL = '{"id": "d", "type": "function", "function": {"name": "note", "arguments": '
DECODED = {
    # Ollama sends arguments as an object, not as JSON text.
    "openai-object-arguments": [
        f'data: {_CHUNK}[{{"index": 0, "delta": {{"role": "assistant", "tool_calls": '
        f'[{{"index": 0, {_CALL[1:]}{{"text": {DEEP}}}}}}}]}}, "finish_reason": null}}]}}\n\n',
        f'data: {_CHUNK}[{{"index": 0, "delta": {{}}, "finish_reason": "tool_calls"}}]}}\n\n',
        "data: [DONE]\n\n",
    ],
    # A gateway answering the stream request with a whole chat.completion.
    "openai-json-body": [
        '{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": '
        '[{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": '
        f'[{_CALL}{{"text": {DEEP}}}}}}}]}}, "finish_reason": "tool_calls"}}]}}'
    ],
    # ... and an Anthropic message, whose tool_use input is always an object.
    "anthropic-json-body": [
        '{"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": '
        '[{"type": "tool_use", "id": "toolu_1", "name": "note", "input": '
        f'{{"text": {DEEP}}}}}], "stop_reason": "tool_use", "stop_sequence": null, '
        '"usage": {"input_tokens": 10, "output_tokens": 10}}'
    ],
}


@pytest.mark.parametrize("shape", sorted(DECODED))
async def test_deep_arguments_inside_a_json_document_are_one_failed_call(
    scripted_server: Factory, tmp_path: Path, shape: str
) -> None:
    """Arguments that arrive decoded, inside the chunk or body: the whole response was
    unreadable ("malformed chunk: maximum recursion depth exceeded"), retried, and lost."""
    log: list[tuple[str, dict[str, Any]]] = []
    assert DECODED[shape][0].count("[") >= 1000  # the shape really nests that deep
    server = scripted_server([{"wire": DECODED[shape]}, {"text": "Those arguments were too deep."}])
    provider = shape.split("-")[0]
    agent, rec = _agent(server, tmp_path, provider, motion_tools(log))
    outcome = await agent.run_task("note this")
    await agent.close()
    assert rec.of("model_retry") == []
    assert log == []
    (result,) = rec.of("tool_result")
    assert result.data["ok"] is False and "arguments nested too deeply" in result.data["error"]
    assert outcome.status == "completed" and outcome.reply == "Those arguments were too deep."


# --- issue 21 item 8: argument streaming is activity -------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic", "text"])
async def test_a_stream_of_only_arguments_is_not_silence(
    scripted_server: Factory, tmp_path: Path, provider: str
) -> None:
    """Argument pieces every 0.1 s for about 1.5 s, with a 1 s request timeout and a 0.6 s
    idle timeout: every piece is activity, so nothing times out."""
    log: list[tuple[str, dict[str, Any]]] = []
    args = {"text": "z" * 60}
    if provider == "text":
        body = json.dumps({"name": "note", "arguments": args})
        first: dict[str, Any] = {"text": f"<tool_call>{body}</tool_call>"}
    else:
        first = {"tool_calls": [{"id": "s", "name": "note", "arguments": args}]}
    first.update(chunk_size=5, chunk_delay_s=0.1)
    server = scripted_server([first, {"text": "Noted."}])
    bounds = Bounds(
        request_timeout_s=1.0, stream_idle_timeout_s=0.6, max_tries=1, backoff_base_s=0.01
    )
    agent, rec = _agent(server, tmp_path, provider, motion_tools(log), bounds=bounds)
    outcome = await agent.run_task("note this")
    await agent.close()
    assert rec.of("model_retry") == []
    assert log == [("note", {"text": "z" * 20})]
    assert outcome.status == "completed" and outcome.reply == "Noted."


SLOW = {"chunk_size": 5, "chunk_delay_s": 0.1}
SLOW_BOUNDS = Bounds(
    request_timeout_s=1.0, stream_idle_timeout_s=0.6, max_tries=1, backoff_base_s=0.01
)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "dify"])
async def test_slow_reasoning_and_text_are_not_silence(
    scripted_server: Factory, tmp_path: Path, provider: str
) -> None:
    """Reasoning then answer text, a piece every 0.1 s for about 1.4 s: activity too."""
    answer = "The answer is " + "5" * 16
    server = scripted_server([{"reasoning": "r" * 40, "text": answer, **SLOW}])
    agent, rec = _agent(server, tmp_path, provider, [], bounds=SLOW_BOUNDS)
    outcome = await agent.run_task("what is 2 + 3?")
    await agent.close()
    assert rec.of("model_retry") == []
    assert outcome.status == "completed" and outcome.reply == answer


@pytest.mark.parametrize("shape", ["collected", "dify-agent"])
async def test_fragments_a_provider_holds_back_are_not_silence(
    scripted_server: Factory, tmp_path: Path, shape: str
) -> None:
    """Fragments that arrive but are not passed on as deltas yet: a grammar-constrained
    endpoint's response, collected so that a reply pseudo-tool call becomes answer text,
    and a Dify agent app's steps (``agent_thought``) before its answer. Neither yielded
    anything before the response ended: "did not start answering within 1 s"."""
    log: list[tuple[str, dict[str, Any]]] = []
    if shape == "collected":
        call_text = json.dumps({"name": "note", "arguments": {"text": "z" * 60}})
        first: dict[str, Any] = {"text": f"<tool_call>{call_text}</tool_call>", **SLOW}
        caps = Capabilities(native_tool_calls=False, constrained_decoding=True)
        agent, rec = make_agent(
            scripted_server([first, {"text": "Noted."}]),
            tmp_path,
            tools=motion_tools(log),
            bounds=SLOW_BOUNDS,
            capabilities=caps,
            tool_calling="native",
        )
    else:
        thought = {"event": "agent_thought", "thought": "Looking it up.", "tool": "search"}
        first = {
            "text": 'note(text="' + "z" * 60 + '")',
            "chunk_delay_s": 0.1,
            "extras": {"dify": {"event": "agent_message", "events_before": [thought] * 14}},
        }
        server = scripted_server([first, {"text": "Noted."}])
        agent, rec = _agent(server, tmp_path, "dify", motion_tools(log), bounds=SLOW_BOUNDS)
    outcome = await agent.run_task("note this")
    await agent.close()
    assert rec.of("model_retry") == []
    assert log == [("note", {"text": "z" * 20})]
    assert outcome.status == "completed" and outcome.reply == "Noted."


def _agent(
    server: ScriptedModelServer,
    workspace: Path,
    provider: str,
    tools: list[Tool],
    bounds: Bounds = FAST,
) -> tuple[Agent, Recorder]:
    if provider in ("anthropic", "dify"):
        model: Model
        if provider == "anthropic":
            model = AnthropicModel(
                "scripted", server.root_url, api_key="sk-x", request_timeout_s=10
            )
        else:
            model = DifyModel(base_url=server.base_url, api_key="app-x", request_timeout_s=10)
        agent = Agent(model, ToolRegistry(tools), AgentOptions(bounds=bounds, workspace=workspace))
        rec = Recorder()
        agent.bus.subscribe(rec)
        return agent, rec
    # "text": an endpoint without native tool calls; calls come as <tool_call> blocks.
    caps = Capabilities(native_tool_calls=False) if provider == "text" else None
    agent, rec = make_agent(
        server, workspace, tools=[], bounds=bounds, capabilities=caps, tool_calling="native"
    )
    for name in list(agent.registry.names):
        agent.registry.remove(name)
    for t in tools:
        agent.registry.add(t)
    return agent, rec

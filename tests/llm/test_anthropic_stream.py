"""Anthropic Messages shapes real servers send, over real HTTP into the real provider and loop
(SPEC B2, B4, B5, B6; issue 22).

Each test replays a shape the happy-path tests do not cover: a streaming-classifier refusal
(``stop_reason: refusal`` with ``stop_details``), a paused turn (``pause_turn``), a surrogate
pair split across two deltas (a gateway that cuts strings by UTF-16 code unit), a thinking
budget above a small request's ``max_tokens``, tool-call ids from another provider that the
Messages API refuses, and an error body that is not Anthropic's error shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder, make_agent

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.errors import ContextOverflow, ModelFatalError
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.base import Model, ModelRequest, ResponseDone, ToolSpec
from loopact.llm.messages import Message
from loopact.testing import ScriptedModelServer
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]
WRITE = {"name": "file_write", "arguments": {"path": "a.txt", "content": "hi"}}
EXPLANATION = "This request was declined because it could enable cyber harm."


def model_for(server: ScriptedModelServer, **kw: Any) -> AnthropicModel:
    return AnthropicModel("claude-test", server.root_url, api_key="sk-x", **kw)


def agent_for(
    model: Model, workspace: Path, bounds: Bounds | None = None
) -> tuple[Agent, Recorder]:
    agent = Agent(
        model,
        ToolRegistry(make_builtin_tools(workspace)),
        AgentOptions(
            bounds=bounds or Bounds(backoff_base_s=0.01, backoff_max_s=0.05),
            workspace=workspace,
            auto_approve=True,
            system_prompt="You are a test robot.",
        ),
    )
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


# --- stop reasons ----------------------------------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True], ids=["stream", "json-body"])
async def test_a_refusal_is_a_clear_error_and_leaves_no_refused_answer(
    scripted_server: Factory, tmp_path: Path, as_json: bool
) -> None:
    """``stop_reason: refusal`` (a streaming classifier stopped the answer at "Hello..") was
    taken as the answer: the user got "Hello.." and it stayed in the history, where the API
    says it must not (continuing it is refused again). Now the task fails with the reason, and
    the refused instruction is dropped from the history (Anthropic asks that the turn that
    caused a refusal be removed), so the next instruction is not refused for it."""
    details = {"type": "refusal", "category": "cyber", "explanation": EXPLANATION}
    refused = {
        "text": "Hello..",
        "finish_reason": "refusal",
        "stream_as_json": as_json,
        "extras": {"anthropic": {"stop_details": details}},
    }
    server = scripted_server([refused, {"text": "Fine."}])
    agent, rec = agent_for(model_for(server), tmp_path)
    first = await agent.run_task("do something refused")
    second = await agent.run_task("say fine")
    await agent.close()
    assert first.status == "failed" and first.reply == ""
    assert "declined to answer (Anthropic stop_reason refusal, category cyber)" in first.error
    assert EXPLANATION in first.error
    assert second.status == "completed" and second.reply == "Fine."
    sent_next = server.requests[1].json()["messages"]
    assert "Hello.." not in json.dumps(sent_next)
    assert "do something refused" not in json.dumps(sent_next)
    assert [m["role"] for m in sent_next] == ["user"]  # the system prompt goes apart
    assert "instruction is dropped from the conversation" in first.error


async def test_a_refusal_without_details_still_says_why(scripted_server: Factory) -> None:
    server = scripted_server([{"text": "", "finish_reason": "refusal"}])
    model = model_for(server)
    with pytest.raises(ModelFatalError, match="declined to answer") as info:
        [e async for e in model.stream(ModelRequest(messages=(Message.user("x"),)))]
    await model.aclose()
    assert "I could not produce" not in str(info.value)


async def test_a_paused_turn_is_continued(scripted_server: Factory, tmp_path: Path) -> None:
    """``stop_reason: pause_turn``: the API paused a long turn and asks for the response back
    as it is, to go on. The paused start was the whole reply ("Let me look") and the rest
    was never asked for."""
    server = scripted_server(
        [
            {"text": "Let me look", "finish_reason": "pause_turn"},
            {"text": " first.", "tool_calls": [WRITE]},
            {"text": "Done."},
        ]
    )
    agent, rec = agent_for(model_for(server), tmp_path)
    outcome = await agent.run_task("write hi into a.txt")
    await agent.close()
    assert outcome.status == "completed" and outcome.reply == "Done."
    assert (tmp_path / "a.txt").read_text() == "hi"
    paused, continued, after = (r.json()["messages"] for r in server.requests)
    # The continuation sends the paused response back as the last (assistant) message.
    assert continued[:-1] == paused
    assert continued[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Let me look"}],
    }
    # The history holds one assistant message: the paused part and its continuation.
    assert after[-2]["role"] == "assistant"
    assert after[-2]["content"][0] == {"type": "text", "text": "Let me look first."}
    assert after[-2]["content"][1]["name"] == "file_write"
    streamed = "".join(e.data["text"] for e in rec.events if e.type == "text_delta")
    assert streamed == "Let me look first.Done."


async def test_pauses_are_bounded(scripted_server: Factory) -> None:
    """A server that pauses every time is not asked forever: after three continuations the
    response ends with what arrived."""
    pause = {"text": "more", "finish_reason": "pause_turn"}
    server = scripted_server([pause] * 4)
    model = model_for(server)
    events = [e async for e in model.stream(ModelRequest(messages=(Message.user("x"),)))]
    await model.aclose()
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message.text == "more" * 4 and done.finish_reason == ""
    assert len(server.requests) == 4


# --- surrogate pairs split across deltas ---------------------------------------------------------


def _raw(kind: str, **payload: Any) -> str:
    return json.dumps({"type": kind, **payload})


def _split_pair_turn(block: dict[str, Any], pieces: list[str], key: str, delta: str) -> list[str]:
    """The events of one block whose delta pieces are written as raw JSON text (so that a
    piece can end in a lone ``\\ud83d`` escape)."""
    start = {"id": "m", "type": "message", "role": "assistant", "model": "x", "content": []}
    start["usage"] = {"input_tokens": 3, "output_tokens": 1}
    chunks = [_raw("message_start", message=start)]
    chunks.append(_raw("content_block_start", index=0, content_block=block))
    for piece in pieces:
        head = '{"type": "content_block_delta", "index": 0, "delta": '
        chunks.append(head + f'{{"type": "{delta}", "{key}": "{piece}"}}}}')
    stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
    chunks.append(_raw("content_block_stop", index=0))
    chunks.append(_raw("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": 5}))
    chunks.append(_raw("message_stop"))
    return chunks


async def test_a_surrogate_pair_split_across_deltas_is_one_character(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """A gateway that cuts strings by UTF-16 code unit sends the two halves of 😀 in two
    deltas (``"ok \\ud83d"``, ``"\\ude00"``): each half became U+FFFD in the reply and in
    the tool's arguments, and the streamed text events carried lone surrogates, which no
    UTF-8 channel can print."""
    tool = _split_pair_turn(
        {"type": "tool_use", "id": "toolu_1", "name": "file_write", "input": {}},
        ['{\\"path\\": \\"a.txt\\", \\"content\\": \\"hi \\ud83d', '\\ude00\\"}'],
        "partial_json",
        "input_json_delta",
    )
    text = _split_pair_turn(
        {"type": "text", "text": ""},
        ["Wrote it \\ud83d", "\\ude00", " \\ud83d"],
        "text",
        "text_delta",
    )
    server = scripted_server([{"raw_chunks": tool}, {"raw_chunks": text}])
    agent, rec = agent_for(model_for(server), tmp_path)
    outcome = await agent.run_task("write hi into a.txt")
    await agent.close()
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "hi 😀"
    # A lone half at the end of the text stays one replacement character.
    assert outcome.reply == "Wrote it 😀 \ufffd"
    shown = [e.data["text"] for e in rec.events if e.type == "text_delta"]
    assert "".join(shown) == "Wrote it 😀 \ufffd"
    for piece in shown:
        piece.encode("utf-8")  # no lone surrogate reached a channel


# --- what the request may hold ---------------------------------------------------------------


async def test_a_thinking_budget_above_a_small_request_cap(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """With ``thinking_budget_tokens=2000`` the final answer after the round bound asks for
    1024 tokens: the API refuses ``max_tokens`` not above the budget with HTTP 400, so the
    task ended in an error instead of an answer. The budget now comes on top."""
    # with thinking enabled the API starts every answer with its thinking block, which must
    # come back in the next request (the scripted server refuses a history without it)
    first = {"reasoning": "Write the file.", "tool_calls": [WRITE]}
    server = scripted_server([first, {"text": "Wrote a.txt."}])
    model = model_for(server, thinking_budget_tokens=2000, max_tokens=4096)
    bounds = Bounds(max_rounds=1, backoff_base_s=0.01, backoff_max_s=0.05)
    agent, _ = agent_for(model, tmp_path, bounds)
    outcome = await agent.run_task("write hi into a.txt")
    await agent.close()
    assert outcome.status == "bounded" and outcome.reply.endswith("Wrote a.txt."), outcome
    final = server.requests[1].json()
    assert final["thinking"]["budget_tokens"] == 2000
    assert final["max_tokens"] == 2000 + 1024


async def test_history_from_another_provider_with_foreign_call_ids(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """Switched at run time from an OpenAI-compatible server whose call ids the Messages API
    refuses (Kimi's ``functions.file_write:0``; the API wants ``^[a-zA-Z0-9_-]+$``): every
    later request failed with HTTP 400 ("tool_use.id: String should match pattern"). The
    ids are rewritten the same way in ``tool_use`` and ``tool_result``."""
    write = {"id": "functions.file_write:0", **WRITE}
    listing = {"id": "functions.file_list:1", "name": "file_list", "arguments": {}}
    server = scripted_server(
        [{"tool_calls": [write, listing]}, {"text": "Wrote it."}, {"text": "It says hi."}]
    )
    agent, _ = make_agent(server, tmp_path, auto_approve=True)
    first = await agent.run_task("write hi into a.txt")
    assert first.reply == "Wrote it."
    assert agent.set_model(model_for(server)) is True  # the history is carried over
    second = await agent.run_task("what does a.txt say?")
    await agent.close()
    assert second.status == "completed" and second.reply == "It says hi.", second
    sent = server.requests[2].json()["messages"]
    uses = [b["id"] for m in sent for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in sent for b in m["content"] if b["type"] == "tool_result"]
    assert uses == results and len(set(uses)) == 2


async def test_an_error_body_in_another_shape_is_told_plainly(scripted_server: Factory) -> None:
    """A gateway's ``{"detail": "..."}`` error was shown as the SDK's Python repr
    (``Error code: 400 - {'detail': 'model not found'}``)."""
    server = scripted_server(
        [
            {
                "error": {
                    "status": 400,
                    "body": '{"detail": "model not found"}',
                    "content_type": "application/json",
                }
            },
            {
                "error": {
                    "status": 422,
                    "body": '{"errors": [1, 2]}',
                    "content_type": "application/json",
                }
            },
        ]
    )
    model = model_for(server)
    request = ModelRequest(messages=(Message.user("x"),), tools=(ToolSpec("t", "T.", {}),))
    with pytest.raises(ModelFatalError) as first:
        [e async for e in model.stream(request)]
    with pytest.raises(ModelFatalError) as second:
        [e async for e in model.stream(request)]
    await model.aclose()
    assert str(first.value) == "Anthropic endpoint answered HTTP 400: model not found"
    assert str(second.value) == 'Anthropic endpoint answered HTTP 422: {"errors": [1, 2]}'


def test_the_scripted_server_refuses_what_the_api_refuses() -> None:
    """The checks the tests above rely on: the scripted server answers 400 as the API does."""
    import httpx2

    body = {
        "model": "m",
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": "x"}],
    }
    bad_id = {
        "model": "m",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "a.b:0", "name": "t", "input": {}}],
            },
        ],
    }
    server = ScriptedModelServer([{"text": "unused"}, {"text": "unused"}]).start()
    try:
        answers = [
            httpx2.post(f"{server.base_url}/messages", json=b, timeout=10) for b in (body, bad_id)
        ]
    finally:
        server.stop()
    assert [a.status_code for a in answers] == [400, 400]
    assert "`max_tokens` must be greater than `thinking.budget_tokens`" in answers[0].text
    assert "tool_use.id: String should match pattern" in answers[1].text


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "content_block_delta", "index": 0, "delta": "x"},
        {"type": "message_start", "message": "x"},
        {"type": "content_block_start", "index": 1, "content_block": [1]},
    ],
    ids=["delta-string", "message-string", "block-list"],
)
async def test_an_event_of_the_wrong_shape_is_a_clear_error(
    scripted_server: Factory, tmp_path: Path, bad: dict[str, Any]
) -> None:
    """An event whose parts are not objects failed the task with "internal error:
    AttributeError: 'str' object has no attribute 'get'" (and a traceback in the log)."""
    chunks = [
        _raw("message_start", message={"usage": {"input_tokens": 1, "output_tokens": 1}}),
        _raw("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        json.dumps(bad),
        _raw("message_stop"),
    ]
    server = scripted_server([{"raw_chunks": chunks}])
    agent, _ = agent_for(model_for(server), tmp_path)
    outcome = await agent.run_task("hi")
    await agent.close()
    assert outcome.status == "failed"
    assert f"malformed Anthropic stream: a {bad['type']} event" in outcome.error
    assert "internal error" not in outcome.error


async def test_a_prompt_too_long_is_a_context_overflow_with_the_window(
    scripted_server: Factory,
) -> None:
    """Anthropic's HTTP 400 "prompt is too long: N tokens > M maximum" is the context
    overflow the agent compresses for (SPEC E1, B6), with the window M."""
    message = "prompt is too long: 208310 tokens > 200000 maximum"
    server = scripted_server([{"error": {"status": 400, "message": message}}])
    model = model_for(server)
    with pytest.raises(ContextOverflow) as info:
        [e async for e in model.stream(ModelRequest(messages=(Message.user("x"),)))]
    await model.aclose()
    assert info.value.context_tokens == 200_000 and info.value.status == 400
    assert message in str(info.value)

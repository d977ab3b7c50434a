"""Compression of one long task whose rounds are big (SPEC E1), through the real provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.agent.helpers import call, make_agent

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.agent.compress import is_summary, pairing_problems, summary_message
from loopact.agent.context import ContextManager
from loopact.llm.base import Capabilities
from loopact.llm.messages import NO_VISION_NOTE, Image
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.llm.small_model import SmallModelPolicy
from loopact.llm.tokens import estimate_message_tokens, estimate_tool_tokens
from loopact.tools.base import Tool, ToolResult, tool
from loopact.tools.registry import ToolRegistry


async def test_big_rounds_are_summarised_with_a_checkpoint_not_dropped(
    scripted_server: Any, tmp_path: Path
) -> None:
    (tmp_path / "big.txt").write_text("part one " + "y" * 30_000)
    (tmp_path / "big2.txt").write_text("part two " + "z" * 30_000)
    checkpoints: list[str] = []

    async def checkpoint(text: str) -> None:
        checkpoints.append(text)

    server = scripted_server(
        [
            {
                "tool_calls": [call("file_read", {"path": "big.txt"}, "r1")],
                "usage": {"prompt_tokens": 300, "completion_tokens": 10},
            },
            {
                "tool_calls": [call("file_read", {"path": "big2.txt"}, "r2")],
                "usage": {"prompt_tokens": 4400, "completion_tokens": 10},
            },
            {
                "text": "Goal: read both files. Progress: big.txt starts with 'part one'.",
                "expect": {"no_tools": True, "contains": "part one"},
            },
            {"text": "done", "expect": {"contains": "starts with 'part one'"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, context=ContextManager(6000, checkpoint=checkpoint))
    out = await agent.run_task("read big.txt, then big2.txt")
    await agent.close()
    assert out.reply == "done"
    [ev] = [e.data for e in rec.of("context_compressed")]
    assert ev["method"] == "summary" and ev["after_tokens"] < ev["before_tokens"]
    assert checkpoints and "goal: read big.txt, then big2.txt" in checkpoints[0]
    assert any(is_summary(m) for m in agent.history)
    assert pairing_problems(agent.history) == []
    last = server.requests[-1].body["messages"]
    assert any(m.get("tool_call_id") == "r2" for m in last)  # the latest round is kept whole


OVERFLOW = {
    "status": 400,
    "message": "This model's maximum context length is 8192 tokens. However, your messages "
    "resulted in 16000 tokens. Please reduce the length of the messages.",
    "type": "invalid_request_error",
    "code": "context_length_exceeded",
}


def two_big_reads(tmp_path: Path) -> list[dict[str, Any]]:
    (tmp_path / "big.txt").write_text("part one " + "y" * 30_000)
    (tmp_path / "big2.txt").write_text("part two " + "z" * 30_000)
    return [
        {"tool_calls": [call("file_read", {"path": "big.txt"}, "r1")]},
        {"tool_calls": [call("file_read", {"path": "big2.txt"}, "r2")]},
    ]


async def test_a_prompt_the_server_refuses_as_too_long_is_compressed_and_asked_again(
    scripted_server: Any, tmp_path: Path
) -> None:
    """An OpenAI-compatible endpoint does not say its context size; the assumed 128k was
    wrong, nothing was compressed and the server answered HTTP 400 context_length_exceeded:
    the task failed. Now the agent learns the window the error names, compresses, and asks
    once more."""
    server = scripted_server(
        [
            *two_big_reads(tmp_path),
            {"error": OVERFLOW},
            {"text": "Goal: read both files. Progress: both read.", "expect": {"no_tools": True}},
            {"text": "done", "expect": {"contains": "Progress: both read"}},
            {"text": "next", "expect": {"contains": "Progress: both read"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path)
    assumed = agent.context_manager()
    assert assumed is not None and assumed.context_tokens == 128_000  # Capabilities' default
    out = await agent.run_task("read big.txt, then big2.txt")
    assert (out.status, out.reply) == ("completed", "done")
    [ev] = [e.data for e in rec.of("context_compressed")]
    assert ev["reason"] == "overflow" and ev["method"] == "summary"
    assert ev["after_tokens"] < ev["limit"] < 8192
    assert pairing_problems(agent.history) == []
    ctx = agent.context_manager()
    assert ctx is not None and ctx.context_tokens == 8192  # learned for the next tasks too
    assert (await agent.run_task("and now?")).reply == "next"
    await agent.close()


async def test_a_prompt_refused_as_too_long_twice_fails_once_with_the_servers_words(
    scripted_server: Any, tmp_path: Path
) -> None:
    """One more try, not a loop: a server that refuses even the compressed prompt ends the
    task with its error."""
    server = scripted_server(
        [
            *two_big_reads(tmp_path),
            {"error": OVERFLOW},
            {"text": "Goal: read both files.", "expect": {"no_tools": True}},
            {"error": OVERFLOW},
        ]
    )
    agent, rec = make_agent(server, tmp_path)
    out = await agent.run_task("read big.txt, then big2.txt")
    await agent.close()
    assert out.status == "failed"
    assert "maximum context length is 8192 tokens" in (out.error or "")
    assert len(server.requests) == 5
    assert len(rec.of("context_compressed")) == 1


async def test_a_plain_trim_writes_the_checkpoint_first(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Nothing to summarise but an old summary (the rest is the task's one big round): the
    plain trim dropped that summary with no checkpoint in memory (SPEC E1: "nothing of the
    task is lost"). Now a checkpoint is written first."""
    (tmp_path / "big.txt").write_text("part one " + "y" * 30_000)
    checkpoints: list[str] = []

    async def checkpoint(text: str) -> None:
        checkpoints.append(text)

    server = scripted_server(
        [{"tool_calls": [call("file_read", {"path": "big.txt"}, "r1")]}, {"text": "done"}]
    )
    agent, rec = make_agent(server, tmp_path, context=ContextManager(3000, checkpoint=checkpoint))
    agent.conversation.append(summary_message("Earlier: the kitchen door is open. " * 40))
    out = await agent.run_task("read big.txt")
    await agent.close()
    assert out.reply == "done"
    [ev] = [e.data for e in rec.of("context_compressed")]
    assert ev["method"] == "trim" and ev["after_tokens"] < ev["before_tokens"]
    assert not any(is_summary(m) for m in agent.history)  # the trim dropped the summary...
    assert len(checkpoints) == 1 and "the kitchen door is open" in checkpoints[0]  # ...kept
    assert pairing_problems(agent.history) == []


async def test_an_instruction_longer_than_the_context_window_is_refused_without_a_request(
    scripted_server: Any, tmp_path: Path
) -> None:
    """A newcomer's audit: a 105 KB instruction to the local brain (8192 tokens) was sent,
    the server answered an empty body, and two retries followed. An instruction that cannot
    fit even compressed is not sent: the task fails once, naming both sizes (SPEC E1)."""
    server = scripted_server([{"text": "fine"}])
    agent, rec = make_agent(server, tmp_path, capabilities=Capabilities(context_tokens=4096))
    out = await agent.run_task("please read this: " + "lorem ipsum dolor " * 6000)
    assert out.status == "failed"
    assert out.error is not None and "context window of 4096 tokens" in out.error, out.error
    assert not server.requests and not rec.of("model_retry")
    [ev] = [e.data for e in rec.of("context_compressed")]
    assert ev["after_tokens"] > 4096
    # the next instruction that fits is answered as usual
    assert (await agent.run_task("hello")).reply == "fine"
    await agent.close()


def described_tools(n: int) -> list[Tool]:
    """``n`` tools whose descriptions are about 1,000 characters each (a big catalogue)."""

    def make(i: int) -> Tool:
        @tool(name=f"tool_{i}", description=f"Tool number {i}. " + "It does a thing. " * 60)
        def fn(value: float = 0) -> str:
            return "ok"

        return fn

    return [make(i) for i in range(n)]


LOCAL_LIKE = Capabilities(
    vision=False,
    native_tool_calls=False,
    parallel_tool_calls=False,
    constrained_decoding=True,
    context_tokens=8192,
    stream_usage=False,
)


async def test_the_tool_catalogue_counts_and_a_prompt_that_cannot_fit_is_not_sent(
    scripted_server: Any, tmp_path: Path
) -> None:
    """The newcomer's run: a 20 kB instruction to the local brain was estimated at 5,301
    tokens (the history alone), sent, and refused by the server at 9,251 (the tool catalogue
    in the system message is about 5,000 of its 8,192); the client saw three empty bodies.
    Now the estimate counts everything sent, and the request is refused before sending, with
    its size, the window and what to do."""
    tools = described_tools(18)
    assert 4000 < estimate_tool_tokens([t.spec() for t in tools]) < 6000
    server = scripted_server([{"text": "Turned.", "expect": {"last_user_contains": "10 deg"}}])
    agent, rec = make_agent(server, tmp_path, tools=tools, capabilities=LOCAL_LIKE)
    long = "please " + "blah " * 4000 + "turn left 10 degrees"
    out = await agent.run_task(long)
    assert out.status == "failed", out
    error = out.error or ""
    assert error.startswith("Not sent to the model: the request would be about "), error
    assert "more than the model's context window of 8192 tokens" in error
    assert "the system prompt and the tool descriptions about " in error
    assert "Shorten the instruction to at most about " in error
    assert "local.context_tokens" in error
    assert not server.requests and not rec.of("model_retry")
    # the same instruction, short, is sent with the same catalogue
    assert (await agent.run_task("turn left 10 degrees")).reply == "Turned."
    await agent.close()


async def test_earlier_tasks_a_model_does_not_send_do_not_count(
    scripted_server: Any, tmp_path: Path
) -> None:
    """With ``current_task_only`` (the local brain) the provider sends the system prompt and
    the latest task: earlier tasks in the history are not part of the request's size (the
    compression threshold is set above the history here, so that nothing is summarised)."""
    tools = described_tools(10)  # about 3,000 tokens
    first = "note this: " + "blah " * 3600  # about 4,500 tokens
    server = scripted_server(
        [{"text": "Noted."}, {"text": "Hi.", "expect": {"last_user_contains": "hello"}}]
    )
    model = OpenAIChatModel(
        "scripted", server.base_url, "k", capabilities=LOCAL_LIKE, current_task_only=True
    )
    agent = Agent(
        SmallModelPolicy(model),
        ToolRegistry(tools),
        AgentOptions(
            bounds=Bounds(backoff_base_s=0.01),
            workspace=tmp_path,
            context=ContextManager(limit_tokens=8000),
        ),
    )
    assert (await agent.run_task(first)).reply == "Noted."
    second = "hello " + "and more " * 600  # about 1,350 tokens
    out = await agent.run_task(second)
    await agent.close()
    assert (out.status, out.reply) == ("completed", "Hi."), out
    everything = estimate_message_tokens(agent.history) + estimate_tool_tokens(
        [t.spec() for t in tools]
    )
    assert everything > 8192  # the whole history would not fit; what is sent does
    assert len(server.requests) == 2  # and nothing was summarised
    assert first[:40] not in json.dumps(server.requests[1].body["messages"])


async def test_images_a_model_without_vision_is_not_sent_do_not_count(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Found by the local-brain benchmark (2026-12-05): after observe_surroundings (four
    images) "go to the kitchen, look around, then come back" was refused as "about 9,734
    tokens": each image counted 1,000 tokens, but a model without vision is sent a short
    note in place of each. The request now fits, and the note is what the model gets."""
    frame = Image(b"\xff\xd8fake-jpeg", width_px=320, height_px=240)

    @tool(name="look_around", description="Look all around (four views).")
    def look_around() -> ToolResult:
        return ToolResult.success("four views: nothing coloured", images=[frame] * 4)

    tools = [*described_tools(14), look_around]
    catalogue = estimate_tool_tokens([t.spec() for t in tools])
    assert catalogue + 4 * 1000 > 8192 > catalogue + 1000  # counted as images, it would not fit
    server = scripted_server(
        [
            {"text": '{"name": "look_around", "arguments": {}}'},
            {"text": "I looked around.", "expect": {"contains": NO_VISION_NOTE}},
        ]
    )
    agent, rec = make_agent(server, tmp_path, tools=tools, capabilities=LOCAL_LIKE)
    out = await agent.run_task("look around")
    await agent.close()
    assert (out.status, out.reply) == ("completed", "I looked around."), out
    sent = json.dumps(server.requests[1].body["messages"])
    assert sent.count(NO_VISION_NOTE) == 4 and "image_url" not in sent

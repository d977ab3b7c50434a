"""Compression of one long task whose rounds are big (SPEC E1), through the real provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.helpers import call, make_agent

from loopact.agent.compress import is_summary, pairing_problems, summary_message
from loopact.agent.context import ContextManager
from loopact.llm.base import Capabilities


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

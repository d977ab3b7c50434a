"""Compression of one long task whose rounds are big (SPEC E1), through the real provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.helpers import call, make_agent

from loopact.agent.compress import is_summary, pairing_problems
from loopact.agent.context import ContextManager


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

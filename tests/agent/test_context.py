"""When the history is compressed (SPEC E1): the default threshold is a safe fraction of the
model's context size, a configured limit applies as given, and neither passes the context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call, make_agent

from loopact.agent.compress import estimate_tokens
from loopact.agent.context import (
    DEFAULT_CONTEXT_FRACTION,
    HARD_LIMIT_FACTOR,
    MAX_PROMPT_FRACTION,
    ContextManager,
)
from loopact.llm.base import Capabilities
from loopact.llm.dify import DifyModel
from loopact.llm.messages import Message
from loopact.tools.base import tool


def test_default_threshold_is_a_fraction_of_the_context_size() -> None:
    ctx = ContextManager().for_model(10_000)
    assert ctx.threshold == int(DEFAULT_CONTEXT_FRACTION * 10_000) == 6000
    assert ctx.hard_limit == int(6000 * HARD_LIMIT_FACTOR) == 7500


def test_no_limit_and_no_context_size_means_never() -> None:
    ctx = ContextManager().for_model(None)
    assert ctx.threshold is None
    assert not ctx.over_limit([Message.user("x" * 100_000)])


def test_a_configured_limit_applies_but_never_past_the_context() -> None:
    assert ContextManager(1500).for_model(128_000).threshold == 1500
    assert ContextManager(1500).for_model(None).threshold == 1500
    big = ContextManager(200_000, 400_000).for_model(8192)
    assert big.threshold == big.hard_limit == int(MAX_PROMPT_FRACTION * 8192)


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValueError, match="limit_tokens must be > 0"):
        ContextManager(0)
    with pytest.raises(ValueError, match="fraction"):
        ContextManager(fraction=1.5)


def test_prompt_tokens_keep_the_reported_overhead() -> None:
    ctx = ContextManager().for_model(10_000)
    history = [Message.system("s"), Message.user("hello " * 100)]
    estimate = ctx.prompt_tokens(history)
    ctx.note_usage(history, estimate + 700)  # the tool catalogue and framing: 700 tokens
    assert ctx.prompt_tokens(history) == estimate + 700
    # a prompt that is not a continuation of the reported one (a trimmed history) still
    # counts the overhead
    assert ctx.prompt_tokens(history[1:]) == estimate_tokens(history[1:]) + 700


async def test_agent_binds_the_default_to_its_model(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([])
    agent, _ = make_agent(server, tmp_path, capabilities=Capabilities(context_tokens=20_000))
    ctx = agent.context_manager()
    assert ctx is not None and ctx.threshold == 12_000
    # a Dify app keeps the conversation itself: no context size, no compression
    agent.set_model(DifyModel(model="app", base_url=server.base_url, api_key="app-x"))
    assert agent.context_manager() is None
    await agent.close()
    server.assert_consumed()


def test_the_default_threshold_leaves_out_what_every_prompt_carries() -> None:
    """The fixed part (system prompt and tools) counts in full; 60 % applies to the rest."""
    ctx = ContextManager().for_model(8192)
    ctx.fixed_tokens = 3000
    assert ctx.threshold == int(3000 + DEFAULT_CONTEXT_FRACTION * (8192 - 3000)) == 6115
    # the local brain's catalogue with the simulated robot: never past 85 % of the window
    ctx.fixed_tokens = 5200
    assert ctx.threshold == int(MAX_PROMPT_FRACTION * 8192) == 6963


async def test_a_large_tool_catalogue_alone_does_not_compress_every_round(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 13 / SPEC E1: when the system prompt and the tools take more than 60 % of the
    context, a short task's rounds are not summarised (the local brain asked for a summary
    after every long tool result, evicting its cached prompt: 275 s for one instruction)."""
    context_tokens = 4000
    manual = "Reads one sensor of the robot. " + " ".join(
        f"note{i} about wiring" for i in range(440)
    )

    @tool(description=manual)
    async def read_sensor(n: int) -> str:
        """Read a sensor.

        Args:
            n: The sensor number.
        """
        return f"sensor {n}: " + "ok " * 100

    turns: list[dict[str, Any]] = [
        {"tool_calls": [call("read_sensor", {"n": n}, f"s{n}")]} for n in (1, 2, 3)
    ]
    turns.append({"text": "All three sensors are ok."})
    server = scripted_server(turns)
    agent, rec = make_agent(
        server, tmp_path, tools=[read_sensor], capabilities=Capabilities(context_tokens=4000)
    )
    outcome = await agent.run_task("read sensors 1 to 3")
    await agent.close()
    server.assert_consumed()
    sizes = [len(r.raw_body) // 4 for r in server.requests]
    # every request was past 60 % of the context (the old default threshold) ...
    assert min(sizes) > int(DEFAULT_CONTEXT_FRACTION * context_tokens), sizes
    assert max(sizes) < context_tokens, sizes
    # ... and none was a summary request, nor was anything compressed
    assert all(r.body.get("tools") for r in server.requests)
    assert [e.data for e in rec.of("context_compressed")] == []
    assert outcome.status == "completed", outcome
    assert outcome.reply == "All three sensors are ok."

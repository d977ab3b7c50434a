"""When the history is compressed (SPEC E1): the default threshold is a safe fraction of the
model's context size, a configured limit applies as given, and neither passes the context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import make_agent

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

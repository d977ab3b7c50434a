"""Bounded model output (issue 21 item 6, SPEC A2).

Every request carries its kind's ``max_tokens``; a server that ignores it (a 10 MB answer)
is not read on past the limit, and the task ends on a bound whose reply says so. Real HTTP
through the scripted server, real providers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.base import Model
from loopact.llm.dify import DifyModel
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]


def model_for(provider: str, server: ScriptedModelServer) -> Model:
    if provider == "anthropic":
        return AnthropicModel("scripted", server.root_url, api_key="sk-x", request_timeout_s=30)
    if provider == "dify":
        return DifyModel(base_url=server.base_url, api_key="app-x", request_timeout_s=30)
    return OpenAIChatModel("scripted", server.base_url, api_key="sk-x", request_timeout_s=30)


def agent_for(
    provider: str, server: ScriptedModelServer, workspace: Path, bounds: Bounds, **options: Any
) -> tuple[Agent, Recorder]:
    agent = Agent(
        model_for(provider, server),
        ToolRegistry(make_builtin_tools(workspace)),
        AgentOptions(bounds=bounds, workspace=workspace, **options),
    )
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_each_request_kind_sends_its_max_tokens(
    scripted_server: Factory, tmp_path: Path, provider: str
) -> None:
    server = scripted_server(
        [
            {"tool_calls": [{"id": "l1", "name": "file_list", "arguments": {}}]},
            {"text": "The workspace is empty."},
        ]
    )
    bounds = Bounds(max_rounds=1, max_tokens_round=300, max_tokens_final=120)
    agent, _ = agent_for(provider, server, tmp_path, bounds)
    outcome = await agent.run_task("list the workspace")
    await agent.close()
    assert outcome.status == "bounded"  # max_rounds=1: the second request is the final answer
    assert [r.json()["max_tokens"] for r in server.requests] == [300, 120]


async def test_plan_requests_send_the_plan_max_tokens(
    scripted_server: Factory, tmp_path: Path
) -> None:
    # An empty plan is rejected and asked for once more (PLAN_RETRIES): both are plan requests.
    server = scripted_server([{"text": '{"steps": []}'}, {"text": '{"steps": []}'}])
    agent, _ = agent_for("openai", server, tmp_path, Bounds(max_tokens_plan=777), mode="plan")
    outcome = await agent.run_task("do nothing")
    await agent.close()
    assert outcome.status == "failed"
    assert [r.json()["max_tokens"] for r in server.requests] == [777, 777]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "dify"])
async def test_a_server_that_ignores_max_tokens_is_not_read_on(
    scripted_server: Factory, tmp_path: Path, provider: str
) -> None:
    """10 MB of answer text against a limit of 1000 tokens: the stream is closed after
    about 8,000 characters and the task ends on the output_tokens bound (before: read to the
    end, memory growing with it, and "completed")."""
    text = "Here is a very long answer. " * 360_000  # about 10 MB
    server = scripted_server([{"text": text, "chunk_size": 4096, "usage_chunk": False}])
    bounds = Bounds(max_tokens_round=1000, token_budget=10**9)
    agent, rec = agent_for(provider, server, tmp_path, bounds)
    outcome = await agent.run_task("tell me everything")
    await agent.close()
    assert outcome.status == "bounded"
    assert outcome.reply.startswith(
        "I stopped reading the model's answer: it passed the limit of 1000 output tokens"
    )
    assert "Here is a very long answer." in outcome.reply and len(outcome.reply) < 3000
    (bound,) = rec.of("bound")
    assert bound.data == {"name": "output_tokens", "limit": 1000}
    streamed = "".join(e.data["text"] for e in rec.of("text_delta"))
    assert 8000 - 4096 < len(streamed) <= 8000  # the piece that passed it was not passed on


async def test_a_runaway_reasoning_stream_stops_at_the_token_budget(
    scripted_server: Factory, tmp_path: Path
) -> None:
    """Reasoning has no max_tokens of its own on every server; the task's token budget holds
    for it mid-stream (before: it applied only after the round, never to a final answer)."""
    server = scripted_server(
        [{"reasoning": "hmm " * 1_000_000, "text": "never", "chunk_size": 8192}]
    )
    bounds = Bounds(token_budget=50_000, max_tokens_round=100)
    agent, rec = agent_for("openai", server, tmp_path, bounds)
    outcome = await agent.run_task("think hard")
    await agent.close()
    assert outcome.status == "bounded"
    assert outcome.reply.startswith("I stopped: this task used")
    assert rec.of("bound")[0].data == {"name": "tokens", "limit": 50_000}
    reasoning = "".join(e.data["text"] for e in rec.of("reasoning_delta"))
    assert len(reasoning) <= 4 * 50_000 + 8192

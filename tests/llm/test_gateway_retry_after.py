"""Retry-After through gateways: LiteLLM's proxy passes the backend's Retry-After on as
``llm_provider-retry-after``; it and ``retry-after-ms`` are honoured as ``Retry-After`` is,
by every provider, through the scripted model server (issue 39 item 9; SPEC B6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import make_agent

from loopact.agent import Bounds
from loopact.errors import ModelRetryableError
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.base import Model, ModelRequest
from loopact.llm.dify import DifyModel
from loopact.llm.messages import Message
from loopact.llm.openai_chat import OpenAIChatModel

HEADERS = [
    ({"llm_provider-retry-after": "7"}, 7.0),
    ({"retry-after-ms": "1500"}, 1.5),
    ({"llm_provider-retry-after-ms": "2500"}, 2.5),
    ({"llm_provider-retry-after": "Fri, 01 Jan 2100 00:00:00 GMT"}, "future"),
    ({"retry-after": "1", "llm_provider-retry-after": "9"}, 9.0),  # the longer of the two
    ({"retry-after": "2", "retry-after-ms": "1500"}, 1.5),  # of one source, the precise one
]


def model_for(provider: str, server: Any) -> Model:
    if provider == "anthropic":
        return AnthropicModel("scripted", server.root_url, api_key="sk-x", request_timeout_s=10)
    if provider == "dify":
        return DifyModel(base_url=server.base_url, api_key="app-x", request_timeout_s=10)
    return OpenAIChatModel("scripted", server.base_url, "sk-x")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "dify"])
@pytest.mark.parametrize(("headers", "expected"), HEADERS)
async def test_a_gateways_retry_after_headers_are_honoured(
    scripted_server: Any, provider: str, headers: dict[str, str], expected: Any
) -> None:
    server = scripted_server([{"error": {"status": 429, "message": "slow", "headers": headers}}])
    model = model_for(provider, server)
    request = ModelRequest(messages=(Message.user("hello"),))
    with pytest.raises(ModelRetryableError) as info:
        [event async for event in model.stream(request)]
    await model.aclose()
    assert info.value.status == 429
    if expected == "future":
        assert (info.value.retry_after_s or 0) > 365 * 86400
    else:
        assert info.value.retry_after_s == expected


async def test_the_agent_waits_as_long_as_the_backend_behind_the_gateway_asks(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Before: a 429 from LiteLLM carrying only llm_provider-retry-after was retried after the
    agent's own backoff (here at most 0.05 s), sooner than the backend allowed."""
    server = scripted_server(
        [
            {
                "error": {
                    "status": 429,
                    "message": "slow",
                    "headers": {"llm_provider-retry-after": "0.3"},
                }
            },
            {"text": "ok"},
        ]
    )
    bounds = Bounds(backoff_base_s=0.01, backoff_max_s=0.05, retry_after_max_s=5)
    agent, rec = make_agent(server, tmp_path, bounds=bounds)
    outcome = await agent.run_task("hi")
    await agent.close()
    assert outcome.reply == "ok"
    assert [r.data["delay_s"] for r in rec.of("model_retry")] == [0.3]

"""``parallel_tool_calls`` on the wire (issue 46 item 6, SPEC B4): the capability descriptor's
``parallel_tool_calls`` reaches OpenAI-compatible endpoints that accept the parameter, and is
left out for those that refuse it (configured, or learnt from the endpoint's HTTP 400)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.helpers import call, make_agent
from tests.llm.test_openai_chat import HELLO, WAIT, WITH_TOOLS, collect, make_model

from loopact.app.model import make_model as make_configured_model
from loopact.config import load_config
from loopact.llm.base import Capabilities, ResponseDone, ToolCallReady
from loopact.llm.openai_chat import OpenAIChatModel

TWO_CALLS = {
    "tool_calls": [
        {"id": "c1", "name": "wait", "arguments": {"s": 1}},
        {"id": "c2", "name": "look", "arguments": {}},
    ]
}


async def test_the_descriptor_is_sent_with_tools(scripted_server: Any) -> None:
    server = scripted_server([TWO_CALLS, {"text": "hi"}])
    events = await collect(make_model(server), WITH_TOOLS)
    assert len([e for e in events if isinstance(e, ToolCallReady)]) == 2
    assert server.requests[0].json()["parallel_tool_calls"] is True
    await collect(make_model(server), HELLO)  # no tools: OpenAI refuses the parameter alone
    assert "parallel_tool_calls" not in server.requests[1].json()


async def test_one_call_at_a_time_is_asked_for_and_honoured(scripted_server: Any) -> None:
    server = scripted_server([TWO_CALLS])
    caps = Capabilities(parallel_tool_calls=False)
    events = await collect(make_model(server, capabilities=caps), WITH_TOOLS)
    assert server.requests[0].json()["parallel_tool_calls"] is False
    done = events[-1]
    assert isinstance(done, ResponseDone) and [c.id for c in done.message.tool_calls] == ["c1"]


async def test_an_endpoint_configured_not_to_get_it(scripted_server: Any, tmp_path: Path) -> None:
    server = scripted_server([{"text": "hi"}])
    config = tmp_path / "c.yaml"
    config.write_text("model:\n  capabilities:\n    parallel_tool_calls_param: false\n")
    cfg, _ = load_config(config, overrides={"model": {"base_url": server.base_url}}, env={})
    model = make_configured_model(cfg)
    assert isinstance(model, OpenAIChatModel)
    await collect(model, WITH_TOOLS)
    assert "parallel_tool_calls" not in server.requests[0].json()
    assert "tools" in server.requests[0].json()


async def test_an_endpoint_that_refuses_it_is_retried_without_it_and_remembered(
    scripted_server: Any, tmp_path: Path
) -> None:
    """An endpoint that refuses parameters it does not know (HTTP 400 naming it) failed every
    request with tools; now the task goes on and later requests leave it out."""
    refuse = {"extras": {"openai": {"reject_parallel_tool_calls": True}}}
    server = scripted_server(
        [refuse, {"tool_calls": [call("wait", {"seconds": 0.01}, "w")]}, {"text": "Done."}]
    )
    agent, rec = make_agent(server, tmp_path)
    outcome = await agent.run_task("wait a moment")
    await agent.close()
    assert outcome.status == "completed" and outcome.reply == "Done.", outcome
    sent = [r.json() for r in server.requests]
    assert "parallel_tool_calls" in sent[0]
    assert all("parallel_tool_calls" not in body for body in sent[1:])
    retries = rec.of("model_retry")
    assert len(retries) == 1 and "parallel_tool_calls" in str(retries[0].data)
    assert WAIT.name in [t["function"]["name"] for t in sent[1]["tools"]]

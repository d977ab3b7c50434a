"""No API key in any provider error or any event (issue 21 item 5, SPEC A8, B6).

An Anthropic or Dify endpoint answering 401 quotes the key it refused; before, that key went
in clear into the trace, stderr, the console WebSocket and the ROS 2 text channel (all fed by
the event bus). Real HTTP (scripted server), real providers, the real CLI in a process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder
from tests.test_cli import run_cli

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.errors import ModelFatalError, ModelRetryableError
from loopact.events import EventBus
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.base import Model, ModelRequest
from loopact.llm.dify import DifyModel
from loopact.llm.messages import Message
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.redact import Redactor
from loopact.testing import ScriptedModelServer
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]
KEY = "sk-live-Zq8Wm3Kx9Pa2Vb7Nc4"
REQUEST = ModelRequest(messages=(Message.user("hello"),))


def model_for(provider: str, server: ScriptedModelServer) -> Model:
    if provider == "anthropic":
        return AnthropicModel("m", server.root_url, api_key=KEY, request_timeout_s=10)
    if provider == "dify":
        return DifyModel(base_url=server.base_url, api_key=KEY, request_timeout_s=10)
    return OpenAIChatModel("m", server.base_url, api_key=KEY, request_timeout_s=10)


def refusal(status: int = 401) -> dict[str, Any]:
    return {"error": {"status": status, "message": f"Invalid API key: {KEY}"}}


@pytest.mark.parametrize("provider", ["openai", "anthropic", "dify"])
@pytest.mark.parametrize("status", [401, 503])
async def test_a_quoted_key_never_leaves_the_provider(
    scripted_server: Factory, provider: str, status: int
) -> None:
    server = scripted_server([refusal(status)])
    model = model_for(provider, server)
    try:
        with pytest.raises((ModelFatalError, ModelRetryableError)) as info:
            [e async for e in model.stream(REQUEST)]
    finally:
        await model.aclose()
    assert KEY not in str(info.value) and "Invalid API key: ***" in str(info.value)
    assert info.value.status == status


@pytest.mark.parametrize("provider", ["anthropic", "dify"])
def test_cli_stderr_and_trace_never_show_the_key(
    scripted_server: Factory, tmp_path: Path, provider: str
) -> None:
    server = scripted_server([refusal()])
    base = server.root_url if provider == "anthropic" else server.base_url
    trace = tmp_path / "t.jsonl"
    proc = run_cli(
        [
            "run",
            "--once",
            "hello",
            "--provider",
            provider,
            "--base-url",
            base,
            "--api-key",
            KEY,
            "--model",
            "m",
            "--robot",
            "none",
            "--no-memory",
            "--no-web",
            "--workspace",
            str(tmp_path / "ws"),
            "--trace",
            str(trace),
        ],
        tmp_path,
    )
    assert proc.returncode == 1
    assert "Invalid API key: ***" in proc.stderr
    assert KEY not in proc.stderr and KEY not in proc.stdout
    text = trace.read_text()
    assert KEY not in text and "Invalid API key: ***" in text


async def test_every_event_is_masked(scripted_server: Factory, tmp_path: Path) -> None:
    """A key a tool reads (a config file in the workspace) is masked in the events, in
    whatever field, while the model itself still gets the tool's result."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "robot.env").write_text(f"API_KEY={KEY}\n")
    server = scripted_server(
        [
            {"tool_calls": [{"id": "r", "name": "file_read", "arguments": {"path": "robot.env"}}]},
            {"text": f"The file holds the key {KEY}."},
        ]
    )
    model = OpenAIChatModel("m", server.base_url, api_key=KEY, request_timeout_s=10)
    agent = Agent(
        model,
        ToolRegistry(make_builtin_tools(workspace)),
        AgentOptions(bounds=Bounds(), workspace=workspace),
    )
    rec = Recorder()
    agent.bus.subscribe(rec)
    outcome = await agent.run_task("what is in robot.env?")
    await agent.close()
    assert outcome.status == "completed"
    dumped = json.dumps([e.to_json() for e in rec.events])
    assert KEY not in dumped
    (result,) = rec.of("tool_result")
    assert "API_KEY=***" in json.dumps(result.data["data"])
    assert rec.of("reply")[0].data["text"] == "The file holds the key ***."
    assert KEY in server.requests[1].raw_body.decode()  # the model's own view is unchanged


def test_redactor_rules() -> None:
    r = Redactor([KEY, None, "", "none"])  # short values are placeholders, not secrets
    assert r.text(f"Bearer {KEY}") == "Bearer ***"
    assert r.text("key=sk-live-Zq8Wm3Kx9Pa2Vb7Nc4&x=1") == "key=***&x=1"
    assert r.text("none of this") == "none of this"
    value = {"a": [KEY, ("x", KEY)], "b": 3}
    masked = r.value(value)
    assert masked == {"a": ["***", ("x", "***")], "b": 3} and value["a"][0] == KEY
    clean = {"a": ["x"]}
    assert r.value(clean) is clean
    exc = ModelRetryableError(f"HTTP 503: {KEY}", status=503, retry_after_s=2.0)
    copy = r.error(exc)
    assert isinstance(copy, ModelRetryableError) and str(copy) == "HTTP 503: ***"
    assert (copy.status, copy.retry_after_s) == (503, 2.0)
    bus = EventBus(Redactor([KEY]))
    seen: list[Any] = []
    bus.subscribe(seen.append)
    bus.emit("error", None, message=f"oops {KEY}")
    assert seen[0].data == {"message": "oops ***"}

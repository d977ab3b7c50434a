"""A key quoted by a provider never reaches the web console's WebSocket (issue 21 item 5, SPEC B6).

An Anthropic or Dify endpoint that refuses a key with 401 quotes it in the error body; before
the fix that text went in clear to every subscriber of the event bus, the console's WebSocket
among them. Here the real agent, the real provider over HTTP (scripted model server) and the
real console (uvicorn on a free port) run together; a WebSocket client sends the instruction
the way the page does and reads every frame until the task has ended.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from websockets.asyncio.client import connect as ws_connect

from loopact._compat import timeout_after
from loopact.agent import Agent, AgentOptions, Bounds
from loopact.channels.web import serve_console
from loopact.llm.anthropic import AnthropicModel
from loopact.llm.base import Model
from loopact.llm.dify import DifyModel
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer
from loopact.tools.registry import ToolRegistry

Factory = Callable[[Any], ScriptedModelServer]
KEY = "sk-live-Zq8Wm3Kx9Pa2Vb7Nc4-console"
WAIT_S = 20.0
"""Bound on each wait for an observable event (a client counted, a frame), seconds."""


def model_for(provider: str, server: ScriptedModelServer) -> Model:
    if provider == "anthropic":
        return AnthropicModel("m", server.root_url, api_key=KEY, request_timeout_s=10)
    if provider == "dify":
        return DifyModel(base_url=server.base_url, api_key=KEY, request_timeout_s=10)
    return OpenAIChatModel("m", server.base_url, api_key=KEY, request_timeout_s=10)


async def frames_until_task_end(ws: Any) -> list[str]:
    """Every WebSocket frame (raw text) up to and including the task's ``task_end``."""
    frames: list[str] = []
    while True:
        raw = await asyncio.wait_for(ws.recv(), WAIT_S)
        frames.append(raw)
        if json.loads(raw).get("type") == "task_end":
            return frames


@pytest.mark.parametrize("provider", ["anthropic", "dify", "openai"])
async def test_a_key_quoted_in_a_provider_error_is_masked_on_the_websocket(
    scripted_server: Factory, provider: str
) -> None:
    server = scripted_server([{"error": {"status": 401, "message": f"Invalid API key: {KEY}"}}])
    agent = Agent(
        model_for(provider, server),
        ToolRegistry([]),
        AgentOptions(bounds=Bounds(backoff_base_s=0.01, backoff_max_s=0.05)),
    )
    runner = asyncio.ensure_future(agent.run())  # serves submitted instructions
    web = await serve_console(agent, port=0)
    base = f"127.0.0.1:{web.port}"
    try:
        async with ws_connect(f"ws://{base}/ws") as ws, httpx2.AsyncClient() as client:
            async with timeout_after(WAIT_S):
                while web.state.hub.n_clients < 1:  # the page is subscribed
                    await asyncio.sleep(0.01)
            sent = await client.post(f"http://{base}/api/message", json={"text": "hello"})
            assert sent.status_code == 200, sent.text
            frames = await frames_until_task_end(ws)
    finally:
        await web.stop()
        await agent.close()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    events = [json.loads(f) for f in frames]
    assert events[-1]["status"] == "failed", events
    errors = [e for e in events if e["type"] == "error"]
    assert errors and "Invalid API key: ***" in errors[0]["message"], errors
    assert not [f for f in frames if KEY in f]  # not in any frame, in any field
    assert not [f for f in frames if KEY[:20] in f]  # nor a recognisable part of it

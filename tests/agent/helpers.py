"""Shared helpers for agent tests: a real Agent on the real OpenAI provider over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.events import Event
from loopact.llm.base import Capabilities, Model
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.llm.small_model import SmallModelPolicy, needs_small_model_policy
from loopact.testing import ScriptedModelServer
from loopact.tools.base import Tool
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry


class Recorder:
    """Collects events and lets a test wait for one (with a timeout, never for time)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._waiters: list[tuple[Callable[[Event], bool], asyncio.Future[Event]]] = []

    def __call__(self, ev: Event) -> None:
        self.events.append(ev)
        for pred, fut in list(self._waiters):
            if not fut.done() and pred(ev):
                fut.set_result(ev)

    def types(self, task_id: str | None = None) -> list[str]:
        return [
            e.type
            for e in self.events
            if e.type not in ("text_delta", "reasoning_delta")
            and (task_id is None or e.task_id == task_id)
        ]

    def of(self, typ: str) -> list[Event]:
        return [e for e in self.events if e.type == typ]

    async def wait_for(self, pred: Callable[[Event], bool], timeout: float = 20.0) -> Event:
        for e in self.events:
            if pred(e):
                return e
        fut: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._waiters.append((pred, fut))
        return await asyncio.wait_for(fut, timeout)


def make_agent(
    server: ScriptedModelServer,
    workspace: Path,
    *,
    tools: list[Tool] | None = None,
    bounds: Bounds | None = None,
    capabilities: Capabilities | None = None,
    **options: Any,
) -> tuple[Agent, Recorder]:
    """An Agent talking to ``server`` through the real OpenAI provider, with built-in tools."""
    registry = ToolRegistry(make_builtin_tools(workspace))
    for tool in tools or []:
        registry.add(tool)
    model: Model = OpenAIChatModel(
        model="scripted",
        base_url=server.base_url,
        api_key="sk-test-secret",
        capabilities=capabilities or Capabilities(),
    )
    if needs_small_model_policy(model.capabilities):  # as app.model.make_model builds it
        model = SmallModelPolicy(model)
    opts = AgentOptions(
        bounds=bounds or Bounds(backoff_base_s=0.01, backoff_max_s=0.05),
        system_prompt="You are a test robot.",
        workspace=workspace,
        **options,
    )
    agent = Agent(model, registry, opts)
    rec = Recorder()
    agent.bus.subscribe(rec)
    return agent, rec


def call(name: str, args: dict[str, Any] | str, id: str | None = None) -> dict[str, Any]:
    """A scripted tool call."""
    return {"id": id or f"call_{name}", "name": name, "arguments": args}

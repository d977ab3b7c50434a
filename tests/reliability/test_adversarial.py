"""Scripted adversarial models: every run ends within its bounds (issue 20; SPEC A2, A3).

Each run is a real agent on the real provider (OpenAI or Anthropic protocol) against its own
scripted model server, whose script plays one bad model: one that repeats a call, alternates
two calls, varies its arguments a little, never answers in text (it calls tools even when none
are offered), answers with empty content, or calls tools that do not exist; with random
bounds, some answers sent as one JSON body instead of a stream. A run "dead-loops" if it does
not end, ends on no bound, makes more model requests than its bounds allow, or leaves a call
without a result. ``make test`` runs 1,000 runs (``LOOPACT_ADVERSARIAL_RUNS`` changes the
count); the dead-loop rate must be 0.
"""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import Recorder

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.base import Model
from loopact.testing import ScriptedModelServer
from loopact.tools.base import tool
from loopact.tools.builtin import make_builtin_tools
from loopact.tools.registry import ToolRegistry

RUNS = int(os.environ.get("LOOPACT_ADVERSARIAL_RUNS", "1000"))
SEED = 2020
TURNS = 40  # more turns than any bound lets a run use: an exhausted script is a dead loop
LANES = 2  # runs in flight at once, each on its own server
KINDS = ("repeat", "alternate", "vary", "never_text", "empty", "unknown_tools", "mixed")


@tool(safety="motion")
async def step(distance_m: float) -> str:
    """Take one step forward (a motion: never de-duplicated).

    Args:
        distance_m: How far, in metres.
    """
    return f"stepped {distance_m} m"


@tool(safety="read_only")
async def look() -> str:
    """Look around."""
    return "a red box"


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": args}


def adversary(kind: str, rng: random.Random) -> list[dict[str, Any]]:
    """The turns of one bad model."""
    a = rng.choice([_call("look", {}), _call("step", {"distance_m": 0.5}), _call("file_list", {})])
    b = rng.choice([_call("system_status", {}), _call("wait", {"seconds": 0.001})])
    turns: list[dict[str, Any]] = []
    for i in range(TURNS):
        if kind == "repeat":
            turns.append({"tool_calls": [a]})
        elif kind == "alternate":
            turns.append({"tool_calls": [a if i % 2 == 0 else b]})
        elif kind == "vary":
            turns.append({"tool_calls": [_call("step", {"distance_m": round(0.5 + 0.01 * i, 2)})]})
        elif kind == "never_text":
            turns.append({"tool_calls": [a, b][: rng.randint(1, 2)], "text": ""})
        elif kind == "empty":
            turns.append(rng.choice([{}, {"text": ""}, {"text": " "}, {"finish_reason": None}]))
        elif kind == "unknown_tools":
            name = rng.choice(["teleport", "fly", "self_destruct", "look_", "STEP"])
            turns.append({"tool_calls": [_call(name, {"x": i})]})
        else:
            turns.append(adversary(rng.choice(KINDS[:-1]), rng)[0])
    return turns


class Lane:
    """One scripted server and one model per protocol, reused run after run (a run loads its
    script into the running server and gets a fresh agent: history, bounds and counts of its
    own), so a thousand runs cost requests, not ports, threads and TLS contexts."""

    def __init__(self, workspace: Path) -> None:
        from loopact.llm.anthropic import AnthropicModel
        from loopact.llm.openai_chat import OpenAIChatModel

        self.server = ScriptedModelServer({"turns": []}).start()
        self.models: dict[str, Model] = {
            "openai": OpenAIChatModel("scripted", self.server.base_url, api_key="k"),
            "anthropic": AnthropicModel("scripted", self.server.root_url, api_key="k"),
        }
        self.registry = ToolRegistry(make_builtin_tools(workspace))
        for t in (step, look):
            self.registry.add(t)
        self.workspace = workspace

    async def close(self) -> None:
        for model in self.models.values():
            await model.aclose()
        await asyncio.to_thread(self.server.stop)


async def one_run(n: int, rng: random.Random, lane: Lane) -> str | None:
    """Run one adversarial task; returns why it dead-looped, or None."""
    kind = KINDS[n % len(KINDS)]
    bounds = Bounds(
        max_rounds=rng.randint(1, 8),
        max_calls_read_only=rng.randint(1, 4),
        max_calls_state=rng.randint(2, 12),
        max_invalid_rounds=rng.randint(1, 3),
        backoff_base_s=0.001,
        backoff_max_s=0.01,
        task_timeout_s=30.0,
    )
    protocol = rng.choice(["openai", "openai", "anthropic"])
    turns = adversary(kind, rng)
    whole = rng.random() < 0.2  # answered as one JSON body, as some gateways do
    if whole:
        turns = [{**t, "stream_as_json": True} for t in turns]
    server = lane.server
    server.load({"turns": turns})
    options = AgentOptions(
        bounds=bounds, system_prompt="You are a test robot.", workspace=lane.workspace
    )
    agent = Agent(lane.models[protocol], lane.registry, options)
    rec = Recorder()
    agent.bus.subscribe(rec)
    try:
        outcome = await asyncio.wait_for(agent.run_task(f"adversary {kind}"), 40)
    except asyncio.TimeoutError:
        return f"run {n} ({kind}, {protocol}): did not end within 40 s"
    requests = len(server.requests)
    failures = list(server.failures)
    label = f"run {n} ({kind}, {protocol}, whole={whole}, {bounds.max_rounds} rounds)"
    if failures:
        return f"{label}: {failures[0]}"
    if outcome.status not in ("completed", "bounded"):
        return f"{label}: ended {outcome.status}: {outcome.error}"
    # rounds of tools, then one request without tools; nothing retried in these scripts
    if requests > bounds.max_rounds + 1:
        return f"{label}: {requests} model requests for {bounds.max_rounds} rounds"
    calls = [e.data["id"] for e in rec.of("tool_call")]
    results = [e.data["id"] for e in rec.of("tool_result")]
    if sorted(calls) != sorted(results):
        return f"{label}: calls {calls} but results {results}"
    if rec.of("task_end")[-1].data["status"] != outcome.status:
        return f"{label}: the trace says {rec.of('task_end')[-1].data}, the outcome {outcome}"
    return None


@pytest.mark.timeout(600)  # ~45 s of CPU; minutes of wall time on a loaded machine
async def test_adversarial_models_never_dead_loop(tmp_path: Path) -> None:
    lanes = [Lane(tmp_path) for _ in range(LANES)]
    queue = list(range(RUNS))
    found: list[str | None] = []

    async def work(lane: Lane) -> None:
        while queue:  # runs overlap their waiting; each has its own seed, script and agent
            n = queue.pop(0)
            found.append(await one_run(n, random.Random(SEED * 100_000 + n), lane))

    try:
        await asyncio.gather(*(work(lane) for lane in lanes))
    finally:
        for lane in lanes:
            await lane.close()
    assert len(found) == RUNS
    dead = [why for why in found if why is not None]
    rate = len(dead) / RUNS
    print(f"\n{RUNS} adversarial runs, dead-loop rate {rate:.3f}")
    assert not dead, f"dead-loop rate {rate:.3f}: {dead[:5]}"

"""Time to first action (SPEC X1): how soon a tool starts after its arguments are complete.

A slow-streaming script (small chunks with a delay between them) sends two tool calls and some
text after them. For each run this measures, on the client:

- dispatch latency: from the moment the provider yields ``ToolCallReady`` for a call (its
  arguments just became complete in the stream) to the moment the tool function starts;
- lead time: how long before the end of the stream the first tool started (what a
  wait-for-the-whole-response loop would have lost).

Target (docs/performance.md): dispatch latency <= 5 ms p50.

Usage: .venv/bin/python bench/first_action.py [--runs 30] [--chunk-delay 0.01]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from loopact.agent import Agent, AgentOptions
from loopact.app.run import freeze_startup_heap
from loopact.llm.base import ModelEvent, ModelRequest, ResponseDone, ToolCallReady
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer
from loopact.tools.base import tool
from loopact.tools.registry import ToolRegistry

ready_at: dict[str, float] = {}
started_at: dict[str, float] = {}
stream_end: list[float] = []


class TimedModel(OpenAIChatModel):
    """The real OpenAI provider, timestamping the events it yields (measurement only)."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:  # type: ignore[override]
        async for event in super().stream(request):
            if isinstance(event, ToolCallReady):
                ready_at[event.call.id] = time.perf_counter()
            elif isinstance(event, ResponseDone):
                stream_end.append(time.perf_counter())
            yield event


def make_tool(name: str) -> Any:
    async def fn(target: str) -> str:
        return target

    fn.__name__ = name
    fn.__doc__ = "Look at a target."
    wrapped = tool(fn)
    inner = wrapped.fn

    async def timed(target: str) -> str:
        started_at.setdefault(current_call.get(), time.perf_counter())
        return await inner(target)

    wrapped.fn = timed
    return wrapped


class _CallVar:
    value = ""

    def get(self) -> str:
        return self.value


current_call = _CallVar()


async def one_run(chunk_delay: float) -> tuple[float, float]:
    ready_at.clear()
    started_at.clear()
    stream_end.clear()
    turn = {
        "tool_calls": [
            {"id": "a", "name": "look_a", "arguments": {"target": "the red cube"}},
            {"id": "b", "name": "look_b", "arguments": {"target": "the green cylinder"}},
        ],
        "text": "",
        "chunk_size": 6,
        "chunk_delay_s": chunk_delay,
    }
    tools = [make_tool("look_a"), make_tool("look_b")]
    with (
        ScriptedModelServer([turn, {"text": "done"}]) as server,
        tempfile.TemporaryDirectory() as ws,
    ):
        model = TimedModel("bench", server.base_url, "k")
        agent = Agent(model, ToolRegistry(tools), AgentOptions(workspace=Path(ws)))

        def on_event(e: Any) -> None:
            if e.type == "tool_call":
                current_call.value = e.data["id"]

        agent.bus.subscribe(on_event)
        outcome = await agent.run_task("look at both")
        await agent.close()
        assert outcome.status == "completed", outcome
    latency = started_at["a"] - ready_at["a"]
    lead = stream_end[0] - started_at["a"]
    return latency, lead


full_gc_ms: list[float] = []
_gc_started: list[float] = [0.0]


def _time_full_collections(phase: str, info: dict[str, Any]) -> None:
    """gc callback: the length of every generation-2 (full) collection, a pause of the loop."""
    if phase == "start":
        _gc_started[0] = time.perf_counter()
    elif info["generation"] == 2:
        full_gc_ms.append((time.perf_counter() - _gc_started[0]) * 1000)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--chunk-delay", type=float, default=0.01)
    args = parser.parse_args()
    print(
        f"runs: {args.runs} per variant, 6-character chunks every {args.chunk_delay * 1000:.0f} ms"
    )
    gc.callbacks.append(_time_full_collections)
    for variant in ("heap as imported", "start-up heap frozen (loopact run)"):
        if variant.startswith("start-up"):
            t0 = time.perf_counter()
            gc.collect()
            before_ms = (time.perf_counter() - t0) * 1000
            freeze_startup_heap()  # what `loopact run` does once it has started
            t0 = time.perf_counter()
            gc.collect()
            print(
                f"one full garbage collection (a pause of the loop): {before_ms:.1f} ms with the "
                f"heap as imported, {(time.perf_counter() - t0) * 1000:.1f} ms with it frozen"
            )
        lat: list[float] = []
        lead: list[float] = []
        full_gc_ms.clear()
        for _ in range(args.runs):
            a, b = await one_run(args.chunk_delay)
            lat.append(a * 1000)
            lead.append(b * 1000)
        lat.sort()
        print(
            f"{variant}: dispatch latency (arguments complete -> tool starts): p50 "
            f"{statistics.median(lat):.3f} ms  p90 {lat[int(0.9 * len(lat)) - 1]:.3f} ms  "
            f"max {lat[-1]:.3f} ms  (target <= 5 ms); first tool started "
            f"{statistics.median(lead):.0f} ms (p50) before the response ended; full garbage "
            f"collections: {len(full_gc_ms)}, longest {max(full_gc_ms, default=0):.0f} ms"
        )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

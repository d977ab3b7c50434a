"""Loop overhead per round: loopact vs a minimal hand-written loop on the raw openai SDK.

Both loops talk to the same scripted model server (real HTTP, streaming), run the same script
(R rounds of one no-op tool call, then a text answer) and call a no-op tool, in this one run,
interleaved, so the machine's speed and load hit both alike. Two clocks per round, between
consecutive model requests:

- CPU time of the thread running the asyncio loop (``time.thread_time``): the work each loop
  does itself (SDK, HTTP client, stream parsing, loop bookkeeping) without the model server's
  thread and without waiting; insensitive to other processes. loopact's own cost per round is
  the difference of the medians: this is the figure the target applies to.
- Wall time, for reference (includes the scripted server and machine noise).

Target (docs/performance.md): loopact's own cost <= 1 ms per round (p50).

Usage: .venv/bin/python bench/overhead.py [--rounds 20] [--repeats 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import openai

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.testing import ScriptedModelServer
from loopact.tools.base import tool
from loopact.tools.registry import ToolRegistry


@tool
async def noop(n: int) -> int:
    """Return n."""
    return n


def script(rounds: int) -> dict[str, Any]:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"id": f"c{i}", "name": "noop", "arguments": {"n": i}}], "chunk_size": 64}
        for i in range(rounds)
    ]
    turns.append({"text": "done"})
    return {"turns": turns}


Stamp = tuple[float, float]  # (wall, thread cpu)


def stamp() -> Stamp:
    return (time.perf_counter(), time.thread_time())


def per_round(stamps: list[Stamp]) -> tuple[list[float], list[float]]:
    pairs = list(zip(stamps, stamps[1:], strict=False))
    return [b[0] - a[0] for a, b in pairs], [b[1] - a[1] for a, b in pairs]


async def run_loopact(rounds: int) -> tuple[list[float], list[float]]:
    stamps: list[Stamp] = []
    with ScriptedModelServer(script(rounds)) as server, tempfile.TemporaryDirectory() as ws:
        model = OpenAIChatModel("bench", server.base_url, "k")
        bounds = Bounds(max_rounds=rounds + 1, max_calls_read_only=10 * rounds, token_budget=10**9)
        agent = Agent(model, ToolRegistry([noop]), AgentOptions(bounds=bounds, workspace=Path(ws)))
        agent.bus.subscribe(lambda e: stamps.append(stamp()) if e.type == "model_request" else None)
        outcome = await agent.run_task("go")
        await agent.close()
        assert outcome.status == "completed", outcome
    return per_round(stamps)


async def run_baseline(rounds: int) -> tuple[list[float], list[float]]:
    """The smallest correct streaming tool loop on the raw SDK."""
    stamps: list[Stamp] = []
    tools = [noop.spec().openai()]
    with ScriptedModelServer(script(rounds)) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        while True:
            stamps.append(stamp())
            stream = await client.chat.completions.create(
                model="bench",
                messages=messages,
                tools=tools,
                stream=True,  # type: ignore[arg-type]
            )
            text, calls = "", {}
            async for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                text += delta.content or ""
                for tc in delta.tool_calls or []:
                    c = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    c["id"] = tc.id or c["id"]
                    if tc.function:
                        c["name"] = tc.function.name or c["name"]
                        c["arguments"] += tc.function.arguments or ""
            if not calls:
                break
            messages.append(
                {
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"]},
                        }
                        for c in calls.values()
                    ],
                }
            )
            for c in calls.values():
                result = await noop.fn(**json.loads(c["arguments"]))
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": c["id"],
                        "content": json.dumps({"ok": True, "data": result}),
                    }
                )
        await client.close()
    return per_round(stamps)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    ours_wall: list[float] = []
    ours_cpu: list[float] = []
    base_wall: list[float] = []
    base_cpu: list[float] = []
    for _ in range(args.repeats):  # interleaved so drift in machine load hits both
        w, c = await run_baseline(args.rounds)
        base_wall += w
        base_cpu += c
        w, c = await run_loopact(args.rounds)
        ours_wall += w
        ours_cpu += c
    ms = 1000.0
    print(f"rounds measured: {len(ours_cpu)} per loop ({args.repeats} tasks x {args.rounds})")
    for label, ours, base in (("cpu ", ours_cpu, base_cpu), ("wall", ours_wall, base_wall)):
        o50, b50 = statistics.median(ours) * ms, statistics.median(base) * ms
        print(
            f"{label} per round: loopact p50 {o50:6.3f} ms p90 {pct(ours, 0.9) * ms:6.3f} ms | "
            f"baseline p50 {b50:6.3f} ms p90 {pct(base, 0.9) * ms:6.3f} ms | "
            f"ratio {o50 / b50:4.2f} | loopact's own cost {o50 - b50:+.3f} ms"
        )
    own = (statistics.median(ours_cpu) - statistics.median(base_cpu)) * ms
    print(f"loopact's own cost per round (cpu p50 difference): {own:.3f} ms (target <= 1 ms)")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

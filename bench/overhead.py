"""Loop overhead per round: loopact vs a minimal hand-written loop on the raw openai SDK.

Both loops talk to the same scripted model server (real HTTP, streaming), run the same script
(R rounds of one no-op tool call, then a text answer) and call a no-op tool, in this one run,
interleaved, so the machine's speed and load hit both alike (both loops are in
``bench/loops.py``, shared with ``bench/peers.py``). Two clocks per round, between consecutive
calls of the tool:

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
import statistics
import sys
import tempfile
from pathlib import Path

from loops import (
    loopact_agent,
    pct,
    per_round,
    raw_client,
    run_loopact_task,
    run_raw_task,
    script,
    stamp,
)

from loopact.testing import ScriptedModelServer


async def run_loopact(rounds: int) -> tuple[list[float], list[float]]:
    stamps: list[tuple[float, float]] = []
    with ScriptedModelServer(script(rounds)) as server, tempfile.TemporaryDirectory() as ws:
        agent = loopact_agent(server.base_url, rounds, Path(ws), lambda: stamps.append(stamp()))
        await run_loopact_task(agent)
        await agent.close()
    return per_round(stamps)


async def run_baseline(rounds: int) -> tuple[list[float], list[float]]:
    """The smallest correct streaming tool loop on the raw SDK (bench/loops.py)."""
    stamps: list[tuple[float, float]] = []
    with ScriptedModelServer(script(rounds)) as server:
        client = raw_client(server.base_url)
        await run_raw_task(client, lambda: stamps.append(stamp()))
        await client.close()
    return per_round(stamps)


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
    print(
        f"rounds measured: {len(ours_cpu)} per loop "
        f"({args.repeats} tasks x {args.rounds - 1} rounds between tool calls)"
    )
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

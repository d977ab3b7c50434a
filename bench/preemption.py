"""Preemption latency (SPEC A6): from a stop or a new command to a zero twist at the robot.

The agent drives the MuJoCo robot (a long ``move_forward`` from the scripted model server over
real HTTP). While it moves, a stop (or a new command) arrives through ``agent.stop()`` /
``agent.submit()``, exactly as a channel delivers it. The time is measured from that call to
the moment the safety governor hands a zero twist to the robot (``Robot.send_twist``).
Baseline in the same run: the same measurement with the governor's own ``stop_all`` called
directly, i.e. the floor the agent's path adds to.

Target (issue 3): p99 < 20 ms in-process.

Usage: .venv/bin/python bench/preemption.py [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from loopact.agent import Agent, AgentOptions, Bounds
from loopact.app.robot import open_robot
from loopact.llm.openai_chat import OpenAIChatModel
from loopact.robot.interface import Twist
from loopact.robot.session import RobotSession
from loopact.testing import ScriptedModelServer
from loopact.tools.registry import ToolRegistry


def instrument(session: RobotSession) -> list[float]:
    """Record the time of every zero twist the robot receives (measurement only)."""
    zeros: list[float] = []
    robot: Any = session.robot
    original = robot.send_twist

    async def send_twist(twist: Twist) -> None:
        if twist.is_zero:
            zeros.append(time.perf_counter())
        await original(twist)

    robot.send_twist = send_twist
    return zeros


async def wait_moving(session: RobotSession) -> None:
    for _ in range(2000):  # up to 20 s on a loaded machine
        if session.governor.last_twist.linear_mps > 0:
            return
        await asyncio.sleep(0.01)
    raise RuntimeError("the robot never started moving")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


async def measure(runs: int, how: str) -> list[float]:
    session = await open_robot("sim", "sim", "sim_room", speed=1.0)
    zeros = instrument(session)
    turn = {
        "tool_calls": [{"name": "move_forward", "arguments": {"distance_m": 0.6, "speed_mps": 0.3}}]
    }
    latencies: list[float] = []
    try:
        # after a stop the task just ends; otherwise one more model turn answers "ok"
        per_run = [turn] if how == "stop" else [turn, {"text": "ok"}]
        with (
            ScriptedModelServer({"turns": per_run * runs}) as server,
            tempfile.TemporaryDirectory() as ws,
        ):
            model = OpenAIChatModel("bench", server.base_url, "k")
            agent = Agent(
                model,
                ToolRegistry(session.tools),
                AgentOptions(
                    bounds=Bounds(max_calls_state=10 * runs),
                    workspace=Path(ws),
                    stop_hooks=(session.stop,),
                ),
            )
            runner = asyncio.ensure_future(agent.run())
            for _ in range(runs):
                server_turn_ok = agent.submit("drive")
                assert server_turn_ok
                await wait_moving(session)
                await asyncio.sleep(0.1)
                zeros.clear()
                t0 = time.perf_counter()
                if how == "stop":
                    agent.stop("bench")
                elif how == "command":
                    agent.submit("say ok")
                else:
                    await session.governor.stop_all("bench")
                for _ in range(500):
                    if zeros:
                        break
                    await asyncio.sleep(0.001)
                latencies.append((zeros[0] - t0) * 1000)
                await agent.wait_idle()
                await session.robot.teleport(0.0, 0.0, 0.0)  # type: ignore[attr-defined]
            await agent.close()
            runner.cancel()
            server.stop()
    finally:
        await session.close()
    return latencies


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    for how, label in (
        ("governor", "baseline: governor.stop_all() directly"),
        ("stop", "agent.stop() (a /stop on any channel)"),
        ("command", "agent.submit() (a new command preempts)"),
    ):
        lat = await measure(args.runs, how)
        print(
            f"{label:45s} p50 {statistics.median(lat):6.2f} ms  p99 {pct(lat, 0.99):6.2f} ms"
            f"  max {max(lat):6.2f} ms  (n={len(lat)})"
        )
    print("target: p99 < 20 ms from command arrival to zero twist")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""A robot that runs headless (issue 41): foreign e-stop, refusal while latched, teleop
takeover and deadman, over real ROS 2 between processes (SPEC X3).

``loopact sim --ros2`` (the simulator and the base-side governor) runs in its own process
with its own ``ROS_DOMAIN_ID``; this process is the agent's side, opened as ``loopact run
--robot ros2`` opens it (:func:`~loopact.robot.ros2_robot.open_ros2_session`: the robot in
governor mode, the agent-side governor mirroring the base's verdicts, the robot tools), and a
second publisher here plays the foreign node / the joystick. Measured:

- foreign e-stop -> motion tool result: ``stop`` published on ``/loopact/base/emergency_stop``
  while ``move_forward`` runs, until the tool returns ``emergency_stop`` (target <= 100 ms p99);
- refused while latched: a ``move_forward`` call's duration (target <= 20 ms);
  (then a reset with the operator's proof over the published nonce)
- teleop takeover: the first ``Twist`` on ``/loopact/base/teleop_cmd_vel`` while
  ``move_forward`` runs, until the tool returns ``taken_over`` (target <= 50 ms);
- deadman: from the last teleop command (20 Hz stick, held 0.5 s) until the base's
  ``handback`` status (the base zeroed; target <= 0.6 s).

The MQTT fleet e-stop target (3 robots at zero twist <= 200 ms p99) has no benchmark yet;
``tests/integration/test_fleet_estop.py`` shows by ground truth that all three stop.

Usage: .venv/bin/python bench/headless.py [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from discovery import Child, pct, wait_until  # noqa: E402

SECRET = "bench-operator-secret-0123456789"


def _summary(name: str, values: list[float], target_ms: float) -> str:
    ms = sorted(v * 1000 for v in values)
    p50, p99 = pct(ms, 0.5), pct(ms, 0.99)
    verdict = "meets" if p99 <= target_ms else "MISSES"
    return (
        f"{name}: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms "
        f"(n={len(ms)}; target <= {target_ms:.0f} ms: {verdict})"
    )


async def _driving(robot: Any, tools: dict[str, Any], name: str) -> asyncio.Task[Any]:
    task = asyncio.ensure_future(tools[name](distance_m=1.0))
    await wait_until(lambda: abs(robot.velocity[0]) > 0.1, 20, "motion")
    return task


async def bench(env: dict[str, str], runs: int) -> None:
    from loopact.nodes.ros2.connector import Ros2Connector
    from loopact.nodes.ros2.interfaces import ros_types
    from loopact.robot.estop import estop_proof
    from loopact.robot.interface import Twist
    from loopact.robot.ros2_robot import open_ros2_session

    sim = Child(["sim", "--ros2", "--camera-hz", "5"], env)
    conn = Ros2Connector("bench_headless")
    foreign: dict[str, list[float]] = {"estop": [], "refused": [], "takeover": [], "deadman": []}
    try:
        await wait_until(lambda: sim.seen("ROS 2 robot up") is not None, 90, "the simulator")
        await conn.start()
        session = await open_ros2_session(conn)
        robot: Any = session.robot
        tools = {t.name: t for t in session.tools}
        String = ros_types("std_msgs.msg", "String")
        estop_pub = conn.publisher(String, "/loopact/base/emergency_stop", conn.qos(depth=10))

        def status() -> dict[str, Any]:
            return robot.base_status or {}

        for i in range(runs):
            name = "move_forward" if i % 2 == 0 else "move_backward"
            # foreign e-stop while driving
            task = await _driving(robot, tools, name)
            t0 = time.monotonic()
            estop_pub.publish(String(data="stop"))
            result = await task
            foreign["estop"].append(time.monotonic() - t0)
            assert result.metadata["achieved"]["stopped_by"] == "emergency_stop", result
            t0 = time.monotonic()
            refused = await tools[name](distance_m=0.3)
            foreign["refused"].append(time.monotonic() - t0)
            assert refused.metadata["achieved"]["stopped_by"] == "emergency_stop", refused
            # the operator's reset
            await wait_until(lambda: status().get("estop", {}).get("latched"), 10, "latched")
            nonce = status()["estop"]["nonce"]
            estop_pub.publish(String(data=f"reset {nonce} {estop_proof(SECRET, nonce)}"))
            await wait_until(lambda: not session.governor.emergency_stopped, 10, "reset")
            await wait_until(lambda: abs(robot.velocity[0]) < 0.01, 10, "at rest")
            # teleop takeover while driving, then the deadman
            task = await _driving(robot, tools, name)
            t0 = time.monotonic()
            robot.publish_teleop(Twist(0.0, 0.5))
            result = await task
            foreign["takeover"].append(time.monotonic() - t0)
            assert result.metadata["achieved"]["stopped_by"] == "taken_over", result
            last = time.monotonic()
            while time.monotonic() - t0 < 0.5:
                await asyncio.sleep(0.05)
                robot.publish_teleop(Twist(0.0, 0.5))
                last = time.monotonic()
            await wait_until(lambda: not status().get("operator"), 5, "hand-back")
            foreign["deadman"].append(time.monotonic() - last)
            await wait_until(lambda: abs(robot.velocity[1]) < 0.01, 10, "at rest")
        await session.close()
    finally:
        await conn.shutdown()
        sim.stop()
    print(_summary("foreign e-stop -> motion tool result (ROS 2)", foreign["estop"], 100))
    print(_summary("a motion refused while latched", foreign["refused"], 20))
    print(_summary("teleop takeover -> the agent's motion preempted", foreign["takeover"], 50))
    print(_summary("deadman: last teleop command -> hand-back", foreign["deadman"], 600))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    env = {
        **os.environ,
        "ROS_DOMAIN_ID": str(101 + os.getpid() % 100),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "FASTDDS_BUILTIN_TRANSPORTS": "LARGE_DATA",
        "PYTHONUNBUFFERED": "1",
        "LOOPACT_ESTOP_TOKEN": SECRET,
    }
    for key in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE", "FASTDDS_BUILTIN_TRANSPORTS"):
        os.environ[key] = env[key]
    from loopact.nodes.ros2.connector import ros_available

    if not ros_available():
        sys.exit("ROS 2 is not installed: run `make ros2`")
    await bench(env, args.runs)


if __name__ == "__main__":
    asyncio.run(main())

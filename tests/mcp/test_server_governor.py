"""Served calls meet the safety governor as the agent's own do: emergency stop, watchdog and
deadline (X3, issue 18).

The latch belongs to the base's governor (``loopact base`` next to a ROS 2 robot); here the
real MuJoCo robot, its governor and the robot tools run in this process and are served by
:class:`~loopact.mcp.server.ToolServer` to the official SDK's client over its in-memory
transport. Graded by the simulator's pose and by the twists the base received.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import mcp.types as mt
import pytest
from mcp import Client
from tests.robot.rig import make_rig

from loopact.mcp.server import Decision, ToolServer
from loopact.robot.interface import Twist
from loopact.tools.registry import ToolRegistry

pytestmark = pytest.mark.sim


async def _nobody(call_id: str, name: str, arguments: dict[str, Any]) -> Decision:
    return Decision(False, "no one to ask in this test")


def _body(result: mt.CallToolResult) -> dict[str, Any]:
    text = "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))
    return json.loads(text)  # type: ignore[no-any-return]


async def test_a_latched_emergency_stop_halts_and_refuses_served_motion(tmp_path: Path) -> None:
    rig = await make_rig()
    try:
        served = ToolServer(ToolRegistry(rig.tools.values()), confirm=_nobody, workspace=tmp_path)
        async with Client(served.server, cache=None) as client:
            motion = asyncio.ensure_future(client.call_tool("move_forward", {"distance_m": 2.0}))

            async def moving() -> bool:
                return (await rig.pose()).x_m > 0.1

            await rig.wait_for(moving)
            await rig.governor.emergency_stop("test button")
            sent = len(rig.robot.twists)
            halted = await asyncio.wait_for(motion, 10)
            assert halted.is_error
            assert _body(halted)["metadata"]["achieved"]["stopped_by"] == "emergency_stop"
            assert (await rig.pose()).x_m < 1.5

            for args in (
                {"distance_m": 0.3},
                {"linear_mps": 50, "angular_dps": 0, "duration_s": 1},
            ):
                name = "move_forward" if "distance_m" in args else "drive"
                refused = await client.call_tool(name, args)
                assert refused.is_error
                assert "emergency stop is latched" in _body(refused)["error"]
            assert all(twist.is_zero for _, twist in rig.robot.twists[sent:])

            rig.governor.reset_emergency_stop(by="the test")
            x0 = (await rig.pose()).x_m
            moved = await client.call_tool("move_forward", {"distance_m": 0.3})
            assert not moved.is_error, _body(moved)
            assert abs((await rig.pose()).x_m - x0 - 0.3) <= 0.05
    finally:
        await rig.governor.close()
        await rig.robot.close()


async def test_a_served_motion_whose_commands_stop_is_zeroed_by_the_watchdog(
    tmp_path: Path,
) -> None:
    """The served motion's control loop stalls (its odometry read hangs): the governor's
    watchdog zeroes the base after ``limits.command_timeout_s`` without a command, and the
    client's result says so (SPEC X3, issue 18), as for the agent's own calls."""
    rig = await make_rig()
    stalled, resume = asyncio.Event(), asyncio.Event()
    read_pose = rig.robot.get_pose

    async def get_pose() -> Any:
        if stalled.is_set():
            await resume.wait()
        return await read_pose()

    rig.robot.get_pose = get_pose  # type: ignore[method-assign]
    try:
        served = ToolServer(ToolRegistry(rig.tools.values()), confirm=_nobody, workspace=tmp_path)
        async with Client(served.server, cache=None) as client:
            args = {"linear_mps": 0.0, "angular_dps": 30.0, "duration_s": 20.0}
            motion = asyncio.ensure_future(client.call_tool("drive", args))

            async def turning() -> bool:
                return not rig.robot.commanded.is_zero

            await rig.wait_for(turning)
            stalled.set()

            async def zeroed() -> bool:
                return rig.robot.commanded.is_zero

            await rig.wait_for(zeroed, 5.0)
            last_cmd = max(t for t, tw in rig.robot.twists if not tw.is_zero)
            assert rig.robot.twists[-1][0] - last_cmd >= rig.profile.limits.command_timeout_s
            assert rig.governor.watchdog_trips == 1
            resume.set()
            halted = await asyncio.wait_for(motion, 10)
            assert halted.is_error
            body = _body(halted)
            assert body["metadata"]["achieved"]["stopped_by"] == "watchdog", body
            assert body["error"].startswith("stopped early by watchdog: no command for")
            assert rig.robot.commanded.is_zero
    finally:
        resume.set()
        await rig.governor.close()
        await rig.robot.close()


async def test_a_served_motion_that_overruns_is_stopped_at_its_deadline(
    tmp_path: Path,
) -> None:
    """A served turn on a base that turns at a fifth of the commanded rate does not reach
    its angle: the governor stops it at the motion's deadline (SPEC X3, issue 18)."""
    rig = await make_rig()
    send = rig.robot.inner.send_twist

    async def sluggish(twist: Twist) -> None:
        await send(Twist(twist.linear_mps * 0.2, twist.angular_radps * 0.2))

    rig.robot.inner.send_twist = sluggish
    try:
        served = ToolServer(ToolRegistry(rig.tools.values()), confirm=_nobody, workspace=tmp_path)
        async with Client(served.server, cache=None) as client:
            t0 = rig.robot.clock.now()
            halted = await asyncio.wait_for(
                client.call_tool("turn_left", {"angle_deg": 90, "speed_dps": 45}), 60
            )
            assert halted.is_error
            body = _body(halted)
            assert body["metadata"]["achieved"]["stopped_by"] == "deadline", body
            assert body["error"].startswith("stopped early by deadline: ")
            assert body["metadata"]["achieved"]["angle_deg"] < 90
            # the deadline of a 90 deg turn at 45 deg/s: 2 s x 1.5 + 3 s of margin
            assert rig.robot.clock.now() - t0 >= 6.0
            assert rig.robot.commanded.is_zero
    finally:
        await rig.governor.close()
        await rig.robot.close()


async def test_the_operators_mcp_client_latches_the_emergency_stop_but_cannot_reset_it(
    tmp_path: Path,
) -> None:
    """Issue 41: ``emergency_stop`` is served to the MCP client (never the agent's tool); it
    ends a served motion at once; no reset is served, and the agent's registry has neither."""
    from loopact.app.mcp_estop import estop_tools
    from loopact.robot.estop import EstopLatch, estop_proof
    from loopact.robot.panel import LocalPanel

    rig = await make_rig()
    rig.governor.estop = EstopLatch("operator-secret-0123456789")
    try:
        registry = ToolRegistry(rig.tools.values())
        extra = estop_tools(LocalPanel(rig.governor))
        served = ToolServer(registry, confirm=_nobody, workspace=tmp_path, extra=extra)
        async with Client(served.server, cache=None) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"emergency_stop", "emergency_stop_state"} <= names
            assert not any("reset" in n for n in names)
            assert "emergency_stop" not in {t.name for t in registry}  # not the model's
            motion = asyncio.ensure_future(client.call_tool("move_forward", {"distance_m": 2.0}))

            async def moving() -> bool:
                return (await rig.pose()).x_m > 0.1

            await rig.wait_for(moving)
            latched = await client.call_tool("emergency_stop", {"reason": "a person in the way"})
            assert not latched.is_error
            state = _body(latched)["data"]
            assert state["latched"] is True and state["source"] == "mcp"
            halted = await asyncio.wait_for(motion, 10)
            assert _body(halted)["metadata"]["achieved"]["stopped_by"] == "emergency_stop"
            x = (await rig.pose()).x_m
            refused = await client.call_tool("move_forward", {"distance_m": 0.3})
            assert refused.is_error and abs((await rig.pose()).x_m - x) < 0.02
            shown = _body(await client.call_tool("emergency_stop_state", {}))["data"]
            # released only by the operator's proof over the published nonce (not over MCP)
            proof = estop_proof("operator-secret-0123456789", shown["nonce"])
            assert (await LocalPanel(rig.governor).reset(shown["nonce"], proof, "op", "t")).released
    finally:
        await rig.governor.close()
        await rig.robot.close()

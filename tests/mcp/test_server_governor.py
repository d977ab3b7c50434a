"""Served calls meet the safety governor as the agent's own do: the emergency stop (X3, issue 18).

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

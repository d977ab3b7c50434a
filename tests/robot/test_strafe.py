"""A mecanum base strafes (issue 43 item 5; SPEC D1, D2): ``strafe(distance_m)`` and ``drive``
with a lateral speed, graded by the simulator's ground truth; refused clearly on a
differential base; limited and geofenced by the governor."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from loopact.robot.motion import RobotEnv
from loopact.robot.session import RobotSession
from loopact.robot.strafe import strafe
from loopact.sim import open_sim
from loopact.vision.gate import ImageGate

pytestmark = pytest.mark.sim


async def _session(profile: str) -> RobotSession:
    return await asyncio.wait_for(open_sim(profile=profile, speed=float("inf")), 60)


def _tools(session: RobotSession) -> dict[str, Any]:
    return {t.name: t for t in session.tools}


def _truth(session: RobotSession) -> tuple[float, float, float]:
    st = session.robot.sim.state()  # type: ignore[attr-defined]
    return st.x_m, st.y_m, st.yaw_rad


async def test_strafe_moves_a_mecanum_base_sideways_by_ground_truth() -> None:
    session = await _session("mecanum_ptz")
    try:
        tools = _tools(session)
        x0, y0, yaw0 = _truth(session)
        left = await tools["strafe"](distance_m=0.4)
        assert left.ok, left.outcome.text()
        x1, y1, yaw1 = _truth(session)
        assert abs((y1 - y0) - 0.4) < 0.02 and abs(x1 - x0) < 0.02, (x1 - x0, y1 - y0)
        assert abs(math.degrees(yaw1 - yaw0)) < 2.0
        assert left.metadata["achieved"]["distance_m"] == pytest.approx(0.4, abs=0.02)
        assert "to the left" in left.outcome.text()
        right = await tools["strafe"](distance_m=-0.25)
        assert right.ok, right.outcome.text()
        x2, y2, _ = _truth(session)
        assert abs((y2 - y1) + 0.25) < 0.02 and abs(x2 - x1) < 0.02
        # too fast: the governor's sideways limit (the profile's forward limit, 0.4 m/s)
        fast = await tools["strafe"](distance_m=0.2, speed_mps=5.0)
        assert fast.ok and fast.metadata["clamped"]["speed_mps"]["applied"] == 0.4
        # the end point outside the geofence (y <= 2.7): refused, nothing moved
        before = _truth(session)
        fenced = await tools["strafe"](distance_m=3.0)
        assert not fenced.ok and "geofence" in fenced.outcome.text()
        assert math.dist(before[:2], _truth(session)[:2]) < 0.005
        zero = await tools["strafe"](distance_m=0.0)
        assert not zero.ok and "must not be 0" in zero.outcome.text()
        nan = await tools["strafe"](distance_m=math.nan)
        assert not nan.ok and "finite" in nan.outcome.text()
    finally:
        await session.close()


async def test_drive_with_a_lateral_speed_moves_a_mecanum_base_sideways() -> None:
    session = await _session("mecanum_ptz")
    try:
        x0, y0, _ = _truth(session)
        result = await _tools(session)["drive"](
            linear_mps=0.0, angular_dps=0.0, duration_s=1.5, lateral_mps=-0.2
        )
        assert result.ok, result.outcome.text()
        x1, y1, _ = _truth(session)
        assert -0.4 < y1 - y0 < -0.22 and abs(x1 - x0) < 0.03, (x1 - x0, y1 - y0)
    finally:
        await session.close()


async def test_a_differential_base_refuses_sideways_motion_clearly() -> None:
    session = await _session("sim")
    try:
        tools = _tools(session)
        assert "strafe" not in tools  # not offered where it cannot work
        assert "lateral_mps" not in tools["drive"].parameters["properties"]  # nor shown
        before = _truth(session)
        drive = await tools["drive"](
            linear_mps=0.0, angular_dps=0.0, duration_s=1.0, lateral_mps=0.2
        )
        assert not drive.ok and "mecanum" in drive.outcome.text()
        assert "麦克纳姆" in drive.outcome.text("zh")
        robot_env = RobotEnv(
            robot=session.robot,
            governor=session.governor,
            profile=session.profile,
            site=session.site,
            gate=ImageGate(),
        )
        direct = await strafe(robot_env, 0.3)
        assert not direct.ok and "differential base cannot" in direct.outcome.text()
        assert math.dist(before[:2], _truth(session)[:2]) < 0.005
    finally:
        await session.close()

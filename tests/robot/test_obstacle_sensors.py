"""Robots without a depth camera (issue 41 item 6, SPEC X3, D1): the obstacle stop reads the
sensors the profile declares. The real governor and tools on the real MuJoCo robot; the laser
scan is ray-cast from the simulator's ground-truth pose to the room's +x wall (with NaN, +inf
and out-of-range beams mixed in, as real scanners send), and the stop is graded by the
simulator's pose."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator

import numpy as np
import pytest
from tests.robot.rig import SIM_SPEED, RecordingRobot, Rig

from loopact.robot.clearance import scan_clearance
from loopact.robot.governor import SafetyGovernor
from loopact.robot.interface import LaserScan
from loopact.robot.profile import HardwareProfile, SiteMap, load_profile
from loopact.robot.session import make_robot_tools
from loopact.vision.gate import ImageGate

pytestmark = pytest.mark.sim

WALL_X = 6.0  # inner face of the +x wall of sim_room
BEAMS = 181
RANGE_MAX_M = 3.5


def _scan(ranges: list[float], fov_rad: float = math.pi) -> LaserScan:
    n = len(ranges)
    return LaserScan(
        np.asarray(ranges, dtype=np.float32), -fov_rad / 2, fov_rad / (n - 1), 0.12, 3.5, 0.0
    )


def test_scan_clearance_reads_rep_117_special_values() -> None:
    prof = load_profile("sim")
    r = prof.footprint_radius_m
    ahead = [math.inf] * 5
    ahead[2] = 1.0  # the beam straight ahead
    assert scan_clearance(_scan(ahead), prof) == pytest.approx(1.0 - r)
    # NaN, +inf, below range_min and beyond range_max are no obstacle; the one return counts
    noisy = [math.nan, 0.05, 1.0, 9.0, math.inf]
    assert scan_clearance(_scan(noisy), prof) == pytest.approx(1.0 - r)
    assert scan_clearance(_scan([math.inf] * 5), prof) == math.inf  # nothing in range
    assert scan_clearance(_scan([math.nan] * 5), prof) is None  # no usable beam: unknown
    too_close = [math.inf, math.inf, -math.inf, math.inf, math.inf]
    assert scan_clearance(_scan(too_close), prof) == 0.0
    behind = [0.5, math.inf, math.inf, math.inf, 0.5]  # at +-90 degrees: beside, not ahead
    assert scan_clearance(_scan(behind), prof) == math.inf


class ScanningSimRobot(RecordingRobot):
    """The simulator with a planar scanner at the base's centre: beams ray-cast to the +x wall
    from the true pose; every 7th beam NaN (a real scanner's dropouts)."""

    nan_only = False

    async def get_scan(self) -> LaserScan:
        pose = await self.inner.get_pose()
        angles = np.linspace(-math.pi / 2, math.pi / 2, BEAMS)
        cos = np.cos(pose.yaw_rad + angles)
        with np.errstate(divide="ignore"):
            r = np.where(cos > 1e-6, (WALL_X - pose.x_m) / cos, np.inf)
        r = np.where(r > RANGE_MAX_M, np.inf, r)
        r[::7] = np.nan
        if self.nan_only:
            r[:] = np.nan
        return LaserScan(
            r.astype(np.float32),
            -math.pi / 2,
            math.pi / (BEAMS - 1),
            0.12,
            RANGE_MAX_M,
            self.clock.now(),
        )


async def _rig(profile: HardwareProfile) -> Rig:
    from loopact.sim import SimRobot

    robot = ScanningSimRobot(await asyncio.wait_for(SimRobot.create(speed=SIM_SPEED), 30))
    gov = SafetyGovernor(robot, profile, SiteMap())
    gov.start()
    tools = make_robot_tools(robot, gov, profile, SiteMap(), ImageGate())
    return Rig(robot, gov, profile, SiteMap(), {t.name: t for t in tools})


def _profile(sensors: tuple[str, ...], blind_max: float | None = None) -> HardwareProfile:
    prof = load_profile("sim")
    limits = prof.limits.model_copy(update={"blind_max_linear_mps": blind_max})
    return prof.model_copy(update={"obstacle_sensors": sensors, "limits": limits})


@pytest.fixture
async def scan_rig() -> AsyncIterator[Rig]:
    rig = await _rig(_profile(("laser_scan",)))
    try:
        yield rig
    finally:
        await rig.governor.close()
        await rig.robot.close()


async def test_a_laser_scan_stops_the_base_before_the_wall(scan_rig: Rig) -> None:
    rig = scan_rig
    await rig.robot.teleport(3.5, 0.0, 0.0)
    res = await rig.call("move_forward", distance_m=3.0)
    assert res.metadata["achieved"]["stopped_by"] == "obstacle", res
    pose = await rig.pose()  # the simulator's ground truth
    gap = WALL_X - pose.x_m - rig.profile.footprint_radius_m
    assert 0.8 * rig.profile.limits.obstacle_stop_m <= gap <= 0.6, gap
    # near the wall: stopped again at once
    again = await rig.call("move_forward", distance_m=0.5)
    assert again.metadata["achieved"]["stopped_by"] == "obstacle", again
    assert abs((await rig.pose()).x_m - pose.x_m) < 0.02


async def test_a_scan_of_only_nan_refuses_forward_motion(scan_rig: Rig) -> None:
    assert isinstance(scan_rig.robot, ScanningSimRobot)
    scan_rig.robot.nan_only = True
    res = await scan_rig.call("move_forward", distance_m=0.5)
    assert res.outcome is not None and res.outcome.id == "governor.cannot_check", res
    assert (await scan_rig.pose()).x_m == pytest.approx(0.0, abs=0.01)


async def test_a_blind_robot_drives_forward_only_when_its_profile_allows_it() -> None:
    rig = await _rig(_profile(("none",)))
    try:
        refused = await rig.call("move_forward", distance_m=0.3)
        assert refused.outcome is not None and refused.outcome.id == "governor.blind", refused
        assert "limits.blind_max_linear_mps" in refused.outcome.text("en")
        assert (await rig.call("turn_left", angle_deg=20)).ok  # turning needs no range sensor
    finally:
        await rig.governor.close()
        await rig.robot.close()
    rig = await _rig(_profile(("none",), blind_max=0.1))
    try:
        start = await rig.pose()
        assert (await rig.call("move_forward", distance_m=0.3)).ok
        end = await rig.pose()
        assert math.hypot(end.x_m - start.x_m, end.y_m - start.y_m) == pytest.approx(0.3, abs=0.05)
        assert max(t.linear_mps for _, t in rig.robot.twists) <= 0.1 + 1e-9
    finally:
        await rig.governor.close()
        await rig.robot.close()

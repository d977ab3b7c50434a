"""Safety governor on the real MuJoCo SimRobot (SPEC C5, X3): obstacle stop, geofence,
emergency stop, watchdog, deadline, stop latency."""

from __future__ import annotations

import asyncio
import math
import re
import statistics
import time
from collections.abc import AsyncIterator

import pytest
from tests.robot.rig import Rig, make_rig

from loopact.errors import EmergencyStopError, SafetyError
from loopact.robot.interface import Twist
from loopact.robot.profile import SiteMap

pytestmark = pytest.mark.sim

WALL_X = 6.0  # inner face of the +x wall
RADIUS = 0.17


@pytest.fixture
async def open_rig() -> AsyncIterator[Rig]:
    """A rig without geofence: the obstacle stop alone must keep it off the walls."""
    r = await make_rig(site=SiteMap())
    try:
        yield r
    finally:
        await r.governor.close()
        await r.robot.close()


async def test_drive_toward_wall_stops_short(open_rig: Rig) -> None:
    rig = open_rig
    await rig.robot.teleport(4.0, 0.0, 0.0)
    res = await rig.call("drive", linear_mps=0.5, angular_dps=0, duration_s=10)
    assert not res.ok
    assert res.metadata["achieved"]["stopped_by"] == "obstacle"
    await rig.robot.clock.sleep(0.5)
    front = (await rig.pose()).x_m + RADIUS
    gap = WALL_X - front
    print(f"drive at 0.5 m/s toward the wall: stopped {gap:.3f} m from it")
    assert 0.3 <= gap <= 0.6, gap  # obstacle_stop_m = 0.35 from the front
    # refusing to start when already too close
    await rig.robot.teleport(WALL_X - RADIUS - 0.2, 0.0, 0.0)
    res = await rig.call("move_forward", distance_m=0.5)
    assert not res.ok and "obstacle" in (res.error or "")
    assert res.metadata["achieved"]["stopped_by"] == "obstacle"


async def test_a_motion_stopped_early_says_so_without_its_own_name() -> None:
    """A newcomer read "move_forward: move_forward stopped early by obstacle ...": every
    reader puts the tool's name before its error, so the error does not name it again; a
    navigation's error names where it was going."""
    site = SiteMap(waypoints={"window": {"x_m": 7.0, "y_m": 0.0}})  # type: ignore[dict-item]
    rig = await make_rig(site=site)  # the window is beyond the +x wall
    achieved = r"; achieved \d+\.\d\d m, -?\d+\.\d deg"
    try:
        for tool, args in (
            ("move_forward", {"distance_m": 3.0, "speed_mps": 0.4}),
            ("drive", {"linear_mps": 0.4, "angular_dps": 0, "duration_s": 10}),
            ("navigation", {"waypoint": "window"}),
        ):
            await rig.robot.teleport(4.0, 0.0, 0.0)
            res = await rig.call(tool, **args)
            assert not res.ok and res.metadata["achieved"]["stopped_by"] == "obstacle"
            where = " on the way to the window" if tool == "navigation" else ""
            expected = f"stopped early by obstacle{where}: obstacle [\\d.]+ m ahead of the robot"
            assert re.fullmatch(expected + achieved, res.error or ""), (tool, res.error)
    finally:
        await rig.governor.close()
        await rig.robot.close()


async def test_move_forward_stops_before_red_cube(rig: Rig) -> None:
    await rig.robot.teleport(1.8, -1.6, 0.0)  # red cube at (3.0, -1.6)
    res = await rig.call("move_forward", distance_m=2.0, speed_mps=0.4)
    assert not res.ok
    assert res.metadata["achieved"]["stopped_by"] == "obstacle"
    await rig.robot.clock.sleep(0.5)
    x = (await rig.pose()).x_m
    assert x < 3.0 - 0.1 - RADIUS - 0.2  # cube is ~0.25-0.35 m wide: well short of touching it
    assert x > 1.8 + 0.3  # it did drive


async def test_obstacle_stop_recentres_the_head(open_rig: Rig) -> None:
    rig = open_rig
    await rig.robot.teleport(4.5, 0.0, 0.0)
    assert (await rig.call("servo_move", pan_deg=60, tilt_deg=-25)).ok  # looking up, aside
    res = await rig.call("move_forward", distance_m=1.5)
    assert res.metadata["achieved"]["stopped_by"] == "obstacle"
    head = await rig.robot.get_head()
    assert abs(math.degrees(head.pan_rad)) < 10
    assert math.degrees(head.tilt_rad) >= rig.governor.min_trusted_tilt_deg() - 1
    assert WALL_X - ((await rig.pose()).x_m + RADIUS) >= 0.25


async def test_geofence_holds() -> None:
    fence = SiteMap(
        waypoints={"out": {"x_m": 3.0, "y_m": 0.0}},  # type: ignore[dict-item]
        geofence=[(-1.0, -1.0), (1.5, -1.0), (1.5, 1.0), (-1.0, 1.0)],
    )
    rig = await make_rig(site=fence)
    try:
        res = await rig.call("move_forward", distance_m=2.5)
        assert not res.ok and "geofence" in (res.error or "")
        assert res.metadata["achieved"]["stopped_by"] == "geofence"
        assert all(t.is_zero for _, t in rig.robot.twists)
        # a move longer than one motion may last is refused for the fence, not for its
        # duration (which advised splitting it into shorter moves towards the fence)
        res = await rig.call("move_forward", distance_m=20.0)
        assert not res.ok and "geofence" in (res.error or ""), res.error
        assert "split it" not in (res.error or "")
        res = await rig.call("navigation", waypoint="out")
        assert not res.ok and "geofence" in (res.error or "")
        res = await rig.call("drive", linear_mps=0.5, angular_dps=0, duration_s=10)
        assert not res.ok
        assert res.metadata["achieved"]["stopped_by"] == "geofence"
        await rig.robot.clock.sleep(0.5)
        assert (await rig.pose()).x_m <= 1.5
        # turning is fine, and driving back inside is allowed
        assert (await rig.call("turn_left", angle_deg=180)).ok
        assert (await rig.call("move_forward", distance_m=0.5)).ok
    finally:
        await rig.governor.close()
        await rig.robot.close()


async def test_emergency_stop_latches_until_reset(rig: Rig) -> None:
    task = asyncio.create_task(rig.call("move_forward", distance_m=2.0))

    async def moving() -> bool:
        return (await rig.pose()).x_m > 0.1

    await rig.wait_for(moving)
    await rig.governor.emergency_stop("test button")
    assert rig.robot.commanded.is_zero
    res = await asyncio.wait_for(task, 10)
    assert not res.ok and res.metadata["achieved"]["stopped_by"] == "emergency_stop"
    for _ in range(2):  # still latched on the second try
        res = await rig.call("move_forward", distance_m=0.3)
        assert not res.ok and "emergency stop is latched" in (res.error or "")
        res = await rig.call("servo_nod")
        assert not res.ok and "emergency stop" in (res.error or "")
    with pytest.raises(EmergencyStopError):
        await rig.governor.begin_motion("x", 1.0)
    rig.governor.reset_emergency_stop()
    x0 = (await rig.pose()).x_m
    res = await rig.call("move_forward", distance_m=0.3)
    assert res.ok, res.error
    assert abs((await rig.pose()).x_m - x0 - 0.3) <= 0.05


async def test_watchdog_zeroes_base_when_commands_stop(rig: Rig) -> None:
    gov = rig.governor
    lease = await gov.begin_motion("dead_agent", 20.0, forward=True)
    sent = await gov.command(lease, Twist(0.3, 0.0))
    assert sent.linear_mps == pytest.approx(0.3)
    t_cmd = rig.robot.clock.now()
    # the "agent" dies: no more commands

    async def zeroed() -> bool:
        return rig.robot.commanded.is_zero

    await rig.wait_for(zeroed, 3.0)
    t_zero = rig.robot.twists[-1][0]
    timeout = rig.profile.limits.command_timeout_s
    assert timeout <= t_zero - t_cmd <= timeout + 0.3
    assert lease.stopped_by == "watchdog"
    assert gov.watchdog_trips == 1
    # a late command from the dead motion is ignored
    assert (await gov.command(lease, Twist(0.3, 0.0))).is_zero
    assert rig.robot.commanded.is_zero


async def test_deadline_stops_motion(rig: Rig) -> None:
    gov = rig.governor
    lease = await gov.begin_motion("short", 0.5)
    while lease.active:
        await gov.command(lease, Twist(0.0, 0.5))
        await rig.robot.clock.sleep(0.05)
    assert lease.stopped_by == "deadline"
    assert rig.robot.commanded.is_zero
    assert rig.robot.clock.now() - lease.started_s >= 0.5


async def test_governor_refuses_non_finite_and_clamps(rig: Rig) -> None:
    gov = rig.governor
    with pytest.raises(SafetyError, match="finite"):
        gov.clamp_twist(Twist(float("nan"), 0.0))
    with pytest.raises(SafetyError, match="duration_s must be > 0"):
        await gov.begin_motion("x", 0.0)
    tw, clamped = gov.clamp_twist(Twist(-3.0, math.radians(400), 1.0))
    assert tw.linear_mps == -0.5
    assert math.degrees(tw.angular_radps) == pytest.approx(90)
    assert tw.lateral_mps == 0.0  # differential drive
    assert set(clamped) == {"linear_mps", "angular_dps", "lateral_mps"}


async def test_stop_all_latency(rig: Rig) -> None:
    gov = rig.governor
    samples = []
    for _ in range(40):
        lease = await gov.begin_motion("spin", 5.0)
        await gov.command(lease, Twist(0.0, 0.3))
        t0 = time.perf_counter()
        await gov.stop_all("user stop")
        samples.append(time.perf_counter() - t0)
        assert rig.robot.commanded.is_zero
        assert lease.stopped_by == "cancelled"
    samples.sort()
    p99 = samples[int(0.99 * (len(samples) - 1))]
    print(
        f"stop_all latency median {statistics.median(samples) * 1e3:.3f} ms p99 {p99 * 1e3:.3f} ms"
    )
    assert p99 < 0.020

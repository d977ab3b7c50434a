"""Motion and navigation tools on the real MuJoCo SimRobot (SPEC D2, D3, C5, X3)."""

from __future__ import annotations

import asyncio
import math
import re

import pytest
from tests.robot.rig import Rig

pytestmark = pytest.mark.sim


async def test_move_forward_one_metre(rig: Rig) -> None:
    res = await rig.call("move_forward", distance_m=1.0)
    assert res.ok, res.error
    pose = await rig.pose()
    assert abs(pose.x_m - 1.0) <= 0.05
    assert abs(pose.y_m) <= 0.05
    ach = res.metadata["achieved"]
    assert ach["stopped_by"] == "target"
    assert abs(ach["distance_m"] - 1.0) <= 0.05
    # one plain sentence of what happened, from the achieved distance (models retell it)
    assert re.fullmatch(
        r"moved forward (0\.9[5-9]|1\.0[0-5]) m and reached the target", res.data["result"]
    )
    assert "clamped" not in res.metadata
    assert rig.robot.commanded.is_zero
    assert rig.governor.watchdog_trips == 0


async def test_move_backward(rig: Rig) -> None:
    res = await rig.call("move_backward", distance_m=0.5, speed_mps=0.3)
    assert res.ok, res.error
    assert res.data["result"].startswith("moved backward 0.")
    assert abs((await rig.pose()).x_m + 0.5) <= 0.05


async def test_turn_left_and_right(rig: Rig) -> None:
    res = await rig.call("turn_left", angle_deg=90)
    assert res.ok, res.error
    assert abs((await rig.pose()).yaw_deg - 90) <= 5
    assert abs(res.metadata["achieved"]["angle_deg"] - 90) <= 5
    assert re.fullmatch(
        r"turned left (8[5-9]|9[0-5])\.\d degrees and reached the target", res.data["result"]
    )
    res = await rig.call("turn_right", angle_deg=45, speed_dps=200)
    assert res.ok, res.error
    assert abs((await rig.pose()).yaw_deg - 45) <= 5
    assert res.metadata["clamped"]["speed_dps"] == {"requested": 200, "applied": 90}
    assert res.data["result"].startswith("turned right 4")
    assert res.data["result"].endswith("(speed clamped to the robot's limit)")


async def test_speed_clamp_never_shortens_distance(rig: Rig) -> None:
    res = await rig.call("move_forward", distance_m=0.8, speed_mps=50)
    assert res.ok, res.error
    assert res.metadata["clamped"]["speed_mps"] == {"requested": 50, "applied": 0.5}
    assert abs((await rig.pose()).x_m - 0.8) <= 0.05
    assert max(t.linear_mps for _, t in rig.robot.twists) <= 0.5


async def test_drive_is_clamped_and_reported(rig: Rig) -> None:
    res = await rig.call("drive", linear_mps=50, angular_dps=0, duration_s=1)
    assert res.ok, res.error
    assert res.metadata["clamped"]["linear_mps"] == {"requested": 50.0, "applied": 0.5}
    assert max(t.linear_mps for _, t in rig.robot.twists) == pytest.approx(0.5)
    # 1 s at <= 0.5 m/s with a 1 m/s^2 ramp: between 0.25 and 0.5 m
    assert 0.25 <= (await rig.pose()).x_m <= 0.55
    assert res.metadata["achieved"]["stopped_by"] == "target"
    assert rig.robot.commanded.is_zero


@pytest.mark.parametrize(
    ("args", "what"),
    [({"linear_mps": 0.5, "angular_dps": 0, "duration_s": 2}, "distance"),
     ({"linear_mps": 0, "angular_dps": 90, "duration_s": 2}, "angle")],
)  # fmt: skip
async def test_drive_reports_where_the_base_came_to_rest(
    rig: Rig, args: dict[str, float], what: str
) -> None:
    """The base coasts after drive zeroes it (0.13 m and 24 degrees more than the result said,
    found by hand 2026-12-05): the result is read once the base is at rest (SPEC D2)."""
    res = await rig.call("drive", **args)
    assert res.ok, res.error
    await rig.robot.clock.sleep(2.0)  # robot time: long after any coasting
    rest = await rig.pose()
    ach = res.metadata["achieved"]
    if what == "distance":
        assert rest.x_m > 0.8
        assert abs(ach["distance_m"] - rest.x_m) <= 0.01, (ach, rest)
    else:
        turned = rest.yaw_deg % 360  # 2 s at 90 deg/s and the coasting: past 180 degrees
        assert turned > 150
        assert abs(ach["angle_deg"] - turned) <= 1.0, (ach, rest)
    assert rig.robot.commanded.is_zero


@pytest.mark.parametrize(
    ("tool", "args", "needle"),
    [
        ("move_forward", {"distance_m": -1}, "distance_m must be > 0"),
        ("move_forward", {"distance_m": float("nan")}, "finite"),
        ("move_forward", {"distance_m": 1, "speed_mps": float("inf")}, "finite"),
        ("move_forward", {"distance_m": 1, "speed_mps": 0}, "speed_mps must be > 0"),
        ("move_forward", {"distance_m": 50}, "outside the geofence"),
        ("move_forward", {"distance_m": 2, "speed_mps": 0.05}, "split it"),  # 40 s > 30 s
        ("turn_left", {"angle_deg": -90}, "angle_deg must be in"),
        ("turn_right", {"angle_deg": float("nan")}, "finite"),
        ("drive", {"linear_mps": float("nan"), "angular_dps": 0, "duration_s": 1}, "finite"),
        ("drive", {"linear_mps": 0.1, "angular_dps": 0, "duration_s": -1}, "duration_s"),
        ("navigation", {"waypoint": "moon"}, "known waypoints: charger, door, kitchen"),
        ("servo_move", {"pan_deg": 120, "tilt_deg": 0}, "pan limits [-90.0, 90.0]"),
        ("servo_move", {"pan_deg": 0, "tilt_deg": 80}, "tilt limits [-30.0, 45.0]"),
    ],
)
async def test_bad_requests_fail_clearly(rig: Rig, tool: str, args: dict, needle: str) -> None:
    res = await rig.call(tool, **args)
    assert not res.ok
    assert needle in (res.error or "")
    assert all(t.is_zero for _, t in rig.robot.twists)  # nothing moved
    assert abs((await rig.pose()).x_m) < 0.01


async def test_navigation_to_kitchen(rig: Rig) -> None:
    res = await rig.call("navigation", waypoint="kitchen")
    assert res.ok, res.error
    pose = await rig.pose()
    assert math.hypot(pose.x_m - 4.5, pose.y_m - 2.0) <= 0.3
    assert res.metadata["achieved"]["stopped_by"] == "target"
    assert res.metadata["goal"]["waypoint"] == "kitchen"
    assert res.data["result"].startswith("reached the kitchen after ")
    assert rig.governor.watchdog_trips == 0


async def test_navigation_final_heading(rig: Rig) -> None:
    await rig.robot.teleport(-0.5, 0.5, 0.0)
    res = await rig.call("navigation", waypoint="充电桩")  # one of the charger's names
    assert res.ok, res.error
    st = rig.robot.inner.sim.state()  # the simulator's own pose
    assert math.hypot(st.x_m + 1.4, st.y_m) <= 0.3
    assert abs(math.degrees(st.yaw_rad)) <= 5  # charger has yaw_deg: 0
    assert res.metadata["goal"]["waypoint"] == "charger"
    assert (res.data["place"], res.data["place_zh"]) == ("charger", "充电桩")


async def test_navigation_steps_around_an_obstacle_in_its_way(rig: Rig) -> None:
    """Window -> door: the straight line runs through the red cube (eval "patrol", 2026-12-02:
    the drive ended at the obstacle stop and the patrol never came back). The robot steps
    around it and arrives, and the simulator's own pose never touches the cube."""
    cube_x, cube_y, half = 3.0, -1.6, 0.15  # loopact sim --describe: red_cube
    await rig.robot.teleport(0.95, -2.44, math.atan2(-0.6 + 2.44, 5.4 - 0.95))
    sim = rig.robot.inner.sim
    nearest = math.inf
    task = asyncio.ensure_future(rig.call("navigation", waypoint="door"))
    while not task.done():
        st = sim.state()
        gap_x = max(abs(st.x_m - cube_x) - half, 0.0)
        gap_y = max(abs(st.y_m - cube_y) - half, 0.0)
        nearest = min(nearest, math.hypot(gap_x, gap_y))
        await rig.robot.clock.sleep(0.05)
    res = await task
    assert res.ok, res.error
    assert res.metadata["detours"] >= 1
    assert res.data["result"].endswith("going around 1 obstacle") or res.metadata["detours"] > 1
    pose = await rig.pose()
    assert math.hypot(pose.x_m - 5.4, pose.y_m + 0.6) <= 0.3
    assert nearest > rig.profile.footprint_radius_m, nearest  # never touched the cube
    assert rig.governor.watchdog_trips == 0


async def test_get_current_pose_and_stale_pose(rig: Rig) -> None:
    res = await rig.call("get_current_pose")
    assert res.ok and res.data["x_m"] == 0.0 and res.data["frame"] == "odom"
    assert res.data["result"] == "the robot is at x=0.00 m, y=0.00 m, heading 0.0 degrees"
    rig.robot.stale_pose_s = 5.0
    res = await rig.call("get_current_pose")
    assert not res.ok and "old" in (res.error or "")
    res = await rig.call("move_forward", distance_m=0.5)
    assert not res.ok and "old" in (res.error or "")
    assert all(t.is_zero for _, t in rig.robot.twists)


async def test_a_stale_reading_before_a_motion_is_waited_out_not_refused(rig: Rig) -> None:
    """Odometry that stalls for a moment (three readings 1 s old, over the 0.5 s limit) while
    nothing drives: the motion waits for a fresh reading and runs (SPEC D1; measured over
    ROS 2 at load 10-12: readings up to 0.38 s late refused motions)."""
    rig.robot.stale_reads = 3
    res = await rig.call("move_forward", distance_m=0.5)
    assert res.ok, res.error
    assert rig.robot.stale_reads == 0  # the stale readings were read, and waited out
    assert abs((await rig.pose()).x_m - 0.5) < 0.05  # ground truth


async def test_cancel_zeroes_the_twist(rig: Rig) -> None:
    task = asyncio.create_task(rig.call("move_forward", distance_m=2.0, speed_mps=0.4))

    async def moving() -> bool:
        return (await rig.pose()).x_m > 0.2

    await rig.wait_for(moving)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert rig.robot.commanded.is_zero
    assert rig.governor.base_lease is None

    async def stopped() -> bool:
        return abs(rig.robot.inner.sim.state().linear_mps) < 0.01

    await rig.wait_for(stopped, 2.0)
    x = (await rig.pose()).x_m
    await rig.robot.clock.sleep(0.5)
    assert abs((await rig.pose()).x_m - x) < 0.01


async def test_stop_tool_and_stop_all_end_a_motion(rig: Rig) -> None:
    task = asyncio.create_task(rig.call("move_forward", distance_m=2.0))

    async def moving() -> bool:
        return (await rig.pose()).x_m > 0.1

    await rig.wait_for(moving)
    stop = await rig.call("stop")
    assert stop.ok
    assert rig.robot.commanded.is_zero
    res = await asyncio.wait_for(task, 10)
    assert not res.ok
    assert res.metadata["achieved"]["stopped_by"] == "cancelled"
    assert 0.1 < res.metadata["achieved"]["distance_m"] < 1.0


async def test_new_motion_replaces_old(rig: Rig) -> None:
    first = asyncio.create_task(rig.call("drive", linear_mps=0.0, angular_dps=30, duration_s=5))

    async def turning() -> bool:
        return (await rig.pose()).yaw_deg > 5

    await rig.wait_for(turning)
    second = await rig.call("turn_right", angle_deg=10)
    res1 = await asyncio.wait_for(first, 10)
    assert not res1.ok and res1.metadata["achieved"]["stopped_by"] == "cancelled"
    assert second.ok, second.error


async def test_motion_reports_progress(rig: Rig) -> None:
    from pathlib import Path

    from loopact.tools.base import ToolContext

    heard: list[str] = []
    ctx = ToolContext(task_id="t", call_id="c", workspace=Path.cwd(), progress=heard.append)
    res = await rig.tools["move_forward"].invoke({"distance_m": 0.6, "speed_mps": 0.2}, ctx)
    assert res.ok, res.error
    assert len(heard) >= 2  # ~3 s of robot time, one report per second
    assert all(h.startswith("move_forward: at x=") for h in heard)

"""``navigation`` with a map on the simulated flat: plan, follow through the governor, replan,
"no path", poses and located objects; graded by the simulator's ground truth (issue 40)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopact.eval import truth
from loopact.robot.session import RobotSession
from loopact.sim import open_sim
from loopact.sim.describe import describe_world
from loopact.sim.worldmap import write_world_map

pytestmark = pytest.mark.sim

SPEED = 8.0


async def _open(scenario: str = "flat", map_path: Path | None = None) -> RobotSession:
    return await asyncio.wait_for(open_sim(scenario=scenario, speed=SPEED, map_path=map_path), 60)


@pytest.fixture
async def flat() -> AsyncIterator[RobotSession]:
    s = await _open()
    try:
        yield s
    finally:
        await s.close()


async def call(session: RobotSession, name: str, **kw: Any) -> Any:
    tool = next(t for t in session.tools if t.name == name)
    return await tool(**kw)  # type: ignore[operator]


async def drive_watched(session: RobotSession, scenario: str, **kw: Any) -> tuple[Any, list[dict]]:
    """Call ``navigation`` and sample the simulator's own pose every 50 ms of sim time."""
    sim = session.robot.sim  # type: ignore[attr-defined]
    poses: list[dict] = []
    task = asyncio.ensure_future(call(session, "navigation", **kw))
    while not task.done():
        st = sim.state()
        poses.append({"t_s": st.stamp_s, "x_m": st.x_m, "y_m": st.y_m})
        await session.robot.clock.sleep(0.05)
    return await task, poses


def closest_gap_m(scenario: str, poses: list[dict]) -> float:
    """The smallest gap between the robot's footprint and any wall, furniture or object."""
    world = describe_world(scenario)
    r = 0.17
    solid = min(truth.footprint_gap_m(p, o, r) for p in poses for o in truth.solids(world))
    wall = min(truth.wall_gap_m(p, world["room"], r) for p in poses)
    return min(solid, wall)


async def test_go_to_the_bedroom_through_the_hallway_and_its_doorway(
    flat: RobotSession,
) -> None:
    res, poses = await drive_watched(flat, "flat", waypoint="bedroom")
    assert res.ok, res.error
    st = flat.robot.sim.state()  # type: ignore[attr-defined]
    assert math.hypot(st.x_m - 6.2, st.y_m - 2.3) <= 0.3  # ground truth, not the result
    assert flat.site.room_at(st.x_m, st.y_m) == "bedroom"
    assert closest_gap_m("flat", poses) > 0.0  # never touched a wall or furniture
    driven = truth.path_length(poses)
    assert driven <= 1.25 * res.metadata["path_m"] + 0.3
    assert res.data["result"].startswith("reached the bedroom after ")
    assert (res.data["place"], res.data["place_zh"]) == ("bedroom", "卧室")
    assert res.metadata["backend"] == "planner" and res.metadata["replans"] == 0
    assert flat.governor.watchdog_trips == 0
    # the map for the model: an image and the places with their distances by path
    shown = await call(flat, "show_map")
    assert shown.ok and len(shown.images) == 1
    assert shown.data["room"] == "bedroom"
    places = {p["place"]: p for p in shown.data["places"]}
    assert places["bedroom"]["path_m"] < 0.4 and places["kitchen"]["path_m"] > 6.0


async def test_a_blocked_doorway_is_a_clear_no_path_without_moving() -> None:
    s = await _open("flat-blocked")
    try:
        t0 = s.robot.clock.now()
        res = await call(s, "navigation", waypoint="bedroom")
        assert not res.ok
        assert res.error == (
            "no path from the hallway to the bedroom: the doorway to the bedroom is blocked"
        )
        assert s.robot.clock.now() - t0 < 5.0  # at once, not a 120 s timeout
        st = s.robot.sim.state()  # type: ignore[attr-defined]
        assert math.hypot(st.x_m, st.y_m) < 0.02  # never drove
        other = await call(s, "navigation", waypoint="厨房")  # the rest of the flat still works
        assert other.ok, other.error
    finally:
        await s.close()


async def test_an_obstacle_not_on_the_map_is_seen_replanned_around_and_reported(
    tmp_path: Path,
) -> None:
    """The map is the flat's; the world has a box in the bedroom's doorway. The robot drives,
    the obstacle stop halts it, it marks what the depth camera sees, replans, and finds no way
    into the bedroom: a clear result, the robot stopped, never touching the box."""
    yaml_path, _ = write_world_map(tmp_path, "flat")
    s = await _open("flat-blocked", map_path=yaml_path)
    try:
        res, poses = await drive_watched(s, "flat-blocked", waypoint="bedroom")
        assert not res.ok
        assert res.error.startswith("no path from the hallway to the bedroom: "), res.error
        assert closest_gap_m("flat-blocked", poses) > 0.0
        assert truth.path_length(poses) > 3.0  # it drove towards the doorway first
        sim = s.robot.sim  # type: ignore[attr-defined]
        # stopped: the base brakes to rest within a second of robot time after the result
        # (the zero twist is sent before the result; the wheels take ~0.3 s to stop)
        until = s.robot.clock.now() + 1.0
        while abs(sim.state().linear_mps) >= 0.05 and s.robot.clock.now() < until:
            await asyncio.sleep(0.01)
        assert abs(sim.state().linear_mps) < 0.05
    finally:
        await s.close()


async def test_a_pose_on_the_map_and_bad_poses(flat: RobotSession) -> None:
    res = await call(flat, "navigation", x_m=2.0, y_m=-2.6, yaw_deg=90)
    # (2.0, -2.6) is 0.3 m from the dining table's edge: reachable
    assert res.ok, res.error
    st = flat.robot.sim.state()  # type: ignore[attr-defined]
    assert math.hypot(st.x_m - 2.0, st.y_m + 2.6) <= 0.3
    assert abs(math.degrees(st.yaw_rad) - 90) <= 5
    off = await call(flat, "navigation", x_m=20.0, y_m=0.0)
    assert not off.ok and "outside" in off.error
    wall = await call(flat, "navigation", x_m=4.5, y_m=2.0)  # the living room / bedroom wall
    assert not wall.ok and "inside a wall or furniture" in wall.error
    moon = await call(flat, "navigation", waypoint="the moon")
    assert not moon.ok and "known waypoints: bathroom, bedroom, charger" in moon.error
    half = await call(flat, "navigation", x_m=1.0)
    assert not half.ok and "x_m and y_m" in half.error


async def test_drive_to_an_object_perception_has_located(flat: RobotSession) -> None:
    """Seen from the living room's doorway, the red box is located on the floor; the robot
    drives to a pose in front of it and stops there, never touching it."""
    sim = flat.robot.sim  # type: ignore[attr-defined]
    sim.set_base_pose(1.5, 1.4, math.atan2(3.2 - 1.4, 3.6 - 1.5))
    await flat.robot.clock.sleep(0.2)
    seen = await call(flat, "detect_objects")
    assert seen.ok and flat.governor is not None
    res, poses = await drive_watched(flat, "flat", waypoint="the red box")
    assert res.ok, res.error
    cube = next(o for o in describe_world("flat")["objects"] if o["name"] == "red_cube")
    gap = truth.footprint_gap_m(poses[-1], cube, 0.17)
    assert 0.0 < gap <= 0.8, gap
    assert closest_gap_m("flat", poses) > 0.0

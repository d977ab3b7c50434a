"""A robot with a laser scanner and no depth camera, against the simulator over ROS 2 (issue 41
item 6; SPEC D1, D6, X3).

``loopact sim --ros2 --profile laser.yaml`` (a profile whose only obstacle sensor is
``laser_scan``) publishes ``sensor_msgs/LaserScan`` on ``scan``, traced through the room's
geometry, and its base governor reads that scan (and no depth) for the obstacle stop. This
process checks the scan against the room's walls, then holds a joystick forward on
``/loopact/base/teleop_cmd_vel`` towards the east wall: the governor stops the base short of
it. Graded by the simulator's own pose log.
"""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

import pytest
from tests.ros2.conftest import Proc, Topic

from loopact.nodes.ros2.connector import Ros2Connector
from loopact.nodes.ros2.interfaces import ros_types
from loopact.robot.profile import load_profile
from loopact.sim.laser import ANGLE_INCREMENT_RAD, ANGLE_MIN_RAD
from loopact.sim.simlog import read_sim_log
from loopact.sim.world import ROOM_X_M, ROOM_Y_M

pytestmark = pytest.mark.ros2_e2e

MOUNT_M = 0.1


def _beam(ranges: list[float], deg: float) -> float:
    i = round((math.radians(deg) - ANGLE_MIN_RAD) / ANGLE_INCREMENT_RAD) % len(ranges)
    return ranges[i]


def _poses(path: Path) -> list[dict[str, Any]]:
    try:
        return list(read_sim_log(path))
    except (OSError, ValueError):
        return []


async def test_the_simulated_laser_scan_traces_the_room_and_stops_a_depthless_robot(
    ros_env: dict[str, str], ros: Ros2Connector, tmp_path: Path
) -> None:
    profile = tmp_path / "laser.yaml"
    profile.write_text(
        (Path(__file__).parents[2] / "src/loopact/robot/profiles/sim.yaml")
        .read_text()
        .replace("name: sim", "name: sim_laser")
        + f"obstacle_sensors: [laser_scan]\nlaser_mount_forward_m: {MOUNT_M}\n"
    )
    poses = tmp_path / "poses.jsonl"
    sim = Proc(
        ["-m", "loopact.cli", "sim", "--ros2", "--profile", str(profile), "--sim-log", str(poses)],
        ros_env,
        tmp_path / "sim.log",
    )
    try:
        sim.wait_output("ROS 2 robot up", timeout=60)
        LaserScan = ros_types("sensor_msgs.msg", "LaserScan")
        Twist = ros_types("geometry_msgs.msg", "Twist")
        scans = Topic()
        ros.subscribe_msg(
            LaserScan, "scan", ros.qos(depth=5), scans, convert=lambda m: list(m.ranges)
        )
        first = await scans.wait_for(lambda r: True, timeout=30)
        # the room's walls, from the scanner 0.1 m ahead of the base at the origin
        assert len(first) == 360
        assert abs(_beam(first, 0) - (ROOM_X_M[1] - MOUNT_M)) < 0.02, _beam(first, 0)
        assert abs(_beam(first, 180) - (MOUNT_M - ROOM_X_M[0])) < 0.02, _beam(first, 180)
        assert abs(_beam(first, 90) - ROOM_Y_M[1]) < 0.05, _beam(first, 90)
        assert all(math.isfinite(r) for r in first)  # a closed room: every beam hits

        stick = ros.publisher(Twist, "/loopact/base/teleop_cmd_vel", ros.qos(depth=10))
        forward = Twist()
        forward.linear.x = 0.5
        deadline = time.monotonic() + 60
        ahead: list[tuple[float, float]] = []
        while True:  # held until the base stops short of the wall
            stick.publish(forward)
            ahead.append((time.monotonic(), _beam(scans.items[-1], 0)))
            recent = [r for t, r in ahead if t > ahead[-1][0] - 1.0]
            if ahead[-1][1] < 1.0 and max(recent) - min(recent) < 0.005:
                break
            assert time.monotonic() < deadline, ahead[-1]
            await asyncio.sleep(0.05)  # the stick's 20 Hz: a stimulus, not a wait
        let_go = time.time()
        await scans.wait_for(lambda r: True, timeout=5)
        while not any(p["wall_s"] >= let_go + 1.0 for p in _poses(poses)):
            assert time.monotonic() < deadline + 20, "the pose log stopped"
            await asyncio.sleep(0.1)
    finally:
        sim.stop()
    prof = load_profile("sim")
    front = max(p["x_m"] for p in _poses(poses)) + prof.footprint_radius_m
    gap = ROOM_X_M[1] - front  # from the base's front to the east wall, ground truth
    assert gap > 0.0, gap  # it never touched the wall
    # stopped by the scan at the obstacle distance (not short of it by something else)
    assert abs(gap - prof.limits.obstacle_stop_m) < 0.15, gap

"""A robot without depth over ROS 2 (issue 41 item 6): :class:`Ros2Robot` reads the laser scan
(``sensor_msgs/LaserScan``, NaN and inf ranges as sent) and the bumper (``std_msgs/Bool``) its
profile declares, from a plain publisher; the governor's obstacle stop reads them."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from loopact.nodes.ros2.interfaces import ros_types
from loopact.robot.clearance import scan_clearance
from loopact.robot.profile import load_profile
from loopact.robot.ros2_robot import Ros2Robot


async def test_scan_and_bumper_arrive_with_their_special_values(ros: Any) -> None:
    prof = load_profile("sim")
    prof = prof.model_copy(update={"obstacle_sensors": ("laser_scan", "bumper")})
    robot = Ros2Robot(ros, prof, command="direct")
    await robot.start()
    RosScan = ros_types("sensor_msgs.msg", "LaserScan")
    Bool = ros_types("std_msgs.msg", "Bool")
    scan_pub = ros.publisher(RosScan, prof.topics.scan, ros.qos(depth=2))
    bump_pub = ros.publisher(Bool, prof.topics.bumper, ros.qos(depth=10))
    msg = RosScan()
    msg.angle_min, msg.angle_increment = -math.pi / 2, math.pi / 4
    msg.range_min, msg.range_max = 0.12, 3.5
    msg.ranges = [math.nan, math.inf, 1.0, math.nan, math.inf]

    async def arrived() -> Any:
        while robot._scan is None or robot._bumper is None:
            scan_pub.publish(msg)
            bump_pub.publish(Bool(data=True))
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(arrived(), 20)
        scan = await robot.get_scan()
        assert math.isnan(scan.ranges_m[0]) and math.isinf(scan.ranges_m[1])
        assert scan_clearance(scan, prof) == pytest.approx(1.0 - prof.footprint_radius_m)
        assert (await robot.get_bumper()).pressed is True
    finally:
        await robot.close()

"""Another team's node in plain rclpy (no loopact): latches the e-stop while the robot drives.

``python plain_estop_node.py AGENT`` watches ``/AGENT/base/status`` and ``odom`` and, the first
time the status shows the agent's motion driving the base forward and the odometry shows it
0.1 m or more from where the guard first saw it, publishes ``stop`` on
``/AGENT/base/emergency_stop`` (again every 0.1 s until the status shows the latch), prints
``LATCHED <unix time of the first stop>`` and exits. Issue 41, acceptance 1.
"""

from __future__ import annotations

import json
import math
import sys
import time

import rclpy
from nav_msgs.msg import Odometry
from rclpy.node import Node
from std_msgs.msg import String


class EstopWhenDriving(Node):
    def __init__(self, agent: str) -> None:
        super().__init__("bumper_guard")
        self.publisher = self.create_publisher(String, f"/{agent}/base/emergency_stop", 10)
        self.create_subscription(String, f"/{agent}/base/status", self.on_status, 10)
        self.create_subscription(Odometry, "odom", self.on_odom, 10)
        self.start: tuple[float, float] | None = None
        self.moved_m = 0.0
        self.create_timer(0.1, self.on_timer)
        self.first_stop: float | None = None
        self.latched = False

    def on_odom(self, msg: Odometry) -> None:
        here = (msg.pose.pose.position.x, msg.pose.pose.position.y)
        self.start = self.start or here
        self.moved_m = math.dist(self.start, here)

    def on_status(self, msg: String) -> None:
        status = json.loads(msg.data)
        driving = status.get("base_owner") == "agent" and (
            status.get("last_twist", {}).get("linear_mps", 0.0) > 0.05
        )
        if driving and self.moved_m >= 0.1 and self.first_stop is None:
            self.stop()
        if self.first_stop is not None and status.get("emergency_stop"):
            self.latched = True

    def on_timer(self) -> None:
        if self.first_stop is not None and not self.latched:
            self.stop()

    def stop(self) -> None:
        if self.first_stop is None:
            self.first_stop = time.time()
        self.publisher.publish(String(data="stop"))


def main() -> None:
    rclpy.init()
    node = EstopWhenDriving(sys.argv[1])
    try:
        while rclpy.ok() and not node.latched:
            rclpy.spin_once(node, timeout_sec=0.1)
        print(f"LATCHED {node.first_stop}", flush=True)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()

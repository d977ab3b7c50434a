"""A joystick-style teleop node in plain rclpy (no loopact): takes over while the agent drives.

``python plain_joystick_node.py AGENT`` watches ``/AGENT/base/status``; the first time it
shows the agent's motion driving forward, it publishes ``geometry_msgs/Twist`` (turning left
at 0.8 rad/s, as a held stick would) on ``/AGENT/base/teleop_cmd_vel`` at 20 Hz for 2 s, then
lets go (publishes nothing more), prints ``LET GO <unix time of the last command>``, and once
the status shows the hand-back prints ``HANDED BACK`` and exits. Issue 41, acceptance 4.
"""

from __future__ import annotations

import json
import sys
import time

import rclpy
from geometry_msgs.msg import Twist
from rclpy.node import Node
from std_msgs.msg import String

HOLD_S = 2.0


class Joystick(Node):
    def __init__(self, agent: str) -> None:
        super().__init__("joystick_teleop")
        self.publisher = self.create_publisher(Twist, f"/{agent}/base/teleop_cmd_vel", 10)
        self.create_subscription(String, f"/{agent}/base/status", self.on_status, 10)
        self.create_timer(0.05, self.on_timer)
        self.started: float | None = None
        self.last: float | None = None
        self.sent_at = 0.0
        self.took_over = False
        self.handed_back = False

    def on_status(self, msg: String) -> None:
        status = json.loads(msg.data)
        driving = status.get("base_owner") == "agent" and (
            status.get("last_twist", {}).get("linear_mps", 0.0) > 0.05
        )
        if driving and self.started is None:
            self.started = time.time()
        if "base" in (status.get("operator") or {}):
            self.took_over = True
        elif self.took_over and self.last is not None:
            self.handed_back = True

    def on_timer(self) -> None:
        if self.started is None or self.last is not None:
            return
        if time.time() - self.started < HOLD_S:
            stick = Twist()
            stick.angular.z = 0.8
            self.publisher.publish(stick)
            self.sent_at = time.time()
        else:
            self.last = self.sent_at
            print(f"LET GO {self.last}", flush=True)


def main() -> None:
    rclpy.init()
    node = Joystick(sys.argv[1])
    try:
        while rclpy.ok() and not node.handed_back:
            rclpy.spin_once(node, timeout_sec=0.1)
        print("HANDED BACK", flush=True)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    main()

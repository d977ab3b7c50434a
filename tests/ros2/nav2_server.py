"""A ``nav2_msgs/action/NavigateToPose`` action server on top of loopact's simulator and planner,
for the tests of the Nav2 backend (issue 40): Nav2 itself cannot be installed here.

Run as its own process next to ``loopact sim --ros2 --scenario flat`` (same ROS_DOMAIN_ID)::

    python tests/ros2/nav2_server.py --mode normal|abort|silent|slow|slow_cancel [--agent loopact]

It plans on the simulator's map (:func:`loopact.sim.worldmap.world_map`, loopact's planner),
drives the robot along the plan by publishing ``geometry_msgs/Twist`` requests to the base-side
governor (``/<agent>/base/cmd_vel``: the governor keeps owning ``cmd_vel``, as with a real Nav2
remapped to it), reads the pose from ``odom`` (the simulator's odometry is its map), and
publishes ``NavigateToPose`` feedback at 5 Hz. It prints one line per event for the test:
``READY``, ``GOAL {json}`` (the goal's pose and frame), ``EXECUTING``, ``CANCEL <monotonic
time>``, ``CANCELED``,
``ABORTED <code>``, ``SUCCEEDED``.

Modes: ``normal`` drives to the goal; ``abort`` drives 0.5 s, then aborts with error code 9003
(TIMEOUT); ``silent`` never answers a goal request (its goal callback blocks); ``slow``
accepts a goal 4 s after printing ``GOAL`` (a busy server: the client may give up on it first),
then drives like ``normal``; ``slow_cancel`` answers its first cancel request 3 s late (past the
client's 2 s), the next ones at once.
"""

from __future__ import annotations

import argparse
import json
import math
import threading
import time

import rclpy
from geometry_msgs.msg import Twist
from nav2_msgs.action import NavigateToPose
from nav_msgs.msg import Odometry
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from loopact.maps import inflate, plan
from loopact.sim.worldmap import world_map

SLOW_ACCEPT_S = 4.0
"""``--mode slow``: the goal's answer leaves this long after ``GOAL`` is printed (inside the
client's 5 s), seconds."""


def say(line: str) -> None:
    print(line, flush=True)


class FakeNav2(Node):
    """The action server (see the module docstring)."""

    def __init__(self, mode: str, agent: str, scenario: str) -> None:
        super().__init__("fake_nav2")
        self.mode = mode
        self.cancels = 0
        self.pose = (0.0, 0.0, 0.0)
        self.costmap = inflate(world_map(scenario), 0.17, 0.15)
        group = ReentrantCallbackGroup()
        self.cmd = self.create_publisher(Twist, f"/{agent}/base/cmd_vel", 10)
        self.create_subscription(Odometry, "odom", self.on_odom, 10, callback_group=group)
        self.server = ActionServer(
            self,
            NavigateToPose,
            "navigate_to_pose",
            execute_callback=self.execute,
            goal_callback=self.on_goal,
            cancel_callback=self.on_cancel,
            callback_group=group,
        )

    def on_odom(self, msg: Odometry) -> None:
        q = msg.pose.pose.orientation
        yaw = math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))
        self.pose = (msg.pose.pose.position.x, msg.pose.pose.position.y, yaw)

    def on_goal(self, goal: NavigateToPose.Goal) -> GoalResponse:
        if self.mode == "silent":
            threading.Event().wait()  # never answers
        p = goal.pose
        say(
            "GOAL "
            + json.dumps(
                {
                    "frame_id": p.header.frame_id,
                    "x": p.pose.position.x,
                    "y": p.pose.position.y,
                    "qz": p.pose.orientation.z,
                    "qw": p.pose.orientation.w,
                }
            )
        )
        if self.mode == "slow":
            time.sleep(SLOW_ACCEPT_S)
        return GoalResponse.ACCEPT

    def on_cancel(self, _handle: object) -> CancelResponse:
        say(f"CANCEL {time.monotonic():.6f}")
        self.cancels += 1
        if self.mode == "slow_cancel" and self.cancels == 1:
            time.sleep(3.0)
        return CancelResponse.ACCEPT

    def stop_base(self) -> None:
        self.cmd.publish(Twist())

    def execute(self, handle: object) -> NavigateToPose.Result:
        goal = handle.request.pose.pose.position  # type: ignore[attr-defined]
        x, y, _ = self.pose
        path = list(plan(self.costmap, (x, y), (goal.x, goal.y)).points_m)
        result = NavigateToPose.Result()
        say("EXECUTING")
        started = time.monotonic()
        k = 0
        while True:
            if handle.is_cancel_requested:  # type: ignore[attr-defined]
                self.stop_base()
                handle.canceled()  # type: ignore[attr-defined]
                say("CANCELED")
                return result
            x, y, yaw = self.pose
            remaining = math.dist((x, y), (goal.x, goal.y))
            if self.mode == "abort" and time.monotonic() - started > 0.5:
                self.stop_base()
                result.error_code = NavigateToPose.Result.TIMEOUT
                result.error_msg = "the controller took too long"
                handle.abort()  # type: ignore[attr-defined]
                say(f"ABORTED {result.error_code}")
                return result
            if remaining < 0.1:
                self.stop_base()
                handle.succeed()  # type: ignore[attr-defined]
                say("SUCCEEDED")
                return result
            while len(path) > 1 and math.dist((x, y), path[0]) < 0.3:
                path.pop(0)
            tx, ty = path[0]
            err = math.atan2(ty - y, tx - x) - yaw
            err = math.atan2(math.sin(err), math.cos(err))
            twist = Twist()
            twist.angular.z = max(-1.0, min(1.0, 2.0 * err))
            twist.linear.x = 0.3 * max(0.0, math.cos(err)) if abs(err) < 0.8 else 0.0
            self.cmd.publish(twist)
            if k % 4 == 0:
                fb = NavigateToPose.Feedback()
                fb.current_pose.header.frame_id = "map"
                fb.current_pose.pose.position.x = x
                fb.current_pose.pose.position.y = y
                fb.distance_remaining = float(remaining)
                eta = remaining / 0.3
                fb.estimated_time_remaining.sec = int(eta)
                fb.number_of_recoveries = 0
                handle.publish_feedback(fb)  # type: ignore[attr-defined]
            k += 1
            time.sleep(0.05)


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument(
        "--mode", choices=("normal", "abort", "silent", "slow", "slow_cancel"), default="normal"
    )
    args.add_argument("--agent", default="loopact")
    args.add_argument("--scenario", default="flat")
    opts = args.parse_args()
    rclpy.init()
    node = FakeNav2(opts.mode, opts.agent, opts.scenario)
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    say("READY")
    try:
        executor.spin()
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()

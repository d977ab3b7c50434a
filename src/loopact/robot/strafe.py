"""A holonomic (mecanum) base moves sideways: the ``strafe`` tool (SPEC D1, D2; issue 43).

``strafe(distance_m)`` moves the robot sideways by a distance, left positive, keeping its
heading, closed-loop on odometry like ``move_forward``; the governor limits the sideways speed
(``limits.max_lateral_mps``), the geofence and the deadline as it limits forward motion, and
the command goes out as ``geometry_msgs/Twist.linear.y``. Nothing watches the sides for
obstacles, so the speed is low by default. A differential base cannot move sideways: the tool
is offered only on a mecanum profile and refuses clearly on any other (so does ``drive`` with a
lateral speed, :func:`loopact.robot.motion.drive_for`).
"""

from __future__ import annotations

import math
from typing import Any

from loopact.errors import RobotError, SafetyError, StopCause, ToolArgumentError
from loopact.i18n import Phrase
from loopact.robot.interface import Pose, Twist, normalize_angle
from loopact.robot.lease import MotionLease
from loopact.robot.motion import (
    HEADING_GAIN,
    K_LINEAR,
    LINEAR_TOL_M,
    MIN_LINEAR_MPS,
    SETTLE_MARGIN_S,
    Progress,
    RobotEnv,
    num,
    run_motion,
    speed,
)
from loopact.robot.outcome import failed, motion_result, refused
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool


def holonomic_or_refuse(env: RobotEnv, what: str) -> None:
    """Refuse sideways motion on a base that cannot do it.

    Raises:
        SafetyError: The profile's drive is not ``mecanum`` (``what`` names the request).
    """
    if env.profile.drive != "mecanum":
        raise SafetyError(Phrase("motion.not_holonomic", what=what, drive=env.profile.drive))


async def strafe(
    env: RobotEnv, distance_m: float, speed_mps: float = 0.15, progress: Progress | None = None
) -> ToolResult:
    """Move sideways by ``distance_m`` metres (left positive), heading kept.

    Args:
        env: The robot.
        distance_m: Signed distance, metres: positive left, negative right; not 0.
        speed_mps: Sideways speed, m/s (clamped to ``limits.max_lateral_mps``).
        progress: Told the pose about once a second.

    Returns:
        The motion's result (``achieved.distance_m`` signed, left positive); refused on a
        differential base, for a non-finite or zero distance, or an end point outside the
        geofence.
    """
    try:
        holonomic_or_refuse(env, "strafe")
        distance_m = num("distance_m", distance_m)
        if distance_m == 0:
            raise ToolArgumentError(Phrase("motion.strafe_zero"))
        clamped: dict[str, Any] = {}
        v = speed("speed_mps", speed_mps, env.profile.limits.lateral_mps, clamped)
        start = await env.pose()
        left = start.yaw_rad + math.pi / 2
        ex = start.x_m + distance_m * math.cos(left)
        ey = start.y_m + distance_m * math.sin(left)
        if not env.site.contains(ex, ey) and env.site.contains(start.x_m, start.y_m):
            return failed(Phrase("motion.outside_fence", x_m=ex, y_m=ey), StopCause.GEOFENCE)
        need_s = abs(distance_m) / v
        max_s = env.profile.limits.max_motion_duration_s
        if need_s > max_s:
            raise SafetyError(
                Phrase(
                    "motion.too_long_move",
                    distance_m=abs(distance_m),
                    speed_mps=v,
                    need_s=need_s,
                    max_s=max_s,
                    split_m=v * max_s * 0.9,
                )
            )
    except (ToolArgumentError, RobotError) as exc:
        return refused(exc)
    sign = 1.0 if distance_m > 0 else -1.0
    goal = abs(distance_m)

    def sideways(pose: Pose) -> float:
        dx, dy = pose.x_m - start.x_m, pose.y_m - start.y_m
        return dx * math.cos(left) + dy * math.sin(left)

    async def step(lease: MotionLease, pose: Pose) -> bool:
        remaining = goal - sign * sideways(pose)
        if remaining <= LINEAR_TOL_M:
            return True
        cmd = min(v, max(MIN_LINEAR_MPS, K_LINEAR * remaining))
        heading_err = normalize_angle(start.yaw_rad - pose.yaw_rad)
        await env.governor.command(lease, Twist(0.0, HEADING_GAIN * heading_err, sign * cmd))
        return False

    try:
        lease, pose = await run_motion(
            env, "strafe", min(max_s, need_s * 1.5 + SETTLE_MARGIN_S), False, step, progress
        )
    except RobotError as exc:
        return refused(exc)
    moved = sideways(pose)
    turned = math.degrees(normalize_angle(pose.yaw_rad - start.yaw_rad))
    way = "motion.strafed_left" if moved >= 0 else "motion.strafed_right"
    return motion_result(lease, moved, turned, pose, clamped, Phrase(way, distance_m=abs(moved)))


def make_strafe_tools(env: RobotEnv) -> list[Tool]:
    """``strafe`` on a mecanum profile; none on a differential one."""
    if env.profile.drive != "mecanum":
        return []

    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=90,
        name="strafe",
        directions={"distance_m": ("left", "right")},
        examples=[("slide 0.3 m to the left", {"distance_m": 0.3})],
    )
    async def strafe_tool(
        ctx: ToolContext, distance_m: float, speed_mps: float = 0.15
    ) -> ToolResult:
        """Move the robot sideways without turning (mecanum base). 横移。

        Args:
            distance_m: How far, in metres: positive to the left, negative to the right.
            speed_mps: Sideways speed in metres per second (clamped to the robot's limit).
        """
        return await strafe(env, distance_m, speed_mps, ctx.progress)

    return [strafe_tool]

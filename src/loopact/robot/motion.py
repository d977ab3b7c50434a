"""Motion tools (SPEC D2, C5): move, turn, drive, stop, read the pose.

All motion is closed-loop on odometry and goes through the safety governor (X3). Speeds above
the profile's limits are clamped (the motion takes longer, it is never shortened) and reported
in ``metadata.clamped``. Every motion result carries ``metadata.achieved = {distance_m,
angle_deg, stopped_by, cause}`` and says what happened as a typed outcome
(:mod:`loopact.robot.outcome`). Cancelling a running tool (the agent's preemption, SPEC A6) zeroes
the base in a ``finally`` before the ``CancelledError`` propagates.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from loopact.errors import RobotError, SafetyError, StaleDataError, StopCause, ToolArgumentError
from loopact.i18n import Phrase
from loopact.robot.governor import SafetyGovernor
from loopact.robot.interface import Pose, Robot, Twist, normalize_angle
from loopact.robot.lease import MotionLease
from loopact.robot.located import ObjectMemory
from loopact.robot.outcome import failed, motion_result, refused
from loopact.robot.profile import HardwareProfile, SiteMap
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool
from loopact.vision.gate import ImageGate

CONTROL_PERIOD_S = 0.05
"""Control loop period on the robot clock, seconds."""

LINEAR_TOL_M = 0.004
ANGULAR_TOL_RAD = math.radians(0.3)
MIN_LINEAR_MPS = 0.04
MIN_ANGULAR_RADPS = math.radians(6.0)
K_LINEAR = 1.5  # 1/s: slow-down gain near the target (v = K * remaining)
K_ANGULAR = 1.6  # 1/s
HEADING_GAIN = 2.0  # 1/s: keeps straight moves straight
SETTLE_MARGIN_S = 3.0  # extra time for accelerating and the slow approach
PROGRESS_EVERY_S = 1.0  # robot-clock seconds between progress reports
REST_WINDOW_S = 0.2  # robot-clock seconds over which a base that moved less than ...
REST_M = 0.002  # ... this many metres and ...
REST_RAD = math.radians(0.2)  # ... this many radians is at rest
REST_WAIT_S = 3.0  # the longest wait for a zeroed base to come to rest

Progress = Callable[[str], None]


@dataclass
class RobotEnv:
    """What the robot tools share: the robot, its governor, profile, site and image gate, and
    what perception has located (:class:`~loopact.robot.located.ObjectMemory`)."""

    robot: Robot
    governor: SafetyGovernor
    profile: HardwareProfile
    site: SiteMap
    gate: ImageGate
    located: ObjectMemory = field(default_factory=ObjectMemory)

    async def pose(self) -> Pose:
        """The latest odometry pose, refusing stale data (SPEC D1).

        Raises:
            StaleDataError: Older than ``profile.pose_max_age_s`` on the robot clock.
        """
        return await self._fresh(self.robot.get_pose)

    async def map_pose(self) -> Pose:
        """The pose in the ``map`` frame when the robot is localized, else odometry (its
        ``frame`` says which; issue 40).

        A robot that localizes (:class:`~loopact.robot.ros2_robot.Ros2Robot` with ``map`` ->
        ``odom`` on TF) offers ``get_map_pose()``; the simulator's odometry is its map.

        Raises:
            StaleDataError: The odometry is stale.
            RobotError: The robot was localized and lost it (no ``map`` transform for long).
        """
        get = getattr(self.robot, "get_map_pose", None)
        if get is None:
            return await self.pose()
        return await self._fresh(get)

    async def _fresh(self, get: Callable[[], Awaitable[Pose]]) -> Pose:
        """The pose ``get`` returns, no older than ``profile.pose_max_age_s`` (SPEC D1).

        While nothing drives the base, a stale reading is waited out for up to one more
        ``pose_max_age_s`` (wall time) for the next one: a publisher that stalls for a moment
        on a loaded machine (measured over ROS 2 at load 10-12: odometry up to 0.38 s late)
        delays the motion instead of refusing it. During a motion nothing is waited for: the
        robot would move on a command it cannot check.

        Raises:
            StaleDataError: The reading is (still) older than the limit.
        """
        pose: Pose = await get()
        if self._age(pose) <= self.profile.pose_max_age_s or self.governor.base_lease is not None:
            return self._checked(pose)
        deadline = time.monotonic() + self.profile.pose_max_age_s
        while self._age(pose) > self.profile.pose_max_age_s and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            pose = await get()
        return self._checked(pose)

    def _age(self, pose: Pose) -> float:
        return self.robot.clock.now() - pose.stamp_s

    def _checked(self, pose: Pose) -> Pose:
        age = self._age(pose)
        if age > self.profile.pose_max_age_s:
            limit = self.profile.pose_max_age_s
            raise StaleDataError(Phrase("robot.stale_pose", age_s=age, limit_s=limit), age_s=age)
        return pose


def num(name: str, value: float) -> float:
    """``value`` as a float; refuses NaN and infinities (ToolArgumentError naming ``name``)."""
    if not math.isfinite(value):
        raise ToolArgumentError(Phrase("motion.not_finite", name=name, value=value))
    return float(value)


async def run_motion(
    env: RobotEnv,
    name: str,
    duration_s: float,
    forward: bool,
    step: Callable[[MotionLease, Pose], Awaitable[bool]],
    progress: Progress | None = None,
) -> tuple[MotionLease, Pose]:
    """Own the base and call ``step(lease, pose)`` every control period until it returns True.

    ``step`` sends commands through the governor. The base is zeroed in a ``finally`` (also on
    cancellation). ``progress`` (the tool context's, SPEC F1) hears the pose about once per
    second of robot time.

    Returns:
        The lease (``stopped_by`` set) and the final pose.

    Raises:
        SafetyError, EmergencyStopError: The governor refused to start.
        StaleDataError: The pose went stale (the base is zeroed first).
    """
    gov = env.governor
    clock = env.robot.clock
    lease = await gov.begin_motion(name, duration_s, forward=forward)
    next_report = clock.now() + PROGRESS_EVERY_S
    try:
        while lease.active:
            pose = await env.pose()
            if progress is not None and clock.now() >= next_report:
                next_report += PROGRESS_EVERY_S
                progress(
                    f"{name}: at x={pose.x_m:.2f} m, y={pose.y_m:.2f} m, {pose.yaw_deg:.0f} deg"
                )
            if await step(lease, pose):
                break
            if not lease.active:
                break
            await lease.sleep(env.robot.clock, CONTROL_PERIOD_S)
    finally:
        await gov.end_motion(lease)
    return lease, await env.pose()


async def pose_at_rest(env: RobotEnv, pose: Pose) -> Pose:
    """The pose once a zeroed base has stopped coasting, starting from ``pose``.

    Polls the pose every :data:`REST_WINDOW_S` of robot time until it moved less than
    :data:`REST_M` metres and :data:`REST_RAD` radians in one window, for at most
    :data:`REST_WAIT_S`; then the last pose. A ``drive`` at 0.5 m/s coasts about 0.13 m after
    it is zeroed (SPEC D2: the result says where the robot is, not where it was).

    Raises:
        StaleDataError: The pose went stale.
    """
    clock = env.robot.clock
    deadline = clock.now() + REST_WAIT_S
    while clock.now() < deadline:
        await clock.sleep(REST_WINDOW_S)
        now = await env.pose()
        moved = math.hypot(now.x_m - pose.x_m, now.y_m - pose.y_m)
        turned = abs(normalize_angle(now.yaw_rad - pose.yaw_rad))
        pose = now
        if moved < REST_M and turned < REST_RAD:
            break
    return pose


def speed(name: str, requested: float, limit: float, clamped: dict[str, Any]) -> float:
    """A positive speed clamped to ``limit`` (noted in ``clamped``); refuses <= 0 and NaN."""
    requested = num(name, requested)
    if requested <= 0:
        raise ToolArgumentError(Phrase("motion.not_positive", name=name, value=requested))
    if requested > limit:
        clamped[name] = {"requested": requested, "applied": limit}
        return limit
    return requested


async def straight(
    env: RobotEnv,
    name: str,
    distance_m: float,
    speed_mps: float,
    sign: int,
    progress: Progress | None = None,
) -> ToolResult:
    """Drive ``distance_m`` straight ahead (sign +1) or back (-1), closed-loop on odometry."""
    try:
        distance_m = num("distance_m", distance_m)
        if distance_m <= 0:
            other = "move_backward" if sign > 0 else "move_forward"
            raise ToolArgumentError(
                Phrase("motion.distance_other_way", value=distance_m, other=other)
            )
        clamped: dict[str, Any] = {}
        v = speed("speed_mps", speed_mps, env.profile.limits.max_linear_mps, clamped)
        # the geofence first: a move that leaves it is refused for that, never with advice
        # to split it into shorter moves towards the wall (issue 20's refusal tasks)
        start = await env.pose()
        ex = start.x_m + sign * distance_m * math.cos(start.yaw_rad)
        ey = start.y_m + sign * distance_m * math.sin(start.yaw_rad)
        if not env.site.contains(ex, ey) and env.site.contains(start.x_m, start.y_m):
            outside = Phrase("motion.outside_fence", x_m=ex, y_m=ey)
            return failed(outside, StopCause.GEOFENCE)
        need_s = distance_m / v
        max_s = env.profile.limits.max_motion_duration_s
        if need_s > max_s:
            raise SafetyError(
                Phrase(
                    "motion.too_long_move",
                    distance_m=distance_m,
                    speed_mps=v,
                    need_s=need_s,
                    max_s=max_s,
                    split_m=v * max_s * 0.9,
                )
            )
    except (ToolArgumentError, RobotError) as exc:
        return refused(exc)
    travelled = 0.0

    async def step(lease: MotionLease, pose: Pose) -> bool:
        nonlocal travelled
        dx, dy = pose.x_m - start.x_m, pose.y_m - start.y_m
        travelled = sign * (dx * math.cos(start.yaw_rad) + dy * math.sin(start.yaw_rad))
        remaining = distance_m - travelled
        if remaining <= LINEAR_TOL_M:
            return True
        cmd_v = min(v, max(MIN_LINEAR_MPS, K_LINEAR * remaining))
        heading_err = normalize_angle(start.yaw_rad - pose.yaw_rad)
        await env.governor.command(lease, Twist(sign * cmd_v, HEADING_GAIN * heading_err))
        return False

    try:
        lease, pose = await run_motion(
            env, name, min(max_s, need_s * 1.5 + SETTLE_MARGIN_S), sign > 0, step, progress
        )
    except RobotError as exc:
        return refused(exc)
    dx, dy = pose.x_m - start.x_m, pose.y_m - start.y_m
    travelled = sign * (dx * math.cos(start.yaw_rad) + dy * math.sin(start.yaw_rad))
    turned = math.degrees(normalize_angle(pose.yaw_rad - start.yaw_rad))
    way = "motion.moved_forward" if sign > 0 else "motion.moved_backward"
    summary = Phrase(way, distance_m=abs(travelled))
    return motion_result(lease, travelled, turned, pose, clamped, summary)


async def rotate(
    env: RobotEnv,
    name: str,
    angle_deg: float,
    speed_dps: float,
    sign: int,
    progress: Progress | None = None,
) -> ToolResult:
    """Turn in place by ``angle_deg`` (sign +1 left / counter-clockwise, -1 right)."""
    try:
        angle_deg = num("angle_deg", angle_deg)
        if angle_deg <= 0 or angle_deg > 720:
            other = "turn_right" if sign > 0 else "turn_left"
            raise ToolArgumentError(Phrase("motion.angle_range", value=angle_deg, other=other))
        clamped: dict[str, Any] = {}
        w_dps = speed("speed_dps", speed_dps, env.profile.limits.max_angular_dps, clamped)
        need_s = angle_deg / w_dps
        max_s = env.profile.limits.max_motion_duration_s
        if need_s > max_s:
            raise SafetyError(
                Phrase(
                    "motion.too_long_turn",
                    angle_deg=angle_deg,
                    speed_dps=w_dps,
                    need_s=need_s,
                    max_s=max_s,
                )
            )
        start = await env.pose()
    except (ToolArgumentError, RobotError) as exc:
        return refused(exc)
    target = math.radians(angle_deg)
    w = math.radians(w_dps)
    turned = 0.0
    last_yaw = start.yaw_rad

    async def step(lease: MotionLease, pose: Pose) -> bool:
        nonlocal turned, last_yaw
        turned += sign * normalize_angle(pose.yaw_rad - last_yaw)
        last_yaw = pose.yaw_rad
        remaining = target - turned
        if remaining <= ANGULAR_TOL_RAD:
            return True
        cmd_w = min(w, max(MIN_ANGULAR_RADPS, K_ANGULAR * remaining))
        await env.governor.command(lease, Twist(0.0, sign * cmd_w))
        return False

    try:
        lease, pose = await run_motion(
            env, name, min(max_s, need_s * 1.5 + SETTLE_MARGIN_S), False, step, progress
        )
    except (ToolArgumentError, RobotError) as exc:
        return refused(exc)
    turned += sign * normalize_angle(pose.yaw_rad - last_yaw)
    moved = math.hypot(pose.x_m - start.x_m, pose.y_m - start.y_m)
    way = "motion.turned_left" if sign > 0 else "motion.turned_right"
    summary = Phrase(way, angle_deg=abs(math.degrees(turned)))
    return motion_result(lease, moved, sign * math.degrees(turned), pose, clamped, summary)


async def drive_for(
    env: RobotEnv,
    linear_mps: float,
    angular_dps: float,
    duration_s: float,
    progress: Progress | None = None,
    lateral_mps: float = 0.0,
) -> ToolResult:
    """Hold a velocity for ``duration_s`` (clamped to the limits) through the governor.

    ``lateral_mps`` (m/s, left positive; ``geometry_msgs/Twist.linear.y``) moves a mecanum
    base sideways; on any other base a non-zero one is refused (issue 43)."""
    gov = env.governor
    try:
        lin = num("linear_mps", linear_mps)
        ang = num("angular_dps", angular_dps)
        lat = num("lateral_mps", lateral_mps)
        dur = num("duration_s", duration_s)
        if lat != 0.0 and env.profile.drive != "mecanum":
            raise SafetyError(
                Phrase("motion.not_holonomic", what="lateral_mps", drive=env.profile.drive)
            )
        if dur <= 0:
            raise ToolArgumentError(Phrase("motion.not_positive", name="duration_s", value=dur))
        clamped: dict[str, Any] = {}
        max_s = env.profile.limits.max_motion_duration_s
        if dur > max_s:
            clamped["duration_s"] = {"requested": dur, "applied": max_s}
            dur = max_s
        twist, tw_clamped = gov.clamp_twist(Twist(lin, math.radians(ang), lat))
        clamped.update(tw_clamped)
        start = await env.pose()
    except (ToolArgumentError, RobotError) as exc:
        return refused(exc)
    clock = env.robot.clock
    t_end: float | None = None  # set when the base is ready (see SafetyGovernor.begin_motion)
    path = 0.0
    turned = 0.0
    last = start

    async def step(lease: MotionLease, pose: Pose) -> bool:
        nonlocal path, turned, last, t_end
        path += math.hypot(pose.x_m - last.x_m, pose.y_m - last.y_m)
        turned += normalize_angle(pose.yaw_rad - last.yaw_rad)
        last = pose
        if t_end is None:
            t_end = clock.now() + dur
        if clock.now() >= t_end:
            return True
        await gov.command(lease, twist)
        return False

    try:
        # The governor's deadline sits a little after the requested end (settling margin).
        lease, pose = await run_motion(
            env, "drive", min(max_s, dur + 0.5), twist.linear_mps > 0, step, progress
        )
        pose = await pose_at_rest(env, pose)
    except RobotError as exc:
        return refused(exc)
    path += math.hypot(pose.x_m - last.x_m, pose.y_m - last.y_m)
    turned += normalize_angle(pose.yaw_rad - last.yaw_rad)
    if lease.cause is StopCause.DEADLINE and t_end is not None and clock.now() >= t_end:
        lease.cause = StopCause.TARGET  # the governor's deadline came with the drive's own end
    return motion_result(
        lease,
        math.copysign(path, twist.linear_mps or 1.0),
        math.degrees(turned),
        pose,
        clamped,
        Phrase("motion.drove", duration_s=dur, distance_m=path, angle_deg=math.degrees(turned)),
    )


def make_motion_tools(env: RobotEnv) -> list[Tool]:
    """The motion tools bound to ``env`` (SPEC D2), in the order the model sees them:
    ``move_forward``, ``move_backward``, ``turn_left``, ``turn_right``, ``drive``, ``stop``,
    ``get_current_pose``."""
    return [*_straight_tools(env), *_turn_tools(env), *_velocity_and_pose_tools(env)]


def _straight_tools(env: RobotEnv) -> list[Tool]:
    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=90,
        examples=[("roll forward 0.8 m", {"distance_m": 0.8})],
    )
    async def move_forward(
        ctx: ToolContext, distance_m: float, speed_mps: float = 0.2
    ) -> ToolResult:
        """Drive straight ahead by a distance, closed-loop on odometry; stops for obstacles. 前进。

        Args:
            distance_m: How far to drive, in metres (> 0).
            speed_mps: Speed in metres per second (clamped to the robot's limit).
        """
        return await straight(env, "move_forward", distance_m, speed_mps, +1, ctx.progress)

    @tool(safety=SafetyClass.MOTION, timeout_s=90)
    async def move_backward(
        ctx: ToolContext, distance_m: float, speed_mps: float = 0.2
    ) -> ToolResult:
        """Drive straight backwards by a distance (no rear obstacle sensor: go slowly). 后退。

        Args:
            distance_m: How far to back up, in metres (> 0).
            speed_mps: Speed in metres per second (clamped to the robot's limit).
        """
        return await straight(env, "move_backward", distance_m, speed_mps, -1, ctx.progress)

    return [move_forward, move_backward]


def _turn_tools(env: RobotEnv) -> list[Tool]:
    # A half turn is 180 degrees, as the catalogue's unit hint says ("turn around -> 180").
    # A long catalogue shows only each tool's first example (toolprompt.pick_examples, 16 in
    # all) and every example of a tool claims a first-rank slot: the U-turn is on turn_left
    # alone, Chinese first (the 0.5B brain drove forward for 掉头 while the hint fixed
    # "turn around"; issue 20), and turn_right carries none.
    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=90,
        examples=[
            ("掉个头", {"angle_deg": 180}),
            ("do a U-turn", {"angle_deg": 180}),
            ("向左转半圈", {"angle_deg": 180}),
        ],
    )
    async def turn_left(ctx: ToolContext, angle_deg: float, speed_dps: float = 45) -> ToolResult:
        """Turn the whole robot in place to the left (counter-clockwise) by an angle. 左转。

        Args:
            angle_deg: Angle in degrees (> 0, at most 720).
            speed_dps: Turn rate in degrees per second (clamped to the robot's limit).
        """
        return await rotate(env, "turn_left", angle_deg, speed_dps, +1, ctx.progress)

    @tool(safety=SafetyClass.MOTION, timeout_s=90)
    async def turn_right(ctx: ToolContext, angle_deg: float, speed_dps: float = 45) -> ToolResult:
        """Turn the whole robot in place to the right (clockwise) by an angle. 右转。

        Args:
            angle_deg: Angle in degrees (> 0, at most 720).
            speed_dps: Turn rate in degrees per second (clamped to the robot's limit).
        """
        return await rotate(env, "turn_right", angle_deg, speed_dps, -1, ctx.progress)

    return [turn_left, turn_right]


def _velocity_and_pose_tools(env: RobotEnv) -> list[Tool]:
    @tool(
        safety=SafetyClass.MOTION,
        timeout_s=90,
        directions={
            "linear_mps": ("forward", "backward"),
            "angular_dps": ("left", "right"),
            "lateral_mps": ("left", "right"),
        },
    )
    async def drive(
        ctx: ToolContext,
        linear_mps: float,
        angular_dps: float,
        duration_s: float,
        lateral_mps: float = 0.0,
    ) -> ToolResult:
        """Drive at a free velocity for a time (clamped to the robot's limits). 按速度行驶。

        Args:
            linear_mps: Forward speed in metres per second (negative: backwards).
            angular_dps: Turn rate in degrees per second, left (counter-clockwise) positive.
            duration_s: How long, in seconds (> 0).
            lateral_mps: Sideways speed in metres per second, left positive (offered on
                mecanum bases only).
        """
        return await drive_for(env, linear_mps, angular_dps, duration_s, ctx.progress, lateral_mps)

    @tool(safety=SafetyClass.MOTION, timeout_s=5, reentrant=True)
    async def stop() -> ToolResult:
        """Stop the robot now: zero the base and cancel any running motion. 停止。"""
        await env.governor.stop_all("stop tool", StopCause.STOPPED)
        return ToolResult.said(Phrase("motion.stopped"))

    @tool(
        safety=SafetyClass.READ_ONLY,
        timeout_s=5,
        reentrant=True,
        examples=[("what are your coordinates?", {})],
    )
    async def get_current_pose() -> ToolResult:
        """Where the robot is: position (metres) and heading (degrees, left positive). 我在哪里。

        In the map frame when the robot is localized, else odometry (``frame`` says which).
        """
        try:
            pose = await env.map_pose()
        except RobotError as exc:
            return refused(exc)
        # the runtime's sentence, as motions have (issue 6), so that a reply built from
        # results states the pose itself, in the user's language too (agent/steps.py)
        said = Phrase("motion.pose", x_m=pose.x_m, y_m=pose.y_m, yaw_deg=pose.yaw_deg)
        return ToolResult.said(
            said,
            {
                "x_m": round(pose.x_m, 3),
                "y_m": round(pose.y_m, 3),
                "yaw_deg": round(pose.yaw_deg, 1),
                "frame": pose.frame,
            },
        )

    if env.profile.drive != "mecanum":  # a sideways speed only where the base can take one
        drive.parameters["properties"].pop("lateral_mps", None)
        drive.directions = MappingProxyType(
            {k: v for k, v in drive.directions.items() if k != "lateral_mps"}
        )
    return [drive, stop, get_current_pose]

"""Navigation without a map (SPEC D3): a simple go-to-pose controller on odometry.

Turn towards the goal, drive to it while steering (forward motion only, so the depth-based
obstacle stop of the governor covers it), then turn to the goal's heading if it has one.
When the obstacle stop ends the drive, step around the obstacle (turn 50 degrees left, or
50 degrees right of the first heading, and drive a 0.7 m leg, each a governed motion) and
drive on, at most three times: a bug-style detour, not a planner. With a map, the planner
and path follower (:mod:`loopact.robot.navigation.planner`) take over.
"""

from __future__ import annotations

import dataclasses
import math

from loopact.errors import RobotError, StopCause
from loopact.i18n import Phrase
from loopact.robot.interface import Pose, Twist, normalize_angle
from loopact.robot.lease import MotionLease
from loopact.robot.motion import (
    ANGULAR_TOL_RAD,
    K_ANGULAR,
    MIN_ANGULAR_RADPS,
    SETTLE_MARGIN_S,
    Progress,
    RobotEnv,
    rotate,
    run_motion,
    straight,
)
from loopact.robot.navigation import texts
from loopact.robot.navigation.goals import Goal, result_names
from loopact.robot.outcome import failed, motion_result, refused
from loopact.tools.base import ToolResult

NAV_SPEED_MPS = 0.35
NAV_TURN_DPS = 60.0
GOAL_TOL_M = 0.08
HEADING_GATE_RAD = math.radians(20)  # drive only when roughly facing the goal
MAX_DETOURS = 3  # steps around obstacles per navigation (go_to)
DETOUR_TURN_DEG = 50.0  # the first detour turn, degrees left (then twice that to the right)
DETOUR_LEG_M = 0.7  # the detour leg, metres


async def go_to(env: RobotEnv, goal: Goal, progress: Progress | None = None) -> ToolResult:
    """Drive to ``goal`` (SPEC D3); see the module docstring.

    When the governor's obstacle stop ends the drive, the robot steps around the obstacle
    (:func:`_detour`) and drives on, at most :data:`MAX_DETOURS` times; then, or when no side
    is free, the result is the failed drive's (``stopped_by: obstacle``). The result's
    ``metadata.detours`` counts them.
    """
    try:
        start = await env.pose()
    except RobotError as exc:
        return refused(exc)
    detours = 0
    while True:
        result = await _seek(env, goal, start, progress)
        cause = result.metadata.get("achieved", {}).get("cause")
        blocked = cause == StopCause.OBSTACLE.value
        if result.ok or not blocked or detours >= MAX_DETOURS or not await _detour(env, progress):
            break
        detours += 1
    result.metadata["detours"] = detours
    if result.ok and detours:
        travelled = float(result.metadata["achieved"]["distance_m"])
        said = texts.reached_around(goal.label, travelled, detours)
        return dataclasses.replace(result, outcome=said, data={**result.data, "result": said})
    return result


async def _detour(env: RobotEnv, progress: Progress | None) -> bool:
    """Step around what blocks the way: turn left (else right) and drive a short leg.

    Each turn and leg is an ordinary governed motion (obstacle stop, geofence, deadline), so
    a leg that is blocked too is refused before it moves. Returns whether a leg was driven.
    """
    for sign in (+1, -1):
        turn = DETOUR_TURN_DEG if sign > 0 else 2 * DETOUR_TURN_DEG
        turned = await rotate(env, "navigation detour", turn, NAV_TURN_DPS, sign, progress)
        if not turned.ok:
            return False
        leg = await straight(env, "navigation detour", DETOUR_LEG_M, NAV_SPEED_MPS, +1, progress)
        if leg.ok or abs(leg.metadata.get("achieved", {}).get("distance_m", 0.0)) >= 0.1:
            return True
    return False


async def _seek(env: RobotEnv, goal: Goal, start: Pose, progress: Progress | None) -> ToolResult:
    """One drive towards ``goal``: turn to it, drive while steering, align."""
    wp = goal
    key = goal.label.en.removeprefix("the ")
    lim = env.profile.limits
    v_max = min(NAV_SPEED_MPS, lim.max_linear_mps)
    w_max = math.radians(min(NAV_TURN_DPS, lim.max_angular_dps))
    try:
        here = await env.pose()
    except RobotError as exc:
        return refused(exc)
    dist0 = math.hypot(wp.x_m - here.x_m, wp.y_m - here.y_m)
    est_s = dist0 / v_max + 2 * math.pi / w_max + SETTLE_MARGIN_S
    if dist0 / v_max > lim.max_motion_duration_s:
        max_s = lim.max_motion_duration_s
        return failed(
            Phrase("nav.too_far", name=key, distance_m=dist0, max_s=max_s, speed_mps=v_max)
        )
    final_yaw = wp.yaw_rad
    phase = "drive"
    turned = 0.0
    last_yaw = here.yaw_rad

    async def step(lease: MotionLease, pose: Pose) -> bool:
        nonlocal phase, turned, last_yaw
        turned += normalize_angle(pose.yaw_rad - last_yaw)
        last_yaw = pose.yaw_rad
        dx, dy = wp.x_m - pose.x_m, wp.y_m - pose.y_m
        dist = math.hypot(dx, dy)
        if phase == "drive" and dist <= GOAL_TOL_M:
            phase = "align"
        if phase == "align":
            if final_yaw is None:
                return True
            err = normalize_angle(final_yaw - pose.yaw_rad)
            if abs(err) <= ANGULAR_TOL_RAD:
                return True
            w = min(w_max, max(MIN_ANGULAR_RADPS, K_ANGULAR * abs(err)))
            await env.governor.command(lease, Twist(0.0, math.copysign(w, err)))
            return False
        err = normalize_angle(math.atan2(dy, dx) - pose.yaw_rad)
        w = max(-w_max, min(w_max, 2.0 * err))
        if abs(w) < MIN_ANGULAR_RADPS and abs(err) > math.radians(2) and dist > 0.3:
            w = math.copysign(MIN_ANGULAR_RADPS, err)
        v = 0.0
        if abs(err) < HEADING_GATE_RAD:
            v = min(v_max, max(0.05, 1.2 * dist)) * math.cos(err)
        await env.governor.command(lease, Twist(v, w))
        return False

    try:
        lease, pose = await run_motion(
            env, "navigation", min(lim.max_motion_duration_s, est_s * 1.5), True, step, progress
        )
    except RobotError as exc:
        return refused(exc)
    turned += normalize_angle(pose.yaw_rad - last_yaw)
    travelled = math.hypot(pose.x_m - start.x_m, pose.y_m - start.y_m)
    summary = texts.reached(goal.label, travelled)
    bare = dataclasses.replace(goal.label, en=goal.label.en.removeprefix("the "))
    result = motion_result(lease, travelled, math.degrees(turned), pose, {}, summary, goal=bare)
    if result.ok:
        result.data.update(result_names(env, goal))
    result.metadata["goal"] = goal.as_dict()
    result.metadata["remaining_m"] = round(math.hypot(wp.x_m - pose.x_m, wp.y_m - pose.y_m), 3)
    return result

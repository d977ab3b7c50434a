"""``navigation`` on a map: plan, follow, replan (SPEC D3; issue 40 item 3).

Plan on the costmap (:mod:`loopact.maps.plan`), follow the path through the governor
(:mod:`loopact.robot.navigation.follower`); when the obstacle stop ends a motion, mark what
the depth camera sees on the costmap and plan again (at most :data:`MAX_REPLANS` times);
when no path exists, say why in words a person uses: the rooms, and the doorway that is
blocked (the site map's ``rooms`` and ``doorways``).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from loopact.errors import RobotError, StopCause
from loopact.i18n import Phrase
from loopact.maps.costmap import Costmap
from loopact.maps.plan import Plan, PlanError, plan
from loopact.robot.clearance import obstacle_points
from loopact.robot.interface import Pose
from loopact.robot.motion import Progress, RobotEnv
from loopact.robot.navigation import texts
from loopact.robot.navigation.context import NavContext
from loopact.robot.navigation.follower import Followed, follow
from loopact.robot.navigation.goals import Goal, result_names
from loopact.robot.outcome import achieved, failed, refused
from loopact.tools.base import ToolResult

MAX_REPLANS = 5
"""Replans per navigation before it gives up."""


async def go(
    env: RobotEnv, nav: NavContext, goal: Goal, progress: Progress | None = None
) -> ToolResult:
    """Plan to ``goal`` and drive there (see the module docstring)."""
    nav.forget_seen()
    try:
        start = await env.map_pose()
    except RobotError as exc:
        return refused(exc)
    travelled = turned = 0.0
    replans = 0
    while True:
        cm = nav.costmap()
        assert cm is not None  # the planner backend is chosen only with a map
        try:
            pose = await env.map_pose()
            path = await asyncio.to_thread(plan, cm, (pose.x_m, pose.y_m), (goal.x_m, goal.y_m))
        except RobotError as exc:
            return refused(exc)
        except PlanError as exc:
            return _no_path(env, nav, cm, pose, goal, exc, replans, travelled)
        nav.last_plan = path
        if progress is not None:
            progress(
                f"navigation: a {path.length_m:.1f} m path to {goal.label.en} "
                f"(planned in {path.plan_s * 1000:.0f} ms)"
            )
        try:
            run = await follow(env, nav, path.points_m, goal, progress)
        except RobotError as exc:
            return refused(exc)
        travelled += run.travelled_m
        turned += run.turned_deg
        if run.outcome == "arrived":
            return _arrived(env, goal, run, start, path, travelled, turned, replans)
        if run.outcome == "stopped":
            return _stopped(env, goal, run, travelled, turned)
        if replans >= MAX_REPLANS:
            why = run.why or Phrase("stop.reason", reason=run.outcome)
            return failed(texts.gave_up(goal.label, replans + 1, why))
        if run.outcome == "obstacle":
            await _mark_seen(env, nav, run.pose)
        replans += 1


async def _mark_seen(env: RobotEnv, nav: NavContext, pose: Pose) -> None:
    """Put what the depth camera sees now on the costmap (map frame)."""
    try:
        depth = await env.robot.get_depth()
        pan = tilt = 0.0
        if env.robot.has_head and env.profile.head.present:
            head = await env.robot.get_head()
            pan, tilt = head.pan_rad, head.tilt_rad
    except RobotError:
        return
    pts = await asyncio.to_thread(obstacle_points, depth.depth_m, env.profile, pan, tilt)
    c, s = math.cos(pose.yaw_rad), math.sin(pose.yaw_rad)
    nav.saw([(pose.x_m + c * f - s * left, pose.y_m + s * f + c * left) for f, left in pts])


def _arrived(
    env: RobotEnv,
    goal: Goal,
    run: Followed,
    start: Pose,
    path: Plan,
    travelled: float,
    turned: float,
    replans: int,
) -> ToolResult:
    pose = run.pose
    text = (
        texts.reached_replanned(goal.label, travelled, replans, pose.frame)
        if replans
        else texts.reached(goal.label, travelled, pose.frame)
    )
    data: dict[str, Any] = {
        "result": text,
        "pose": _pose_dict(pose),
        **result_names(env, goal),
    }
    meta: dict[str, Any] = {
        "achieved": achieved(travelled, turned, StopCause.TARGET),
        "goal": goal.as_dict(),
        "remaining_m": round(math.hypot(goal.x_m - pose.x_m, goal.y_m - pose.y_m), 3),
        "path_m": round(path.length_m, 3),
        "replans": replans,
        "backend": "planner",
    }
    return ToolResult(ok=True, data=data, metadata=meta)


def _stopped(
    env: RobotEnv, goal: Goal, run: Followed, travelled: float, turned: float
) -> ToolResult:
    cause = run.cause or StopCause.STOPPED
    meta = {
        "achieved": achieved(travelled, turned, cause),
        "goal": goal.as_dict(),
        "backend": "planner",
    }
    why = run.why or Phrase("stop.reason", reason="")
    return ToolResult(
        ok=False,
        data={"pose": _pose_dict(run.pose)},
        metadata=meta,
        outcome=texts.stopped_early(goal.label, cause, why, travelled),
    )


def _pose_dict(pose: Pose) -> dict[str, Any]:
    return {
        "x_m": round(pose.x_m, 3),
        "y_m": round(pose.y_m, 3),
        "yaw_deg": round(pose.yaw_deg, 1),
        "frame": pose.frame,
    }


def _no_path(
    env: RobotEnv,
    nav: NavContext,
    cm: Costmap,
    pose: Pose,
    goal: Goal,
    exc: PlanError,
    replans: int,
    travelled: float,
) -> ToolResult:
    """The "no path" result: which rooms, and why (a blocked doorway when one is)."""
    if exc.reason != "no_path":
        res = failed(texts.bad_goal(str(exc)))
    else:
        site = env.site
        start_room = site.room_at(pose.x_m, pose.y_m)
        goal_room = site.room_at(goal.x_m, goal.y_m)
        why = texts.blocked_on_the_way(replans) if replans else texts.not_reachable()

        def shut(room: str | None) -> bool:
            """Every doorway of ``room`` is blocked on the costmap."""
            doors = [d for d in site.doorways.values() if room and room in d.rooms]
            return bool(doors) and not any(cm.free_at(d.x_m, d.y_m) for d in doors)

        if shut(goal_room):
            why = texts.doorway_blocked(goal_room or "")
        elif shut(start_room):
            why = texts.doorway_out_blocked(start_room or "")
        res = failed(texts.no_path(start_room, goal.label, goal_room, why), StopCause.NO_PATH)
    res.metadata.update(goal=goal.as_dict(), reason=exc.reason, backend="planner")
    if travelled:
        res.metadata["achieved"] = achieved(travelled, 0.0, StopCause.NO_PATH)
    return res

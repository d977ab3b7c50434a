"""Navigation to named waypoints (SPEC D3): a simple go-to-pose controller on odometry.

Turn towards the goal, drive to it while steering (forward motion only, so the depth-based
obstacle stop of the governor covers it), then turn to the waypoint's heading if it has one.
When the obstacle stop ends the drive, step around the obstacle (turn 50 degrees left, or
50 degrees right of the first heading, and drive a 0.7 m leg, each a governed motion) and
drive on, at most three times: a bug-style detour, not a planner.
Waypoints come from the site map (``map`` frame; the simulator's map equals its odom frame).
Nav2's NavigateToPose takes over on a ROS 2 robot in a later issue.

``distance_to`` answers how far a named place is and in which direction, from the same pose
and site map, without moving (a question a small model otherwise cannot answer: it would have
to subtract coordinates itself).
"""

from __future__ import annotations

import dataclasses
import math

from loopact.errors import RobotError, StopCause
from loopact.i18n import Name, Phrase
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
from loopact.robot.outcome import failed, motion_result, refused
from loopact.robot.profile import SiteMap
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool

NAV_SPEED_MPS = 0.35
NAV_TURN_DPS = 60.0
GOAL_TOL_M = 0.08
HEADING_GATE_RAD = math.radians(20)  # drive only when roughly facing the goal
AT_PLACE_M = 0.05  # closer than this, "distance_to" says the robot is there (no bearing)
MAX_DETOURS = 3  # steps around obstacles per navigation (go_to)
DETOUR_TURN_DEG = 50.0  # the first detour turn, degrees left (then twice that to the right)
DETOUR_LEG_M = 0.7  # the detour leg, metres


_ZH_PLACES = {"window": "窗户", "door": "门", "kitchen": "厨房", "charger": "充电桩"}
"""Chinese names of common places, for a site map whose waypoints give none (``names``)."""


def find_place(site: SiteMap, name: str) -> str | None:
    """The site map's waypoint called ``name`` (its key or one of its ``names``), or None.

    Exact first, then case-insensitive and without a leading "the" ("The Door" -> "door"),
    then a waypoint's other names (``厨房`` -> ``kitchen``).
    """
    key = name.strip()
    if key in site.waypoints:
        return key
    lowered = {k.lower(): k for k in site.waypoints}
    lowered.update({n.strip().lower(): k for k, wp in site.waypoints.items() for n in wp.names})
    wanted = key.lower()
    if wanted.startswith("the "):
        wanted = wanted[4:].strip()
    return lowered.get(wanted)


def _place_names(site: SiteMap, key: str) -> dict[str, str]:
    """``{place: key}``, with ``place_zh`` when the place has a Chinese name."""
    zh = chinese_name(site, key)
    return {"place": key, **({"place_zh": zh} if zh else {})}


def place_name(site: SiteMap, key: str) -> Name:
    """The waypoint ``key`` as a :class:`Name`: the key, and its Chinese name when it has one
    (a phrase then names it so in Chinese: 到达厨房)."""
    return Name(key, chinese_name(site, key) or "")


def chinese_name(site: SiteMap, key: str) -> str | None:
    """The waypoint ``key``'s Chinese name: its first Chinese ``names`` entry, else the
    common one (:data:`_ZH_PLACES`), else None."""
    for name in site.waypoints[key].names:
        if any("\u4e00" <= ch <= "\u9fff" for ch in name):
            return name.strip()
    return _ZH_PLACES.get(key)


def unknown_place(site: SiteMap, name: str, noun: str) -> ToolResult:
    """The failed result for a name that is not on the site map: it lists the known ones.

    Args:
        site: The site map (its ``waypoints`` by name).
        name: What the model asked for.
        noun: ``waypoint`` (navigation) or ``place`` (distance_to), used in the message and
            in the data key ``known_<noun>s``.
    """
    names = sorted(site.waypoints)
    said = Phrase(f"nav.unknown_{noun}", name=name, known=", ".join(names) or "(none)")
    return ToolResult.failure(said, data={f"known_{noun}s": names})


async def go_to(env: RobotEnv, waypoint: str, progress: Progress | None = None) -> ToolResult:
    """Drive to a named waypoint of the site map (SPEC D3); see the module docstring.

    When the governor's obstacle stop ends the drive, the robot steps around the obstacle
    (:func:`_detour`) and drives on, at most :data:`MAX_DETOURS` times; then, or when no side
    is free, the result is the failed drive's (``stopped_by: obstacle``). The result's
    ``metadata.detours`` counts them.
    """
    site = env.site
    key = find_place(site, waypoint)
    if key is None:
        return unknown_place(site, waypoint, "waypoint")
    wp = site.waypoints[key]
    if not site.contains(wp.x_m, wp.y_m):
        return failed(Phrase("nav.outside_fence", name=key), StopCause.GEOFENCE)
    try:
        start = await env.pose()
    except RobotError as exc:
        return refused(exc)
    detours = 0
    while True:
        result = await _seek(env, key, start, progress)
        blocked = result.metadata.get("achieved", {}).get("stopped_by") == "obstacle"
        if result.ok or not blocked or detours >= MAX_DETOURS or not await _detour(env, progress):
            break
        detours += 1
    result.metadata["detours"] = detours
    if result.ok and detours and result.outcome is not None:
        said = result.outcome
        around = "nav.reached_around_one" if detours == 1 else "nav.reached_around"
        return dataclasses.replace(result, outcome=Phrase(around, **said.params, detours=detours))
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


async def _seek(env: RobotEnv, key: str, start: Pose, progress: Progress | None) -> ToolResult:
    """One drive towards waypoint ``key``: turn to it, drive while steering, align."""
    wp = env.site.waypoints[key]
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
    final_yaw = None if wp.yaw_deg is None else math.radians(wp.yaw_deg)
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
    place = place_name(env.site, key)
    summary = Phrase("nav.reached", place=place, distance_m=travelled)
    result = motion_result(lease, travelled, math.degrees(turned), pose, {}, summary, goal=place)
    if result.ok:
        result.data.update(_place_names(env.site, key))
    result.metadata["goal"] = {"waypoint": key, "x_m": wp.x_m, "y_m": wp.y_m}
    result.metadata["remaining_m"] = round(math.hypot(wp.x_m - pose.x_m, wp.y_m - pose.y_m), 3)
    return result


async def distance_to_place(env: RobotEnv, place: str) -> ToolResult:
    """How far the site map's ``place`` is from the robot's current pose, and where (SPEC D3).

    Returns a result whose ``data`` is ``{result, place, [place_zh,] distance_m, bearing_deg,
    x_m, y_m, frame}``: the straight-line distance in metres, the bearing in degrees relative to the
    robot's heading (left positive, in (-180, 180]) and the place's coordinates in the site
    map's frame (the pose is read as being in that frame, as :func:`go_to` does). An unknown
    place or a missing pose is a failed result (the former lists the known places).
    """
    site = env.site
    key = find_place(site, place)
    if key is None:
        return unknown_place(site, place, "place")
    try:
        pose = await env.pose()
    except RobotError as exc:
        return refused(exc)
    wp = site.waypoints[key]
    dx, dy = wp.x_m - pose.x_m, wp.y_m - pose.y_m
    dist = math.hypot(dx, dy)
    bearing = 0.0
    if dist < AT_PLACE_M:
        where = "place.there"
    else:
        bearing = math.degrees(normalize_angle(math.atan2(dy, dx) - pose.yaw_rad))
        if abs(bearing) < 5:
            where = "place.ahead"
        elif abs(bearing) > 175:
            where = "place.behind"
        else:
            where = "place.left" if bearing > 0 else "place.right"
    said = Phrase(where, place=place_name(site, key), distance_m=dist, angle_deg=abs(bearing))
    return ToolResult.success(
        {
            "result": said,
            **_place_names(site, key),
            "distance_m": round(dist, 3),
            "bearing_deg": round(bearing, 1),
            "x_m": wp.x_m,
            "y_m": wp.y_m,
            "frame": site.frame,
        }
    )


def _distance_examples(site: SiteMap) -> tuple[tuple[str, dict[str, str]], ...]:
    """``distance_to`` examples with this site's places: one in English, one in Chinese.

    The English one names the first place in sorted order (``navigation``'s names the last),
    the Chinese one the last place with a known Chinese name that is not the English one's.
    """
    places = sorted(site.waypoints)
    if not places:
        return ()
    first = places[0]
    out: tuple[tuple[str, dict[str, str]], ...] = (
        (f"how far away is the {first}?", {"place": first}),
    )
    glossed = [(p, zh) for p in reversed(places) if p != first and (zh := chinese_name(site, p))]
    if glossed:
        out += ((f"{glossed[0][1]}离你多远？", {"place": glossed[0][0]}),)
    return out


def make_navigation_tools(env: RobotEnv) -> list[Tool]:
    """``navigation`` and ``distance_to`` bound to ``env`` (SPEC D3)."""
    names = ", ".join(sorted(env.site.waypoints)) or "none"

    @tool(safety=SafetyClass.MOTION, timeout_s=120)
    async def navigation(ctx: ToolContext, waypoint: str) -> ToolResult:
        """Drive to a named place of the site map, avoiding obstacles. 去某个地点。

        Args:
            waypoint: The place's name.
        """
        return await go_to(env, waypoint, ctx.progress)

    @tool(safety=SafetyClass.READ_ONLY, timeout_s=5, reentrant=True)
    async def distance_to(place: str) -> ToolResult:
        """How far a named place is from the robot, in metres, and in which direction. 离某地多远。

        Straight-line distance from where the robot is now; it does not move. Returns
        {result, place, distance_m (metres), bearing_deg (degrees from the robot's heading,
        left positive), x_m, y_m (the place, metres)}.

        Args:
            place: The place's name on the site map, e.g. "door".
        """
        return await distance_to_place(env, place)

    navigation.description += f" Known places: {names}."
    distance_to.description += f" Known places: {names}."
    if env.site.waypoints:
        places = sorted(env.site.waypoints)
        for one, arg in ((navigation, "waypoint"), (distance_to, "place")):
            # the names in the argument's first sentence, which every catalogue shows (tool
            # descriptions are cut to theirs); not an enum: a grammar would then turn "go to
            # the moon" into a drive to a real place instead of a clear "unknown place"
            one.parameters["properties"][arg]["description"] = f"One of: {', '.join(places)}."
        home = "start" if "start" in places else places[0]
        navigation.examples = (
            (f"head over to the {places[-1]}", {"waypoint": places[-1]}),  # a real place
            (f"go back to the {home}", {"waypoint": home}),  # not move_backward
        )
        distance_to.examples = _distance_examples(env.site)
    return [navigation, distance_to]

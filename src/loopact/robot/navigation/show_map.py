"""``show_map``: the map as an image with the robot, the path, places and located objects, and
the places as text with their distances (issue 40 item 6; read-only).

The distances are along a planned path where the map has one (the way the robot would drive),
else straight lines; a place with no path says so.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from loopact.errors import RobotError
from loopact.i18n import Phrase
from loopact.maps.draw import MapMark, render_map
from loopact.maps.plan import PlanError, plan
from loopact.robot.interface import Pose
from loopact.robot.motion import RobotEnv
from loopact.robot.navigation import texts
from loopact.robot.navigation.context import NavContext
from loopact.robot.navigation.places import place_name
from loopact.robot.outcome import refused
from loopact.tools.base import ToolContext, ToolResult


def draw(env: RobotEnv, nav: NavContext, pose: Pose | None) -> npt.NDArray[np.uint8] | None:
    """The map picture (None without a map)."""
    grid = nav.grid()
    if grid is None:
        return None
    places = [MapMark(k, w.x_m, w.y_m) for k, w in env.site.waypoints.items()]
    objects = [MapMark(o.name, o.x_m, o.y_m, o.colour) for o in env.located.all()]
    path = nav.last_plan.points_m if nav.last_plan is not None else ()
    return render_map(
        grid,
        None if pose is None else (pose.x_m, pose.y_m, pose.yaw_rad),
        path,
        places,
        objects,
        driven=list(nav.trail),
        robot_radius_m=env.profile.footprint_radius_m,
    )


def _distances(env: RobotEnv, nav: NavContext, pose: Pose) -> list[dict[str, Any]]:
    cm = nav.costmap()
    out = []
    for key, wp in sorted(env.site.waypoints.items()):
        straight = math.hypot(wp.x_m - pose.x_m, wp.y_m - pose.y_m)
        item: dict[str, Any] = {"place": key, "x_m": wp.x_m, "y_m": wp.y_m}
        item["straight_m"] = round(straight, 2)
        if cm is not None:
            try:
                item["path_m"] = round(plan(cm, (pose.x_m, pose.y_m), (wp.x_m, wp.y_m)).length_m, 2)
            except PlanError as exc:
                item["path_m"] = None
                item["note"] = "no path" if exc.reason == "no_path" else str(exc)
        room = env.site.room_at(wp.x_m, wp.y_m)
        if room:
            item["room"] = room
        out.append(item)
    return out


def _listing(env: RobotEnv, places: list[dict[str, Any]]) -> tuple[Phrase, ...]:
    """Each place with its distance by path (or why there is none), else straight."""
    return tuple(
        texts.place_on_map(
            place_name(env.site, p["place"]), p.get("path_m"), p["straight_m"], p.get("note", "")
        )
        for p in places
    )


async def show_map(env: RobotEnv, nav: NavContext, ctx: ToolContext | None) -> ToolResult:
    """The ``show_map`` result: ``data = {result, frame, pose, room, places: [...], objects}``
    and the map image (through the image gate)."""
    try:
        pose = await env.map_pose()
    except RobotError as exc:
        return refused(exc)
    places = await asyncio.to_thread(_distances, env, nav, pose)
    room = env.site.room_at(pose.x_m, pose.y_m)
    text = texts.show_map_caption(room, pose.frame, _listing(env, places))
    data: dict[str, Any] = {
        "result": text,
        "frame": pose.frame,
        "pose": {
            "x_m": round(pose.x_m, 3),
            "y_m": round(pose.y_m, 3),
            "yaw_deg": round(pose.yaw_deg, 1),
        },
        "room": room,
        "places": places,
        "objects": [
            {"name": o.name, "x_m": round(o.x_m, 2), "y_m": round(o.y_m, 2)}
            for o in env.located.all()
        ],
    }
    rgb = await asyncio.to_thread(draw, env, nav, pose)
    if rgb is None:
        data["image"] = "no map: the robot has no occupancy grid (robot.map, or a map topic)"
        return ToolResult.success(data)
    gated = await asyncio.to_thread(env.gate.process, rgb)
    if gated.image is None:
        data["image"] = f"unreadable: {gated.error}"
        return ToolResult.success(data)
    data["image"] = f"attached ({gated.image.width_px}x{gated.image.height_px})"
    if ctx is not None:
        ctx.show_image(gated.image, str(text)[:120])
    return ToolResult.success(data, images=[gated.image])

"""The console's live map (issue 42 item 1; SPEC F2, D3): the navigation map, the places, the
geofence, and live the robot's pose, the planned path, the trail and the located objects::

    GET /api/map        {map: {resolution_m, width, height, origin_x_m, origin_y_m, png} or
                        null, frame, places: [{key, en, zh, x_m, y_m}], fence: [[x, y], ...],
                        rooms: [{name, polygon}]}; 404 without a robot
    GET /api/map.png    the occupancy grid as a PNG, one pixel a cell, the top row the
                        largest y (free white, occupied black, unknown grey); 404 without a map
    GET /api/map/live   {pose: {x_m, y_m, yaw_rad} or null, path: [[x, y], ...], trail:
                        [[x, y], ...], objects: [{name, colour, x_m, y_m}]}

The map is the session's navigation map (``robot_session.nav``: the config's, the site's, the
robot's ``map`` topic or the simulator's own geometry); without one the page draws the
places and the geofence on a plain background. A click on the page is an instruction
("Go to the kitchen."), sent like any other (``POST /api/message``), so the agent's
navigation tool carries it out through the governor and a Stop preempts it.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import numpy as np
from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from loopact._compat import wait_within
from loopact.errors import RobotError

_POSE_TIMEOUT_S = 2.0
_TRAIL_POINTS = 500
_NOT_KEPT = {"Cache-Control": "no-store"}


def _session(state: Any) -> Any:
    session = state.robot_session
    if session is None:
        raise HTTPException(404, "no robot: there is no map")
    return session


def _grid(session: Any) -> Any:
    nav = getattr(session, "nav", None)
    return nav.grid() if nav is not None else None


def _places(session: Any) -> list[dict[str, Any]]:
    site = getattr(session, "site", None)
    out = []
    for key, wp in sorted(getattr(site, "waypoints", {}).items()):
        names = [str(n) for n in getattr(wp, "names", ())]
        zh = next((n for n in names if any("\u4e00" <= c <= "\u9fff" for c in n)), "")
        en = key.replace("_", " ")  # living_room: "living room", a name it answers to
        out.append({"key": key, "en": en, "zh": zh, "x_m": wp.x_m, "y_m": wp.y_m})
    return out


def grid_png(grid: Any) -> bytes:
    """The grid as a greyscale PNG, one pixel per cell, the top row the largest y."""
    from PIL import Image as PILImage

    data = np.asarray(grid.data)
    grey = np.full(data.shape, 205, dtype=np.uint8)  # unknown
    grey[data == 0] = 255
    known = data > 0
    grey[known] = (255 - (data[known].astype(np.int32) * 255) // 100).astype(np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(np.flipud(grey)).save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def map_routes(state: Any) -> APIRouter:
    """The routes above for the console ``state`` (its ``robot_session``)."""
    router = APIRouter()
    drawn: dict[str, Any] = {"grid": None, "png": b""}  # the last grid and its PNG

    @router.get("/api/map")
    async def map_info() -> dict[str, Any]:
        session = _session(state)
        grid = _grid(session)
        site = getattr(session, "site", None)
        info: dict[str, Any] = {
            "map": None,
            "frame": getattr(site, "frame", "map"),
            "places": _places(session),
            "fence": [list(p) for p in getattr(site, "geofence", [])],
            "rooms": [
                {"name": name, "polygon": [list(p) for p in poly]}
                for name, poly in getattr(site, "rooms", {}).items()
            ],
        }
        if grid is not None:
            height, width = grid.data.shape
            info["map"] = {
                "resolution_m": grid.resolution_m,
                "width": int(width),
                "height": int(height),
                "origin_x_m": grid.origin_x_m,
                "origin_y_m": grid.origin_y_m,
                "png": f"/api/map.png?v={id(grid):x}",
            }
        return info

    @router.get("/api/map.png")
    async def map_png() -> Response:
        grid = _grid(_session(state))
        if grid is None:
            raise HTTPException(404, "no map: the robot navigates without one")
        if drawn["grid"] is not grid:  # grids are frozen: a new map is a new object
            drawn["png"] = await asyncio.to_thread(grid_png, grid)
            drawn["grid"] = grid
        return Response(drawn["png"], media_type="image/png", headers=_NOT_KEPT)

    @router.get("/api/map/live")
    async def map_live() -> dict[str, Any]:
        session = _session(state)
        pose = None
        try:
            got = await wait_within(session.robot.get_pose(), _POSE_TIMEOUT_S)
            pose = {"x_m": got.x_m, "y_m": got.y_m, "yaw_rad": got.yaw_rad}
        except (RobotError, asyncio.TimeoutError):
            pass
        nav = getattr(session, "nav", None)
        plan = getattr(nav, "last_plan", None)
        path = [list(p) for p in plan.points_m] if plan is not None else []
        trail = [list(p) for p in list(getattr(nav, "trail", ()))[-_TRAIL_POINTS:]]
        located = getattr(session, "located", None)
        objects = [
            {"name": o.name, "colour": o.colour, "x_m": o.x_m, "y_m": o.y_m}
            for o in (located.all() if located is not None else [])
        ]
        return {"pose": pose, "path": path, "trail": trail, "objects": objects}

    return router

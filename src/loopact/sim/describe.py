"""The simulated world as data (``loopact sim --describe``; SPEC D6, H5, issue 15).

:func:`describe_world` is the ground truth graders use: the room, every object (name, colour,
shape, position, size), the obstacles, the floor line as a polyline, the waypoints and the
robot's start pose. Lengths in metres, angles in degrees, every key named with its unit.
It is built from the same constants as the MJCF (:mod:`loopact.sim.world`), so it cannot drift
from what is rendered.
"""

from __future__ import annotations

import math
from typing import Any

from loopact.sim import arm_scene, flat, world
from loopact.sim.scenarios import Scenario, get_scenario

DESCRIBE_SCHEMA = 1
"""Bumped when a key changes meaning."""


def _r(v: float) -> float:
    return round(float(v), 4)


def _size(shape: str, size_m: tuple[float, ...]) -> dict[str, float]:
    """Full extents (and radius) from MJCF half-sizes."""
    if shape == "box":
        hx, hy, hz = size_m
        return {"x_m": _r(2 * hx), "y_m": _r(2 * hy), "z_m": _r(2 * hz)}
    if shape == "cylinder":
        r, hz = size_m
        return {"x_m": _r(2 * r), "y_m": _r(2 * r), "z_m": _r(2 * hz), "radius_m": _r(r)}
    (r,) = size_m
    return {"x_m": _r(2 * r), "y_m": _r(2 * r), "z_m": _r(2 * r), "radius_m": _r(r)}


def _objects(scenario: Scenario) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for o in flat.OBJECTS if scenario.world == "flat" else world.OBJECTS:
        out.append(
            {
                "name": o.name,
                "colour": o.colour,
                "shape": o.shape,
                "position_m": {"x_m": _r(o.x_m), "y_m": _r(o.y_m), "z_m": _r(o.height_m / 2)},
                "size_m": _size(o.shape, o.size_m),
                "movable": False,
            }
        )
    for m in scenario.movers:
        x, y = m.path.position(0.0)
        out.append(
            {
                "name": m.name,
                "colour": m.colour,
                "shape": "sphere",
                "position_m": {"x_m": _r(x), "y_m": _r(y), "z_m": _r(m.radius_m)},
                "size_m": _size("sphere", (m.radius_m,)),
                "movable": True,
                "path": m.path.describe(),
            }
        )
    return out


def _obstacles() -> list[dict[str, Any]]:
    cx, cy = world.CRATE_CENTER_M
    sx, sy, sz = world.CRATE_SIZE_M
    px, py = world.PILLAR_CENTER_M
    tx, ty = world.TABLE_CENTER_M
    tw, td = world.TABLE_TOP_M
    return [
        {
            "name": "crate",
            "colour": "brown",
            "shape": "box",
            "position_m": {"x_m": cx, "y_m": cy, "z_m": _r(sz / 2)},
            "size_m": {"x_m": sx, "y_m": sy, "z_m": sz},
        },
        {
            "name": "pillar",
            "colour": "grey",
            "shape": "cylinder",
            "position_m": {"x_m": px, "y_m": py, "z_m": _r(world.PILLAR_HEIGHT_M / 2)},
            "size_m": _size("cylinder", (world.PILLAR_RADIUS_M, world.PILLAR_HEIGHT_M / 2)),
        },
        {
            "name": "table",
            "colour": "brown",
            "shape": "table",
            "position_m": {"x_m": tx, "y_m": ty, "z_m": _r(world.TABLE_HEIGHT_M / 2)},
            "size_m": {"x_m": tw, "y_m": td, "z_m": world.TABLE_HEIGHT_M},
        },
    ]


def line_polyline() -> list[tuple[float, float]]:
    """The floor line's centre as a closed polyline ``[(x, y), ...]`` (first point repeated)."""
    pts = list(world.LINE_CORNERS_M)
    return [*pts, pts[0]]


def line_length_m() -> float:
    """Length of one lap of the floor line, metres."""
    pts = line_polyline()
    return sum(math.dist(a, b) for a, b in zip(pts, pts[1:], strict=False))


def describe_world(scenario: str | Scenario = "default") -> dict[str, Any]:
    """The world of ``scenario`` as JSON-able data (see the module docstring).

    Raises:
        ConfigError: Unknown scenario name.
    """
    sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
    if sc.world == "flat":
        return _describe_flat(sc)
    x0, x1 = world.ROOM_X_M
    y0, y1 = world.ROOM_Y_M
    return {
        **_head(sc, x0, x1, y0, y1),
        # the arm scene: its table, cubes and containers instead of the room's objects
        "objects": arm_scene.describe_objects() if sc.arm else _objects(sc),
        "obstacles": [*_obstacles(), *([arm_scene.describe_table()] if sc.arm else [])],
        "line": {
            "colour": "purple",
            "width_m": world.LINE_WIDTH_M,
            "closed": True,
            "polyline_m": [{"x_m": x, "y_m": y} for x, y in line_polyline()],
            "length_m": _r(line_length_m()),
        },
        "waypoints": [{"name": n, "x_m": x, "y_m": y} for n, (x, y) in world.WAYPOINTS.items()],
        "robot_start": _robot_start(),
        "camera": _camera(),
    }


def _robot_start() -> dict[str, float]:
    return {
        "x_m": 0.0,
        "y_m": 0.0,
        "yaw_deg": 0.0,
        "head_pan_deg": _r(math.degrees(world.DEFAULT_HEAD_PAN_RAD)),
        "head_tilt_deg": _r(math.degrees(world.DEFAULT_HEAD_TILT_RAD)),
        "radius_m": world.ROBOT_RADIUS_M,
    }


def _camera() -> dict[str, Any]:
    return {
        "hfov_deg": world.CAMERA_HFOV_DEG,
        "height_m": world.CAMERA_HEIGHT_M,
        "tilt_convention": "down positive",
        "pan_convention": "left positive",
    }


def _head(sc: Scenario, x0: float, x1: float, y0: float, y1: float) -> dict[str, Any]:
    """What every description opens with: schema, units, frame, scenario and the walls'
    extent (metres)."""
    return {
        "schema": DESCRIBE_SCHEMA,
        "units": {"length": "m", "angle": "deg", "time": "s"},
        "frame": "map (world = map = odom in the simulator; x forward at start, y left, z up)",
        "scenario": {"name": sc.name, "summary": sc.summary},
        "room": {
            "x_min_m": x0,
            "x_max_m": x1,
            "y_min_m": y0,
            "y_max_m": y1,
            "wall_height_m": world.WALL_HEIGHT_M,
        },
    }


def _describe_flat(sc: Scenario) -> dict[str, Any]:
    """The flat (:mod:`loopact.sim.flat`): its interior walls and furniture are obstacles
    (``kind``: ``wall`` or ``furniture``), with rooms and doorways; it has no floor line."""
    (x0, x1), (y0, y1) = flat.FLAT_X_M, flat.FLAT_Y_M
    return {
        **_head(sc, x0, x1, y0, y1),
        **flat.describe_layout(),
        "objects": _objects(sc),
        "obstacles": flat.describe_solids(sc.blocked),
        "line": None,
        "waypoints": [{"name": n, "x_m": x, "y_m": y} for n, (x, y) in flat.WAYPOINTS.items()],
        "charger_dock_m": {"x_m": flat.CHARGER_DOCK_M[0], "y_m": flat.CHARGER_DOCK_M[1]},
        "robot_start": _robot_start(),
        "camera": _camera(),
    }

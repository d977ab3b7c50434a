"""The flat: a multi-room world for navigation (``--scenario flat``; SPEC D6, issue 40).

A 10.5 m x 8 m flat in the map frame (metres; the robot starts at (0, 0) facing +x in the
hallway)::

    y=4  +----------------------------+---------------------------+
         |  living room               |  bedroom                  |
         |  sofa, coffee table, red   | wardrobe, bed, blue ball  |
   y=0.9 +------[door 1.0]------------+------[door 0.9]-----------+
         | charger   hallway (1.6 m wide, shoe cabinet)   front door
  y=-0.9 +---------[door 0.9]---------+----[door 0.8]-------------+
         |  kitchen: counter, table,  |  bathroom: tub,           |
         |  green cylinder            |  yellow box               |
    y=-4 +----------------------------+---------------------------+
        x=-1.5                       x=4.5                       x=9

Every wall, doorway and piece of furniture is a module constant, so the MJCF
(:func:`statics_mjcf`), the ground truth (:func:`describe`) and the map the simulator writes
(:mod:`loopact.sim.worldmap`) are built from the same numbers and cannot drift. The places of
the site map ``flat`` (``src/loopact/robot/sites/flat.yaml``) lie in every room.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopact.sim.world import SceneObject

FLAT_X_M = (-1.5, 9.0)
FLAT_Y_M = (-4.0, 4.0)
WALL_T_M = 0.1
"""Interior wall thickness, metres (the outer walls stand just outside the floor bounds)."""
HALL_WALL_Y_M = 0.85
"""The hallway's walls are centred at y = +-0.85 (inner faces at +-0.8: a 1.6 m hallway)."""
SPLIT_X_M = 4.5
"""The wall between living room and bedroom, and between kitchen and bathroom, at x = 4.5."""


@dataclass(frozen=True)
class Doorway:
    """A gap in a wall.

    Attributes:
        name: ``<room>_door``.
        x_m: Centre x, metres.
        y_m: Centre y (the wall's line), metres.
        width_m: Clear width, metres.
        rooms: The two rooms it joins.
    """

    name: str
    x_m: float
    y_m: float
    width_m: float
    rooms: tuple[str, str]


DOORWAYS: tuple[Doorway, ...] = (
    Doorway("living_room_door", 1.5, HALL_WALL_Y_M, 1.0, ("hallway", "living_room")),
    Doorway("bedroom_door", 6.95, HALL_WALL_Y_M, 0.9, ("hallway", "bedroom")),
    Doorway("kitchen_door", 2.45, -HALL_WALL_Y_M, 0.9, ("hallway", "kitchen")),
    Doorway("bathroom_door", 6.4, -HALL_WALL_Y_M, 0.8, ("hallway", "bathroom")),
)

ROOMS: dict[str, tuple[float, float, float, float]] = {
    "hallway": (FLAT_X_M[0], -HALL_WALL_Y_M, FLAT_X_M[1], HALL_WALL_Y_M),
    "living_room": (FLAT_X_M[0], HALL_WALL_Y_M, SPLIT_X_M, FLAT_Y_M[1]),
    "bedroom": (SPLIT_X_M, HALL_WALL_Y_M, FLAT_X_M[1], FLAT_Y_M[1]),
    "kitchen": (FLAT_X_M[0], FLAT_Y_M[0], SPLIT_X_M, -HALL_WALL_Y_M),
    "bathroom": (SPLIT_X_M, FLAT_Y_M[0], FLAT_X_M[1], -HALL_WALL_Y_M),
}
"""Each room's rectangle ``(x_min, y_min, x_max, y_max)`` in metres (to the walls' centres)."""


@dataclass(frozen=True)
class Box:
    """A solid box standing on the floor.

    Attributes:
        name: Identifier (``sofa``; the MJCF geom is ``flat_<name>``).
        x_m: Centre x, metres.
        y_m: Centre y, metres.
        size_m: Full extents ``(x, y, z)``, metres.
        colour: Colour word.
        rgba: Colour, 0..1.
    """

    name: str
    x_m: float
    y_m: float
    size_m: tuple[float, float, float]
    colour: str = "brown"
    rgba: tuple[float, float, float, float] = (0.55, 0.36, 0.2, 1.0)


def _walls() -> tuple[Box, ...]:
    """The interior walls as boxes: the hallway's two walls with their doorways cut out,
    and the two dividing walls."""
    white = (0.62, 0.58, 0.52, 1.0)  # darker than the floor, so walls read from above
    out: list[Box] = []
    for side, y in (("north", HALL_WALL_Y_M), ("south", -HALL_WALL_Y_M)):
        gaps = sorted(
            (d.x_m - d.width_m / 2, d.x_m + d.width_m / 2) for d in DOORWAYS if d.y_m == y
        )
        x = FLAT_X_M[0]
        for i, (g0, g1) in enumerate([*gaps, (FLAT_X_M[1], FLAT_X_M[1])]):
            if g0 - x > 1e-6:
                out.append(
                    Box(
                        f"wall_{side}_{i}",
                        round((x + g0) / 2, 4),
                        y,
                        (round(g0 - x, 4), WALL_T_M, 0.6),
                        "white",
                        white,
                    )
                )
            x = g1
    for side, (y0, y1) in (
        ("north", (HALL_WALL_Y_M, FLAT_Y_M[1])),
        ("south", (FLAT_Y_M[0], -HALL_WALL_Y_M)),
    ):
        out.append(
            Box(
                f"wall_split_{side}",
                SPLIT_X_M,
                round((y0 + y1) / 2, 4),
                (WALL_T_M, round(y1 - y0, 4), 0.6),
                "white",
                white,
            )
        )
    return tuple(out)


WALLS: tuple[Box, ...] = _walls()
"""The interior walls."""

_GREY = (0.45, 0.45, 0.47, 1.0)
FURNITURE: tuple[Box, ...] = (
    Box("sofa", 0.4, 3.45, (2.2, 0.8, 0.45), "grey", _GREY),
    Box("coffee_table", 0.4, 2.2, (1.0, 0.6, 0.4)),
    Box("wardrobe", 5.3, 3.65, (1.2, 0.6, 0.6)),
    Box("bed", 7.8, 3.1, (2.0, 1.6, 0.5), "grey", _GREY),
    Box("counter", 0.0, -3.65, (3.0, 0.6, 0.6), "grey", _GREY),
    Box("dining_table", 2.8, -2.6, (1.0, 0.8, 0.5)),
    Box("bathtub", 8.1, -3.55, (1.7, 0.8, 0.5), "grey", _GREY),
    Box("shoe_cabinet", 4.0, 0.625, (1.0, 0.35, 0.5)),
)
"""The furniture (solid boxes, the full footprint solid to the floor)."""

OBJECTS: tuple[SceneObject, ...] = (
    SceneObject("red_cube", "red", "box", 3.6, 3.2, (0.15, 0.15, 0.15), (0.9, 0.05, 0.05, 1)),
    SceneObject(
        "green_cylinder", "green", "cylinder", 0.2, -2.4, (0.12, 0.16), (0.05, 0.75, 0.1, 1)
    ),
    SceneObject("blue_sphere", "blue", "sphere", 5.4, 1.7, (0.15,), (0.05, 0.2, 0.95, 1)),
    SceneObject("yellow_box", "yellow", "box", 8.4, -1.6, (0.15, 0.2, 0.16), (0.95, 0.85, 0.05, 1)),
)
"""Coloured objects perception finds, one or two per room."""

BLOCKER = Box("blocking_box", 6.95, HALL_WALL_Y_M, (0.9, 0.4, 0.5))
"""``--scenario flat-blocked``: a box standing in the bedroom's doorway."""

WAYPOINTS: dict[str, tuple[float, float]] = {
    "start": (0.0, 0.0),
    "charger": (-0.85, 0.0),
    "hallway": (3.5, 0.0),
    "front_door": (8.3, 0.0),
    "living_room": (2.8, 2.4),
    "bedroom": (6.2, 2.3),
    "kitchen": (1.2, -2.0),
    "bathroom": (6.6, -2.4),
}
"""The places of the site map ``flat`` (a test holds the two equal)."""

CHARGER_DOCK_M = (-1.35, 0.0)
"""Where the charging dock's plate lies on the floor (a marker: the robot does not hit it)."""


def solids(blocked: bool = False) -> tuple[Box, ...]:
    """Every solid box of the flat but the outer walls: walls, furniture, the blocker."""
    return (*WALLS, *FURNITURE, *((BLOCKER,) if blocked else ()))


def _f(*values: float) -> str:
    return " ".join(f"{v:.4g}" for v in values)


def statics_mjcf(blocked: bool = False) -> str:
    """The flat's MJCF geoms (interior walls, furniture, objects, place markers, the dock)."""
    solid = 'contype="1" conaffinity="1"'
    ghost = 'contype="0" conaffinity="0"'
    parts = []
    for b in solids(blocked):
        sx, sy, sz = b.size_m
        parts.append(
            f'<geom name="flat_{b.name}" type="box" pos="{_f(b.x_m, b.y_m, sz / 2)}" '
            f'size="{_f(sx / 2, sy / 2, sz / 2)}" rgba="{_f(*b.rgba)}" {solid}/>'
        )
    for o in OBJECTS:
        parts.append(
            f'<geom name="obj_{o.name}" type="{o.shape}" pos="{_f(o.x_m, o.y_m, o.height_m / 2)}" '
            f'size="{_f(*o.size_m)}" rgba="{_f(*o.rgba)}" {solid}/>'
        )
    for name, (x, y) in WAYPOINTS.items():
        parts.append(
            f'<geom name="wp_{name}" type="cylinder" pos="{_f(x, y, 0.0005)}" size="0.12 0.0005" '
            f'rgba="{_f(0.62, 0.66, 0.7, 1)}" {ghost}/>'
        )
    dx, dy = CHARGER_DOCK_M
    parts.append(
        f'<geom name="charger_dock" type="box" pos="{_f(dx, dy, 0.003)}" size="0.12 0.2 0.003" '
        f'rgba="{_f(0.1, 0.6, 0.3, 1)}" {ghost}/>'
    )
    return "\n    ".join(parts)


def describe_solids(blocked: bool = False) -> list[dict[str, Any]]:
    """The walls, furniture (and blocker) as ``--describe`` obstacles (metres)."""
    return [
        {
            "name": b.name,
            "colour": b.colour,
            "shape": "box",
            "position_m": {"x_m": b.x_m, "y_m": b.y_m, "z_m": round(b.size_m[2] / 2, 4)},
            "size_m": {"x_m": b.size_m[0], "y_m": b.size_m[1], "z_m": b.size_m[2]},
            **({"kind": "wall"} if b.name.startswith("wall_") else {"kind": "furniture"}),
        }
        for b in solids(blocked)
    ]


def describe_layout() -> dict[str, Any]:
    """Rooms and doorways for ``--describe`` (metres)."""
    return {
        "rooms": [
            {"name": n, "x_min_m": r[0], "y_min_m": r[1], "x_max_m": r[2], "y_max_m": r[3]}
            for n, r in ROOMS.items()
        ],
        "doorways": [
            {
                "name": d.name,
                "x_m": d.x_m,
                "y_m": d.y_m,
                "width_m": d.width_m,
                "rooms": list(d.rooms),
            }
            for d in DOORWAYS
        ],
    }

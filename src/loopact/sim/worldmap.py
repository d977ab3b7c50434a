"""The simulator's own map, drawn from its geometry (``loopact sim --write-map DIR``; issue 40).

What a careful survey of the world would give a real robot: the floor bounds (walls outside
them), every interior wall, every piece of furniture and every fixed object, rasterised at
``resolution_m`` (5 cm by default) with every touched cell occupied. Built from
:func:`loopact.sim.describe.describe_world`, the graders' ground truth, so map and world agree.
Objects that move (a scenario's movers) are not on it, as on a real map.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopact.maps.grid import FREE, OCCUPIED, OccupancyGrid, empty_grid
from loopact.maps.mapfile import write_map
from loopact.maps.raster import fill_box, fill_disc
from loopact.sim.describe import describe_world
from loopact.sim.scenarios import Scenario, get_scenario

RESOLUTION_M = 0.05
BORDER_M = 0.25
"""The map reaches this far past the floor on every side (the outer walls)."""


def world_map(
    scenario: str | Scenario = "default", resolution_m: float = RESOLUTION_M
) -> OccupancyGrid:
    """The occupancy grid of ``scenario``'s world in the map frame (= the simulator's world).

    Raises:
        ConfigError: Unknown scenario.
    """
    desc = describe_world(scenario)
    room = desc["room"]
    x0, x1 = room["x_min_m"] - BORDER_M, room["x_max_m"] + BORDER_M
    y0, y1 = room["y_min_m"] - BORDER_M, room["y_max_m"] + BORDER_M
    grid = empty_grid(x1 - x0, y1 - y0, resolution_m, (x0, y0), value=OCCUPIED)
    cx, cy = (room["x_min_m"] + room["x_max_m"]) / 2, (room["y_min_m"] + room["y_max_m"]) / 2
    half = ((room["x_max_m"] - room["x_min_m"]) / 2, (room["y_max_m"] - room["y_min_m"]) / 2)
    # the floor is free: cells whose centre lies on it (never a cell the wall touches)
    grid = fill_box(grid, (cx, cy), half, value=FREE, pad_m=-resolution_m * 0.5)
    for thing in [*desc["obstacles"], *(o for o in desc["objects"] if not o.get("movable"))]:
        grid = _solid(grid, thing)
    return grid


def _solid(grid: OccupancyGrid, thing: dict[str, Any]) -> OccupancyGrid:
    p, s = thing["position_m"], thing["size_m"]
    centre = (p["x_m"], p["y_m"])
    if thing["shape"] in ("box", "table"):
        return fill_box(grid, centre, (s["x_m"] / 2, s["y_m"] / 2))
    return fill_disc(grid, centre, s.get("radius_m", s["x_m"] / 2))


def write_world_map(
    directory: Path, scenario: str | Scenario = "default", resolution_m: float = RESOLUTION_M
) -> tuple[Path, Path]:
    """Write ``scenario``'s map as map_server files ``<site>.yaml`` + ``<site>.pgm`` into
    ``directory`` (``sim_room`` or ``flat``; ``flat_blocked`` for the blocked flat).

    Returns:
        ``(yaml path, image path)``.

    Raises:
        ConfigError: Unknown scenario.
        OSError: The files cannot be written.
    """
    sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
    name = sc.site + ("_blocked" if sc.blocked else "")
    return write_map(world_map(sc, resolution_m), directory, name)

"""The grid inflated by the robot's footprint and a margin (SPEC D3, issue 40).

As Nav2's inflation layer does: a cell whose centre is closer to an obstacle than the robot's
footprint radius is lethal (the robot's centre may not be there); within ``margin_m`` beyond
that the cost rises towards the obstacle, so plans keep off walls and furniture where there is
room and still pass a doorway where there is not. Unknown cells count as obstacles (a robot
does not plan through what its map has never seen).

Distances come from OpenCV's exact Euclidean distance transform (``cv2.distanceTransform`` with
``DIST_MASK_PRECISE``), in metres from a cell's centre to the nearest obstacle cell's edge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loopact.maps.grid import UNKNOWN, OccupancyGrid

OCCUPIED_AT = 65
"""Cell values at or above this (percent) are obstacles (map_server's default occupied_thresh)."""
MARGIN_COST = 6.0
"""Extra cost per metre of a cell touching the footprint's edge; it falls to 0 at the margin."""


@dataclass(frozen=True, eq=False)
class Costmap:
    """A planning grid: which cells the robot's centre may occupy, and at what cost.

    Attributes:
        grid: The occupancy grid it was made from.
        clearance_m: ``(H, W)`` float32: metres from each cell's centre to the nearest
            obstacle cell's edge (0 on obstacles).
        lethal: ``(H, W)`` bool: the footprint would overlap an obstacle there.
        cost: ``(H, W)`` float64: cost of crossing a cell per metre (1 in the open, up to
            ``1 + MARGIN_COST`` at the footprint's edge); ``inf`` where lethal.
        radius_m: The footprint radius used, metres.
        margin_m: The margin used, metres.
    """

    grid: OccupancyGrid
    clearance_m: npt.NDArray[np.float32]
    lethal: npt.NDArray[np.bool_]
    cost: npt.NDArray[np.float64]
    radius_m: float
    margin_m: float

    def clearance_at(self, x_m: float, y_m: float) -> float:
        """Metres from the map point to the nearest obstacle (0 off the grid or on one)."""
        row, col = self.grid.to_cell(x_m, y_m)
        if not self.grid.inside(row, col):
            return 0.0
        return float(self.clearance_m[row, col])

    def free_at(self, x_m: float, y_m: float) -> bool:
        """True if the robot's centre may be at the map point (on the grid and not lethal)."""
        row, col = self.grid.to_cell(x_m, y_m)
        return self.grid.inside(row, col) and not bool(self.lethal[row, col])


def obstacles(grid: OccupancyGrid, unknown_is_obstacle: bool = True) -> npt.NDArray[np.bool_]:
    """The obstacle cells of ``grid``: occupied (>= :data:`OCCUPIED_AT`), and unknown ones."""
    d = grid.data
    mask: npt.NDArray[np.bool_] = d >= OCCUPIED_AT
    if unknown_is_obstacle:
        mask |= d == UNKNOWN
    return mask


def inflate(
    grid: OccupancyGrid,
    radius_m: float,
    margin_m: float = 0.1,
    unknown_is_obstacle: bool = True,
) -> Costmap:
    """Inflate ``grid`` by a round footprint of ``radius_m`` plus ``margin_m`` (metres).

    Raises:
        ValueError: A negative or non-finite radius or margin.
    """
    import cv2

    for name, v in (("radius_m", radius_m), ("margin_m", margin_m)):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {v}")
    obst = obstacles(grid, unknown_is_obstacle)
    res = grid.resolution_m
    if obst.any():
        free = (~obst).astype(np.uint8)
        # the distance from a free cell's centre to the nearest obstacle cell's centre, in cells;
        # the obstacle's edge is half a cell nearer
        dist = cv2.distanceTransform(free, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
        clearance = np.maximum(dist * res - res / 2, 0.0).astype(np.float32)
        clearance[obst] = 0.0
    else:
        clearance = np.full(obst.shape, np.float32(1e6), dtype=np.float32)
    lethal = obst | (clearance < radius_m)
    cost = np.ones(obst.shape, dtype=np.float64)
    if margin_m > 0:
        near = np.clip((radius_m + margin_m - clearance) / margin_m, 0.0, 1.0)
        cost += MARGIN_COST * near.astype(np.float64) ** 2
    cost[lethal] = np.inf
    return Costmap(grid, clearance, lethal, cost, float(radius_m), float(margin_m))


def with_obstacles(
    costmap: Costmap, points_m: list[tuple[float, float]] | npt.NDArray[np.float64]
) -> Costmap:
    """The costmap re-inflated with extra obstacle points (what the depth camera saw).

    Args:
        costmap: The current costmap.
        points_m: ``(x_m, y_m)`` map points to mark occupied; points off the grid are ignored.
    """
    grid = costmap.grid
    data = grid.data.copy()
    for x, y in np.asarray(points_m, dtype=np.float64).reshape(-1, 2):
        row, col = grid.to_cell(float(x), float(y))
        if grid.inside(row, col):
            data[row, col] = 100
    return inflate(grid.with_data(data), costmap.radius_m, costmap.margin_m)

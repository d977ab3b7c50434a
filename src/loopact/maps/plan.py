"""The global planner: a least-cost path on the inflated grid, smoothed (SPEC D3, issue 40).

The search is scikit-image's minimum-cost-path (``skimage.graph.MCP_Geometric``, the class
behind ``route_through_array``): Dijkstra on the 8-connected grid where a step costs its
length times the mean cost of the two cells (:mod:`loopact.maps.costmap`), lethal cells
impassable. It stops as soon as the goal is settled. Why this library is in
docs/navigation.md.

The grid path is then smoothed (:func:`smooth`): a corner is cut when the straight line past it
stays out of lethal cells and never comes closer to an obstacle than the path it replaces does,
so the smoothed path keeps the planner's clearance and is close to the shortest any-angle path.

Failures are :class:`PlanError` with a ``reason`` the caller turns into words:
``start_off_map``, ``goal_off_map``, ``goal_in_obstacle``, ``goal_too_close``,
``start_blocked`` or ``no_path``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loopact.errors import LoopactError
from loopact.maps.costmap import Costmap
from loopact.maps.grid import OccupancyGrid

GOAL_TOLERANCE_M = 0.3
"""A goal in the footprint's reach of an obstacle moves to the nearest free cell this close."""
START_ESCAPE_M = 0.5
"""A start too close to an obstacle (after a stop near a wall) leaves to the nearest free cell
this close, in a straight line."""

Point = tuple[float, float]


class PlanError(LoopactError, ValueError):
    """No plan (SPEC D3): in loopact's exception tree (:mod:`loopact.errors`), and a
    ``ValueError`` for callers of the maps package alone.

    Attributes:
        reason: ``start_off_map``, ``goal_off_map``, ``goal_in_obstacle``, ``goal_too_close``,
            ``start_blocked`` or ``no_path``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Plan:
    """A planned path in the map frame.

    Attributes:
        points_m: ``((x_m, y_m), ...)`` from the start to the goal (smoothed: few corners).
        length_m: Length of that polyline, metres.
        grid_points: How many cells the unsmoothed grid path had.
        plan_s: Wall time the search and smoothing took, seconds.
    """

    points_m: tuple[Point, ...]
    length_m: float
    grid_points: int
    plan_s: float


def polyline_length(points: list[Point] | tuple[Point, ...]) -> float:
    """Length of a polyline in metres."""
    return sum(math.dist(a, b) for a, b in zip(points, points[1:], strict=False))


def _nearest_free(costmap: Costmap, row: int, col: int, within_m: float) -> tuple[int, int] | None:
    """The free cell nearest to ``(row, col)`` within ``within_m``, or None."""
    res = costmap.grid.resolution_m
    k = max(1, math.ceil(within_m / res))
    r0, r1 = max(0, row - k), min(costmap.grid.height, row + k + 1)
    c0, c1 = max(0, col - k), min(costmap.grid.width, col + k + 1)
    window = ~costmap.lethal[r0:r1, c0:c1]
    if not window.any():
        return None
    rr, cc = np.nonzero(window)
    d2 = (rr + r0 - row) ** 2 + (cc + c0 - col) ** 2
    i = int(np.argmin(d2))
    if math.sqrt(float(d2[i])) * res > within_m:
        return None
    return int(rr[i] + r0), int(cc[i] + c0)


def _endpoints(
    costmap: Costmap, start: Point, goal: Point
) -> tuple[tuple[int, int], tuple[int, int]]:
    grid = costmap.grid
    s = grid.to_cell(*start)
    g = grid.to_cell(*goal)
    if not grid.inside(*s):
        raise PlanError(
            "start_off_map", f"the robot at ({start[0]:.2f}, {start[1]:.2f}) is off the map"
        )
    if not grid.inside(*g):
        raise PlanError(
            "goal_off_map",
            f"({goal[0]:.2f}, {goal[1]:.2f}) is outside the map "
            f"(x {grid.origin_x_m:.2f} .. {grid.origin_x_m + grid.size_m[0]:.2f}, "
            f"y {grid.origin_y_m:.2f} .. {grid.origin_y_m + grid.size_m[1]:.2f} m)",
        )
    if costmap.clearance_m[g] <= 0.0:
        raise PlanError(
            "goal_in_obstacle",
            f"({goal[0]:.2f}, {goal[1]:.2f}) is inside a wall or furniture on the map",
        )
    if costmap.lethal[g]:
        free = _nearest_free(costmap, *g, GOAL_TOLERANCE_M)
        if free is None:
            raise PlanError(
                "goal_too_close",
                f"({goal[0]:.2f}, {goal[1]:.2f}) is too close to a wall or furniture for the "
                f"robot (footprint radius {costmap.radius_m:.2f} m)",
            )
        g = free
    if costmap.lethal[s]:
        free = _nearest_free(costmap, *s, START_ESCAPE_M)
        if free is None:
            raise PlanError(
                "start_blocked",
                f"the robot at ({start[0]:.2f}, {start[1]:.2f}) is hemmed in: no free space "
                f"within {START_ESCAPE_M} m",
            )
        s = free
    return s, g


def plan(costmap: Costmap, start: Point, goal: Point) -> Plan:
    """Plan from ``start`` to ``goal`` (map points, metres) on ``costmap``.

    The returned points begin at ``start`` and end at ``goal`` (or, for a goal within the
    footprint's reach of an obstacle, at the nearest free cell within
    :data:`GOAL_TOLERANCE_M`).

    Raises:
        PlanError: See the module docstring.
    """
    from skimage.graph import MCP_Geometric

    t0 = time.perf_counter()
    s, g = _endpoints(costmap, start, goal)
    grid = costmap.grid
    if s == g:
        pts: list[Point] = [start, goal if costmap.free_at(*goal) else grid.to_world(*g)]
        return Plan(tuple(pts), polyline_length(pts), 1, time.perf_counter() - t0)
    mcp = MCP_Geometric(costmap.cost, fully_connected=True)
    costs, _ = mcp.find_costs([s], [g])
    if not math.isfinite(float(costs[g])):
        raise PlanError(
            "no_path",
            f"no path from ({start[0]:.2f}, {start[1]:.2f}) to ({goal[0]:.2f}, {goal[1]:.2f}) "
            "on the map",
        )
    cells = mcp.traceback(g)
    smoothed = smooth(costmap, cells)
    pts = [grid.to_world(r, c) for r, c in smoothed]
    if costmap.free_at(*start):
        pts[0] = start
    else:  # leaves the footprint's reach of the obstacle in a straight line first
        pts.insert(0, start)
    if costmap.free_at(*goal):
        pts[-1] = goal
    pts = _dedupe(pts)
    return Plan(tuple(pts), polyline_length(pts), len(cells), time.perf_counter() - t0)


def _dedupe(points: list[Point]) -> list[Point]:
    out = [points[0]]
    for p in points[1:]:
        if math.dist(p, out[-1]) > 1e-6:
            out.append(p)
    return out


def line_cells(a: tuple[int, int], b: tuple[int, int]) -> npt.NDArray[np.intp]:
    """The cells a straight line from cell ``a`` to cell ``b`` passes, ``(N, 2)`` rows/cols
    (sampled every half cell, so a diagonal never slips between two blocked cells)."""
    n = max(1, int(math.ceil(2 * max(abs(b[0] - a[0]), abs(b[1] - a[1])))))
    t = np.linspace(0.0, 1.0, n + 1)
    rows = np.rint(a[0] + (b[0] - a[0]) * t).astype(np.intp)
    cols = np.rint(a[1] + (b[1] - a[1]) * t).astype(np.intp)
    return np.stack([rows, cols], axis=1)


def smooth(costmap: Costmap, cells: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Cut the corners of a grid path where the straight line is as safe as the path.

    From each kept cell, go on along the path while the straight line to the next cell crosses
    no lethal cell and no cell costlier than the costliest cell of the path section it would
    replace; keep the last such cell (greedy string pulling).

    Args:
        costmap: The costmap the path was planned on.
        cells: ``[(row, col), ...]`` from the start to the goal.

    Returns:
        The kept cells, first and last included.
    """
    if len(cells) <= 2:
        return list(cells)
    cost = costmap.cost
    path_cost = np.array([cost[c] for c in cells])
    out = [cells[0]]
    i = 0
    n = len(cells)
    while i < n - 1:
        best = i + 1
        top = path_cost[i]
        for j in range(i + 2, n):
            top = max(top, path_cost[j - 1], path_cost[j])
            line = line_cells(cells[i], cells[j])
            along = cost[line[:, 0], line[:, 1]]
            if not (np.all(np.isfinite(along)) and along.max() <= top + 1e-9):
                break
            best = j
        out.append(cells[best])
        i = best
    return out


def shortest_free_path_m(grid: OccupancyGrid, radius_m: float, start: Point, goal: Point) -> float:
    """The length of the shortest path from ``start`` to ``goal`` that keeps a disc of
    ``radius_m`` off every obstacle, metres (no margin, uniform cost, corners cut): the
    yardstick a driven path is measured against (issue 40's path ratio).

    Raises:
        PlanError: No such path.
    """
    from loopact.maps.costmap import inflate

    return plan(inflate(grid, radius_m, 0.0), start, goal).length_m

"""Shapes onto a grid: how a map is made from known geometry (the simulator's, issue 40).

A cell is marked when its centre lies inside the shape grown by ``pad_m``; with ``pad_m`` of
half a cell's diagonal, every cell the shape touches is marked (what a careful mapper would
record), so a plan on the map never clips the real geometry.
"""

from __future__ import annotations

import math

import numpy as np

from loopact.maps.grid import OCCUPIED, OccupancyGrid


def _centres(grid: OccupancyGrid) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = np.mgrid[0 : grid.height, 0 : grid.width]
    lx = (cols + 0.5) * grid.resolution_m
    ly = (rows + 0.5) * grid.resolution_m
    if grid.origin_yaw_rad:
        c, s = math.cos(grid.origin_yaw_rad), math.sin(grid.origin_yaw_rad)
        lx, ly = c * lx - s * ly, s * lx + c * ly
    return grid.origin_x_m + lx, grid.origin_y_m + ly


def fill_box(
    grid: OccupancyGrid,
    center_m: tuple[float, float],
    half_m: tuple[float, float],
    yaw_rad: float = 0.0,
    value: int = OCCUPIED,
    pad_m: float | None = None,
) -> OccupancyGrid:
    """The grid with a rectangle (centre, half extents in metres, yaw in radians) set to
    ``value``; ``pad_m`` grows it (default: half a cell's diagonal)."""
    pad = grid.resolution_m * math.sqrt(0.5) if pad_m is None else pad_m
    x, y = _centres(grid)
    dx, dy = x - center_m[0], y - center_m[1]
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    u, v = c * dx + s * dy, -s * dx + c * dy
    inside = (np.abs(u) <= half_m[0] + pad) & (np.abs(v) <= half_m[1] + pad)
    data = grid.data.copy()
    data[inside] = value
    return grid.with_data(data)


def fill_disc(
    grid: OccupancyGrid,
    center_m: tuple[float, float],
    radius_m: float,
    value: int = OCCUPIED,
    pad_m: float | None = None,
) -> OccupancyGrid:
    """The grid with a disc (centre and radius in metres) set to ``value``."""
    pad = grid.resolution_m * math.sqrt(0.5) if pad_m is None else pad_m
    x, y = _centres(grid)
    inside = np.hypot(x - center_m[0], y - center_m[1]) <= radius_m + pad
    data = grid.data.copy()
    data[inside] = value
    return grid.with_data(data)

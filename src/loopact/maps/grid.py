"""The occupancy grid: ``nav_msgs/OccupancyGrid`` as a frozen dataclass (SPEC D3, issue 40).

Cell values follow ``nav_msgs/OccupancyGrid``: ``0`` free, ``100`` occupied, ``1..99`` the
probability of being occupied in percent, ``-1`` unknown. Row 0 of :attr:`OccupancyGrid.data` is
the row at the map origin (the lowest y), as in the ROS message, so ``data[row, col]`` is the
cell whose lower-left corner is ``origin + (col, row) * resolution``. (A map_server image is the
other way up: its first row is the highest y; :mod:`loopact.maps.mapfile` flips it.)

Coordinates are metres in the map frame (REP 105); the origin's yaw (radians, counter-clockwise)
is honoured by :meth:`OccupancyGrid.to_cell` and :meth:`OccupancyGrid.to_world`, although most
maps have none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loopact.errors import ConfigError

FREE = 0
OCCUPIED = 100
UNKNOWN = -1

MAX_CELLS = 25_000_000
"""The largest grid loopact takes (5000 x 5000 cells: 250 m x 250 m at 5 cm), about 25 MB
as ``int8`` and a few times that while planning; a larger map is refused with its size."""


@dataclass(frozen=True, eq=False)
class OccupancyGrid:
    """A 2-D occupancy grid in the map frame (``nav_msgs/OccupancyGrid``).

    Attributes:
        data: ``(height, width)`` ``int8`` array; row 0 is the lowest y (see the module
            docstring); values 0 free, 100 occupied, 1..99 probability, -1 unknown.
        resolution_m: Edge of one square cell, metres.
        origin_x_m: x of the lower-left corner of cell (0, 0), metres.
        origin_y_m: y of that corner, metres.
        origin_yaw_rad: Rotation of the grid about its origin, radians (usually 0).
        frame_id: The frame the grid is in (``map``).
    """

    data: npt.NDArray[np.int8]
    resolution_m: float
    origin_x_m: float = 0.0
    origin_y_m: float = 0.0
    origin_yaw_rad: float = 0.0
    frame_id: str = "map"

    def __post_init__(self) -> None:
        if self.data.ndim != 2 or self.data.dtype != np.int8:
            raise ValueError(
                f"data must be a 2-D int8 array, got {self.data.dtype} {self.data.shape}"
            )
        if not (math.isfinite(self.resolution_m) and self.resolution_m > 0):
            raise ValueError(f"resolution_m must be a positive number, got {self.resolution_m}")
        check_size(self.data.shape[1], self.data.shape[0], "the grid")

    @property
    def height(self) -> int:
        """Rows (cells along y)."""
        return int(self.data.shape[0])

    @property
    def width(self) -> int:
        """Columns (cells along x)."""
        return int(self.data.shape[1])

    @property
    def size_m(self) -> tuple[float, float]:
        """``(x extent, y extent)`` in metres."""
        return self.width * self.resolution_m, self.height * self.resolution_m

    def to_cell(self, x_m: float, y_m: float) -> tuple[int, int]:
        """The ``(row, col)`` of the cell holding the map point ``(x_m, y_m)`` (may lie outside
        the grid: check with :meth:`inside`)."""
        dx, dy = x_m - self.origin_x_m, y_m - self.origin_y_m
        if self.origin_yaw_rad:
            c, s = math.cos(self.origin_yaw_rad), math.sin(self.origin_yaw_rad)
            dx, dy = c * dx + s * dy, -s * dx + c * dy
        return math.floor(dy / self.resolution_m), math.floor(dx / self.resolution_m)

    def to_world(self, row: float, col: float) -> tuple[float, float]:
        """The map point ``(x_m, y_m)`` at the centre of cell ``(row, col)`` (fractions allowed)."""
        lx, ly = (col + 0.5) * self.resolution_m, (row + 0.5) * self.resolution_m
        if self.origin_yaw_rad:
            c, s = math.cos(self.origin_yaw_rad), math.sin(self.origin_yaw_rad)
            lx, ly = c * lx - s * ly, s * lx + c * ly
        return self.origin_x_m + lx, self.origin_y_m + ly

    def inside(self, row: int, col: int) -> bool:
        """True if ``(row, col)`` is a cell of the grid."""
        return 0 <= row < self.height and 0 <= col < self.width

    def contains(self, x_m: float, y_m: float) -> bool:
        """True if the map point ``(x_m, y_m)`` lies on the grid."""
        return self.inside(*self.to_cell(x_m, y_m))

    def value_at(self, x_m: float, y_m: float) -> int:
        """The cell value at a map point; :data:`UNKNOWN` off the grid."""
        row, col = self.to_cell(x_m, y_m)
        return int(self.data[row, col]) if self.inside(row, col) else UNKNOWN

    def with_data(self, data: npt.NDArray[np.int8]) -> OccupancyGrid:
        """The same geometry with other cells (``data`` must have the same shape)."""
        if data.shape != self.data.shape:
            raise ValueError(f"shape {data.shape} differs from the grid's {self.data.shape}")
        return OccupancyGrid(
            data.astype(np.int8, copy=False),
            self.resolution_m,
            self.origin_x_m,
            self.origin_y_m,
            self.origin_yaw_rad,
            self.frame_id,
        )


def check_size(width: int, height: int, what: str) -> None:
    """Refuse a grid of more than :data:`MAX_CELLS` cells, naming its size.

    Raises:
        ConfigError: Too large (key ``robot.map``).
    """
    cells = int(width) * int(height)
    if cells > MAX_CELLS:
        raise ConfigError(
            f"{what} is {width} x {height} cells ({cells / 1e6:.1f} million, about "
            f"{cells * 9 / 1e6:.0f} MB while planning): more than the {MAX_CELLS / 1e6:.0f} "
            "million cells loopact takes; save it at a coarser resolution or crop it",
            key="robot.map",
        )


def empty_grid(
    width_m: float,
    height_m: float,
    resolution_m: float,
    origin: tuple[float, float] = (0.0, 0.0),
    value: int = FREE,
) -> OccupancyGrid:
    """A grid covering ``width_m`` x ``height_m`` metres from ``origin``, every cell ``value``.

    Raises:
        ValueError: A size or the resolution is not positive.
        ConfigError: The grid would be larger than :data:`MAX_CELLS`.
    """
    if not (width_m > 0 and height_m > 0 and resolution_m > 0):
        raise ValueError(f"sizes must be positive, got {width_m} x {height_m} at {resolution_m}")
    cols = math.ceil(width_m / resolution_m - 1e-9)
    rows = math.ceil(height_m / resolution_m - 1e-9)
    check_size(cols, rows, "the grid")
    data = np.full((rows, cols), value, dtype=np.int8)
    return OccupancyGrid(data, resolution_m, origin[0], origin[1])

"""The map as a picture: grid, robot pose and heading, path, places and objects (issue 40).

What ``show_map`` hands the model and ``loopact sim --snapshot`` writes for people. Free
cells are white, obstacles dark grey, unknown cells mid grey; the planned path orange; the
robot a blue disc of its footprint with a heading line; places blue-ringed dots with their
names; located objects filled squares in their colour. North (+y) is up, +x to the right, and
a 1 m scale bar sits in the lower-left corner. Labels are ASCII (OpenCV's Hershey fonts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loopact.maps.costmap import OCCUPIED_AT
from loopact.maps.grid import UNKNOWN, OccupancyGrid

_FREE = (255, 255, 255)
_OCC = (60, 60, 64)
_UNKNOWN = (170, 170, 170)
_PATH = (255, 120, 0)
_DRIVEN = (120, 40, 160)
_ROBOT = (30, 90, 220)
_PLACE = (20, 110, 200)
_TEXT = (20, 20, 20)

COLOURS_RGB: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 170, 40),
    "blue": (30, 60, 230),
    "yellow": (230, 200, 20),
    "cyan": (0, 190, 190),
    "purple": (140, 30, 190),
    "orange": (250, 140, 0),
    "brown": (140, 90, 50),
    "grey": (128, 128, 128),
}
"""Colours for located objects by colour word (others are drawn black)."""


@dataclass(frozen=True)
class MapMark:
    """A named point to draw.

    Attributes:
        name: The label (ASCII shows; other characters are dropped).
        x_m: x in the map frame, metres.
        y_m: y in the map frame, metres.
        colour: A colour word from :data:`COLOURS_RGB` (objects), or "" (a place).
    """

    name: str
    x_m: float
    y_m: float
    colour: str = ""


def _scale(grid: OccupancyGrid, min_px: int) -> int:
    return max(1, math.ceil(min_px / max(grid.width, grid.height)))


def _pixel(grid: OccupancyGrid, k: int, x_m: float, y_m: float) -> tuple[int, int]:
    row, col = grid.to_cell(x_m, y_m)
    # fractional position inside the cell, for smooth lines
    lx = (x_m - grid.origin_x_m) / grid.resolution_m
    ly = (y_m - grid.origin_y_m) / grid.resolution_m
    if grid.origin_yaw_rad:
        lx, ly = col + 0.5, row + 0.5
    return int(round(lx * k)), int(round((grid.height - ly) * k))


def render_map(
    grid: OccupancyGrid,
    pose: tuple[float, float, float] | None = None,
    path: Sequence[tuple[float, float]] = (),
    places: Sequence[MapMark] = (),
    objects: Sequence[MapMark] = (),
    driven: Sequence[tuple[float, float]] = (),
    robot_radius_m: float = 0.17,
    min_px: int = 640,
    caption: str = "",
) -> npt.NDArray[np.uint8]:
    """Draw the map with what is on it.

    Args:
        grid: The occupancy grid.
        pose: The robot's ``(x_m, y_m, yaw_rad)`` in the map frame, or None.
        path: The planned path, map points in metres.
        places: Named places.
        objects: Located objects (drawn in their colour).
        driven: Where the robot has been (a thin purple line), map points in metres.
        robot_radius_m: The footprint radius, metres.
        min_px: The longer side of the image is at least this many pixels.
        caption: One line printed at the top left, or "".

    Returns:
        An ``HxWx3`` uint8 RGB image.
    """
    import cv2

    k = _scale(grid, min_px)
    d = grid.data
    img = np.empty((*d.shape, 3), dtype=np.uint8)
    img[:] = _FREE
    img[d >= OCCUPIED_AT] = _OCC
    img[d == UNKNOWN] = _UNKNOWN
    between = (d > 0) & (d < OCCUPIED_AT)
    if between.any():
        shade = (255 - d[between].astype(np.int32) * 2).clip(0, 255).astype(np.uint8)
        img[between] = shade[:, None]
    img = np.ascontiguousarray(np.flipud(img).repeat(k, axis=0).repeat(k, axis=1))

    def px(p: tuple[float, float]) -> tuple[int, int]:
        return _pixel(grid, k, p[0], p[1])

    thick = max(2, k // 2)
    if len(driven) > 1:
        pts = np.array([px(p) for p in driven], dtype=np.int32).reshape(-1, 1, 2)
        cv2.polylines(img, [pts], False, _DRIVEN, max(1, thick // 2), cv2.LINE_AA)
    if len(path) > 1:
        pts = np.array([px(p) for p in path], dtype=np.int32).reshape(-1, 1, 2)
        cv2.polylines(img, [pts], False, _PATH, thick, cv2.LINE_AA)
        cv2.circle(img, px(path[-1]), thick * 2, _PATH, -1, cv2.LINE_AA)
    font = cv2.FONT_HERSHEY_SIMPLEX
    scale = max(0.4, min(0.8, k * 0.12))
    for mark in places:
        c = px((mark.x_m, mark.y_m))
        cv2.circle(img, c, thick * 2, _PLACE, max(1, thick // 2), cv2.LINE_AA)
        cv2.circle(img, c, max(1, thick // 2), _PLACE, -1, cv2.LINE_AA)
        _label(img, _ascii(mark.name), (c[0] + thick * 2 + 2, c[1] - 2), scale, _PLACE)
    for mark in objects:
        c = px((mark.x_m, mark.y_m))
        s = thick * 2
        colour = COLOURS_RGB.get(mark.colour, (0, 0, 0))
        cv2.rectangle(img, (c[0] - s, c[1] - s), (c[0] + s, c[1] + s), colour, -1)
        cv2.rectangle(img, (c[0] - s, c[1] - s), (c[0] + s, c[1] + s), _TEXT, 1)
        _label(img, _ascii(mark.name), (c[0] + s + 2, c[1] + s), scale, _TEXT)
    if pose is not None:
        x, y, yaw = pose
        c = px((x, y))
        r = max(3, int(round(robot_radius_m / grid.resolution_m * k)))
        cv2.circle(img, c, r, _ROBOT, -1, cv2.LINE_AA)
        tip = px(
            (x + 2.2 * robot_radius_m * math.cos(yaw), y + 2.2 * robot_radius_m * math.sin(yaw))
        )
        cv2.arrowedLine(img, c, tip, _ROBOT, thick, cv2.LINE_AA, tipLength=0.4)
    _scale_bar(img, grid, k, font, scale)
    if caption:
        _label(img, _ascii(caption), (8, 8 + int(22 * scale)), scale, _TEXT, boxed=True)
    return img


def _ascii(text: str) -> str:
    return "".join(ch for ch in text if 32 <= ord(ch) < 127)


def _label(
    img: npt.NDArray[np.uint8],
    text: str,
    at: tuple[int, int],
    scale: float,
    rgb: tuple[int, int, int],
    boxed: bool = False,
) -> None:
    """Text with a white halo (or on a white box) so it reads over walls and paths; moved left
    of ``at`` when it would leave the image on the right."""
    import cv2

    if not text:
        return
    font = cv2.FONT_HERSHEY_SIMPLEX
    (w, h), base = cv2.getTextSize(text, font, scale, 1)
    x, y = at
    if x + w > img.shape[1] - 2:
        x = max(2, img.shape[1] - 2 - w)
    y = max(h + 2, min(y, img.shape[0] - base - 2))
    if boxed:
        cv2.rectangle(img, (x - 3, y - h - 3), (x + w + 3, y + base + 2), (255, 255, 255), -1)
        cv2.rectangle(img, (x - 3, y - h - 3), (x + w + 3, y + base + 2), _TEXT, 1)
    else:
        cv2.putText(img, text, (x, y), font, scale, (255, 255, 255), 3, cv2.LINE_AA)
    cv2.putText(img, text, (x, y), font, scale, rgb, 1, cv2.LINE_AA)


def _scale_bar(
    img: npt.NDArray[np.uint8], grid: OccupancyGrid, k: int, font: int, scale: float
) -> None:
    """A 1 m bar with its label on a white box in the lower-left corner."""
    import cv2

    one_m = int(round(k / grid.resolution_m))
    h = img.shape[0]
    (tw, th), _ = cv2.getTextSize("1 m", font, scale, 1)
    cv2.rectangle(img, (4, h - th - 16), (16 + one_m + tw + 8, h - 4), (255, 255, 255), -1)
    cv2.rectangle(img, (4, h - th - 16), (16 + one_m + tw + 8, h - 4), _TEXT, 1)
    y = h - 10
    cv2.rectangle(img, (10, y - 4), (10 + one_m, y), _TEXT, -1)
    cv2.putText(img, "1 m", (16 + one_m, y), font, scale, _TEXT, 1, cv2.LINE_AA)

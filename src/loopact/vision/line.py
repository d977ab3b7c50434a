"""The floor line in a camera frame, on the ground plane (SPEC D5, issue 15).

Pure functions, ``frame -> LineView``: the line's pixels (HSV ranges of its colour), each
projected onto the floor with a pinhole camera at a known height and tilt (metres in the
robot frame: x forward from the base centre, y left, REP 103). :func:`find_line` reports

- the centroid of the line in a near band of the floor (``band_m``, the part just ahead of the
  robot): its lateral offset drives the follower's PID on angular speed;
- the line's heading from a straight fit through the visible part ahead;
- a corner: line pixels that branch off the fitted line (a turn of the line ahead), with its
  distance and side.

Frames are analysed at most :data:`ANALYSIS_WIDTH_PX` wide (downscaled), so the cost does not
grow with the camera's resolution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from loopact.vision.detect import ColorRanges

ANALYSIS_WIDTH_PX = 320
BAND_M = (0.30, 0.55)
"""Default near band: floor from 0.30 m to 0.55 m ahead of the base centre."""
MIN_BAND_POINTS = 12
BRANCH_OFFSET_M = 0.10
MIN_BRANCH_POINTS = 25


@dataclass(frozen=True)
class Camera:
    """Where the camera is, for ground projection.

    Attributes:
        hfov_deg: Horizontal field of view, degrees.
        height_m: Height of the optical centre above the floor, metres.
        forward_m: Optical centre ahead of the base centre, metres.
        tilt_deg: Head tilt, degrees, down positive.
        pan_deg: Head pan, degrees, left positive.
    """

    hfov_deg: float
    height_m: float
    forward_m: float
    tilt_deg: float
    pan_deg: float = 0.0


def ground_points(
    us: npt.NDArray[np.float64],
    vs: npt.NDArray[np.float64],
    width: int,
    height: int,
    cam: Camera,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Project pixels onto the floor: ``(x_m, y_m, valid)`` in the robot frame.

    ``valid`` is False for pixels at or above the horizon.
    """
    f = (width / 2) / math.tan(math.radians(cam.hfov_deg) / 2)
    left = -(us - width / 2 + 0.5) / f
    up = -(vs - height / 2 + 0.5) / f
    t = math.radians(cam.tilt_deg)
    dz = -math.sin(t) + up * math.cos(t)
    valid = dz < -1e-6
    s = np.where(valid, cam.height_m / np.where(valid, -dz, 1.0), 0.0)
    fwd = s * (math.cos(t) + up * math.sin(t))
    lat = s * left
    p = math.radians(cam.pan_deg)
    x = cam.forward_m + fwd * math.cos(p) - lat * math.sin(p)
    y = fwd * math.sin(p) + lat * math.cos(p)
    return x, y, valid


@dataclass(frozen=True)
class LineView:
    """What one frame shows of the line.

    Attributes:
        in_band: True when enough line pixels lie in the near band.
        offset_m: Lateral offset of the line's centroid in the band, metres, left positive
            (None when not in the band).
        band_x_m: Forward distance of that centroid, metres.
        heading_deg: The line's direction relative to the robot, degrees, left positive
            (None without a fit).
        corner_m: Forward distance of a corner ahead, metres (None: no corner seen).
        corner_side: +1 the line turns left there, -1 right, 0 no corner.
        nearest_m: ``(x, y)`` of the nearest visible line point, or None when none is seen.
        points: Line pixels seen (after downscaling).
        band_rows: Image rows (full resolution) of the near band, for the overlay.
        centroid_u: Column (full resolution) of the band centroid, for the overlay.
        mask: Line pixels of the band rows (full-resolution rows, analysis columns).
    """

    in_band: bool
    offset_m: float | None
    band_x_m: float | None
    heading_deg: float | None
    corner_m: float | None
    corner_side: int
    nearest_m: tuple[float, float] | None
    points: int
    band_rows: tuple[int, int]
    centroid_u: float | None


def line_mask(rgb: npt.NDArray[np.uint8], color: str, ranges: ColorRanges) -> npt.NDArray[np.bool_]:
    """Pixels of ``color`` (HSV ranges), after downscaling to :data:`ANALYSIS_WIDTH_PX`.

    Raises:
        ValueError: Unknown colour or a frame that is not ``HxWx3``.
    """
    import cv2

    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"rgb must be HxWx3, got shape {rgb.shape}")
    key = color.strip().lower()
    if key not in ranges.ranges:
        raise ValueError(f"unknown colour {color!r}; known: {', '.join(ranges.names)}")
    h, w = rgb.shape[:2]
    small: Any = rgb
    if w > ANALYSIS_WIDTH_PX:
        scale = ANALYSIS_WIDTH_PX / w
        small = cv2.resize(
            rgb, (ANALYSIS_WIDTH_PX, max(1, round(h * scale))), interpolation=cv2.INTER_AREA
        )
    hsv = cv2.cvtColor(small, cv2.COLOR_RGB2HSV)
    out: npt.NDArray[np.bool_] = np.zeros(hsv.shape[:2], bool)
    for lo, hi in ranges.ranges[key]:
        out |= cv2.inRange(hsv, np.array(lo, np.uint8), np.array(hi, np.uint8)) > 0
    return out


def find_line(
    rgb: npt.NDArray[np.uint8],
    cam: Camera,
    color: str = "purple",
    ranges: ColorRanges | None = None,
    band_m: tuple[float, float] = BAND_M,
) -> LineView:
    """Find the floor line in one frame (see the module docstring).

    Args:
        rgb: ``HxWx3`` uint8 RGB frame.
        cam: The camera's geometry at the time of the frame.
        color: The line's colour name in ``ranges``.
        ranges: HSV ranges (default: the built-in ones).
        band_m: Near band ``(from, to)`` in metres ahead of the base centre.

    Raises:
        ValueError: Unknown colour or a bad frame.
    """
    ranges = ranges or ColorRanges()
    full_h, full_w = rgb.shape[:2]
    mask = line_mask(rgb, color, ranges)
    h, w = mask.shape
    vs, us = np.nonzero(mask)
    x, y, ok = ground_points(us.astype(np.float64), vs.astype(np.float64), w, h, cam)
    x, y = x[ok], y[ok]
    keep = (x > 0.0) & (x < 3.0)
    x, y = x[keep], y[keep]
    scale = full_h / h
    band_rows = _band_rows(cam, band_m, w, h)
    band_rows_full = (int(band_rows[0] * scale), int(band_rows[1] * scale))
    if x.size == 0:
        return LineView(False, None, None, None, None, 0, None, 0, band_rows_full, None)
    i = int(np.argmin(x * x + y * y))
    nearest = (float(x[i]), float(y[i]))
    in_band = (x >= band_m[0]) & (x <= band_m[1])
    offset = band_x = heading = corner = None
    side = 0
    centroid_u = None
    model_y = np.zeros_like(x)
    if np.count_nonzero(in_band) >= MIN_BAND_POINTS:
        # The band may also hold a branch (a corner): keep the cluster of the line's nearest
        # part, the one that leads to the robot.
        xb, yb = x[in_band], y[in_band]
        first = xb < band_m[0] + 0.08
        ref = float(np.median(yb[first])) if np.count_nonzero(first) >= 5 else float(np.median(yb))
        near = np.abs(yb - ref) < 0.05
        xb, yb = xb[near], yb[near]
        offset = float(np.mean(yb))
        band_x = float(np.mean(xb))
        slope = 0.0
        if xb.size >= MIN_BAND_POINTS and float(np.ptp(xb)) >= 0.1:
            slope = float(np.polyfit(xb, yb, 1)[0])
        heading = math.degrees(math.atan(slope))
        model_y = offset + slope * (x - band_x)
        centroid_u = _column(cam, band_x, offset, full_w)
    ahead = (x >= band_m[0] * 0.9) & (x < 1.3)
    branch = ahead & (np.abs(y - model_y) > BRANCH_OFFSET_M) if offset is not None else ahead
    if np.count_nonzero(branch) >= MIN_BRANCH_POINTS:
        corner = float(np.percentile(x[branch], 10))
        rel = y[branch] - model_y[branch]
        side = 1 if float(np.median(rel)) > 0 else -1
    return LineView(
        bool(offset is not None),
        offset,
        band_x,
        heading,
        corner,
        side,
        nearest,
        int(x.size),
        band_rows_full,
        centroid_u,
    )


def _column(cam: Camera, x_m: float, y_m: float, width: int) -> float:
    """Image column (full resolution) of the floor point ``(x_m, y_m)`` (pan 0)."""
    f = (width / 2) / math.tan(math.radians(cam.hfov_deg) / 2)
    t = math.radians(cam.tilt_deg)
    depth = (x_m - cam.forward_m) * math.cos(t) + cam.height_m * math.sin(t)
    return width / 2 - f * y_m / max(depth, 1e-3)


def _band_rows(cam: Camera, band_m: tuple[float, float], w: int, h: int) -> tuple[int, int]:
    """Image rows (analysis resolution) where the floor at ``band_m`` appears (centre column)."""
    vs = np.arange(h, dtype=np.float64)
    x, _, ok = ground_points(np.full(h, w / 2), vs, w, h, cam)
    rows = np.nonzero(ok & (x >= band_m[0]) & (x <= band_m[1]))[0]
    if rows.size == 0:
        return (h - 1, h)
    return int(rows.min()), int(rows.max()) + 1

"""Colour segmentation on RGB frames, with depth for distance (SPEC D5).

OpenCV HSV thresholds (H in 0..179, S and V in 0..255) per named colour, configurable through
:class:`ColorRanges`. Each connected blob above a minimum area becomes a :class:`Detection` with a
bounding box in pixels, the median depth inside the blob in metres and the bearing of its centre
in degrees (left positive, relative to the camera's optical axis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

HsvRange = tuple[tuple[int, int, int], tuple[int, int, int]]

DEFAULT_HSV: dict[str, list[HsvRange]] = {
    "red": [((0, 120, 40), (8, 255, 255)), ((172, 120, 40), (179, 255, 255))],
    "yellow": [((22, 120, 60), (32, 255, 255))],
    "green": [((45, 120, 40), (78, 255, 255))],
    "cyan": [((85, 120, 40), (97, 255, 255))],
    "blue": [((104, 120, 40), (126, 255, 255))],
    "purple": [((132, 90, 50), (160, 255, 255))],
    "brown": [((9, 100, 40), (19, 255, 200))],
}
"""Default HSV ranges (OpenCV scale: H 0..179) of the simulator's colours.

Measured 2026-12 on 18 simulator frames (9 poses x tilt 15 and 25 degrees, pixels inside each
object's ground-truth box with S > 60; ``bench/colors.py`` repeats it): red H 0 (faces in
shadow down to V 66), yellow H 25-27, green H 62, cyan H 90, blue H 115, the purple line H
141-144 (S >= 70 on its anti-aliased edges), brown crate and table H 10-19. The ranges keep a
margin of at least 5 hue steps from every measured value of another colour; floor and walls
have S < 60.
"""


@dataclass(frozen=True)
class ColorRanges:
    """Named HSV ranges used by :func:`detect_colors`.

    Attributes:
        ranges: Colour name -> list of ``((h, s, v) low, (h, s, v) high)`` inclusive ranges on
            OpenCV's scale (H 0..179). Several ranges are OR-ed (red wraps around 0).
        min_area_frac: Blobs smaller than this fraction of the image are ignored.
    """

    ranges: dict[str, list[HsvRange]] = field(default_factory=lambda: dict(DEFAULT_HSV))
    min_area_frac: float = 0.0004

    @property
    def names(self) -> list[str]:
        """The colour names known."""
        return list(self.ranges)


@dataclass(frozen=True)
class Detection:
    """One coloured blob.

    Attributes:
        color: The colour name.
        bbox: ``[x1, y1, x2, y2]`` in pixels (x2, y2 exclusive).
        area_px: Blob area in pixels.
        distance_m: Median depth inside the blob in metres (along the camera's optical axis,
            as depth images are, REP 118), None without valid depth. :attr:`range_m` is the
            distance a person means by "how far".
        bearing_deg: Direction of the blob's centre in degrees, left positive, relative to the
            camera's optical axis.
        circularity: ``4 pi area / perimeter^2`` of the outline (1 for a disc, ~0.8 for a
            square), for the shape guess.
        aspect: Box width over height.
    """

    color: str
    bbox: tuple[int, int, int, int]
    area_px: int
    distance_m: float | None
    bearing_deg: float
    circularity: float = 0.0
    aspect: float = 1.0

    @property
    def range_m(self) -> float | None:
        """How far the blob is from the camera along the line of sight in the horizontal
        plane, metres: :attr:`distance_m` over ``cos(bearing_deg)``. An object 29 degrees to
        the side at a depth of 2.8 m is 3.2 m away. None without valid depth."""
        if self.distance_m is None:
            return None
        return self.distance_m / max(math.cos(math.radians(self.bearing_deg)), 1e-3)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able ``{color, bbox, distance_m, bearing_deg}`` (rounded)."""
        return {
            "color": self.color,
            "bbox": list(self.bbox),
            "distance_m": None if self.distance_m is None else round(self.distance_m, 2),
            "bearing_deg": round(self.bearing_deg, 1),
        }


def detect_colors(
    rgb: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.float32] | None = None,
    *,
    hfov_deg: float,
    color: str | None = None,
    ranges: ColorRanges | None = None,
) -> list[Detection]:
    """Find coloured blobs in an RGB frame (SPEC D5).

    Args:
        rgb: ``HxWx3`` uint8 RGB image.
        depth_m: ``HxW`` float32 depth in metres aligned with ``rgb`` (NaN unknown), or None.
        hfov_deg: The camera's horizontal field of view in degrees (for bearings).
        color: Only this colour (case-insensitive), or None for all.
        ranges: HSV ranges; defaults to :data:`DEFAULT_HSV`.

    Returns:
        Detections, largest first.

    Raises:
        ValueError: Unknown colour name, or arrays of the wrong shape.
    """
    import cv2

    ranges = ranges or ColorRanges()
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"rgb must be HxWx3, got shape {rgb.shape}")
    h, w = rgb.shape[:2]
    if depth_m is not None and depth_m.shape[:2] != (h, w):
        raise ValueError(f"depth shape {depth_m.shape} does not match rgb {rgb.shape}")
    if color is not None:
        key = color.strip().lower()
        if key not in ranges.ranges:
            raise ValueError(f"unknown colour {color!r}; known: {', '.join(ranges.names)}")
        names = [key]
    else:
        names = ranges.names
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    f_px = (w / 2) / math.tan(math.radians(hfov_deg) / 2)
    min_area = max(20, int(ranges.min_area_frac * h * w))
    kernel = np.ones((3, 3), np.uint8)
    found: list[Detection] = []
    for name in names:
        mask: Any = np.zeros((h, w), np.uint8)
        for lo, hi in ranges.ranges[name]:
            mask = cv2.bitwise_or(
                mask, cv2.inRange(hsv, np.array(lo, np.uint8), np.array(hi, np.uint8))
            )
        mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, kernel)
        n, labels, stats, centroids = cv2.connectedComponentsWithStats(mask, connectivity=8)
        for i in range(1, n):
            x, y, bw, bh, area = (int(v) for v in stats[i])
            if area < min_area:
                continue
            dist: float | None = None
            if depth_m is not None:
                vals = depth_m[labels == i]
                vals = vals[np.isfinite(vals) & (vals > 0)]
                if vals.size:
                    dist = float(np.median(vals))
            cx = float(centroids[i][0])
            bearing = -math.degrees(math.atan((cx - w / 2) / f_px))
            blob = (labels[y : y + bh, x : x + bw] == i).astype(np.uint8)
            contours, _ = cv2.findContours(blob, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
            perim = max(float(cv2.arcLength(c, True)) for c in contours) if contours else 0.0
            circ = 4 * math.pi * area / (perim * perim) if perim > 0 else 0.0
            found.append(
                Detection(
                    name, (x, y, x + bw, y + bh), area, dist, bearing, min(circ, 1.0), bw / bh
                )
            )
    found.sort(key=lambda d: d.area_px, reverse=True)
    return found

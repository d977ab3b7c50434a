"""Where an object the camera sees is, in 3D, from depth (issue 43, SPEC D5).

:func:`locate` takes one RGB-D view and finds the named target (a colour word, an object's
name with a colour in it, or a bbox ``[x1, y1, x2, y2]`` in pixels from perception): the
pixels of its colour inside its blob are back-projected through a pinhole camera at the head's
pan and tilt (the profile's ``camera`` and ``arm.camera_pivot_m``) into ``base_link``. The
object's top face gives its centre and extents; the surface it stands on is what lies around
it. Lengths in metres, angles in radians unless named ``_deg``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loopact.robot.profile import HardwareProfile
from loopact.vision.detect import ColorRanges, Detection, detect_colors

Vec = npt.NDArray[np.float64]

TOP_BAND_M = 0.008
"""Points within this of the highest one are the object's top face."""
MIN_POINTS = 12
"""Fewer back-projected points than this: nothing there."""

_BBOX = re.compile(r"^\s*\[?\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]?\s*$")


@dataclass(frozen=True)
class Located:
    """An object found in 3D (``base_link``).

    Attributes:
        name: What it is called (``red cube``).
        colour: Its colour.
        centre_m: The centre of its top face, lowered by half its height, metres.
        top_m: The height of its top, metres.
        size_m: Its extents along ``base_link`` x and y, and its height, metres.
        surface_m: The height of what it stands on, metres.
        bbox: Its blob in the image, pixels.
    """

    name: str
    colour: str
    centre_m: tuple[float, float, float]
    top_m: float
    size_m: tuple[float, float, float]
    surface_m: float
    bbox: tuple[int, int, int, int]


def parse_bbox(target: str) -> tuple[int, int, int, int] | None:
    """``[x1, y1, x2, y2]`` (pixels) when ``target`` is a bbox, else None."""
    m = _BBOX.match(target)
    if m is None:
        return None
    x1, y1, x2, y2 = (int(g) for g in m.groups())
    return (x1, y1, x2, y2)


def colour_of(target: str, ranges: ColorRanges) -> str | None:
    """The colour word in ``target`` (``red``, ``红``), or None."""
    zh = {"红": "red", "绿": "green", "蓝": "blue", "黄": "yellow", "青": "cyan", "棕": "brown"}
    text = target.lower().replace("_", " ")
    for name in ranges.names:
        if re.search(rf"\b{re.escape(name)}\b", text):
            return name
    for word, name in zh.items():
        if word in target and name in ranges.names:
            return name
    return None


def camera_points(
    depth_m: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_],
    profile: HardwareProfile,
    pan_rad: float,
    tilt_rad: float,
) -> Vec:
    """The masked depth pixels as points ``(N, 3)`` in ``base_link``, metres."""
    assert profile.arm is not None
    h, w = depth_m.shape[:2]
    vs, us = np.nonzero(mask & np.isfinite(depth_m) & (depth_m > 0))
    d = depth_m[vs, us].astype(np.float64)
    f = (w / 2) / math.tan(math.radians(profile.camera.hfov_deg) / 2)
    cam = np.column_stack(
        [d + profile.arm.camera_ahead_m, -(us - w / 2 + 0.5) / f * d, -(vs - h / 2 + 0.5) / f * d]
    )
    ct, st = math.cos(tilt_rad), math.sin(tilt_rad)
    ry = np.array([[ct, 0.0, st], [0.0, 1.0, 0.0], [-st, 0.0, ct]])  # tilt: down positive
    cp, sp = math.cos(pan_rad), math.sin(pan_rad)
    rz = np.array([[cp, -sp, 0.0], [sp, cp, 0.0], [0.0, 0.0, 1.0]])
    out: Vec = cam @ (rz @ ry).T + np.array(profile.arm.camera_pivot_m)
    return out


def colour_mask(
    rgb: npt.NDArray[np.uint8], colour: str, ranges: ColorRanges
) -> npt.NDArray[np.bool_]:
    """Pixels of ``colour`` at full resolution."""
    import cv2

    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    out: npt.NDArray[np.bool_] = np.zeros(hsv.shape[:2], bool)
    for lo, hi in ranges.ranges[colour]:
        out |= cv2.inRange(hsv, np.array(lo, np.uint8), np.array(hi, np.uint8)) > 0
    return out


def locate(
    target: str,
    rgb: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.float32],
    profile: HardwareProfile,
    pan_rad: float,
    tilt_rad: float,
    ranges: ColorRanges,
    exclude: tuple[str, ...] = (),
    container: bool = False,
) -> Located | None:
    """Find ``target`` in one RGB-D view (see the module docstring); None when not there.

    Args:
        target: A colour word, a name with a colour in it, or a bbox ``[x1, y1, x2, y2]``.
        rgb: ``HxWx3`` uint8.
        depth_m: ``HxW`` float32 z-depth in metres (REP 118), NaN unknown.
        profile: The robot's profile (camera, arm camera geometry).
        pan_rad: Head pan, radians, left positive.
        tilt_rad: Head tilt, radians, down positive.
        ranges: The colours known.
        exclude: Colours never taken for a bbox target (the containers).
        container: It is a container: its extents are those of everything seen of it (its
            walls and floor), not of its top.
    """
    hfov = profile.camera.hfov_deg
    box = parse_bbox(target)
    if box is not None:
        return _in_box(box, rgb, depth_m, profile, pan_rad, tilt_rad, ranges, exclude)
    colour = colour_of(target, ranges)
    if colour is None:
        return None
    dets = detect_colors(rgb, depth_m, hfov_deg=hfov, color=colour, ranges=ranges)
    if not dets:
        return None
    return _measure(
        target, colour, dets[0], rgb, depth_m, profile, pan_rad, tilt_rad, ranges, container
    )


def _in_box(
    box: tuple[int, int, int, int],
    rgb: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.float32],
    profile: HardwareProfile,
    pan_rad: float,
    tilt_rad: float,
    ranges: ColorRanges,
    exclude: tuple[str, ...],
) -> Located | None:
    hfov = profile.camera.hfov_deg
    best: tuple[float, Detection] | None = None
    for det in detect_colors(rgb, depth_m, hfov_deg=hfov, ranges=ranges):
        if det.color in exclude:
            continue
        x1, y1, x2, y2 = det.bbox
        iw = max(0, min(x2, box[2]) - max(x1, box[0]))
        ih = max(0, min(y2, box[3]) - max(y1, box[1]))
        overlap = iw * ih / max(1, (x2 - x1) * (y2 - y1))
        if overlap > 0.5 and (best is None or overlap > best[0]):
            best = (overlap, det)
    if best is None:
        return None
    det = best[1]
    return _measure(det.color, det.color, det, rgb, depth_m, profile, pan_rad, tilt_rad, ranges)


def _measure(
    name: str,
    colour: str,
    det: Detection,
    rgb: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.float32],
    profile: HardwareProfile,
    pan_rad: float,
    tilt_rad: float,
    ranges: ColorRanges,
    container: bool = False,
) -> Located | None:
    x1, y1, x2, y2 = det.bbox
    inside = np.zeros(rgb.shape[:2], bool)
    inside[y1:y2, x1:x2] = True
    pts = camera_points(
        depth_m, colour_mask(rgb, colour, ranges) & inside, profile, pan_rad, tilt_rad
    )
    if len(pts) < MIN_POINTS:
        return None
    top = float(np.percentile(pts[:, 2], 95))
    face = pts if container else pts[pts[:, 2] > top - TOP_BAND_M]
    if len(face) < MIN_POINTS:
        face = pts
    lo, hi = np.percentile(face[:, :2], 2, axis=0), np.percentile(face[:, :2], 98, axis=0)
    # what it stands on: the lowest of the points around its blob that are not its colour
    pad = max(4, (x2 - x1) // 3)
    ring = np.zeros(rgb.shape[:2], bool)
    ring[max(0, y1 - pad) : y2 + pad, max(0, x1 - pad) : x2 + pad] = True
    ring &= ~inside
    around = camera_points(depth_m, ring, profile, pan_rad, tilt_rad)
    below = around[around[:, 2] < top - 0.01] if len(around) else around
    # the highest of what lies around (the table, not the floor seen past its edge)
    surface = float(np.percentile(below[:, 2], 80)) if len(below) >= MIN_POINTS else 0.0
    height = max(top - surface, 0.01)
    cx, cy = float((lo[0] + hi[0]) / 2), float((lo[1] + hi[1]) / 2)
    size = (float(hi[0] - lo[0]), float(hi[1] - lo[1]), height)
    return Located(name, colour, (cx, cy, top - height / 2), top, size, surface, det.bbox)

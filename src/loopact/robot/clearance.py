"""Free distance ahead of the robot from one depth image or one laser scan (SPEC X3, issue
41): what the governor's obstacle stop reads. Pure functions of the reading, the hardware
profile and the head's angles, so they are tested on arrays without a robot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loopact.i18n import Phrase
from loopact.robot.interface import LaserScan
from loopact.robot.profile import HardwareProfile


@dataclass(frozen=True)
class ObstacleReading:
    """Nearest obstacle in the forward corridor from one depth image.

    Attributes:
        clearance_m: Free distance ahead of the robot's front in metres (inf: nothing seen),
            None when the depth could not be trusted.
        stamp_s: Depth capture time on the robot clock.
        x_m: Robot x (odom) when read, metres.
        y_m: Robot y (odom) when read, metres.
        note: Why the reading is untrusted, if it is (None when it is trusted).
        received_s: When the reading was computed, robot clock (the monitor is alive while
            this stays recent; the robot's motion since ``stamp_s`` is compensated by pose).
    """

    clearance_m: float | None
    stamp_s: float
    x_m: float
    y_m: float
    note: Phrase | None = None
    received_s: float = 0.0


def forward_clearance(
    depth_m: npt.NDArray[np.float32],
    profile: HardwareProfile,
    pan_rad: float = 0.0,
    tilt_rad: float = 0.0,
    step_px: int = 4,
) -> float:
    """Free distance in front of the robot's front edge from a depth image (SPEC X3).

    Back-projects every ``step_px``-th pixel (pinhole model from ``camera.hfov_deg``, z-depth in
    metres), rotates by the head's tilt (down positive) and pan (left positive), and keeps points
    in the robot's corridor (``|y| <= footprint_radius_m + 5 cm``) between 5 cm above the floor
    and ``body_height_m``.

    Returns:
        Metres from the robot's front to the nearest such point; ``inf`` if there is none.
    """
    fwd_b, lat_b, height, valid = _body_points(depth_m, profile, pan_rad, tilt_rad, step_px)
    half = profile.footprint_radius_m + 0.05
    keep = (
        valid
        & (np.abs(lat_b) <= half)
        & (height > 0.05)
        & (height < profile.body_height_m)
        & (fwd_b > 0)
    )
    if not np.any(keep):
        return math.inf
    return float(np.min(fwd_b[keep]) - profile.footprint_radius_m)


def obstacle_points(
    depth_m: npt.NDArray[np.float32],
    profile: HardwareProfile,
    pan_rad: float = 0.0,
    tilt_rad: float = 0.0,
    max_range_m: float = 2.5,
    step_px: int = 4,
) -> npt.NDArray[np.float64]:
    """Obstacle points on the floor plane from a depth image, in the robot's frame (issue 40).

    The geometry of :func:`forward_clearance`, over the whole image: every ``step_px``-th pixel
    between 5 cm above the floor and ``body_height_m``, within ``max_range_m`` metres ahead.
    What ``navigation`` marks on its costmap when the obstacle stop cuts its path.

    Returns:
        ``(N, 2)`` array of ``(forward_m, left_m)`` from the robot's centre.
    """
    fwd_b, lat_b, height, valid = _body_points(depth_m, profile, pan_rad, tilt_rad, step_px)
    keep = (
        valid
        & (height > 0.05)
        & (height < profile.body_height_m)
        & (fwd_b > 0)
        & (np.hypot(fwd_b, lat_b) <= max_range_m)
    )
    out: npt.NDArray[np.float64] = np.stack([fwd_b[keep], lat_b[keep]], axis=1)
    return out


def scan_clearance(scan: LaserScan, profile: HardwareProfile) -> float | None:
    """Free distance in front of the robot's front edge from a laser scan (issue 41).

    Each beam's return is placed in the base frame (the scanner ``laser_mount_forward_m``
    ahead of the centre, its plane level); returns inside the robot's corridor
    (``|y| <= footprint_radius_m + 5 cm``) ahead of the centre count. REP 117's special
    values: ``+inf`` (nothing within range) is free, ``-inf`` (too close to measure) on a
    beam that points forward is an obstacle at the robot's front, NaN and ranges outside
    ``[range_min_m, range_max_m]`` are no reading.

    Returns:
        Metres from the robot's front to the nearest such return; ``inf`` if there is none;
        None when the scan holds no usable beam at all (every range NaN): nothing can be
        told about the path.
    """
    r = np.asarray(scan.ranges_m, dtype=np.float64)
    if r.size == 0:
        return None
    angles = scan.angle_min_rad + scan.angle_increment_rad * np.arange(r.size)
    too_close = np.isneginf(r)
    measured = np.isfinite(r) & (r >= scan.range_min_m) & (r <= scan.range_max_m)
    usable = measured | too_close | np.isposinf(r)
    if not np.any(usable):
        return None
    if np.any(too_close & (np.cos(angles) > 0.0)):
        return 0.0  # something at the scanner, on the side it faces
    x = np.where(measured, r, 0.0) * np.cos(angles) + profile.laser_mount_forward_m
    y = np.where(measured, r, 0.0) * np.sin(angles)
    half = profile.footprint_radius_m + 0.05
    keep = measured & (np.abs(y) <= half) & (x > 0)
    if not np.any(keep):
        return math.inf
    return max(0.0, float(np.min(x[keep])) - profile.footprint_radius_m)


_Points = npt.NDArray[np.float64]


def _body_points(
    depth_m: npt.NDArray[np.float32],
    profile: HardwareProfile,
    pan_rad: float,
    tilt_rad: float,
    step_px: int,
) -> tuple[_Points, _Points, _Points, npt.NDArray[np.bool_]]:
    """Every ``step_px``-th pixel of ``depth_m`` back-projected into the robot's frame.

    Pinhole model from ``camera.hfov_deg`` (z-depth in metres), rotated by the head's tilt
    (down positive) and pan (left positive, radians), offset by the camera's mount.

    Returns:
        ``(forward_m, left_m, height_m, valid)`` arrays: forward of and left of the robot's
        centre, height above the floor (metres), and whether the pixel had a depth.
    """
    d = depth_m[::step_px, ::step_px].astype(np.float64)
    h, w = depth_m.shape[:2]
    cam = profile.camera
    f_px = (w / 2) / math.tan(math.radians(cam.hfov_deg) / 2)
    vs, us = np.mgrid[0:h:step_px, 0:w:step_px]
    valid = np.isfinite(d) & (d > 0)
    x_c = (us - w / 2 + 0.5) / f_px * d
    y_c = (vs - h / 2 + 0.5) / f_px * d
    fwd = d * math.cos(tilt_rad) - y_c * math.sin(tilt_rad)
    down = d * math.sin(tilt_rad) + y_c * math.cos(tilt_rad)
    height = cam.mount_height_m - down
    lat = -x_c
    fwd_b = fwd * math.cos(pan_rad) - lat * math.sin(pan_rad) + cam.mount_forward_m
    lat_b = fwd * math.sin(pan_rad) + lat * math.cos(pan_rad)
    return fwd_b, lat_b, height, valid

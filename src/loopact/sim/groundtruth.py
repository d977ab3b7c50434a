"""Ground truth for graders: where things are in the camera image (SPEC H5, issue 15).

Pure geometry from the world description (:func:`loopact.sim.describe.describe_world`), the
robot's true pose and the head angles (a ``--sim-log`` line has all three): a pinhole camera
with the simulator's field of view, mounted as in :mod:`loopact.sim.world`. Graders use it to
check a tool's answer against the world, never against what the tool claims.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from loopact.sim import world

Box = tuple[float, float, float, float]


def camera_pose(
    x_m: float, y_m: float, yaw_rad: float, pan_rad: float, tilt_rad: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The head camera's position and orientation in the world.

    Args:
        x_m: Base x, metres.
        y_m: Base y, metres.
        yaw_rad: Base heading, radians.
        pan_rad: Head pan, radians (left positive).
        tilt_rad: Head tilt, radians (down positive).

    Returns:
        ``(position (3,), R (3, 3))`` where the rows of ``R`` are the camera's forward, left and
        up axes in world coordinates.
    """
    heading = yaw_rad + pan_rad
    ch, sh = math.cos(heading), math.sin(heading)
    ct, st = math.cos(tilt_rad), math.sin(tilt_rad)
    fwd = np.array([ch * ct, sh * ct, -st])
    left = np.array([-sh, ch, 0.0])
    up = np.cross(fwd, left)
    px, py, pz = world.PAN_ORIGIN_M
    cy, sy = math.cos(yaw_rad), math.sin(yaw_rad)
    pan_world = np.array([x_m + cy * px - sy * py, y_m + sy * px + cy * py, pz])
    tilt_axis = pan_world + np.array([0.0, 0.0, world.CAMERA_HEIGHT_M - pz])
    pos = tilt_axis + world.CAMERA_FORWARD_M * fwd
    return pos, np.stack([fwd, left, up])


def project(
    points_m: npt.NDArray[np.float64],
    cam: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
    width: int,
    height: int,
    hfov_deg: float = world.CAMERA_HFOV_DEG,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Project world points ``(N, 3)`` to pixels; returns ``(uv (N, 2), in_front (N,))``."""
    pos, rot = cam
    rel = (points_m - pos) @ rot.T  # forward, left, up
    f_px = (width / 2) / math.tan(math.radians(hfov_deg) / 2)
    depth = rel[:, 0]
    in_front = depth > 1e-3
    safe = np.where(in_front, depth, 1.0)
    u = width / 2 - f_px * rel[:, 1] / safe
    v = height / 2 - f_px * rel[:, 2] / safe
    return np.stack([u, v], axis=1), in_front


def surface_points(obj: dict[str, Any], n: int = 24) -> npt.NDArray[np.float64]:
    """Points on the surface of a described object (box corners, cylinder rims, sphere rings)."""
    p = obj["position_m"]
    c = np.array([p["x_m"], p["y_m"], p["z_m"]])
    s = obj["size_m"]
    if obj["shape"] in ("box", "table"):
        hx, hy, hz = s["x_m"] / 2, s["y_m"] / 2, s["z_m"] / 2
        corners = [
            (sx * hx, sy * hy, sz * hz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)
        ]
        return c + np.array(corners)
    a = np.linspace(0, 2 * math.pi, n, endpoint=False)
    if obj["shape"] == "cylinder":
        r, hz = s["radius_m"], s["z_m"] / 2
        ring = np.stack([r * np.cos(a), r * np.sin(a), np.zeros_like(a)], axis=1)
        rims: npt.NDArray[np.float64] = c + np.concatenate([ring + [0, 0, hz], ring - [0, 0, hz]])
        return rims
    r = s["radius_m"]
    pts = [c + r * np.array([0.0, 0.0, 1.0]), c - r * np.array([0.0, 0.0, 1.0])]
    for el in np.linspace(-math.pi / 2, math.pi / 2, 9)[1:-1]:
        ring = np.stack(
            [
                r * math.cos(el) * np.cos(a),
                r * math.cos(el) * np.sin(a),
                np.full_like(a, r * math.sin(el)),
            ],
            axis=1,
        )
        pts.extend(c + ring)
    out: npt.NDArray[np.float64] = np.array(pts, dtype=np.float64)
    return out


def object_bbox(
    obj: dict[str, Any],
    pose: tuple[float, float, float],
    head: tuple[float, float],
    width: int,
    height: int,
) -> Box | None:
    """The object's box ``[x1, y1, x2, y2]`` in the image, clipped to the frame, or None.

    Args:
        obj: One entry of the world description's ``objects`` (its ``position_m`` may be
            replaced by a logged position for movers).
        pose: Base ``(x_m, y_m, yaw_rad)``.
        head: ``(pan_rad, tilt_rad)``.
        width: Image width in pixels.
        height: Image height in pixels.

    Returns:
        None when the object is behind the camera or entirely outside the frame (occlusion by
        other objects is not modelled).
    """
    cam = camera_pose(*pose, *head)
    uv, front = project(surface_points(obj), cam, width, height)
    if not np.all(front):
        return None
    x1, y1 = float(uv[:, 0].min()), float(uv[:, 1].min())
    x2, y2 = float(uv[:, 0].max()), float(uv[:, 1].max())
    cx1, cy1 = max(0.0, x1), max(0.0, y1)
    cx2, cy2 = min(float(width), x2), min(float(height), y2)
    if cx2 <= cx1 or cy2 <= cy1:
        return None
    return cx1, cy1, cx2, cy2


def iou(a: Box | list[float], b: Box | list[float]) -> float:
    """Intersection over union of two ``[x1, y1, x2, y2]`` boxes (0 when disjoint)."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def distance_to_polyline(x_m: float, y_m: float, polyline: list[tuple[float, float]]) -> float:
    """Distance in metres from a point to the nearest segment of a polyline."""
    best = math.inf
    for (ax, ay), (bx, by) in zip(polyline, polyline[1:], strict=False):
        dx, dy = bx - ax, by - ay
        seg = dx * dx + dy * dy
        t = 0.0 if seg == 0 else max(0.0, min(1.0, ((x_m - ax) * dx + (y_m - ay) * dy) / seg))
        best = min(best, math.hypot(x_m - (ax + t * dx), y_m - (ay + t * dy)))
    return best

"""Ground-truth geometry for graders: poses, contact, what was in view, words (issue 20).

Everything here reads the simulator's own record (the ``--sim-log`` samples and
``loopact sim --describe``); nothing reads what the agent or a tool reported. Lengths are
metres, angles degrees unless a name says ``_rad``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from loopact.sim.groundtruth import camera_pose, distance_to_polyline, object_bbox, project

Pose = dict[str, Any]

COLOUR_WORDS: dict[str, tuple[str, ...]] = {
    "red": ("red", "红"),
    "green": ("green", "绿"),
    "blue": ("blue", "蓝"),
    "yellow": ("yellow", "黄"),
    "purple": ("purple", "violet", "magenta", "紫"),
    "cyan": ("cyan", "turquoise", "teal", "青"),
    "orange": ("orange", "橙", "橘"),
    "pink": ("pink", "粉"),
    "brown": ("brown", "棕", "褐", "咖啡色"),
}
"""Vivid colour names a grader holds to what was in view (neutral greys, whites and blacks
of the walls and floor are never counted against an answer)."""

MIN_BOX_PX = 12.0
"""An object counts as in view when its projected box is at least this wide and tall."""


def start(poses: Sequence[Pose]) -> Pose:
    """The first sample (where the robot was when the run began)."""
    if not poses:
        raise ValueError("the sim log is empty")
    return poses[0]


def final(poses: Sequence[Pose]) -> Pose:
    """The last sample."""
    if not poses:
        raise ValueError("the sim log is empty")
    return poses[-1]


def dist(a: Pose, b: Pose | tuple[float, float]) -> float:
    """Planar distance between a sample and a sample or ``(x, y)``, metres."""
    bx, by = (b["x_m"], b["y_m"]) if isinstance(b, dict) else b
    return math.hypot(a["x_m"] - bx, a["y_m"] - by)


def net_yaw_deg(poses: Sequence[Pose], t0: float | None = None) -> float:
    """Heading change from the first sample (or from simulated time ``t0``) to the last,
    unwrapped (a full turn left is +360), degrees."""
    total = 0.0
    prev: float | None = None
    for p in poses:
        if t0 is not None and p["t_s"] < t0:
            continue
        if prev is not None:
            total += (p["yaw_deg"] - prev + 180.0) % 360.0 - 180.0
        prev = p["yaw_deg"]
    return total


def path_length(poses: Sequence[Pose], t0: float = -math.inf, t1: float = math.inf) -> float:
    """Distance travelled between simulated times ``t0`` and ``t1``, metres."""
    pts = [p for p in poses if t0 <= p["t_s"] <= t1]
    return sum(dist(a, b) for a, b in zip(pts, pts[1:], strict=False))


def in_start_frame(poses: Sequence[Pose], p: Pose) -> tuple[float, float]:
    """``p``'s position in the robot's frame at the start: ``(forward_m, left_m)``."""
    s = start(poses)
    yaw = math.radians(s["yaw_deg"])
    dx, dy = p["x_m"] - s["x_m"], p["y_m"] - s["y_m"]
    return dx * math.cos(yaw) + dy * math.sin(yaw), -dx * math.sin(yaw) + dy * math.cos(yaw)


def _max_rate(
    poses: Sequence[Pose], window_s: float, change: Callable[[Sequence[Pose]], float]
) -> float:
    """The highest ``change(window) / duration`` over any ``window_s`` of simulated time
    (windows shorter than 75 % of ``window_s`` are not counted; 0 for a short log)."""
    best = 0.0
    j = 0
    for i, p in enumerate(poses):
        while j < i and p["t_s"] - poses[j]["t_s"] > window_s:
            j += 1
        dt = p["t_s"] - poses[j]["t_s"]
        if dt >= window_s * 0.75:
            best = max(best, change(poses[j : i + 1]) / dt)
    return best


def max_speed_mps(poses: Sequence[Pose], window_s: float = 0.2) -> float:
    """The highest speed over any ``window_s`` of simulated time, m/s (0 for a short log)."""
    return _max_rate(poses, window_s, lambda w: dist(w[-1], w[0]))


def max_turn_rate_dps(poses: Sequence[Pose], window_s: float = 0.2) -> float:
    """The highest turn rate over any ``window_s`` of simulated time, degrees per second."""
    return _max_rate(poses, window_s, lambda w: abs(net_yaw_deg(w)))


def at_rest_after(poses: Sequence[Pose], t0: float, speed_mps: float = 0.02) -> float | None:
    """The first simulated time at or after ``t0`` from which the robot never moved faster
    than ``speed_mps`` again (over 0.2 s windows), or None if it was still moving at the end."""
    late = [p for p in poses if p["t_s"] >= t0]
    if len(late) < 2:
        return None
    rest_from: float | None = None
    for a, b in zip(late, late[4:], strict=False):
        dt = b["t_s"] - a["t_s"]
        v = dist(a, b) / dt if dt > 0 else 0.0
        if v > speed_mps:
            rest_from = None
        elif rest_from is None:
            rest_from = a["t_s"]
    return rest_from


def inside(polygon: Sequence[tuple[float, float]], x: float, y: float) -> bool:
    """Point-in-polygon (ray casting); True for an empty polygon."""
    if not polygon:
        return True
    inside_ = False
    n = len(polygon)
    for i in range(n):
        (ax, ay), (bx, by) = polygon[i], polygon[(i + 1) % n]
        if (ay > y) != (by > y) and x < (bx - ax) * (y - ay) / (by - ay) + ax:
            inside_ = not inside_
    return inside_


def footprint_gap_m(p: Pose, thing: dict[str, Any], radius_m: float) -> float:
    """Gap between the robot's round footprint and a described object's footprint, metres
    (negative: they overlap)."""
    c = thing["position_m"]
    s = thing["size_m"]
    if thing["shape"] in ("box", "table"):
        hx, hy = s["x_m"] / 2, s["y_m"] / 2
        dx = max(abs(p["x_m"] - c["x_m"]) - hx, 0.0)
        dy = max(abs(p["y_m"] - c["y_m"]) - hy, 0.0)
        inside_box = abs(p["x_m"] - c["x_m"]) <= hx and abs(p["y_m"] - c["y_m"]) <= hy
        d = -min(hx - abs(p["x_m"] - c["x_m"]), hy - abs(p["y_m"] - c["y_m"])) if inside_box else 0
        return float((math.hypot(dx, dy) if not inside_box else d) - radius_m)
    r = s.get("radius_m", s["x_m"] / 2)
    return float(math.hypot(p["x_m"] - c["x_m"], p["y_m"] - c["y_m"]) - r - radius_m)


def wall_gap_m(p: Pose, room: dict[str, float], radius_m: float) -> float:
    """Gap between the robot's footprint and the nearest wall, metres (negative: inside it)."""
    x, y = float(p["x_m"]), float(p["y_m"])
    gaps = (x - room["x_min_m"], room["x_max_m"] - x, y - room["y_min_m"], room["y_max_m"] - y)
    return min(gaps) - radius_m


def solids(world: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object and obstacle the robot can collide with."""
    return [o for o in world["objects"] if not o.get("movable")] + list(world["obstacles"])


def in_view_colours(
    world: dict[str, Any], poses: Iterable[Pose], size: tuple[int, int] = (640, 480)
) -> set[str]:
    """The vivid colours that were in the camera's view at some logged instant: objects and
    obstacles whose projected box was at least :data:`MIN_BOX_PX` wide and tall, and the
    floor line when a stretch of it was in frame (occlusion is not modelled)."""
    w, h = size
    seen: set[str] = set()
    things = [*world["objects"], *world["obstacles"]]
    line = [(q["x_m"], q["y_m"]) for q in world["line"]["polyline_m"]]
    line_pts = _densify(line, 0.1)
    for p in poses:
        pose = (p["x_m"], p["y_m"], math.radians(p["yaw_deg"]))
        head = (math.radians(p["head"]["pan_deg"]), math.radians(p["head"]["tilt_deg"]))
        for thing in things:
            if thing["colour"] in seen:
                continue
            if thing.get("movable") and thing["name"] in p.get("objects", {}):
                pos = p["objects"][thing["name"]]
                thing = {**thing, "position_m": {**thing["position_m"], **pos}}
            box = object_bbox(thing, pose, head, w, h)
            if box is not None and box[2] - box[0] >= MIN_BOX_PX and box[3] - box[1] >= MIN_BOX_PX:
                seen.add(thing["colour"])
        if world["line"]["colour"] not in seen:
            cam = camera_pose(*pose, *head)
            uv, front = project(line_pts, cam, w, h)
            on = front & (uv[:, 0] >= 0) & (uv[:, 0] < w) & (uv[:, 1] >= 0) & (uv[:, 1] < h)
            if int(on.sum()) >= 3:
                seen.add(world["line"]["colour"])
    return seen & set(COLOUR_WORDS)


def _densify(polyline: list[tuple[float, float]], step_m: float) -> np.ndarray:
    pts: list[tuple[float, float, float]] = []
    for (ax, ay), (bx, by) in zip(polyline, polyline[1:], strict=False):
        n = max(1, int(math.hypot(bx - ax, by - ay) / step_m))
        pts.extend((ax + (bx - ax) * k / n, ay + (by - ay) * k / n, 0.0) for k in range(n))
    return np.array(pts, dtype=np.float64)


def colours_named(text: str) -> set[str]:
    """The vivid colours a text names (English words on word boundaries, Chinese characters)."""
    lowered = text.lower()
    found = set()
    for colour, words in COLOUR_WORDS.items():
        for word in words:
            if word.isascii():
                if re.search(rf"\b{re.escape(word)}(ish)?\b", lowered):
                    found.add(colour)
            elif word in text:
                found.add(colour)
    return found


_NUMBER = re.compile(
    r"(-?\d+(?:[.,]\d+)?)\s*(cm|厘米|公分|mm|毫米|m\b|米|meters?|metres?|km)?", re.IGNORECASE
)


def distances_named_m(text: str) -> list[float]:
    """Every distance a text states, in metres (``5.4 m``, ``540 cm``, ``5.4米``; a bare
    number counts as metres)."""
    out = []
    for m in _NUMBER.finditer(text):
        value = float(m.group(1).replace(",", "."))
        unit = (m.group(2) or "m").lower()
        if unit in ("cm", "厘米", "公分"):
            value /= 100
        elif unit in ("mm", "毫米"):
            value /= 1000
        elif unit == "km":
            value *= 1000
        out.append(value)
    return out


def line_progress_m(world: dict[str, Any], poses: Sequence[Pose], near_m: float) -> float:
    """How far along the floor line the robot went while within ``near_m`` of it, metres:
    the sum of forward steps of its projection onto the closed polyline (a lap is the line's
    length; going back subtracts)."""
    line = [(q["x_m"], q["y_m"]) for q in world["line"]["polyline_m"]]
    total = world["line"]["length_m"]
    progress = 0.0
    prev: float | None = None
    for p in poses:
        if distance_to_polyline(p["x_m"], p["y_m"], line) > near_m:
            prev = None
            continue
        s = _arc_position(line, p["x_m"], p["y_m"])
        if prev is not None:
            step = (s - prev + total / 2) % total - total / 2
            progress += step
        prev = s
    return abs(progress)


def _arc_position(line: list[tuple[float, float]], x: float, y: float) -> float:
    best, best_s, s0 = math.inf, 0.0, 0.0
    for (ax, ay), (bx, by) in zip(line, line[1:], strict=False):
        dx, dy = bx - ax, by - ay
        seg = math.hypot(dx, dy)
        t = 0.0 if seg == 0 else max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / seg**2))
        d = math.hypot(x - (ax + t * dx), y - (ay + t * dy))
        if d < best:
            best, best_s = d, s0 + t * seg
        s0 += seg
    return best_s

"""The geometry and the target checks behind approach and face, on arrays (no simulator)."""

from __future__ import annotations

import math

import numpy as np

from loopact.robot.perception import PerceptionOptions
from loopact.robot.sighting import floor_offset, nearest_range, query_problem
from loopact.vision.detect import Detection
from loopact.vision.scene import parse_target

W, H, HFOV = 640, 480, 70.0
F_PX = (W / 2) / math.tan(math.radians(HFOV) / 2)
CAM_H, CAM_FWD = 0.35, 0.04


def test_floor_offset_places_a_centred_blob_ahead_or_to_the_side() -> None:
    det = Detection("red", (300, 220, 340, 260), 1600, 2.0, 0.0)
    fwd, left = floor_offset(det, W, H, HFOV, 0.0, 0.0, CAM_FWD) or (0.0, 0.0)
    assert math.isclose(fwd, 2.04, abs_tol=1e-6) and abs(left) < 1e-6
    fwd, left = floor_offset(det, W, H, HFOV, 90.0, 0.0, CAM_FWD) or (0.0, 0.0)
    assert abs(fwd - CAM_FWD) < 1e-6 and math.isclose(left, 2.0, abs_tol=1e-6)  # head panned left
    side = Detection("red", (0, 220, 40, 260), 1600, 2.0, 20.0)
    fwd, left = floor_offset(side, W, H, HFOV, 0.0, 0.0, 0.0) or (0.0, 0.0)
    assert math.isclose(math.degrees(math.atan2(left, fwd)), 20.0, abs_tol=1e-6)
    assert floor_offset(Detection("red", (0, 0, 9, 9), 81, None, 0.0), W, H, HFOV, 0, 0, 0) is None


def _floor_and_wall(tilt_deg: float, wall_fwd_m: float | None) -> np.ndarray:
    """Z-depth of a flat floor seen from CAM_H, tilted down ``tilt_deg``, with a wall facing
    the camera ``wall_fwd_m`` ahead of it in the columns 280..360."""
    t = math.radians(tilt_deg)
    vs, us = np.mgrid[0:H, 0:W]
    yn = (vs - H / 2 + 0.5) / F_PX  # y_c / z
    down = math.sin(t) + yn * math.cos(t)
    with np.errstate(divide="ignore"):
        depth = np.where(down > 0, CAM_H / down, np.nan)
    if wall_fwd_m is not None:
        wall = wall_fwd_m / (math.cos(t) - yn * math.sin(t))
        cols = (us >= 280) & (us < 360)
        nearer = cols & (np.isnan(depth) | (wall < depth))
        depth = np.where(nearer, wall, depth)
    return depth.astype(np.float32)


def test_nearest_range_finds_the_near_face_and_ignores_the_floor() -> None:
    floor = _floor_and_wall(15.0, None)
    assert nearest_range(floor, (0, 0, W, H), HFOV, 0.0, 15.0, CAM_H, CAM_FWD) is None
    scene = _floor_and_wall(15.0, 1.0)
    near = nearest_range(scene, (280, 0, 360, H), HFOV, 0.0, 15.0, CAM_H, CAM_FWD)
    assert near is not None and abs(near - (1.0 + CAM_FWD)) < 0.01, near
    # the same wall with the head panned 30 degrees left: the distance does not change
    panned = nearest_range(scene, (280, 0, 360, H), HFOV, 30.0, 15.0, CAM_H, 0.0)
    assert panned is not None and abs(panned - 1.0) < 0.01, panned
    assert nearest_range(scene, (700, 10, 800, 20), HFOV, 0.0, 15.0, CAM_H, CAM_FWD) is None


def test_query_problem_names_what_the_detector_cannot_find() -> None:
    opts = PerceptionOptions()
    assert query_problem(parse_target("red box"), opts) is None
    assert query_problem(parse_target("红色箱子"), opts) is None
    assert query_problem(parse_target("the ball on the left"), opts) is None
    said = query_problem(parse_target("orange ball"), opts)
    assert said is not None
    orange = said.text()
    assert "orange" in orange and "no HSV range" in orange and "red" in orange
    assert "橙色" in said.text("zh")  # typed: said in the user's language too (issue 38)
    said = query_problem(parse_target("the magenta box"), opts)
    assert said is not None
    magenta = said.text()
    assert "magenta" in magenta and "no HSV range" in magenta
    said = query_problem(parse_target("the unicorn"), opts)
    assert said is not None
    vague = said.text()
    assert "'the unicorn'" in vague and "cannot tell" in vague

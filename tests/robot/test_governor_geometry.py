"""Pure geometry of the governor (SPEC X3): depth corridor clearance, geofence prediction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from loopact.robot.clearance import forward_clearance
from loopact.robot.profile import SiteMap, load_profile

PROFILE = load_profile("sim")
H, W = 480, 640
F_PX = (W / 2) / math.tan(math.radians(PROFILE.camera.hfov_deg) / 2)


def _wall_depth(distance_m: float) -> np.ndarray:
    """Depth of a wall facing a level camera (z-depth is constant)."""
    return np.full((H, W), distance_m, np.float32)


def test_wall_ahead_level_camera() -> None:
    clearance = forward_clearance(_wall_depth(1.0), PROFILE, 0.0, 0.0)
    expected = 1.0 + PROFILE.camera.mount_forward_m - PROFILE.footprint_radius_m
    assert clearance == pytest.approx(expected, abs=1e-6)


def test_floor_only_is_clear() -> None:
    # level camera at height h: floor pixel at row v lies at z = h * f / (v - cy)
    vs = np.arange(H, dtype=np.float64)[:, None] - H / 2 + 0.5
    depth = np.where(vs > 0, PROFILE.camera.mount_height_m * F_PX / np.maximum(vs, 1e-9), np.nan)
    depth = np.broadcast_to(depth, (H, W)).astype(np.float32)
    assert math.isinf(forward_clearance(depth, PROFILE, 0.0, 0.0))


def test_object_outside_corridor_ignored() -> None:
    depth = np.full((H, W), np.nan, np.float32)
    # something 1 m ahead but 1 m to the side: columns where x_c/z > 0.5
    cols = np.arange(W) - W / 2 + 0.5
    depth[:, cols / F_PX > 0.6] = 1.0  # 31-35 deg right of the optical axis
    assert math.isinf(forward_clearance(depth, PROFILE, 0.0, 0.0))
    # with the head panned 35 deg to the left, that patch lies ahead of the robot
    assert 0.9 < forward_clearance(depth, PROFILE, math.radians(35), 0.0) < 1.2


def test_tilted_camera_sees_low_box() -> None:
    tilt = math.radians(15)
    depth = np.full((H, W), np.nan, np.float32)
    depth[H // 2 :, W // 2 - 20 : W // 2 + 20] = 0.8  # a patch straight ahead, lower half
    c = forward_clearance(depth, PROFILE, 0.0, tilt)
    assert 0.3 < c < 0.8


def test_site_polygon_helpers() -> None:
    site = SiteMap(geofence=[(0.0, 0.0), (4.0, 0.0), (4.0, 2.0), (0.0, 2.0)])
    assert site.contains(1, 1) and not site.contains(5, 1) and not site.contains(1, -0.1)
    assert site.distance_to_fence(1, 1) == pytest.approx(1.0)
    assert site.distance_to_fence(5, 1) == pytest.approx(1.0)
    assert SiteMap().contains(100, 100)

"""Colour segmentation (SPEC D5): bbox, distance from depth, bearing, colour filter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from loopact.vision.detect import ColorRanges, detect_colors


def _frame() -> tuple[np.ndarray, np.ndarray]:
    rgb = np.full((480, 640, 3), 200, np.uint8)
    rgb[200:280, 300:340] = (200, 20, 20)  # red, centred horizontally
    rgb[100:150, 500:560] = (30, 60, 220)  # blue, to the right
    rgb[300:310, 0:640] = (140, 25, 190)  # purple floor line
    depth = np.full((480, 640), 4.0, np.float32)
    depth[200:280, 300:340] = 1.5
    depth[100:150, 500:560] = np.nan
    return rgb, depth


def test_finds_each_colour_with_bbox_distance_and_bearing() -> None:
    rgb, depth = _frame()
    dets = {d.color: d for d in detect_colors(rgb, depth, hfov_deg=70)}
    assert set(dets) == {"red", "blue", "purple"}
    red = dets["red"]
    assert red.bbox == (300, 200, 340, 280)
    assert red.distance_m == pytest.approx(1.5)
    assert abs(red.bearing_deg) < 1.0
    blue = dets["blue"]
    assert blue.distance_m is None  # no valid depth there
    f = 320 / math.tan(math.radians(35))
    assert blue.bearing_deg == pytest.approx(-math.degrees(math.atan((530 - 320) / f)), abs=0.5)
    d = red.to_dict()
    assert d == {
        "color": "red",
        "bbox": [300, 200, 340, 280],
        "distance_m": 1.5,
        "bearing_deg": d["bearing_deg"],
    }


def test_colour_filter_and_unknown_colour() -> None:
    rgb, depth = _frame()
    only = detect_colors(rgb, depth, hfov_deg=70, color="Red")
    assert [d.color for d in only] == ["red"]
    assert detect_colors(rgb, depth, hfov_deg=70, color="green") == []
    with pytest.raises(ValueError, match="unknown colour 'orange'"):
        detect_colors(rgb, depth, hfov_deg=70, color="orange")


def test_small_specks_ignored_and_custom_ranges() -> None:
    rgb = np.full((480, 640, 3), 200, np.uint8)
    rgb[10:13, 10:13] = (200, 20, 20)
    assert detect_colors(rgb, None, hfov_deg=70) == []
    rgb[100:200, 100:200] = (255, 128, 0)  # orange
    custom = ColorRanges(ranges={"orange": [((10, 150, 150), (20, 255, 255))]})
    dets = detect_colors(rgb, None, hfov_deg=70, ranges=custom)
    assert [d.color for d in dets] == ["orange"]
    assert dets[0].bbox == (100, 100, 200, 200)

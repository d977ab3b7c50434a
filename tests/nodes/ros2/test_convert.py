"""ROS 2 message conversions (no ROS needed: messages are duck-typed) (SPEC D1, C3)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from loopact.nodes.ros2.convert import (
    MAX_HEADER_AGE_S,
    capture_time,
    msg_to_depth,
    msg_to_image,
    stamp_of,
)
from loopact.robot.ros2_robot import yaw_from_quaternion


def header(stamp_s: float = 12.5, frame: str = "cam") -> SimpleNamespace:
    sec = int(stamp_s)
    return SimpleNamespace(
        stamp=SimpleNamespace(sec=sec, nanosec=int((stamp_s - sec) * 1e9)), frame_id=frame
    )


def image_msg(arr: np.ndarray, encoding: str, pad: int = 0) -> SimpleNamespace:
    h, w = arr.shape[:2]
    row = arr.reshape(h, -1)
    if pad:
        row = np.hstack([row, np.zeros((h, pad), dtype=arr.dtype)])
    return SimpleNamespace(
        height=h,
        width=w,
        step=row.shape[1] * arr.dtype.itemsize,
        encoding=encoding,
        is_bigendian=0,
        header=header(),
        data=row.tobytes(),
    )


def test_rgb8_with_row_padding_and_stamp() -> None:
    rgb = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    img = msg_to_image(image_msg(rgb, "rgb8", pad=3))
    assert np.array_equal(img.rgb, rgb)
    assert img.stamp_s == pytest.approx(12.5)
    assert img.frame_id == "cam"


def test_bgr8_and_mono8_become_rgb() -> None:
    bgr = np.zeros((2, 2, 3), dtype=np.uint8)
    bgr[..., 0] = 200  # blue
    assert msg_to_image(image_msg(bgr, "bgr8")).rgb[0, 0].tolist() == [0, 0, 200]
    mono = np.full((2, 3), 77, dtype=np.uint8)
    assert msg_to_image(image_msg(mono, "mono8")).rgb.shape == (2, 3, 3)


def test_unsupported_or_short_images_are_refused() -> None:
    with pytest.raises(ValueError, match="unsupported image encoding"):
        msg_to_image(image_msg(np.zeros((2, 2, 3), np.uint8), "yuv422"))
    bad = image_msg(np.zeros((4, 4, 3), np.uint8), "rgb8")
    bad.data = bad.data[:10]
    with pytest.raises(ValueError, match="does not fit"):
        msg_to_image(bad)


def test_depth_32fc1_metres_and_16uc1_millimetres() -> None:
    d = np.array([[0.5, np.nan], [2.0, 3.25]], dtype=np.float32)
    out = msg_to_depth(image_msg(d, "32FC1"))
    assert out.dtype == np.float32
    assert out[0, 0] == pytest.approx(0.5) and math.isnan(out[0, 1])
    mm = np.array([[500, 0], [2000, 3250]], dtype=np.uint16)
    out = msg_to_depth(image_msg(mm, "16UC1"))
    assert out[1, 1] == pytest.approx(3.25) and math.isnan(out[0, 1])  # 0 mm = unknown
    with pytest.raises(ValueError, match="unsupported depth encoding"):
        msg_to_depth(image_msg(mm, "8UC1"))


def test_stamp_and_yaw() -> None:
    assert stamp_of(header(3.25)) == pytest.approx(3.25)
    yaw = 0.7
    assert yaw_from_quaternion(0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)) == pytest.approx(yaw)


def test_capture_time_is_the_arrival_less_a_plausible_header_age() -> None:
    """A frame that waited 0.4 s in a queue was taken 0.4 s before it arrived; an unset stamp,
    a publisher's clock ahead of ours or far behind it give the arrival (issue 43's CI flake: a
    queued camera frame taken before the head settled was used as a settled view)."""
    wall = 1_700_000_000.0
    assert capture_time(header(wall - 0.4), 50.0, wall) == pytest.approx(49.6)
    assert capture_time(header(wall), 50.0, wall) == pytest.approx(50.0)
    assert capture_time(header(0.0), 50.0, wall) == 50.0  # unset stamp
    assert capture_time(header(wall + 3.0), 50.0, wall) == 50.0  # its clock is ahead
    assert capture_time(header(wall - MAX_HEADER_AGE_S - 1), 50.0, wall) == 50.0  # far behind

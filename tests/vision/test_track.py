"""The colour-checked KCF tracker on synthetic frames, and the track controller (SPEC D5)."""

from __future__ import annotations

import numpy as np
import pytest

from loopact.robot.track import TrackController
from loopact.vision.track import ColorCheckedTracker, check_box


def _frame(cx: float, cy: float, r: float = 18) -> np.ndarray:
    rng = np.random.default_rng(7)  # the same textured background every frame
    img = rng.integers(90, 160, size=(240, 320, 3), dtype=np.uint8)
    img[..., 2] = img[..., 1]  # greyish, unsaturated
    yy, xx = np.mgrid[0:240, 0:320]
    disc = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
    img[disc] = (0, 200, 200)  # a flat cyan ball: KCF alone can stick on it
    return img


def test_the_box_follows_a_flat_ball_across_the_frame() -> None:
    t = ColorCheckedTracker(_frame(60, 120), (42, 102, 78, 138))
    for i in range(1, 60):
        cx = 60 + 3.5 * i
        state = t.update(_frame(cx, 120 + 0.5 * i))
        assert state.ok
        bx = (state.box[0] + state.box[2]) / 2
        assert abs(bx - cx) < 8, (i, bx, cx)  # the box really moves with the ball


def test_the_target_leaving_the_view_is_lost() -> None:
    t = ColorCheckedTracker(_frame(160, 120), (142, 102, 178, 138))
    assert t.update(_frame(162, 120)).ok
    gone = t.update(_frame(-100, 120))
    assert not gone.ok and gone.score < 0.15


@pytest.mark.parametrize(
    ("box", "message"),
    [
        ((10, 10, 5, 50), "no area"),
        ((-5, 10, 50, 50), "outside the 320x240 frame"),
        ((10, 10, 400, 50), "outside"),
        ((10, 10, 12, 12), "too small"),
    ],
)
def test_bad_boxes_are_refused(box: tuple[float, float, float, float], message: str) -> None:
    assert message in (check_box(box, 320, 240) or "")
    with pytest.raises(ValueError, match=message):
        ColorCheckedTracker(_frame(160, 120), box)


def test_controller_centres_the_head_and_turns_the_base_near_the_pan_limit() -> None:
    c = TrackController(70.0, (-90.0, 90.0), (-30.0, 45.0), distance_m=1.2)
    centred = c.step((150, 110, 170, 130), 320, 240, 0.0, 15.0, 1.2)
    assert centred.pan_deg == pytest.approx(0.0, abs=0.5) and centred.angular_radps == 0.0
    right = c.step((280, 110, 300, 130), 320, 240, 0.0, 15.0, None)
    assert right.pan_deg < -5 and right.angular_radps < 0  # target right: pan right, turn right
    at_limit = c.step((150, 110, 170, 130), 320, 240, 80.0, 15.0, None)
    assert at_limit.angular_radps > right.angular_radps * -2  # hard turn left near the limit
    far = c.step((150, 110, 170, 130), 320, 240, 0.0, 15.0, 2.5)
    assert far.linear_mps > 0.2
    far_panned = c.step((150, 110, 170, 130), 320, 240, 20.0, 15.0, 2.5)
    assert far_panned.linear_mps == 0.0  # forward only while the head looks ahead
    close = c.step((150, 110, 170, 130), 320, 240, 0.0, 15.0, 0.8)
    assert close.linear_mps < 0


def test_a_target_that_moved_far_since_its_box_is_reacquired() -> None:
    # the box came from a frame taken seconds before tracking starts (a model's reply)
    t = ColorCheckedTracker(_frame(200, 120), (182, 102, 218, 138))
    state = t.update(_frame(120, 125))  # 80 px away: beyond KCF's search window
    assert state.ok and abs((state.box[0] + state.box[2]) / 2 - 120) < 6

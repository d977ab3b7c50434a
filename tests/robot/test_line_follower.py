"""The floor line on recorded frames and the follower's controller, without a simulator (D5)."""

from __future__ import annotations

import math

import pytest
from tests.vision.conftest import load_frame

from loopact.robot.interface import Pose
from loopact.robot.line_follower import LineFollower
from loopact.vision.line import Camera, LineView, find_line


def _view(name: str) -> LineView:
    f = load_frame(name)
    tilt = math.degrees(f["pose"][4])
    return find_line(f["rgb"], Camera(70.0, 0.35, 0.04, tilt))


def test_line_straight_ahead_has_no_offset_heading_or_corner() -> None:
    v = _view("line_ahead")  # on the south side, facing east, 2.6 m before the corner
    assert v.in_band and v.offset_m == pytest.approx(0.0, abs=0.01)
    assert v.heading_deg == pytest.approx(0.0, abs=2.0) and v.corner_m is None


def test_line_at_an_angle_gives_its_heading() -> None:
    v = _view("line_left")  # robot turned 14.3 degrees right of the line
    assert v.in_band and v.heading_deg == pytest.approx(14.3, abs=2.5)


def test_corner_ahead_gives_distance_and_side() -> None:
    v = _view("corner")  # 0.4 m before the south-east corner, the line turns left
    assert v.corner_m == pytest.approx(0.4, abs=0.05) and v.corner_side == 1


def test_line_across_the_view_from_the_start_pose() -> None:
    v = _view("start")  # the west side crosses 0.6 m ahead
    assert not v.in_band and v.nearest_m is not None
    assert v.nearest_m[0] == pytest.approx(0.6, abs=0.05) and v.corner_m is not None


def test_no_line_when_it_is_out_of_view() -> None:
    v = _view("red_ahead")  # the line runs 0.5 m to the left, outside the near view
    assert not v.in_band and v.nearest_m is not None and v.nearest_m[1] > 0.3


def _band(offset: float, heading: float = 0.0, corner: float | None = None) -> LineView:
    return LineView(
        True, offset, 0.42, heading, corner, 1 if corner else 0, (0.36, 0.0), 2000, (0, 1), 160.0
    )


def test_pid_turns_towards_the_line_and_slows_with_the_error() -> None:
    f = LineFollower(speed_mps=0.3)
    straight = f.step(_band(0.0), Pose(0, 0, 0), 0.0)
    assert straight.state == "follow" and straight.angular_radps == 0.0
    left = f.step(_band(0.08), Pose(0.03, 0, 0), 0.1)
    assert left.angular_radps > 0.2 and left.linear_mps < straight.linear_mps
    right = LineFollower(speed_mps=0.3).step(_band(-0.08), Pose(0, 0, 0), 0.0)
    assert right.angular_radps < -0.2


def test_corner_approach_pivot_and_rejoin() -> None:
    f = LineFollower(speed_mps=0.3)
    assert f.step(_band(0.0, corner=0.45), Pose(0, 0, 0), 0.0).state == "approach"
    # drives straight to the corner point on odometry, even with the line out of view
    blind = LineView(False, None, None, None, None, 0, None, 0, (0, 1), None)
    assert f.step(blind, Pose(0.3, 0, 0), 1.0).state == "approach"
    turn = f.step(blind, Pose(0.46, 0, 0), 2.0)
    assert turn.state == "pivot" and turn.linear_mps == 0 and turn.angular_radps > 0
    f.step(blind, Pose(0.46, 0, math.radians(50)), 2.5)
    back = f.step(_band(0.0), Pose(0.46, 0, math.radians(88)), 3.0)
    assert back.state == "follow"


def test_a_lap_is_counted_back_at_the_start() -> None:
    f = LineFollower()
    f.step(_band(0.0), Pose(0, 0, 0), 0.0)
    for i, (x, y) in enumerate([(1, 0), (1, 1), (0, 1), (-0.1, 0.5), (-0.05, 0.0)]):
        f.step(_band(0.0), Pose(x, y, 0.0 if i == 4 else 1.0), float(i + 1))
    assert f.laps == 1 and f.path_m > 3


def test_a_lap_joined_across_the_line_counts_from_where_the_robot_runs_along_it() -> None:
    """Issue 20 (found by loopact eval): from the start pose the robot meets the line across
    its path; the lap starts once it runs along the line, not where it first saw it."""
    f = LineFollower()
    f.step(_band(0.0, corner=0.7), Pose(0, 0, 0), 0.0)  # the line across looks like a corner
    f.step(_band(0.0), Pose(0.05, 0, math.pi / 2), 1.0)  # turned onto it
    loop = [(0.05, 1), (-1, 1), (-1, -1), (0.05, -1), (0.05, -0.1), (0.05, 0.0)]
    for i, (x, y) in enumerate(loop):
        f.step(_band(0.0), Pose(x, y, math.pi / 2), float(i + 2))
    assert f.laps == 1


def test_a_line_beside_the_robot_is_not_where_the_lap_starts() -> None:
    """Found by hand (2026-12-05): the robot 0.4 m beside the west side, facing along it, saw
    the line parallel in its band and took its own pose as the lap's start; it never passed
    that pose again and counted no lap in 120 s. The lap starts once it is on the line."""
    f = LineFollower()
    f.step(_band(0.4), Pose(0.4, 0, math.pi / 2), 0.0)  # parallel, 0.4 m to the left
    f.step(_band(0.0), Pose(0.0, 0.3, math.pi / 2), 1.0)  # on the line now
    loop = [(0.0, 1), (-1, 1), (-1, -1), (0.0, -1), (0.0, 0.2), (0.0, 0.3)]
    for i, (x, y) in enumerate(loop):
        f.step(_band(0.0), Pose(x, y, math.pi / 2), float(i + 2))
    assert f.laps == 1


def test_the_time_limit_follows_the_laps_when_no_duration_is_given() -> None:
    """A fixed 120 s default stopped "沿着线跑三圈" (31 m at 0.25 m/s) before its third lap."""
    from loopact.robot.follow_line import MAX_DURATION_S, time_limit

    assert time_limit(0.0, 0) == 120.0  # no laps, no duration: the old default
    assert time_limit(0.0, 3) == 540.0  # three laps: 180 s each
    assert time_limit(0.0, 50) == MAX_DURATION_S
    assert time_limit(45.0, 3) == 45.0  # a duration the caller gave wins
    assert time_limit(-1.0, 0) == -1.0  # and is checked (refused) as it is


def test_laps_are_counted_in_words() -> None:
    """A newcomer read "1 laps" in follow_line's result (the words of every count it says)."""
    from loopact.robot.follow_line import laps_text

    assert [laps_text(n) for n in (0, 1, 2, 3)] == ["0 laps", "1 lap", "2 laps", "3 laps"]

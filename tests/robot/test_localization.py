"""The map pose from TF: composition, not localized, localization lost (issue 40 item 4)."""

from __future__ import annotations

import math

import pytest

from loopact.errors import RobotError
from loopact.robot.interface import Pose
from loopact.robot.navigation.localization import TF_LOST_S, Planar, PlanarTf

ODOM = Pose(1.0, 0.0, 0.0, frame="odom", stamp_s=5.0)


def test_without_a_map_transform_the_pose_is_odometry() -> None:
    tf = PlanarTf()
    tf.update("odom", "base_link", Planar(1.0, 0.0, 0.0, 5.0))
    pose = tf.map_pose(ODOM, now_s=5.0)
    assert pose.frame == "odom" and (pose.x_m, pose.y_m) == (1.0, 0.0)


def test_map_to_odom_is_composed_with_the_newest_odometry() -> None:
    tf = PlanarTf()
    # AMCL's correction: odom is 2 m along x and turned 90 degrees in the map
    tf.update("/map", "odom", Planar(2.0, 0.0, math.pi / 2, 4.0))
    pose = tf.map_pose(ODOM, now_s=5.0)
    assert pose.frame == "map" and pose.stamp_s == 5.0
    assert pose.x_m == pytest.approx(2.0) and pose.y_m == pytest.approx(1.0)
    assert pose.yaw_rad == pytest.approx(math.pi / 2)
    # a chain: map -> odom -> base_link composes in order
    tf.update("odom", "base_link", Planar(1.0, 0.0, 0.0, 5.0))
    chained = tf.lookup("map", "base_link")
    assert chained is not None
    assert (chained.x_m, chained.y_m) == pytest.approx((2.0, 1.0))


def test_a_stale_map_transform_is_localization_lost() -> None:
    tf = PlanarTf()
    tf.update("map", "odom", Planar(0.0, 0.0, 0.0, 0.0))
    with pytest.raises(RobotError, match=r"localization lost: no map -> odom transform for \d+ s"):
        tf.map_pose(ODOM, now_s=TF_LOST_S + 120.0)  # no TF for minutes
    # a map transform that hangs elsewhere in the tree is reported, not ignored
    broken = PlanarTf()
    broken.update("map", "world", Planar(0.0, 0.0, 0.0, 0.0))
    with pytest.raises(RobotError, match="localization is broken"):
        broken.map_pose(ODOM, now_s=1.0)

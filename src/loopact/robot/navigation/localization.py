"""The robot's pose in the map frame from TF (REP 105; issue 40 item 4).

A localized robot publishes ``map`` -> ``odom`` on ``/tf`` (AMCL, SLAM Toolbox, Nav2) and its
base ``odom`` -> ``base_link`` (on ``/tf`` and as odometry). :class:`PlanarTf` keeps the newest
transform of every parent -> child edge, planar (x, y, yaw), stamped on arrival;
:meth:`PlanarTf.map_pose` composes the newest ``map`` -> ``odom`` with the newest odometry
pose, which is how a localized pose stays smooth between localization updates.

- never any ``map`` transform: the robot is not localized, odometry is the pose (``frame``
  ``odom``), as before issue 40;
- a ``map`` transform no older than :data:`TF_LOST_S`: the map pose (``frame`` ``map``);
- the ``map`` transform older than that: localization is lost, a :class:`RobotError` says so
  (navigation refuses rather than drive on a pose that may be wrong).

Pure and thread-safe enough for one writer (the executor thread) and readers on the loop:
edges are replaced whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loopact.errors import RobotError
from loopact.robot.interface import Pose, normalize_angle

TF_LOST_S = 10.0
"""A ``map`` -> ``odom`` transform older than this (seconds) means localization is lost."""


@dataclass(frozen=True)
class Planar:
    """A planar transform: the child frame's origin and heading in the parent frame.

    Attributes:
        x_m: x in metres.
        y_m: y in metres.
        yaw_rad: Heading in radians, counter-clockwise.
        stamp_s: When it arrived, on the receiver's clock (seconds).
    """

    x_m: float
    y_m: float
    yaw_rad: float
    stamp_s: float = 0.0

    def apply(self, pose: Pose, frame: str) -> Pose:
        """``pose`` (in this transform's child frame) expressed in its parent ``frame``."""
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        return Pose(
            self.x_m + c * pose.x_m - s * pose.y_m,
            self.y_m + s * pose.x_m + c * pose.y_m,
            normalize_angle(self.yaw_rad + pose.yaw_rad),
            frame=frame,
            stamp_s=pose.stamp_s,
        )

    def then(self, child: Planar) -> Planar:
        """This transform followed by ``child`` (parent -> self -> child); the older stamp."""
        p = self.apply(Pose(child.x_m, child.y_m, child.yaw_rad), "")
        return Planar(p.x_m, p.y_m, p.yaw_rad, min(self.stamp_s, child.stamp_s))


def yaw_of(x: float, y: float, z: float, w: float) -> float:
    """Yaw in radians (counter-clockwise) of a quaternion."""
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _bare(frame: str) -> str:
    return frame.strip().lstrip("/")


class PlanarTf:
    """The newest planar transform of each TF edge, and the map pose (see the module docstring).

    Args:
        map_frame: The global frame (``map``).
        odom_frame: The odometry frame (``odom``).
    """

    def __init__(self, map_frame: str = "map", odom_frame: str = "odom") -> None:
        self.map_frame = map_frame
        self.odom_frame = odom_frame
        self._edges: dict[str, tuple[str, Planar]] = {}  # child -> (parent, transform)

    def update(self, parent: str, child: str, transform: Planar) -> None:
        """Keep ``transform`` as the newest ``parent`` -> ``child`` edge."""
        self._edges[_bare(child)] = (_bare(parent), transform)

    def lookup(self, target: str, source: str) -> Planar | None:
        """``target`` -> ``source`` when ``source`` hangs below ``target``, else None."""
        chain: list[Planar] = []
        frame = _bare(source)
        for _ in range(32):  # a TF tree is shallow; this bounds a cycle
            if frame == _bare(target):
                out = Planar(0.0, 0.0, 0.0, math.inf)
                for t in reversed(chain):
                    out = out.then(t)
                return out
            edge = self._edges.get(frame)
            if edge is None:
                return None
            frame, t = edge
            chain.append(t)
        return None

    @property
    def localized_once(self) -> bool:
        """True once any transform into the map frame has arrived."""
        return any(parent == self.map_frame for parent, _ in self._edges.values())

    def map_pose(self, odom: Pose, now_s: float) -> Pose:
        """The map pose for the odometry pose ``odom`` (see the module docstring).

        Raises:
            RobotError: The map transform has gone stale (localization lost).
        """
        to_odom = self.lookup(self.map_frame, self.odom_frame)
        if to_odom is None:
            if self.localized_once:
                raise RobotError(
                    f"localization is broken: there is a {self.map_frame!r} transform but no "
                    f"path from it to {self.odom_frame!r} on TF"
                )
            return odom
        age = now_s - to_odom.stamp_s
        if age > TF_LOST_S:
            raise RobotError(
                f"localization lost: no {self.map_frame} -> {self.odom_frame} transform for "
                f"{age:.0f} s (is AMCL, SLAM Toolbox or Nav2 running?); the robot's map pose "
                "is unknown"
            )
        return to_odom.apply(odom, self.map_frame)

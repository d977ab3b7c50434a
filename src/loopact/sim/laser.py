"""A planar laser scanner traced from the simulator's geometry (issue 41; SPEC D1, D6).

A robot whose hardware profile declares ``laser_scan`` among its ``obstacle_sensors`` gets a
``sensor_msgs/LaserScan`` from ``loopact sim --ros2``, as a 2D LiDAR would give it: every beam
is a ray cast with MuJoCo (``mj_multiRay``) through the world as it stands — walls, furniture,
objects — from the scanner's mount (``laser_mount_forward_m`` ahead of the base centre,
:data:`SCAN_HEIGHT_M` above the floor, level), on its own ``MjData`` so the physics thread is
never touched. A beam that hits nothing within :data:`RANGE_MAX_M` reads ``+inf`` (REP 117).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

BEAMS = 360
"""Beams per scan, one a degree, counter-clockwise from straight behind (REP 103)."""

RANGE_MIN_M = 0.12
"""Shortest range the scanner reports, metres (an LDS-01's)."""

RANGE_MAX_M = 8.0
"""Longest range, metres; beyond it a beam reads ``+inf``."""

SCAN_HEIGHT_M = 0.15
"""Height of the scan plane above the floor, metres."""

ANGLE_MIN_RAD = -math.pi
ANGLE_INCREMENT_RAD = 2 * math.pi / BEAMS


class LaserScanner:
    """Trace scans on a private copy of the simulator's model state.

    Args:
        model: The simulator's ``MjModel``.
        forward_m: The scanner's offset ahead of the base centre, metres.
    """

    def __init__(self, model: Any, forward_m: float = 0.0) -> None:
        from loopact.sim.render import import_mujoco

        self._mj = mj = import_mujoco()
        self._model = model
        self._data = mj.MjData(model)
        self._base = int(mj.mj_name2id(model, mj.mjtObj.mjOBJ_BODY, "base"))
        self.forward_m = float(forward_m)
        angles = ANGLE_MIN_RAD + ANGLE_INCREMENT_RAD * np.arange(BEAMS)
        self._local = np.stack([np.cos(angles), np.sin(angles), np.zeros(BEAMS)], axis=1)
        self._geom = np.zeros(BEAMS, dtype=np.int32)
        self._dist = np.zeros(BEAMS, dtype=np.float64)

    def scan(self, qpos: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
        """The ranges, metres, for the joint positions ``qpos`` (a state's copy): one a beam
        from :data:`ANGLE_MIN_RAD` on, ``+inf`` where nothing is within range."""
        mj, m, d = self._mj, self._model, self._data
        d.qpos[:] = qpos
        mj.mj_kinematics(m, d)
        rot = np.asarray(d.xmat[self._base]).reshape(3, 3)
        origin = np.asarray(d.xpos[self._base]) + rot @ np.array([self.forward_m, 0.0, 0.0])
        origin[2] = SCAN_HEIGHT_M
        vec = np.ascontiguousarray((self._local @ rot.T).reshape(-1))
        mj.mj_multiRay(
            m, d, origin, vec, None, 1, self._base, self._geom, self._dist, None, BEAMS,
            RANGE_MAX_M,
        )  # fmt: skip
        ranges = self._dist.astype(np.float32)
        ranges[(self._geom < 0) | (ranges < 0) | (ranges > RANGE_MAX_M)] = np.inf
        return ranges


def scan_to_msg(ranges: npt.NDArray[np.float32], msg_type: Any, now: float, frame: str) -> Any:
    """A ``sensor_msgs/LaserScan`` of ``ranges`` stamped ``now`` (Unix seconds)."""
    from loopact.nodes.ros2.convert import set_stamp

    msg = msg_type()
    set_stamp(msg.header, now)
    msg.header.frame_id = frame
    msg.angle_min = ANGLE_MIN_RAD
    msg.angle_increment = ANGLE_INCREMENT_RAD
    msg.angle_max = ANGLE_MIN_RAD + ANGLE_INCREMENT_RAD * (len(ranges) - 1)
    msg.range_min, msg.range_max = RANGE_MIN_M, RANGE_MAX_M
    msg.ranges = ranges.tolist()
    return msg

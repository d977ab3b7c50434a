"""The robot interface the tools use (SPEC D1), and the clock it runs on.

One small interface: command a twist, read the pose (with frame and timestamp), grab the
latest camera frame and depth image (with timestamps), command the pan-tilt head, stop. The
simulator implements it now (``loopact.sim``); ROS 2 implements it later. Robot tools never
call :meth:`Robot.send_twist` or :meth:`Robot.set_head` themselves: the safety governor
(``loopact.robot.governor``, SPEC X3) is the only writer to the actuators.

Units follow ROS REP 103: metres, seconds, radians, x forward, y left, z up, positive yaw
counter-clockwise. Frames follow REP 105 (``map``, ``odom``, ``base_link``).

Every timestamp is on the robot's :class:`Clock` (simulated time in the simulator), so that
durations, timeouts and the watchdog do not depend on machine load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


@runtime_checkable
class Clock(Protocol):
    """The robot's clock: wall time on a real robot, simulated time in the simulator."""

    def now(self) -> float:
        """Current time in seconds (monotonic; epoch unspecified)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait until ``now()`` has advanced by ``seconds``; cancellable."""
        ...


@dataclass(frozen=True)
class Pose:
    """A planar pose.

    Attributes:
        x_m: x position in metres.
        y_m: y position in metres.
        yaw_rad: Heading in radians, counter-clockwise from +x, in (-pi, pi].
        frame: The frame the pose is expressed in (``odom`` or ``map``, REP 105).
        stamp_s: When it was measured, on the robot's clock.
    """

    x_m: float
    y_m: float
    yaw_rad: float
    frame: str = "odom"
    stamp_s: float = 0.0

    @property
    def yaw_deg(self) -> float:
        """Heading in degrees."""
        return math.degrees(self.yaw_rad)


@dataclass(frozen=True)
class Twist:
    """A velocity command for the base (``geometry_msgs/Twist`` subset).

    Attributes:
        linear_mps: Forward speed in m/s (negative: backward).
        angular_radps: Yaw rate in rad/s, counter-clockwise positive.
        lateral_mps: Sideways speed in m/s, left positive (mecanum bases only).
    """

    linear_mps: float = 0.0
    angular_radps: float = 0.0
    lateral_mps: float = 0.0

    @property
    def is_zero(self) -> bool:
        """True for a stop command."""
        return self.linear_mps == 0.0 and self.angular_radps == 0.0 and self.lateral_mps == 0.0


@dataclass(frozen=True)
class CameraFrame:
    """One RGB camera frame.

    Attributes:
        rgb: ``HxWx3`` uint8 array, RGB order.
        stamp_s: Capture time on the robot's clock.
        frame_id: The camera's frame.
    """

    rgb: npt.NDArray[np.uint8]
    stamp_s: float
    frame_id: str = "camera"


@dataclass(frozen=True)
class DepthFrame:
    """One depth image (REP 118 ``32FC1``).

    Attributes:
        depth_m: ``HxW`` float32 array in metres, NaN where unknown, aligned with the RGB frame.
        stamp_s: Capture time on the robot's clock.
        frame_id: The camera's frame.
    """

    depth_m: npt.NDArray[np.float32]
    stamp_s: float
    frame_id: str = "camera"


@dataclass(frozen=True)
class LaserScan:
    """One planar laser scan (``sensor_msgs/LaserScan``, REP 117), in the scanner's frame.

    Attributes:
        ranges_m: Ranges in metres, one per beam, counter-clockwise from ``angle_min_rad``;
            ``+inf`` no return within range, ``-inf`` too close to measure, NaN invalid.
        angle_min_rad: Angle of the first beam, radians (0 ahead, left positive).
        angle_increment_rad: Angle between beams, radians.
        range_min_m: Shortest valid range, metres.
        range_max_m: Longest valid range, metres.
        stamp_s: When it arrived, on the robot's clock.
    """

    ranges_m: npt.NDArray[np.float32]
    angle_min_rad: float
    angle_increment_rad: float
    range_min_m: float
    range_max_m: float
    stamp_s: float


@dataclass(frozen=True)
class BumperState:
    """A contact bumper (``std_msgs/Bool``).

    Attributes:
        pressed: True while something touches it.
        stamp_s: When it arrived, on the robot's clock.
    """

    pressed: bool
    stamp_s: float


@dataclass(frozen=True)
class HeadState:
    """The pan-tilt head's joint positions.

    Attributes:
        pan_rad: Pan angle in radians, left positive.
        tilt_rad: Tilt angle in radians, down positive.
        stamp_s: When it was read, on the robot's clock.
    """

    pan_rad: float
    tilt_rad: float
    stamp_s: float = 0.0


@runtime_checkable
class Robot(Protocol):
    """What the governor and the robot tools need from a robot (SPEC D1).

    Attributes:
        clock: The clock every timestamp below is on.
        has_head: Whether there is a pan-tilt head.
        camera_hfov_deg: The camera's horizontal field of view in degrees.
    """

    clock: Clock
    has_head: bool
    camera_hfov_deg: float

    async def send_twist(self, twist: Twist) -> None:
        """Command the base (only the safety governor calls this)."""
        ...

    async def get_pose(self) -> Pose:
        """The latest odometry pose (``odom`` frame).

        Raises:
            RobotError: No pose has ever arrived.
        """
        ...

    async def get_frame(self) -> CameraFrame:
        """The latest RGB frame (rendered on demand in the simulator).

        Raises:
            RobotError: No frame is available or rendering failed.
        """
        ...

    async def get_depth(self) -> DepthFrame:
        """The latest depth image, aligned with :meth:`get_frame`.

        Raises:
            RobotError: No depth is available.
        """
        ...

    async def set_head(self, pan_rad: float, tilt_rad: float) -> None:
        """Command the pan-tilt head (only the safety governor calls this)."""
        ...

    async def get_head(self) -> HeadState:
        """The head's current joint positions."""
        ...

    async def close(self) -> None:
        """Stop the base and release the robot."""
        ...


@runtime_checkable
class ScanningRobot(Protocol):
    """A robot with a laser scanner (a profile's ``obstacle_sensors`` names ``laser_scan``)."""

    async def get_scan(self) -> LaserScan:
        """The latest scan.

        Raises:
            RobotError: No scan has arrived.
        """
        ...


@runtime_checkable
class BumperRobot(Protocol):
    """A robot with a contact bumper (``obstacle_sensors`` names ``bumper``)."""

    async def get_bumper(self) -> BumperState:
        """The bumper's latest state.

        Raises:
            RobotError: No bumper state has arrived.
        """
        ...


def normalize_angle(rad: float) -> float:
    """Wrap an angle in radians to (-pi, pi]."""
    a = math.fmod(rad + math.pi, 2 * math.pi)
    if a <= 0:
        a += 2 * math.pi
    return a - math.pi

"""The line follower's controller: ``LineView + pose -> twist`` (SPEC D5, issue 15).

A small, pure state machine, tested without a simulator:

- ``follow``: the line's centroid in the near band (its bearing) drives a PID on angular speed,
  with the line's heading as feed-forward; forward speed drops with the error;
- ``approach``: a corner is close ahead (the camera cannot see the last 0.3 m under the robot):
  drive straight on odometry to the corner point;
- ``pivot``: turn in place towards the new branch until it lies straight ahead;
- ``acquire``: the line is in view but not under the band (start beside or before it): turn
  to its nearest point and drive there.

Laps are counted on odometry: back within :data:`LAP_RADIUS_M` of where following started
(the first pose that runs along it, :data:`START_CLEAR_M`), heading the same way, after
at least :data:`LAP_MIN_PATH_M` of driving.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from loopact.robot.interface import Pose, normalize_angle
from loopact.vision.line import LineView

CORNER_ARM_M = 0.62
"""A corner closer than this (forward distance) switches to ``approach``."""
START_ALIGNED_DEG = 15.0
START_ON_LINE_M = 0.05
START_CLEAR_M = 1.0
"""Laps count from the first pose that runs along the line: aligned with it within
:data:`START_ALIGNED_DEG`, on it (the line's lateral offset in the band within
:data:`START_ON_LINE_M`) and no corner within this distance ahead. A line met across the
robot's path looks like a corner just ahead; the heading there is not the one the robot passes
that point with again (issue 20: from the start pose no lap was ever counted). A line seen
beside the robot, parallel to its heading (the robot 0.4 m from the west side, facing along
it), is not a pose on the line: the robot never passes it again, and no lap was counted in
120 s of following (found by hand, 2026-12-05)."""
PIVOT_RATE_RADPS = 1.2
PIVOT_MAX_RAD = math.radians(160)
ACQUIRE_SPEED_MPS = 0.15
APPROACH_SPEED_MPS = 0.2
LAP_RADIUS_M = 0.2
LAP_MIN_PATH_M = 2.0


@dataclass(frozen=True)
class Gains:
    """PID gains on the bearing of the band centroid (rad -> rad/s) and the heading feed-forward.

    Attributes:
        kp: Proportional gain, 1/s.
        ki: Integral gain, 1/s^2.
        kd: Derivative gain (on the measurement), dimensionless.
        kh: Heading feed-forward gain, 1/s.
        i_limit_rad_s: Clamp of the integral term, rad*s.
    """

    kp: float = 2.2
    ki: float = 0.3
    kd: float = 0.15
    kh: float = 1.2
    i_limit_rad_s: float = 0.5


@dataclass(frozen=True)
class Command:
    """One control output.

    Attributes:
        linear_mps: Forward speed, m/s.
        angular_radps: Yaw rate, rad/s, left positive.
        state: The follower's state after this step.
        on_line: The line was in the near band in this frame.
    """

    linear_mps: float
    angular_radps: float
    state: str
    on_line: bool


@dataclass
class LineFollower:
    """The state machine (see the module docstring).

    Args:
        speed_mps: Forward speed on a straight line, m/s.
        gains: PID gains.
    """

    speed_mps: float = 0.25
    gains: Gains = field(default_factory=Gains)
    state: str = "acquire"
    laps: int = 0
    path_m: float = 0.0
    _integral: float = 0.0
    _last_err: float | None = None
    _last_t: float | None = None
    _last_pose: Pose | None = None
    _corner: tuple[float, float] | None = None
    _side: int = 0
    _hold_yaw: float = 0.0
    _pivot_turned: float = 0.0
    _start: Pose | None = None
    _lap_path: float = 0.0

    def step(self, view: LineView, pose: Pose, t_s: float) -> Command:
        """One control step for the frame ``view`` taken at ``pose`` (odometry), time ``t_s``."""
        dt = 0.0 if self._last_t is None else max(0.0, t_s - self._last_t)
        self._last_t = t_s
        self._odometry(pose)
        if (
            self.state in ("follow", "acquire")
            and view.corner_m is not None
            and view.corner_m < CORNER_ARM_M
            and view.corner_side != 0
        ):
            self._arm_corner(view, pose)
        if self.state == "approach":
            return self._approach(view, pose)
        if self.state == "pivot":
            return self._pivot(view, pose)
        if view.in_band and view.offset_m is not None and view.band_x_m is not None:
            if self.state != "follow":
                self._reset_pid()
            self.state = "follow"
            if self._start is None and _runs_along(view):
                self._start = pose  # the lap starts where the robot runs along the line
            return self._follow(view, dt)
        self.state = "acquire"
        return self._acquire(view)

    # -- states ------------------------------------------------------------------------------

    def _follow(self, view: LineView, dt: float) -> Command:
        assert view.offset_m is not None and view.band_x_m is not None
        g = self.gains
        err = math.atan2(view.offset_m, view.band_x_m)
        if dt > 0:
            self._integral = max(-g.i_limit_rad_s, min(g.i_limit_rad_s, self._integral + err * dt))
        deriv = 0.0 if self._last_err is None or dt <= 0 else (err - self._last_err) / dt
        self._last_err = err
        heading = math.radians(view.heading_deg or 0.0)
        w = g.kp * err + g.ki * self._integral + g.kd * deriv + g.kh * heading
        v = self.speed_mps * max(0.35, 1.0 - abs(err) / 0.5 - abs(heading) / 1.2)
        return Command(v, w, "follow", True)

    def _acquire(self, view: LineView) -> Command:
        if view.nearest_m is None:
            return Command(0.0, 0.0, "acquire", False)
        px, py = view.nearest_m
        bearing = math.atan2(py, px)
        if abs(bearing) > 0.35:
            return Command(0.0, math.copysign(PIVOT_RATE_RADPS, bearing), "acquire", False)
        return Command(ACQUIRE_SPEED_MPS, 2.0 * bearing, "acquire", False)

    def _arm_corner(self, view: LineView, pose: Pose) -> None:
        assert view.corner_m is not None
        lat = view.offset_m if view.offset_m is not None else 0.0
        c, s = math.cos(pose.yaw_rad), math.sin(pose.yaw_rad)
        cx = pose.x_m + view.corner_m * c - lat * s
        cy = pose.y_m + view.corner_m * s + lat * c
        if self._corner is None:
            self._hold_yaw = pose.yaw_rad + math.radians(view.heading_deg or 0.0)
            self._side = view.corner_side
        self._corner = (cx, cy)
        if view.corner_m < CORNER_ARM_M - 0.1:
            self.state = "approach"

    def _approach(self, view: LineView, pose: Pose) -> Command:
        assert self._corner is not None
        cx, cy = self._corner
        ahead = (cx - pose.x_m) * math.cos(pose.yaw_rad) + (cy - pose.y_m) * math.sin(pose.yaw_rad)
        if ahead <= 0.005:
            self.state = "pivot"
            self._pivot_turned = 0.0
            return self._pivot(view, pose)
        yaw_err = normalize_angle(self._hold_yaw - pose.yaw_rad)
        v = min(APPROACH_SPEED_MPS, max(0.05, 1.5 * ahead))
        return Command(v, 2.0 * yaw_err, "approach", view.in_band)

    def _pivot(self, view: LineView, pose: Pose) -> Command:
        aligned = (
            view.in_band
            and view.offset_m is not None
            and view.heading_deg is not None
            and abs(view.heading_deg) < 10.0
            and abs(view.offset_m) < 0.05
            and (view.corner_m is None or view.corner_m > CORNER_ARM_M)
        )
        if self._pivot_turned > math.radians(40) and aligned:
            self._corner = None
            self._reset_pid()
            self.state = "follow"
            return self._follow(view, 0.0)
        if self._pivot_turned > PIVOT_MAX_RAD:
            self._corner = None
            self.state = "acquire"
            return self._acquire(view)
        return Command(0.0, self._side * PIVOT_RATE_RADPS, "pivot", view.in_band)

    # -- bookkeeping -------------------------------------------------------------------------

    def _reset_pid(self) -> None:
        self._integral = 0.0
        self._last_err = None

    def _odometry(self, pose: Pose) -> None:
        last, self._last_pose = self._last_pose, pose
        if last is None:
            return
        d = math.hypot(pose.x_m - last.x_m, pose.y_m - last.y_m)
        self.path_m += d
        if self.state == "pivot":
            self._pivot_turned += abs(normalize_angle(pose.yaw_rad - last.yaw_rad))
        if self._start is None:
            return
        self._lap_path += d
        back = math.hypot(pose.x_m - self._start.x_m, pose.y_m - self._start.y_m)
        same_way = abs(normalize_angle(pose.yaw_rad - self._start.yaw_rad)) < math.radians(60)
        if self._lap_path > LAP_MIN_PATH_M and back < LAP_RADIUS_M and same_way:
            self.laps += 1
            self._lap_path = 0.0


def _runs_along(view: LineView) -> bool:
    """The robot runs along the line here (see :data:`START_CLEAR_M`)."""
    aligned = view.heading_deg is not None and abs(view.heading_deg) < START_ALIGNED_DEG
    on_line = view.offset_m is not None and abs(view.offset_m) <= START_ON_LINE_M
    return aligned and on_line and (view.corner_m is None or view.corner_m >= START_CLEAR_M)

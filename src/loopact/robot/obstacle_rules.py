"""The safety governor's obstacle stop (SPEC X3; issue 41: robots without a depth camera).

:class:`ObstacleRules` is the obstacle half of :class:`~loopact.robot.governor.SafetyGovernor`:
before forward motion and while it runs, it reads the obstacle sensors the hardware profile
declares (``obstacle_sensors``):

- ``depth``: the camera's depth image, trusted only while the head looks forward and low
  enough to see the floor at the stop line (a forward motion re-centres the pan first);
- ``laser_scan``: a planar scan (``sensor_msgs/LaserScan``; NaN and out-of-range beams are
  no reading, ``-inf`` an obstacle at the scanner, REP 117);
- ``bumper``: a contact; pressed, forward motion halts;
- ``none``: nothing watches the path.

With several range sensors the nearest obstacle any of them sees counts, and a sensor without
data is left out while another one has data; with none that answers the path cannot be
checked and forward motion is refused. Without a range sensor at all (``[none]``,
``[bumper]``), forward motion is allowed only when the profile sets
``limits.blind_max_linear_mps``, and never faster.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from typing import Any

from loopact.errors import MotionStopped, RobotError, StopCause
from loopact.i18n import Phrase
from loopact.robot.clearance import ObstacleReading, forward_clearance, scan_clearance
from loopact.robot.interface import BumperRobot, Clock, Robot, ScanningRobot, Twist
from loopact.robot.lease import MotionLease
from loopact.robot.profile import HardwareProfile

logger = logging.getLogger(__name__)

BRAKE_DECEL_MPS2 = 1.0
"""Deceleration assumed when predicting the stopping distance, m/s^2."""

HEAD_FORWARD_TOL_DEG = 10.0
"""Depth is trusted for the obstacle stop only while |pan| is below this, degrees."""


class ObstacleRules:
    """The obstacle stop under the governor's rules (mixed into the governor).

    Attributes it reads are the governor's (set in its ``__init__``).
    """

    robot: Robot
    clock: Clock
    profile: HardwareProfile
    period_s: float
    _base: MotionLease | None
    _base_forward: bool
    _head: MotionLease | None
    _obstacle: ObstacleReading | None
    _monitor: asyncio.Task[None] | None
    _last_twist: Twist
    _decided: Callable[..., None]
    _halt: Callable[..., Any]
    _wait_head: Callable[..., Any]

    @property
    def blind(self) -> bool:
        """True when no range sensor watches the path (``[none]`` or ``[bumper]``)."""
        return not self.profile.range_sensors

    def min_trusted_tilt_deg(self) -> float:
        """Smallest head tilt (down positive) at which the camera sees the floor at the stop line.

        With the head tilted further up, low obstacles just beyond ``obstacle_stop_m`` would be
        out of view, so the depth image is not trusted for the obstacle stop.
        """
        cam = self.profile.camera
        vfov_half = math.atan(
            math.tan(math.radians(cam.hfov_deg) / 2) * cam.height_px / cam.width_px
        )
        reach = self.profile.footprint_radius_m + self.profile.limits.obstacle_stop_m
        return math.degrees(math.atan2(cam.mount_height_m, reach) - vfov_half)

    def _view_problem(self, pan_rad: float, tilt_rad: float) -> Phrase | None:
        if abs(math.degrees(pan_rad)) > HEAD_FORWARD_TOL_DEG:
            return Phrase("governor.view_panned")
        if math.degrees(tilt_rad) < self.min_trusted_tilt_deg() - 1.0:
            return Phrase("governor.view_high")
        return None

    async def _recentre_for(self, lease: MotionLease) -> None:
        """Turn the head forward so the depth image covers the path (X3)."""
        if not ("depth" in self.profile.obstacle_sensors and self.robot.has_head):
            return
        if not self.profile.head.present:
            return
        head = await self.robot.get_head()
        if self._view_problem(head.pan_rad, head.tilt_rad) is None:
            return
        if self._head is not None:  # ends any head motion
            self._head.stop(StopCause.REPLACED, Phrase("stop.recentred", name=lease.name))
            self._head = None
        tilt = max(
            math.degrees(head.tilt_rad),
            self.profile.head.home_tilt_deg,
            self.min_trusted_tilt_deg(),
        )
        tilt = min(tilt, self.profile.head.tilt_limits_deg[1])
        await self.robot.set_head(0.0, math.radians(tilt))
        await self._wait_head(0.0, math.radians(tilt), timeout_s=3.0)

    async def _prepare_forward(self, lease: MotionLease) -> None:
        """Check the path before a forward motion starts; refuse it when it is blocked or
        cannot be checked, and start the monitor.

        Raises:
            MotionStopped: Cause ``OBSTACLE``: an obstacle within ``obstacle_stop_m``, the path
                cannot be checked, or the robot is blind and may not drive forward.
        """
        await self._recentre_for(lease)
        reading = await self._read_obstacle()
        self._obstacle = reading
        stop_m = self.profile.limits.obstacle_stop_m
        refusal: Phrase | None = None
        if self.blind and self.profile.limits.blind_max_linear_mps is None:
            refusal = Phrase("governor.blind", sensors=", ".join(self.profile.obstacle_sensors))
        elif reading.clearance_m is None:
            refusal = Phrase("governor.cannot_check", problem=reading.note or Phrase("scan.none"))
        elif reading.clearance_m < stop_m:
            refusal = Phrase(
                "governor.obstacle_ahead", clearance_m=reading.clearance_m, limit_m=stop_m
            )
        if refusal is not None:
            lease.stop(StopCause.OBSTACLE, refusal)
            self._decided("refuse", "obstacle", lease.name, refusal.text())
            self._base = None
            raise MotionStopped(refusal, StopCause.OBSTACLE)
        self._start_monitor()

    def _start_monitor(self) -> None:
        if self._monitor is None or self._monitor.done():
            self._monitor = asyncio.get_running_loop().create_task(
                self._monitor_loop(), name="loopact-governor-obstacles"
            )

    async def _obstacle_speed(self, cmd: Twist) -> tuple[Twist, Phrase | None]:
        """``cmd`` with its forward speed made safe for the latest reading, and the reason
        to halt, if the robot must stop now (obstacle within reach, path unreadable)."""
        reading = self._obstacle
        now = self.clock.now()
        max_age = self.profile.camera.max_age_s
        if reading is None or now - reading.received_s > max_age:
            return Twist(0.0, cmd.angular_radps, cmd.lateral_mps), None
        if reading.clearance_m is None:
            return Twist(), Phrase("stop.cannot_check", problem=reading.note or Phrase("scan.none"))
        if math.isinf(reading.clearance_m):  # blind, or nothing in range
            blind_max = self.profile.limits.blind_max_linear_mps
            if self.blind and blind_max is not None and cmd.linear_mps > blind_max:
                return Twist(blind_max, cmd.angular_radps, cmd.lateral_mps), None
            return cmd, None
        pose = await self.robot.get_pose()
        moved = math.hypot(pose.x_m - reading.x_m, pose.y_m - reading.y_m)
        # Distance still covered before a stop takes effect: one more control period at the
        # current speed, plus braking.
        v_now = max(0.0, self._last_twist.linear_mps)
        clearance = reading.clearance_m - moved - v_now * self.period_s
        clearance -= v_now * v_now / (2 * BRAKE_DECEL_MPS2)
        stop_m = self.profile.limits.obstacle_stop_m
        if clearance <= stop_m + 0.01:
            return Twist(), Phrase("stop.obstacle_ahead", clearance_m=max(clearance, 0.0))
        v_safe = 0.8 * math.sqrt(2 * BRAKE_DECEL_MPS2 * (clearance - stop_m))
        if cmd.linear_mps > v_safe:
            return Twist(max(0.05, v_safe), cmd.angular_radps, cmd.lateral_mps), None
        return cmd, None

    async def _limit_for_obstacle(self, lease: MotionLease, cmd: Twist) -> Twist:
        safe, halt = await self._obstacle_speed(cmd)
        if halt is not None:
            return await self._halt(lease, StopCause.OBSTACLE, halt)  # type: ignore[no-any-return]
        return safe

    async def _read_obstacle(self) -> ObstacleReading:
        """One reading of every declared obstacle sensor, combined (see the module docstring).

        Raises:
            RobotError: Every declared sensor failed to answer.
        """
        # Pose first: the depth is rendered/captured from the state at the time of the call,
        # so this pose is where the robot was when the depth was taken.
        pose = await self.robot.get_pose()
        ranges: list[tuple[float | None, float, Phrase | None]] = []
        contacts: list[tuple[float | None, float, Phrase | None]] = []
        errors: list[RobotError] = []
        for sensor in self.profile.obstacle_sensors:
            try:
                if sensor == "depth":
                    ranges.append(await self._depth_clearance())
                elif sensor == "laser_scan":
                    ranges.append(await self._scan_clearance())
                elif sensor == "bumper":
                    contacts.append(await self._bumper_clearance())
            except RobotError as exc:
                errors.append(exc)
        now = self.clock.now()
        if len(contacts) < self.profile.obstacle_sensors.count("bumper"):
            raise errors[-1]  # a declared bumper that does not answer
        trusted = [r for r in ranges if r[0] is not None]
        if self.profile.range_sensors and not trusted:
            if not ranges:
                raise errors[0]
            _, stamp, note = ranges[0]
            return ObstacleReading(None, stamp, pose.x_m, pose.y_m, note, now)
        found = trusted + contacts or [(math.inf, now, None)]
        clearance, stamp, _ = min(found, key=lambda r: math.inf if r[0] is None else r[0])
        return ObstacleReading(clearance, stamp, pose.x_m, pose.y_m, None, now)

    async def _depth_clearance(self) -> tuple[float | None, float, Phrase | None]:
        depth = await self.robot.get_depth()
        pan = tilt = 0.0
        if self.robot.has_head and self.profile.head.present:
            head = await self.robot.get_head()
            pan, tilt = head.pan_rad, head.tilt_rad
            problem = self._view_problem(pan, tilt)
            if problem is not None:
                return None, depth.stamp_s, problem
        clearance = await asyncio.to_thread(
            forward_clearance, depth.depth_m, self.profile, pan, tilt
        )
        return clearance, depth.stamp_s, None

    async def _scan_clearance(self) -> tuple[float | None, float, Phrase | None]:
        if not isinstance(self.robot, ScanningRobot):
            raise RobotError(Phrase("scan.missing"))
        scan = await self.robot.get_scan()
        clearance = scan_clearance(scan, self.profile)
        return clearance, scan.stamp_s, None if clearance is not None else Phrase("scan.none")

    async def _bumper_clearance(self) -> tuple[float | None, float, Phrase | None]:
        if not isinstance(self.robot, BumperRobot):
            raise RobotError(Phrase("bumper.missing"))
        bumper = await self.robot.get_bumper()
        return (0.0 if bumper.pressed else math.inf), bumper.stamp_s, None

    async def _monitor_loop(self) -> None:
        """Refresh the obstacle reading while a forward-capable motion owns the base."""
        while self._base is not None and self._base_forward:
            try:
                self._obstacle = await self._read_obstacle()
            except RobotError as exc:
                logger.warning("obstacle monitor: no obstacle reading: %s", exc)
                self._obstacle = None
            await self.clock.sleep(self.period_s)

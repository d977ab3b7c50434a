"""The safety governor: the only writer to the base and the head (SPEC C5, X3).

Tools never call :meth:`Robot.send_twist` or :meth:`Robot.set_head`; they ask the governor, which

- clamps every command to the hardware profile's limits and reports what it clamped, and refuses
  NaN/inf values (:class:`~loopact.errors.SafetyError`);
- gives the base to one motion at a time (:meth:`begin_motion` returns a :class:`MotionLease`;
  a new lease ends the old one for :attr:`~loopact.errors.StopCause.REPLACED`, whose
  ``stopped_by`` is ``cancelled``), and the head likewise;
- halts forward motion when the depth image shows something closer than
  ``limits.obstacle_stop_m`` to the robot's front in its path (depth is trusted only while the
  head looks forward; a forward motion re-centres the pan first);
- halts motion that would take the robot's centre out of the site's geofence;
- stops the base at each motion's deadline (at most ``limits.max_motion_duration_s``);
- runs a watchdog on the robot's clock that zeroes the base when commands stop arriving for
  ``limits.command_timeout_s`` during motion (a dead agent or link stops the robot);
- latches an emergency stop until :meth:`reset_emergency_stop`;
- zeroes the base at once on :meth:`stop_all` (user stop, preemption);
- tells :attr:`SafetyGovernor.on_decision` (when set) each decision: a halt and why, a clamp, a
  refusal, a stop, the emergency stop and its reset (``governor`` events; issue 44).

Every stop is typed: the lease ends with a :class:`~loopact.errors.StopCause` and a phrase of
what happened, and a refusal raises :class:`~loopact.errors.MotionStopped` with its cause
(:class:`~loopact.errors.EmergencyStopError` for the latched emergency stop), so a tool never
reads the cause from an error's text (issue 38). What the governor says is in the catalogue
(:mod:`loopact.i18n.robot`, ``stop.*`` and ``governor.*``).

It depends only on the :class:`~loopact.robot.interface.Robot` interface and its clock (no ROS),
so it can later run base-side as its own node in front of ``cmd_vel``. The site map is assumed
to share the odometry frame (true in the simulator: map = odom).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable
from typing import Any

from loopact.errors import (
    MotionStopped,
    RobotError,
    SafetyError,
    StopCause,
    StopReason,
)
from loopact.i18n import Phrase
from loopact.robot.clearance import ObstacleReading, forward_clearance
from loopact.robot.head_rules import HeadRules, finite
from loopact.robot.interface import Pose, Robot, Twist
from loopact.robot.lease import MotionLease
from loopact.robot.logtext import log_text
from loopact.robot.profile import HardwareProfile, SiteMap

logger = logging.getLogger(__name__)

BRAKE_DECEL_MPS2 = 1.0
"""Deceleration assumed when predicting the stopping distance, m/s^2."""

HEAD_FORWARD_TOL_DEG = 10.0
"""Depth is trusted for the obstacle stop only while |pan| is below this, degrees."""

DecisionHook = Callable[[dict[str, Any]], None]
"""Told ``{decision, reason, motion, detail}``: ``decision`` is ``halt``, ``clamp``, ``refuse``,
``stop``, ``emergency_stop`` or ``estop_reset``; ``reason`` a stop reason or a clamped field."""


class SafetyGovernor(HeadRules):
    """The only writer to the actuators (SPEC C5, X3). See the module docstring.

    Args:
        robot: The robot whose actuators it owns.
        profile: Limits, camera geometry, head limits.
        site: Site map whose geofence it enforces (None: no geofence).
        control_period_s: Period of the watchdog and obstacle monitor, robot-clock seconds.
    """

    def __init__(
        self,
        robot: Robot,
        profile: HardwareProfile,
        site: SiteMap | None = None,
        control_period_s: float = 0.05,
    ) -> None:
        self.robot = robot
        self.clock = robot.clock
        self.profile = profile
        self.site = site
        self.period_s = control_period_s
        self._base: MotionLease | None = None
        self._base_forward = False
        self._head: MotionLease | None = None
        self._leases: dict[str, MotionLease] = {}  # more resources: "arm" (issue 43)
        self.carry_limit_mps: float | None = None
        self._estop = False
        self._estop_reason = ""
        self._last_cmd_s = -math.inf
        self._last_twist = Twist()
        self._obstacle: ObstacleReading | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._monitor: asyncio.Task[None] | None = None
        self.watchdog_trips = 0
        self.on_decision: DecisionHook | None = None

    def _decided(self, decision: str, reason: str, motion: str | None, detail: str) -> None:
        """Tell :attr:`on_decision`; a failing hook is logged, never raised into a motion."""
        said = {"decision": decision, "reason": reason, "motion": motion, "detail": detail}
        try:
            if self.on_decision is not None:
                self.on_decision(said)
        except Exception:
            logger.exception("governor decision hook failed")

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the watchdog task on the running event loop (idempotent)."""
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.get_running_loop().create_task(
                self._watchdog_loop(), name="loopact-governor-watchdog"
            )

    async def close(self) -> None:
        """Stop the base and the background tasks."""
        for task in (self._watchdog, self._monitor):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._watchdog = self._monitor = None
        with contextlib.suppress(Exception):
            await self._send(Twist())

    # ---- state -----------------------------------------------------------------------------

    @property
    def emergency_stopped(self) -> bool:
        """True while the emergency stop is latched."""
        return self._estop

    @property
    def last_twist(self) -> Twist:
        """The last twist the governor sent to the base."""
        return self._last_twist

    @property
    def base_lease(self) -> MotionLease | None:
        """The motion owning the base, if any."""
        return self._base

    # ---- stops -----------------------------------------------------------------------------

    async def stop_all(self, reason: str, cause: StopCause | None = None) -> None:
        """Zero the base now and cancel the active motions (user stop, preemption).

        Args:
            reason: Why, in words, for the motions' ``detail``; a
                :class:`~loopact.errors.StopReason` (the agent's stop hooks) brings its cause.
            cause: Why, typed; default the :class:`~loopact.errors.StopReason`'s cause, else
                :attr:`StopCause.STOPPED` (a person's stop).
        """
        if cause is None:
            cause = reason.cause if isinstance(reason, StopReason) else StopCause.STOPPED
        if (held := self._base or self._head) is not None:
            self._decided("stop", cause.stopped_by, held.name, str(reason))
        self._end_leases(cause, Phrase("stop.reason", reason=str(reason)))
        await self._send(Twist())

    async def emergency_stop(self, reason: str = "emergency stop") -> None:
        """Latch the emergency stop: zero the base, refuse all motion until reset (X3)."""
        self._estop = True
        self._estop_reason = reason
        self._end_leases(StopCause.EMERGENCY_STOP, Phrase("stop.reason", reason=reason))
        await self._send(Twist())
        logger.warning("emergency stop latched: %s", reason)
        self._decided("emergency_stop", "emergency_stop", None, reason)

    def reset_emergency_stop(self, by: str = "unknown") -> None:
        """Release the latched emergency stop (an explicit human decision).

        Args:
            by: Who released it, for the log (issue 21); it may come from a message, so the
                log shows it quoted and escaped, at most 160 characters (:func:`log_text`).
        """
        if self._estop:
            logger.warning("emergency stop reset by %s", log_text(by, 160))
            self._decided("estop_reset", "reset", None, f"by {log_text(by, 160)}")
        self._estop = False
        self._estop_reason = ""

    def _end_leases(self, cause: StopCause, why: Phrase) -> None:
        for lease in (self._base, self._head, *self._leases.values()):
            if lease is not None:
                lease.stop(cause, why)
        self._base = None
        self._head = None
        self._leases.clear()

    # ---- other resources (the arm; issue 43) -------------------------------------------------

    def take(self, resource: str, name: str, duration_s: float) -> MotionLease:
        """Give ``resource`` (``arm``) to one motion, ending the one holding it (X3).

        One mechanism for every resource: the lease is a :class:`MotionLease` like the base's,
        ended by :meth:`stop_all` and :meth:`emergency_stop` with the base's; the resource's
        own rules (robot/arm/) watch it and stop their actuator when it ends.

        Raises:
            EmergencyStopError: The emergency stop is latched.
        """
        self._check_estop()
        held = self._leases.pop(resource, None)
        if held is not None:
            held.stop(StopCause.REPLACED, Phrase("stop.replaced", name=name))
        now = self.clock.now()
        lease = MotionLease(
            name, now, now + min(duration_s, self.profile.limits.max_motion_duration_s)
        )
        self._leases[resource] = lease
        return lease

    def give_back(self, resource: str, lease: MotionLease) -> None:
        """End ``lease`` of ``resource`` (it reached its target); safe to call twice."""
        lease.stop(StopCause.TARGET, Phrase("stop.finished"))
        if self._leases.get(resource) is lease:
            del self._leases[resource]

    # ---- base ------------------------------------------------------------------------------

    def clamp_twist(self, twist: Twist) -> tuple[Twist, dict[str, dict[str, float]]]:
        """Clamp a twist to the profile's limits.

        Returns:
            The clamped twist and ``{field: {"requested", "applied"}}`` for each clamped field.

        Raises:
            SafetyError: A non-finite component.
        """
        lim = self.profile.limits
        lin = finite("linear_mps", twist.linear_mps)
        ang = finite("angular_radps", twist.angular_radps)
        lat = finite("lateral_mps", twist.lateral_mps)
        clamped: dict[str, dict[str, float]] = {}
        max_ang = math.radians(lim.max_angular_dps)
        if abs(lin) > lim.max_linear_mps:
            applied = math.copysign(lim.max_linear_mps, lin)
            clamped["linear_mps"] = {"requested": lin, "applied": applied}
            lin = applied
        if abs(ang) > max_ang:
            applied = math.copysign(max_ang, ang)
            clamped["angular_dps"] = {
                "requested": math.degrees(ang),
                "applied": math.degrees(applied),
            }
            ang = applied
        if self.profile.drive != "mecanum" and lat != 0.0:
            clamped["lateral_mps"] = {"requested": lat, "applied": 0.0}
            lat = 0.0
        elif abs(lat) > lim.lateral_mps:
            applied = math.copysign(lim.lateral_mps, lat)
            clamped["lateral_mps"] = {"requested": lat, "applied": applied}
            lat = applied
        carry = self.carry_limit_mps  # the arm holds something (issue 43)
        if carry is not None and math.hypot(lin, lat) > carry:
            scale = carry / math.hypot(lin, lat)
            clamped["carry_mps"] = {"requested": math.hypot(lin, lat), "applied": carry}
            lin, lat = lin * scale, lat * scale
        return Twist(lin, ang, lat), clamped

    async def begin_motion(
        self, name: str, duration_s: float, forward: bool = False
    ) -> MotionLease:
        """Take the base for one motion, ending any other motion (X3 ownership).

        Args:
            name: The motion's name (tool name).
            duration_s: Planned duration in seconds; the deadline is
                ``min(duration_s, limits.max_motion_duration_s)`` from now.
            forward: True if it will drive forward: the governor re-centres the head's pan so
                the depth image looks ahead, and starts the obstacle monitor.

        Raises:
            EmergencyStopError: The emergency stop is latched.
            MotionStopped: An obstacle is already closer than ``obstacle_stop_m``, or the
                path ahead cannot be checked (forward motion only; cause ``OBSTACLE``).
            SafetyError: ``duration_s`` is not a positive finite number.
            RobotError: The robot failed to answer.
        """
        self._check_estop()
        duration_s = finite("duration_s", duration_s)
        if duration_s <= 0:
            raise SafetyError(Phrase("governor.bad_duration", duration_s=duration_s))
        if self._base is not None:
            self._base.stop(StopCause.REPLACED, Phrase("stop.replaced", name=name))
            self._base = None
            await self._send(Twist())
        now = self.clock.now()
        lease = MotionLease(
            name, now, now + min(duration_s, self.profile.limits.max_motion_duration_s)
        )
        self._base = lease
        self._base_forward = forward
        self._last_cmd_s = now
        if forward:
            try:
                await self._prepare_forward(lease)
            except BaseException as exc:
                # Refused or cancelled while preparing: the lease must not keep the base.
                cancelled = isinstance(exc, asyncio.CancelledError)
                cause = StopCause.PREEMPTED if cancelled else StopCause.ERROR
                lease.stop(cause, Phrase("stop.not_started"))
                if self._base is lease:
                    self._base = None
                raise
            # The deadline counts from when the base is ready (preparing renders depth).
            now = self.clock.now()
            lease.started_s = now
            lease.deadline_s = now + min(duration_s, self.profile.limits.max_motion_duration_s)
            self._last_cmd_s = now
        return lease

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

    async def _prepare_forward(self, lease: MotionLease) -> None:
        if self.robot.has_head and self.profile.head.present:
            head = await self.robot.get_head()
            if self._view_problem(head.pan_rad, head.tilt_rad) is not None:
                # Re-centre so the depth image covers the path (X3); ends any head motion.
                if self._head is not None:
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
        reading = await self._read_obstacle()
        self._obstacle = reading
        stop_m = self.profile.limits.obstacle_stop_m
        if reading.clearance_m is None or reading.clearance_m < stop_m:
            if reading.clearance_m is None:
                refusal = Phrase("governor.cannot_check", problem=reading.note)
            else:
                refusal = Phrase(
                    "governor.obstacle_ahead", clearance_m=reading.clearance_m, limit_m=stop_m
                )
            lease.stop(StopCause.OBSTACLE, refusal)
            self._decided("refuse", "obstacle", lease.name, refusal.text())
            self._base = None
            raise MotionStopped(refusal, StopCause.OBSTACLE)
        if self._monitor is None or self._monitor.done():
            self._monitor = asyncio.get_running_loop().create_task(
                self._monitor_loop(), name="loopact-governor-obstacles"
            )

    async def command(self, lease: MotionLease, twist: Twist) -> Twist:
        """Send one base command for ``lease`` after every safety check (X3).

        A lease that is no longer active sends nothing. Halts (zero twist, lease stopped with
        the reason) on emergency stop, deadline, geofence or obstacle. Forward speed is reduced
        near an obstacle so the robot can stop in time; forward motion waits (zero linear speed)
        while no fresh depth reading exists.

        Returns:
            The twist actually sent (zero if halted or not the owner).

        Raises:
            SafetyError: Non-finite values.
        """
        cmd, clamped = self.clamp_twist(twist)
        if not lease.active or self._base is not lease:
            lease.stop(StopCause.REPLACED, Phrase("stop.taken"))
            return Twist()
        if self._estop:
            why = Phrase("stop.reason", reason=self._estop_reason)
            return await self._halt(lease, StopCause.EMERGENCY_STOP, why)
        now = self.clock.now()
        self._last_cmd_s = now
        for key, val in clamped.items():
            if key not in lease.clamped:
                said = f"{val['requested']:g} -> {val['applied']:g}"
                self._decided("clamp", key, lease.name, said)
            lease.clamped.setdefault(key, val)
        if now >= lease.deadline_s:
            why = Phrase("stop.deadline", elapsed_s=now - lease.started_s)
            return await self._halt(lease, StopCause.DEADLINE, why)
        moving = cmd.linear_mps != 0.0 or cmd.lateral_mps != 0.0
        if self.site is not None and self.site.geofence and moving:
            pose = await self.robot.get_pose()
            if self._leaves_fence(pose, cmd):
                why = Phrase("stop.geofence", x_m=pose.x_m, y_m=pose.y_m)
                return await self._halt(lease, StopCause.GEOFENCE, why)
        if cmd.linear_mps > 0:
            cmd = await self._limit_for_obstacle(lease, cmd)
            if not lease.active:
                return Twist()
        await self._send(cmd)
        return cmd

    def _leaves_fence(self, pose: Pose, cmd: Twist) -> bool:
        assert self.site is not None
        v = math.hypot(cmd.linear_mps, cmd.lateral_mps)  # a mecanum base strafes too
        look = v * (self.period_s * 2) + v * v / (2 * BRAKE_DECEL_MPS2) + 0.02
        way = pose.yaw_rad + math.atan2(cmd.lateral_mps, cmd.linear_mps)
        nx = pose.x_m + look * math.cos(way)
        ny = pose.y_m + look * math.sin(way)
        if self.site.contains(nx, ny):
            return False
        if not self.site.contains(pose.x_m, pose.y_m):
            # Already outside (e.g. started there): allow motion that gets closer to the fence.
            return self.site.distance_to_fence(nx, ny) >= self.site.distance_to_fence(
                pose.x_m, pose.y_m
            )
        return True

    async def _limit_for_obstacle(self, lease: MotionLease, cmd: Twist) -> Twist:
        reading = self._obstacle
        now = self.clock.now()
        if reading is None or now - reading.received_s > self.profile.camera.max_age_s:
            return Twist(0.0, cmd.angular_radps, cmd.lateral_mps)
        if reading.clearance_m is None:
            why = Phrase("stop.cannot_check", problem=reading.note)
            return await self._halt(lease, StopCause.OBSTACLE, why)
        pose = await self.robot.get_pose()
        moved = math.hypot(pose.x_m - reading.x_m, pose.y_m - reading.y_m)
        # Distance still covered before a stop takes effect: one more control period at the
        # current speed, plus braking.
        v_now = max(0.0, self._last_twist.linear_mps)
        clearance = reading.clearance_m - moved - v_now * self.period_s
        clearance -= v_now * v_now / (2 * BRAKE_DECEL_MPS2)
        stop_m = self.profile.limits.obstacle_stop_m
        if clearance <= stop_m + 0.01:
            why = Phrase("stop.obstacle_ahead", clearance_m=max(clearance, 0.0))
            return await self._halt(lease, StopCause.OBSTACLE, why)
        v_safe = 0.8 * math.sqrt(2 * BRAKE_DECEL_MPS2 * (clearance - stop_m))
        if cmd.linear_mps > v_safe:
            return Twist(max(0.05, v_safe), cmd.angular_radps, cmd.lateral_mps)
        return cmd

    async def _halt(self, lease: MotionLease, cause: StopCause, why: Phrase) -> Twist:
        if lease.active:
            self._decided("halt", cause.stopped_by, lease.name, why.text())
        lease.stop(cause, why)
        if self._base is lease:
            self._base = None
        await self._send(Twist())
        logger.info("motion %s halted: %s (%s)", lease.name, cause.value, why)
        return Twist()

    async def end_motion(self, lease: MotionLease) -> None:
        """Finish a motion: zero the base if the lease still owns it. Safe to call twice."""
        lease.stop(StopCause.TARGET, Phrase("stop.finished"))
        if self._base is lease:
            self._base = None
            await self._send(Twist())
        elif self._base is None and not self._last_twist.is_zero:
            await self._send(Twist())

    async def _send(self, twist: Twist) -> None:
        self._last_twist = twist
        await self.robot.send_twist(twist)

    # ---- obstacle monitor and watchdog ------------------------------------------------------

    async def _read_obstacle(self) -> ObstacleReading:
        # Pose first: the depth is rendered/captured from the state at the time of the call,
        # so this pose is where the robot was when the depth was taken.
        pose = await self.robot.get_pose()
        depth = await self.robot.get_depth()
        pan = tilt = 0.0
        if self.robot.has_head and self.profile.head.present:
            head = await self.robot.get_head()
            pan, tilt = head.pan_rad, head.tilt_rad
            problem = self._view_problem(pan, tilt)
            if problem is not None:
                return ObstacleReading(
                    None, depth.stamp_s, pose.x_m, pose.y_m, problem, self.clock.now()
                )
        clearance = await asyncio.to_thread(
            forward_clearance, depth.depth_m, self.profile, pan, tilt
        )
        return ObstacleReading(clearance, depth.stamp_s, pose.x_m, pose.y_m, None, self.clock.now())

    async def _monitor_loop(self) -> None:
        """Refresh the obstacle reading while a forward-capable motion owns the base."""
        while self._base is not None and self._base_forward:
            try:
                self._obstacle = await self._read_obstacle()
            except RobotError as exc:
                logger.warning("obstacle monitor: depth unavailable: %s", exc)
                self._obstacle = None
            await self.clock.sleep(self.period_s)

    async def _watchdog_loop(self) -> None:
        timeout = self.profile.limits.command_timeout_s
        period = min(self.period_s, timeout / 4)
        while True:
            await self.clock.sleep(period)
            now = self.clock.now()
            lease = self._base
            try:
                if lease is not None and now >= lease.deadline_s:
                    why = Phrase("stop.deadline_watchdog")
                    await self._halt(lease, StopCause.DEADLINE, why)
                elif not self._last_twist.is_zero and now - self._last_cmd_s > timeout:
                    self.watchdog_trips += 1
                    if lease is not None:
                        why = Phrase("stop.watchdog", idle_s=now - self._last_cmd_s)
                        await self._halt(lease, StopCause.WATCHDOG, why)
                    else:
                        await self._send(Twist())
                        self._decided("halt", "watchdog", None, f"no command for {timeout:.2f} s")
                    logger.warning("watchdog: no base command for %.2f s, base zeroed", timeout)
            except RobotError as exc:
                logger.error("watchdog could not stop the base: %s", exc)

    def status(self) -> dict[str, Any]:
        """JSON-able state: emergency stop, owners, last twist."""
        return {
            "emergency_stop": self._estop,
            "base_owner": self._base.name if self._base else None,
            "head_owner": self._head.name if self._head else None,
            "owners": {k: v.name for k, v in self._leases.items()},
            "last_twist": {
                "linear_mps": self._last_twist.linear_mps,
                "angular_radps": self._last_twist.angular_radps,
            },
        }

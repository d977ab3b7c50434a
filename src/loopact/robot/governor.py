"""The safety governor: the only writer to the base and the head (SPEC C5, X3).

Tools never call :meth:`Robot.send_twist` or :meth:`Robot.set_head`; they ask the governor, which

- clamps every command to the hardware profile's limits and reports what it clamped, and refuses
  NaN/inf values (:class:`~loopact.errors.SafetyError`);
- gives the base to one motion at a time (:meth:`begin_motion` returns a :class:`MotionLease`;
  a new lease ends the old one for :attr:`~loopact.errors.StopCause.REPLACED`, whose
  ``stopped_by`` is ``cancelled``), and the head and the arm likewise: one lease per resource,
  the agent's or an operator's (:mod:`loopact.robot.resources`);
- halts forward motion when an obstacle sensor the profile declares (depth, a laser scan, a
  bumper; :mod:`loopact.robot.obstacle_rules`) shows something closer than
  ``limits.obstacle_stop_m`` to the robot's front in its path;
- halts motion that would take the robot's centre out of the site's geofence;
- stops the base at each motion's deadline (at most ``limits.max_motion_duration_s``);
- runs a watchdog on the robot's clock that zeroes the base when commands stop arriving for
  ``limits.command_timeout_s`` during motion (a dead agent or link stops the robot);
- latches an emergency stop from anyone (:meth:`emergency_stop`, with its source) that only an
  operator releases: a proof of the operator's secret over the latch's nonce
  (:meth:`reset_with_proof`, :mod:`loopact.robot.estop`), or the operator's own trusted
  channel (:meth:`reset_emergency_stop`);
- gives the base to an operator's teleop commands (:meth:`teleop`), ending the agent's motion
  ``TAKEN_OVER``, behind a 0.5 s deadman (:mod:`loopact.robot.operator`);
- zeroes the base at once on :meth:`stop_all` (user stop, preemption);
- takes the verdicts of a base-side governor over ROS 2 as its own (:meth:`remote_halt`,
  :meth:`mirror_estop`, :meth:`mirror_takeover`), so the agent's tools end on them at once;
- tells :attr:`SafetyGovernor.on_decision` (when set) each decision: a halt and why, a clamp, a
  refusal, a stop, the emergency stop (with its source) and its reset or refused reset, a
  takeover and a hand-back (``governor`` events; issue 44).

Every stop is typed: the lease ends with a :class:`~loopact.errors.StopCause` and a phrase of
what happened, and a refusal raises :class:`~loopact.errors.MotionStopped` with its cause
(:class:`~loopact.errors.EmergencyStopError` for the latched emergency stop), so a tool never
reads the cause from an error's text (issue 38). What the governor says is in the catalogue
(:mod:`loopact.i18n.robot`, ``stop.*`` and ``governor.*``).

It depends only on the :class:`~loopact.robot.interface.Robot` interface and its clock (no ROS);
it runs base-side as its own node in front of ``cmd_vel`` (:mod:`loopact.robot.base_node`).
The site map is assumed to share the odometry frame (true in the simulator: map = odom).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable
from typing import Any

from loopact.errors import RobotError, SafetyError, StopCause, StopReason
from loopact.i18n import Phrase
from loopact.robot.clearance import ObstacleReading
from loopact.robot.estop import EstopLatch
from loopact.robot.estop_rules import EstopRules
from loopact.robot.head_rules import HeadRules, finite
from loopact.robot.interface import Pose, Robot, Twist
from loopact.robot.lease import MotionLease
from loopact.robot.obstacle_rules import BRAKE_DECEL_MPS2, HEAD_FORWARD_TOL_DEG, ObstacleRules
from loopact.robot.operator import DEADMAN_S, OperatorControl, TeleopRules
from loopact.robot.profile import HardwareProfile, SiteMap
from loopact.robot.resources import ResourceLeases

__all__ = ["BRAKE_DECEL_MPS2", "HEAD_FORWARD_TOL_DEG", "DecisionHook", "SafetyGovernor"]

logger = logging.getLogger(__name__)

DecisionHook = Callable[[dict[str, Any]], None]
"""Told ``{decision, reason, motion, detail, ...}``: ``decision`` is ``halt``, ``clamp``,
``refuse``, ``stop``, ``emergency_stop`` (with ``source``), ``estop_reset`` (``by``, ``via``),
``estop_reset_refused`` (``by``, ``via``, ``count``), ``takeover`` or ``handback`` (``who``);
``reason`` a stop reason, a clamped field or why a reset was refused."""


class SafetyGovernor(ResourceLeases, HeadRules, ObstacleRules, TeleopRules, EstopRules):
    """The only writer to the actuators (SPEC C5, X3). See the module docstring.

    Args:
        robot: The robot whose actuators it owns.
        profile: Limits, camera geometry, head limits, obstacle sensors.
        site: Site map whose geofence it enforces (None: no geofence).
        control_period_s: Period of the watchdog and obstacle monitor, robot-clock seconds.
        estop: The emergency-stop latch (default: one without a reset secret, so only the
            process's own operator releases it: :meth:`reset_emergency_stop`).
        deadman_s: The operator's deadman, robot-clock seconds.
    """

    def __init__(
        self,
        robot: Robot,
        profile: HardwareProfile,
        site: SiteMap | None = None,
        control_period_s: float = 0.05,
        estop: EstopLatch | None = None,
        deadman_s: float = DEADMAN_S,
    ) -> None:
        self.robot = robot
        self.clock = robot.clock
        self.profile = profile
        self.site = site
        self.period_s = control_period_s
        self._leases: dict[str, MotionLease] = {}  # base, head, arm: robot/resources.py
        self._base_forward = False
        self.carry_limit_mps: float | None = None  # the arm holds something (issue 43)
        self.estop = estop or EstopLatch()
        self.operator = OperatorControl(deadman_s)
        self._last_cmd_s = -math.inf
        self._last_twist = Twist()
        self._obstacle: ObstacleReading | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._monitor: asyncio.Task[None] | None = None
        self._stop_listeners: list[Callable[[str], None]] = []
        self.watchdog_trips = 0
        self.on_decision: DecisionHook | None = None

    def _decided(
        self, decision: str, reason: str, motion: str | None, detail: str, **extra: Any
    ) -> None:
        """Tell :attr:`on_decision`; a failing hook is logged, never raised into a motion."""
        said = {"decision": decision, "reason": reason, "motion": motion, "detail": detail}
        said.update(extra)
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
        return self.estop.latched

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

        A preemption (the agent's new instruction) never ends an operator's hold; a
        person's stop does (their next teleop command takes the base again).

        Args:
            reason: Why, in words, for the motions' ``detail``; a
                :class:`~loopact.errors.StopReason` (the agent's stop hooks) brings its cause.
            cause: Why, typed; default the :class:`~loopact.errors.StopReason`'s cause, else
                :attr:`StopCause.STOPPED` (a person's stop).
        """
        if cause is None:
            cause = reason.cause if isinstance(reason, StopReason) else StopCause.STOPPED
        operating = self._base is not None and self._base.owner == "operator"
        if operating and cause is StopCause.PREEMPTED:
            return  # the agent's own preemption: the operator keeps driving
        if (held := self._base or self._head) is not None:
            self._decided("stop", cause.stopped_by, held.name, str(reason))
        await self._release_operator("stopped")
        self._end_leases(cause, Phrase("stop.reason", reason=str(reason)))
        self._tell_stop(str(reason))
        await self._send(Twist())

    def add_stop_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(reason)`` on every stop and emergency stop, before the base is
        zeroed: what drives the robot without a lease (a Nav2 goal, issue 40) cancels at
        once. Returns the function that removes it."""
        self._stop_listeners.append(listener)

        def remove() -> None:
            if listener in self._stop_listeners:
                self._stop_listeners.remove(listener)

        return remove

    def _tell_stop(self, reason: str) -> None:
        for listener in list(self._stop_listeners):
            try:
                listener(reason)
            except Exception:  # a listener's bug must not keep the base moving
                logger.exception("stop listener failed")

    async def remote_halt(self, cause: StopCause, why: Phrase) -> None:
        """The base-side governor halted the agent's motion (its status, ROS 2): end this
        side's motion with the same cause at once (issue 41)."""
        lease = self._base
        if lease is not None and lease.active and lease.owner == "agent":
            await self._halt(lease, cause, why)

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
            MotionStopped: An operator holds the base (cause ``TAKEN_OVER``); an obstacle is
                already closer than ``obstacle_stop_m``, or the path ahead cannot be checked
                (forward motion only; cause ``OBSTACLE``).
            SafetyError: ``duration_s`` is not a positive finite number.
            RobotError: The robot failed to answer.
        """
        self._check_estop()
        self.operator.check("base")
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
        if self.estop.latched:
            why = Phrase("stop.reason", reason=self.estop.reason)
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

    async def _watchdog_loop(self) -> None:
        timeout = self.profile.limits.command_timeout_s
        period = min(self.period_s, timeout / 4)
        while True:
            await self.clock.sleep(period)
            now = self.clock.now()
            try:
                await self._deadman(now)
            except RobotError as exc:
                logger.error("deadman could not stop the base: %s", exc)
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
        """JSON-able state: emergency stop (and its latch: source, nonce, refused resets),
        owners, the operator's holds, last twist."""
        return {
            "emergency_stop": self.estop.latched,
            "estop": self.estop.state(),
            "base_owner": self._base.name if self._base else None,
            "head_owner": self._head.name if self._head else None,
            "owners": self._owners(),
            "operator": self.operator.status(),
            "last_twist": {
                "linear_mps": self._last_twist.linear_mps,
                "angular_radps": self._last_twist.angular_radps,
            },
        }

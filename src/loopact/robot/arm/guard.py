"""The arm under the governor: :class:`ArmGuard` (issue 43, SPEC C5, X3).

The only caller of the arm's controllers (:class:`~loopact.robot.arm.driver.ArmDriver`). Every
arm motion holds the ``arm`` lease of the safety governor
(:meth:`~loopact.robot.governor.SafetyGovernor.take`: one mechanism for the base, the head and
the arm), so the stop tool, preemption and the emergency stop end it as they end a drive; the
guard watches the lease every :data:`POLL_S` of robot time and cancels the trajectory at once
(the arm holds where it is). Every trajectory is checked by the arm's rules
(:class:`~loopact.robot.arm.rules.ArmRules`) before it is sent; every gripper command too. While
the gripper holds something the governor limits the base to ``arm.carry_max_linear_mps``, and
the guard watches the grasp: an object that slips out ends the motion ``slipped``.

What happens to a held object when an arm motion is stopped: the arm stops where it is and the
gripper keeps squeezing: the object stays held (nothing is dropped by a stop).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from loopact.errors import MotionStopped, RobotError, SafetyError, StopCause
from loopact.i18n import Phrase
from loopact.robot.arm.driver import ArmDriver, ArmReading, JointTrajectory
from loopact.robot.arm.rules import ArmRules, Held, Scene, Where
from loopact.robot.governor import SafetyGovernor
from loopact.robot.lease import MotionLease, cause_phrase
from loopact.robot.profile import ArmConfig

POLL_S = 0.01
"""Robot-clock seconds between two looks at the lease, the goal and the grasp."""
SLIP_GAP_M = 0.004
"""A held object is gone when the gap closes below this (the fingers met), metres."""
GOAL_SLACK_S = 10.0
"""A goal not done this long after its trajectory's end is abandoned, seconds: a backstop for a
controller that never answers (a late arm is the controller's to judge, by its goal time
tolerance; a simulator under load runs behind the wall clock)."""
FRESH_READING_S = 1.0
"""How long a reading waits for joint states measured after the last goal ended, seconds."""
STILL_RADPS = 0.02
"""The arm stands still when every joint is slower than this, rad/s."""
SETTLE_S = 1.0
"""How long a trajectory waits for the arm to stand still before it is checked, seconds."""


class ArmGuard:
    """The arm's part of the governor (see the module docstring).

    Args:
        driver: The arm's controllers.
        rules: The arm's rules.
        governor: The robot's safety governor (leases, emergency stop, carry limit).

    Attributes:
        held: What the gripper holds, or None.
        gap_m: The gap the gripper was last commanded to, metres.
    """

    def __init__(self, driver: ArmDriver, rules: ArmRules, governor: SafetyGovernor) -> None:
        self.driver = driver
        self.rules = rules
        self.cfg: ArmConfig = rules.cfg
        self.governor = governor
        self.held: Held | None = None
        self.gap_m = self.cfg.max_gap_m
        self._ended_s = -math.inf  # when the last goal ended (robot clock)

    # ---- state ------------------------------------------------------------------------------

    async def read(self) -> ArmReading:
        """The arm's joint states (positions in the profile's joint order), measured after the
        last goal ended: joint states that were on their way when a goal ended show the arm
        short of where it stopped (a plan from there would start from the wrong place).

        Raises:
            RobotError: No joint state, or none measured since the last goal ended within
                :data:`FRESH_READING_S`.
        """
        clock = self.governor.clock
        deadline = clock.now() + FRESH_READING_S
        reading = await self.driver.read()
        while reading.stamp_s < self._ended_s:
            if clock.now() > deadline:
                age = clock.now() - reading.stamp_s
                raise RobotError(f"the arm's joint states stopped: the newest is {age:.1f} s old")
            await clock.sleep(POLL_S)
            reading = await self.driver.read()
        names = list(self.driver.joint_names)
        order = [names.index(n) for n in self.cfg.joints]
        pos = tuple(reading.positions_rad[i] for i in order)
        vel = tuple(reading.velocities_radps[i] for i in order)
        return ArmReading(
            pos, vel, reading.gap_m, reading.grip_effort_n, reading.stamp_s, reading.touching
        )

    async def joints(self) -> npt.NDArray[np.float64]:
        """Where the arm's joints are, radians (profile order)."""
        return np.array((await self.read()).positions_rad, dtype=float)

    async def scene(self) -> Scene:
        """Where the robot is, for the rules in the site's frame."""
        pose = await self.governor.robot.get_pose()
        return Scene(
            Where(pose.x_m, pose.y_m, pose.yaw_rad),
            self.governor.site,
            self.governor.profile.footprint_radius_m,
        )

    def set_held(self, held: Held | None) -> None:
        """Record what the gripper holds; the base's carry limit follows it."""
        self.held = held
        self.governor.carry_limit_mps = None if held is None else self.cfg.carry_max_linear_mps

    # ---- motions ----------------------------------------------------------------------------

    def take(self, name: str, duration_s: float) -> MotionLease:
        """The arm's lease for one tool.

        Raises:
            EmergencyStopError: The emergency stop is latched.
        """
        return self.governor.take("arm", name, duration_s)

    def release(self, lease: MotionLease) -> None:
        """Give the arm back (the tool finished)."""
        self.governor.give_back("arm", lease)

    async def follow(
        self, lease: MotionLease, traj: JointTrajectory, watch: str | None = None
    ) -> None:
        """Check and run one trajectory under ``lease``; returns when it is done.

        Args:
            lease: The arm's lease.
            traj: The trajectory (from where the arm is now).
            watch: The held object's name to watch for a slip, or None.

        Raises:
            SafetyError: A rule refuses it (nothing moved).
            MotionStopped: The lease ended (stop, preemption, emergency stop: the arm was
                halted), or the object slipped (``SLIPPED``).
            RobotError: The controller refused or failed.
        """
        lease.check()
        start = await self._settled()
        problem = self.rules.check_trajectory(
            traj, start, self.gap_m, self.held, await self.scene()
        )
        if problem is not None:
            self.governor._decided("refuse", "arm", lease.name, problem.text())
            raise SafetyError(problem)
        goal = await self.driver.follow(traj)
        clock = self.governor.clock
        give_up = clock.now() + traj.duration_s + GOAL_SLACK_S
        try:
            while True:
                if not lease.active:
                    raise MotionStopped(
                        lease.why or cause_phrase(lease.cause or StopCause.STOPPED),
                        lease.cause or StopCause.STOPPED,
                    )
                out = await self.driver.outcome(goal)
                if out.done:
                    self._ended_s = clock.now()
                    if not out.ok:
                        raise RobotError(out.text or f"arm goal ended with code {out.code}")
                    return
                if watch is not None:
                    await self._check_grasp(watch)
                if clock.now() > give_up:
                    raise RobotError("the arm did not finish its trajectory in time")
                await clock.sleep(POLL_S)
        except BaseException:
            await self.driver.cancel()  # the arm holds where it is, now
            raise

    async def _settled(self) -> npt.NDArray[np.float64]:
        """Where the arm is once it stands still (at most :data:`SETTLE_S` later), radians.

        A goal succeeds within the controller's goal tolerance while the arm may still be
        closing in: a trajectory checked from there (its first point a few hundredths of a
        second away) would start faster than the plan. Chained stages start from rest.
        """
        clock = self.governor.clock
        deadline = clock.now() + SETTLE_S
        reading = await self.read()
        while max(map(abs, reading.velocities_radps), default=0.0) >= STILL_RADPS:
            if clock.now() > deadline:
                break
            await clock.sleep(POLL_S)
            reading = await self.read()
        return np.array(reading.positions_rad, dtype=float)

    async def _check_grasp(self, name: str) -> None:
        reading = await self.driver.read()
        lost = reading.gap_m < SLIP_GAP_M
        if reading.touching is not None and name not in reading.touching:
            lost = True
        if lost:
            self.set_held(None)
            raise MotionStopped(
                Phrase("arm.slip_detail", name=name.replace("_", " "), gap_m=reading.gap_m),
                StopCause.SLIPPED,
            )

    async def grip(self, lease: MotionLease, gap_m: float, force_n: float) -> ArmReading:
        """Check and run one gripper command; returns the joint states when it ended.

        Raises:
            SafetyError: Outside the gripper's range or above the force limit.
            MotionStopped: The lease ended (the gripper holds where it is).
            RobotError: The controller refused or failed.
        """
        lease.check()
        problem = self.rules.check_grip(gap_m, force_n)
        if problem is not None:
            raise SafetyError(problem)
        goal = await self.driver.grip(gap_m, force_n)
        self.gap_m = gap_m
        clock = self.governor.clock
        give_up = clock.now() + 3.0
        while True:
            if not lease.active:
                raise MotionStopped(
                    lease.why or cause_phrase(lease.cause or StopCause.STOPPED),
                    lease.cause or StopCause.STOPPED,
                )
            out = await self.driver.outcome(goal)
            if out.done or clock.now() > give_up:
                self._ended_s = clock.now()
                reading = await self.read()
                self.gap_m = reading.gap_m if gap_m < reading.gap_m else gap_m
                return reading
            await clock.sleep(POLL_S)


def finite_target(name: str, value: float) -> float:
    """``value`` when finite, else a :class:`SafetyError` naming it."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SafetyError(Phrase("governor.not_finite", name=name, value=repr(value)))
    return float(value)

"""The safety governor's rules for the pan-tilt head (SPEC D4, X3).

:class:`HeadRules` is the head half of :class:`~loopact.robot.governor.SafetyGovernor`: limits
checked before every command, one owner of the head at a time, no head motion while the
emergency stop is latched. It holds no state of its own; the governor owns the leases.
"""

from __future__ import annotations

import math

from loopact.errors import EmergencyStopError, SafetyError, StopCause
from loopact.i18n import Phrase
from loopact.robot.estop import EstopLatch
from loopact.robot.interface import Clock, Robot
from loopact.robot.lease import MotionLease
from loopact.robot.profile import HardwareProfile


def finite(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SafetyError(Phrase("governor.not_finite", name=name, value=repr(value)))
    return float(value)


class HeadRules:
    """The head's commands under the governor's rules (mixed into the governor).

    Attributes it reads are the governor's (set in its ``__init__``).
    """

    robot: Robot
    clock: Clock
    profile: HardwareProfile
    period_s: float
    _head: MotionLease | None
    estop: EstopLatch

    def estop_check(self) -> None:
        """Raise if the emergency stop is latched (the governor's rule).

        Raises:
            EmergencyStopError: The emergency stop is latched.
        """
        self._check_estop()

    def _check_estop(self) -> None:
        """Raise if the emergency stop is latched (the governor's rule).

        Raises:
            EmergencyStopError: The emergency stop is latched.
        """
        if self.estop.latched:
            raise EmergencyStopError(Phrase("governor.estop_latched", reason=self.estop.reason))

    def check_head(self, pan_deg: float, tilt_deg: float) -> None:
        """Validate a head target against the profile (SPEC D4).

        Raises:
            SafetyError: No head, a non-finite value or a value past the joint limits.
        """
        head = self.profile.head
        if not (head.present and self.robot.has_head):
            raise SafetyError(Phrase("governor.no_head"))
        pan_deg = finite("pan_deg", pan_deg)
        tilt_deg = finite("tilt_deg", tilt_deg)
        lo, hi = head.pan_limits_deg
        if not lo <= pan_deg <= hi:
            raise SafetyError(
                Phrase("governor.pan_limits", pan_deg=pan_deg, low_deg=lo, high_deg=hi)
            )
        lo, hi = head.tilt_limits_deg
        if not lo <= tilt_deg <= hi:
            raise SafetyError(
                Phrase("governor.tilt_limits", tilt_deg=tilt_deg, low_deg=lo, high_deg=hi)
            )

    async def begin_head(self, name: str, duration_s: float = 10.0) -> MotionLease:
        """Take the head, ending any other head motion.

        Raises:
            EmergencyStopError: The emergency stop is latched.
        """
        self._check_estop()
        if self._head is not None:
            self._head.stop(StopCause.REPLACED, Phrase("stop.replaced", name=name))
        now = self.clock.now()
        self._head = MotionLease(name, now, now + duration_s)
        return self._head

    async def set_head(self, lease: MotionLease, pan_deg: float, tilt_deg: float) -> bool:
        """Command the head for ``lease`` after checking the limits.

        Returns:
            False (nothing sent) when the lease no longer owns the head.

        Raises:
            SafetyError: See :meth:`check_head`.
            EmergencyStopError: The emergency stop is latched.
        """
        self.check_head(pan_deg, tilt_deg)
        if self.estop.latched:
            lease.stop(StopCause.EMERGENCY_STOP, Phrase("stop.reason", reason=self.estop.reason))
        if not lease.active or self._head is not lease:
            return False
        await self.robot.set_head(math.radians(pan_deg), math.radians(tilt_deg))
        return True

    def end_head(self, lease: MotionLease) -> None:
        """Release the head."""
        lease.stop(StopCause.TARGET, Phrase("stop.finished"))
        if self._head is lease:
            self._head = None

    async def _wait_head(self, pan_rad: float, tilt_rad: float, timeout_s: float) -> bool:
        end = self.clock.now() + timeout_s
        while self.clock.now() < end:
            head = await self.robot.get_head()
            if abs(head.pan_rad - pan_rad) < math.radians(2) and abs(
                head.tilt_rad - tilt_rad
            ) < math.radians(2):
                return True
            await self.clock.sleep(self.period_s)
        return False

    async def wait_head(
        self, lease: MotionLease, pan_deg: float, tilt_deg: float, timeout_s: float = 3.0
    ) -> bool:
        """Wait (robot clock) until the head is within 2 degrees of the target.

        Returns:
            True if it got there before ``timeout_s`` and while ``lease`` was active.
        """
        end = self.clock.now() + timeout_s
        while self.clock.now() < end and lease.active:
            head = await self.robot.get_head()
            if (
                abs(math.degrees(head.pan_rad) - pan_deg) < 2.0
                and abs(math.degrees(head.tilt_rad) - tilt_deg) < 2.0
            ):
                return True
            await self.clock.sleep(self.period_s)
        return False

"""One lease per resource, the agent's or an operator's (SPEC C5, X3; issues 41, 43).

The governor keeps one table, resource -> :class:`~loopact.robot.lease.MotionLease`: the
``base``, the ``head`` and any other actuator a profile has (``arm``). A lease belongs to the
agent (``owner="agent"``: a tool's motion) or to an operator (``owner="operator"``: teleop
commands, whose hold :class:`~loopact.robot.operator.OperatorControl` keeps behind the deadman).
One mechanism for all of them:

- :meth:`ResourceLeases.take` gives a resource to one motion, ending the one that held it
  (``REPLACED``); refused while the emergency stop is latched, and refused ``TAKEN_OVER``
  while an operator holds the resource;
- :meth:`ResourceLeases.take_over` gives a resource other than the base to an operator
  (the base's teleop is :meth:`~loopact.robot.operator.TeleopRules.teleop`, which lands in the
  same table): the agent's motion on it ends ``TAKEN_OVER``;
- :meth:`ResourceLeases.give_back` ends a lease that reached its target;
- a stop and the emergency stop end every lease in the table and release every operator hold.

The resource's own rules (robot/arm/ for the arm) watch their lease and stop their actuator
the moment it ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from loopact.errors import StopCause
from loopact.i18n import Phrase
from loopact.robot.interface import Clock
from loopact.robot.lease import MotionLease
from loopact.robot.operator import OperatorControl, OperatorHold
from loopact.robot.profile import HardwareProfile

logger = logging.getLogger(__name__)


class ResourceLeases:
    """The table of leases (mixed into the governor; its attributes are the governor's)."""

    clock: Clock
    profile: HardwareProfile
    operator: OperatorControl
    _leases: dict[str, MotionLease]
    _check_estop: Callable[[], None]
    _decided: Callable[..., None]
    hand_back: Callable[..., Any]

    @property
    def _base(self) -> MotionLease | None:
        return self._leases.get("base")

    @_base.setter
    def _base(self, lease: MotionLease | None) -> None:
        self._put("base", lease)

    @property
    def _head(self) -> MotionLease | None:
        return self._leases.get("head")

    @_head.setter
    def _head(self, lease: MotionLease | None) -> None:
        self._put("head", lease)

    def _put(self, resource: str, lease: MotionLease | None) -> None:
        if lease is None:
            self._leases.pop(resource, None)
        else:
            self._leases[resource] = lease

    def lease_of(self, resource: str) -> MotionLease | None:
        """The lease holding ``resource`` (``base``, ``head``, ``arm``), or None."""
        return self._leases.get(resource)

    def take(
        self, resource: str, name: str, duration_s: float, owner: str = "agent"
    ) -> MotionLease:
        """Give ``resource`` (``arm``) to one motion, ending the one holding it (X3).

        Args:
            resource: The resource's name.
            name: Who takes it (the tool name).
            duration_s: How long at most, robot-clock seconds (capped by the profile's
                ``limits.max_motion_duration_s``).
            owner: ``agent`` or ``operator``.

        Raises:
            EmergencyStopError: The emergency stop is latched.
            MotionStopped: Cause ``TAKEN_OVER``: the agent asked while an operator holds it.
        """
        self._check_estop()
        if owner == "agent":
            self.operator.check(resource)
        held = self._leases.pop(resource, None)
        if held is not None:
            cause = StopCause.TAKEN_OVER if owner == "operator" else StopCause.REPLACED
            why = (
                Phrase("stop.taken_over", who=name)
                if owner == "operator"
                else Phrase("stop.replaced", name=name)
            )
            held.stop(cause, why)
        now = self.clock.now()
        limit = self.profile.limits.max_motion_duration_s
        lease = MotionLease(name, now, now + min(duration_s, limit), owner=owner)
        self._leases[resource] = lease
        return lease

    def give_back(self, resource: str, lease: MotionLease) -> None:
        """End ``lease`` of ``resource`` (it reached its target); safe to call twice."""
        lease.stop(StopCause.TARGET, Phrase("stop.finished"))
        if self._leases.get(resource) is lease:
            del self._leases[resource]

    def take_over(self, resource: str, who: str, source: str) -> OperatorHold:
        """An operator's command on ``resource`` (not the base: see ``teleop``): take it, or
        renew the hold, behind the deadman; the agent's motion on it ends ``TAKEN_OVER``.

        Args:
            resource: ``head``, ``arm``.
            who: Who operates, for the record.
            source: The channel.

        Returns:
            The operator's hold (its lease is the resource's lease now).

        Raises:
            EmergencyStopError: The emergency stop is latched.
        """
        now = self.clock.now()
        hold = self.operator.holder(resource)
        if hold is not None and hold.lease is not None and hold.lease.active:
            self._check_estop()
            self.operator.hold(resource, who, source, hold.lease, now)
            hold.lease.deadline_s = now + self.profile.limits.max_motion_duration_s
            return hold
        agent = self._leases.get(resource)
        motion = agent.name if agent is not None and agent.active else None
        lease = self.take(resource, who, self.profile.limits.max_motion_duration_s, "operator")
        hold, _ = self.operator.hold(resource, who, source, lease, now)
        self._decided("takeover", "taken_over", motion, f"{who} via {source}", who=who)
        logger.warning("the operator %s took the %s over (%s)", who, resource, source)
        self.operator.tell(hold, "takeover")
        return hold

    def _end_leases(self, cause: StopCause, why: Phrase) -> None:
        for lease in list(self._leases.values()):
            lease.stop(cause, why)
        self._leases.clear()

    async def _release_operator(self, why: str) -> None:
        for resource in list(self.operator.status()):
            if (hold := self.operator.holder(resource)) is not None and hold.lease is not None:
                await self.hand_back(resource, why)

    def _owners(self) -> dict[str, str]:
        return {resource: lease.name for resource, lease in self._leases.items()}

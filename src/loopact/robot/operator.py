"""The operator's lease: teleop takeover behind a deadman, and the hand-back (SPEC X3; issue 41).

An operator takes a resource (the base; the head and an arm plug in the same way) by
commanding it: the console's drive pad, a joystick node's ``cmd_vel`` on the governor's teleop
input, an MQTT teleop topic. :class:`OperatorControl` keeps one :class:`OperatorHold` per
resource:

- the first teleop command **takes over**: the agent's motion on that resource ends at once
  with :attr:`~loopact.errors.StopCause.TAKEN_OVER` ("taken over by the operator"), and while
  the operator holds it every motion the agent asks for is refused at once with that cause;
- every command renews the hold; when the commands stop for :data:`DEADMAN_S` (0.5 s, the
  **deadman**) the resource is zeroed and **handed back**;
- the governor's limits still apply to the operator (clamping, the obstacle stop, the
  geofence, the emergency stop).

Each takeover and hand-back is a governor decision (``takeover``, ``handback``) and is told to
:attr:`OperatorControl.listeners` (the agent is told that the operator let go: an input event;
in task mode the task ends "taken over by the operator").

:class:`TeleopRules` is the base's half of it in :class:`~loopact.robot.governor.SafetyGovernor`.
Another resource (the head, an arm) is taken with the governor's
:meth:`~loopact.robot.resources.ResourceLeases.take_over`: its lease goes in the same table of
one lease per resource (:mod:`loopact.robot.resources`), the agent is refused by
:meth:`OperatorControl.check`, and the watchdog's deadman hands it back like the base.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopact.errors import MotionStopped, StopCause
from loopact.i18n import Phrase
from loopact.robot.clearance import ObstacleReading
from loopact.robot.estop import EstopLatch
from loopact.robot.interface import Clock, Twist
from loopact.robot.lease import MotionLease
from loopact.robot.profile import HardwareProfile, SiteMap

logger = logging.getLogger(__name__)

DEADMAN_S = 0.5
"""An operator's hold ends when its commands stop for this long, robot-clock seconds."""


@dataclass
class OperatorHold:
    """An operator holding one resource.

    Attributes:
        resource: ``base`` (or ``head``, ``arm``).
        who: Who drives (a node, a console user), for the record.
        source: The channel (``ros2 teleop``, ``web``, ``mqtt``).
        lease: The operator's lease, or None when the hold mirrors one the base-side governor
            keeps (the agent's side of a robot over ROS 2).
        since_s: When it was taken, robot clock.
        last_s: The last command, robot clock.
        commands: Commands received.
    """

    resource: str
    who: str
    source: str
    lease: MotionLease | None
    since_s: float
    last_s: float
    commands: int = 0


Listener = Callable[[OperatorHold, str], None]
"""Told ``(hold, "takeover" | "handback")``."""


class OperatorControl:
    """One operator hold per resource (see the module docstring).

    Args:
        deadman_s: Seconds without a command after which a hold is handed back.
    """

    def __init__(self, deadman_s: float = DEADMAN_S) -> None:
        self.deadman_s = deadman_s
        self.listeners: list[Listener] = []
        self.takeovers = 0
        self.deadman_releases = 0
        self._holds: dict[str, OperatorHold] = {}

    def holder(self, resource: str) -> OperatorHold | None:
        """The operator's hold on ``resource``, or None."""
        return self._holds.get(resource)

    def check(self, resource: str) -> None:
        """Refuse the agent while an operator holds ``resource``.

        Raises:
            MotionStopped: Cause ``TAKEN_OVER``.
        """
        hold = self._holds.get(resource)
        if hold is not None:
            raise MotionStopped(
                Phrase(
                    "governor.operator_holds", resource=Phrase(f"resource.{resource}"), who=hold.who
                ),
                StopCause.TAKEN_OVER,
            )

    def hold(
        self, resource: str, who: str, source: str, lease: MotionLease | None, now_s: float
    ) -> tuple[OperatorHold, bool]:
        """Take or renew the hold on ``resource``; returns it and whether it is new."""
        hold = self._holds.get(resource)
        if hold is not None and (hold.lease is None or hold.lease.active):
            hold.last_s = now_s
            hold.commands += 1
            return hold, False
        hold = OperatorHold(resource, who, source, lease, now_s, now_s, 1)
        self._holds[resource] = hold
        self.takeovers += 1
        return hold, True

    def release(self, resource: str) -> OperatorHold | None:
        """End the hold on ``resource`` (the caller zeroes the resource and tells)."""
        return self._holds.pop(resource, None)

    def expired(self, now_s: float) -> list[OperatorHold]:
        """Holds of this governor whose commands stopped for :attr:`deadman_s`."""
        return [
            h
            for h in self._holds.values()
            if h.lease is not None and now_s - h.last_s > self.deadman_s
        ]

    def tell(self, hold: OperatorHold, event: str) -> None:
        """Tell every listener; a failing one is logged, never raised into a motion."""
        for listener in list(self.listeners):
            try:
                listener(hold, event)
            except Exception:
                logger.exception("operator %s listener failed", event)

    def status(self) -> dict[str, Any]:
        """``{resource: {who, source, commands}}`` of the holds."""
        return {
            r: {"who": h.who, "source": h.source, "commands": h.commands}
            for r, h in self._holds.items()
        }


class TeleopRules:
    """The base under an operator's teleop commands (mixed into the governor).

    Attributes it reads are the governor's (set in its ``__init__``).
    """

    clock: Clock
    profile: HardwareProfile
    site: SiteMap | None
    operator: OperatorControl
    estop: EstopLatch
    _base: MotionLease | None
    _leases: dict[str, MotionLease]
    _base_forward: bool
    _obstacle: ObstacleReading | None
    _last_cmd_s: float
    _decided: Callable[..., None]
    _check_estop: Callable[[], None]
    clamp_twist: Callable[[Twist], tuple[Twist, dict[str, dict[str, float]]]]
    _send: Callable[[Twist], Any]
    _leaves_fence: Callable[..., bool]
    _obstacle_speed: Callable[..., Any]
    _start_monitor: Callable[[], None]
    robot: Any

    async def teleop(self, twist: Twist, who: str = "operator", source: str = "teleop") -> Twist:
        """One operator velocity command: takes the base over (the agent's motion ends
        ``TAKEN_OVER``) and holds it behind the deadman; clamped, and the forward speed
        limited (not ended) for obstacles and the geofence.

        Args:
            twist: The command (m/s, rad/s).
            who: Who drives, for the record.
            source: The channel.

        Returns:
            The twist sent.

        Raises:
            EmergencyStopError: The emergency stop is latched.
            SafetyError: A non-finite component.
        """
        self._check_estop()
        cmd, _clamped = self.clamp_twist(twist)
        now = self.clock.now()
        hold = self.operator.holder("base")
        if hold is None or hold.lease is None or not hold.lease.active:
            hold = self._take_base(who, source, now)
        else:
            self.operator.hold("base", who, source, hold.lease, now)
        assert hold.lease is not None
        hold.lease.deadline_s = now + self.profile.limits.max_motion_duration_s
        self._last_cmd_s = now
        fenced = self.site is not None and self.site.geofence and cmd.linear_mps != 0.0
        if fenced and self._leaves_fence(await self.robot.get_pose(), cmd):
            cmd = Twist(0.0, cmd.angular_radps, cmd.lateral_mps)
        if cmd.linear_mps > 0:
            safe, halt = await self._obstacle_speed(cmd)
            cmd = Twist(0.0, cmd.angular_radps, cmd.lateral_mps) if halt is not None else safe
        await self._send(cmd)
        return cmd

    def _take_base(self, who: str, source: str, now: float) -> OperatorHold:
        agent = self._base
        lease = MotionLease(
            "operator", now, now + self.profile.limits.max_motion_duration_s, owner="operator"
        )
        motion = None
        if agent is not None and agent.active:
            motion = agent.name
            agent.stop(StopCause.TAKEN_OVER, Phrase("stop.taken_over", who=who))
        self._base = lease
        self._base_forward = True
        self._obstacle = None
        hold, _ = self.operator.hold("base", who, source, lease, now)
        self._start_monitor()
        self._decided("takeover", "taken_over", motion, f"{who} via {source}", who=who)
        logger.warning("the operator %s took the base over (%s)", who, source)
        self.operator.tell(hold, "takeover")
        return hold

    async def hand_back(self, resource: str = "base", why: str = "released") -> bool:
        """End the operator's hold on ``resource``: zero it, tell the listeners.

        Args:
            resource: The resource.
            why: ``deadman`` (the commands stopped), ``released``, ``stopped``,
                ``emergency_stop``.

        Returns:
            True when an operator held it.
        """
        hold = self.operator.release(resource)
        if hold is None:
            return False
        if hold.lease is not None:
            hold.lease.stop(StopCause.TARGET, Phrase("stop.operator_released", why=why))
            if self._leases.get(resource) is hold.lease:
                del self._leases[resource]
                if resource == "base":
                    await self._send(Twist())
        if why == "deadman":
            self.operator.deadman_releases += 1
        held_s = max(0.0, hold.last_s - hold.since_s)
        self._decided("handback", why, "operator", f"{hold.who} after {held_s:.1f} s", who=hold.who)
        logger.warning("the operator %s handed the %s back (%s)", hold.who, resource, why)
        self.operator.tell(hold, "handback")
        return True

    async def _deadman(self, now: float) -> None:
        """The watchdog's check: hand back every hold whose commands stopped."""
        for hold in self.operator.expired(now):
            await self.hand_back(hold.resource, "deadman")

    # ---- the agent's side over ROS 2: the base-side governor holds the real lease ----------

    def mirror_takeover(self, who: str, source: str) -> None:
        """The base-side governor says an operator took the base: end the agent's motion
        (``TAKEN_OVER``) and refuse motion until :meth:`mirror_handback`."""
        if self.operator.holder("base") is not None:
            return
        now = self.clock.now()
        agent = self._base
        motion = None
        if agent is not None and agent.active:
            motion = agent.name
            agent.stop(StopCause.TAKEN_OVER, Phrase("stop.taken_over", who=who))
            self._base = None
        hold, _ = self.operator.hold("base", who, source, None, now)
        self._decided("takeover", "taken_over", motion, f"{who} via {source}", who=who)
        self.operator.tell(hold, "takeover")

    def mirror_handback(self, why: str = "released") -> None:
        """The base-side governor handed the base back."""
        hold = self.operator.release("base")
        if hold is None:
            return
        self._decided("handback", why, "operator", f"{hold.who}", who=hold.who)
        self.operator.tell(hold, "handback")

"""The operator's panel of a robot: the emergency stop and teleop, for every channel (issue 41).

Every channel that offers the emergency stop or the drive pad (the terminal's ``/estop``, the
web console's API, a spoken "emergency stop", MQTT topics, ``loopact mcp``'s prompts) talks to
one :class:`OperatorPanel`, whichever governor holds the real latch:

- :class:`LocalPanel`: the governor runs in this process (the simulator, a robot driven
  in-process): the panel is its latch and its teleop input;
- :class:`BasePanel`: the robot is behind the base-side governor over ROS 2 (``--robot
  ros2``): a stop is published on ``/<agent>/base/emergency_stop`` (and latched here too if
  the base does not confirm within :data:`CONFIRM_S`), a reset carries the operator's proof to
  the base and waits for its answer, teleop goes to ``/<agent>/base/teleop_cmd_vel``; the
  state is the base's own (its nonce is the one to prove against).

A panel never releases the latch without a proof of the operator's secret; the agent and its
tools have no path to it (a model cannot call a panel).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol, runtime_checkable

from loopact.robot.base_mirror import BaseMirror
from loopact.robot.estop import ResetResult
from loopact.robot.governor import SafetyGovernor
from loopact.robot.interface import Twist

logger = logging.getLogger(__name__)

CONFIRM_S = 1.0
"""How long a stop waits for the base governor to confirm the latch, seconds."""

RESET_ANSWER_S = 3.0
"""How long a reset waits for the base governor's answer, seconds."""


@runtime_checkable
class OperatorPanel(Protocol):
    """The emergency stop and teleop of one robot (see the module docstring)."""

    async def latch(self, source: str, reason: str = "") -> dict[str, Any]:
        """Latch the emergency stop (anyone); returns the state afterwards."""
        ...

    async def reset(
        self, nonce: str | None, proof: str | None, by: str, via: str, token: str | None = None
    ) -> ResetResult:
        """Release it with the operator's proof; a refusal says why (a ``token``, a secret
        sent in clear, is always refused)."""
        ...

    def state(self) -> dict[str, Any]:
        """``latched``, ``reason``, ``source``, ``since``, ``nonce``, ``reset_needs``,
        ``resets_refused``, ``last_reset``, ``last_reset_refused``, ``operator`` (the holds)."""
        ...

    async def teleop(self, twist: Twist, who: str, source: str) -> Twist:
        """One operator velocity command (takes the base over; 0.5 s deadman)."""
        ...


class LocalPanel:
    """The panel of an in-process governor.

    Args:
        governor: The governor.
    """

    def __init__(self, governor: SafetyGovernor) -> None:
        self.governor = governor

    async def latch(self, source: str, reason: str = "") -> dict[str, Any]:
        """Latch the governor's emergency stop."""
        await self.governor.emergency_stop(reason or f"emergency stop from {source}", source)
        return self.state()

    async def reset(
        self, nonce: str | None, proof: str | None, by: str, via: str, token: str | None = None
    ) -> ResetResult:
        """:meth:`SafetyGovernor.reset_with_proof`."""
        return self.governor.reset_with_proof(nonce, proof, by, via, token)

    def state(self) -> dict[str, Any]:
        """The latch's state and the operator's holds."""
        return {**self.governor.estop.state(), "operator": self.governor.operator.status()}

    async def teleop(self, twist: Twist, who: str, source: str) -> Twist:
        """:meth:`SafetyGovernor.teleop`."""
        return await self.governor.teleop(twist, who=who, source=source)


class BasePanel:
    """The panel of a robot behind the base-side governor (ROS 2).

    Args:
        governor: The agent-side governor (its latch mirrors the base's).
        mirror: What the base's statuses say (:class:`BaseMirror`).
        publish_estop: Publishes one text on the base's emergency-stop topic.
        publish_teleop: Publishes one twist on the base's teleop topic.
    """

    def __init__(
        self,
        governor: SafetyGovernor,
        mirror: BaseMirror,
        publish_estop: Any,
        publish_teleop: Any,
    ) -> None:
        self.governor = governor
        self.mirror = mirror
        self._publish_estop = publish_estop
        self._publish_teleop = publish_teleop

    async def latch(self, source: str, reason: str = "") -> dict[str, Any]:
        """Publish a stop; latch here too when the base does not confirm in time."""
        message = {"command": "stop", "by": source[:64], "reason": reason or f"from {source}"}
        self._publish_estop(json.dumps(message))
        confirmed = await self.mirror.wait(lambda s: bool(s.get("emergency_stop")), CONFIRM_S)
        if confirmed is None:
            logger.warning(
                "the base governor did not confirm the emergency stop within %.1f s: "
                "latched on the agent's side",
                CONFIRM_S,
            )
            await self.governor.emergency_stop(reason or f"emergency stop from {source}", source)
        return self.state()

    async def reset(
        self, nonce: str | None, proof: str | None, by: str, via: str, token: str | None = None
    ) -> ResetResult:
        """Send the proof to the base governor and return its answer (a secret sent in clear
        is refused here and never passed on)."""
        if token:
            return ResetResult(False, "token sent in clear", str(self.state()["nonce"]))
        before = self.mirror.seq
        message = {"command": "reset", "nonce": nonce, "proof": proof, "by": by[:64]}
        self._publish_estop(json.dumps(message))
        answer = await self.mirror.wait(
            lambda s: s.get("event") in ("estop_reset", "estop_reset_refused"),
            RESET_ANSWER_S,
            after=before,
        )
        state = self.state()
        if answer is None:
            return ResetResult(False, "the base governor did not answer", str(state["nonce"]))
        if answer.get("event") == "estop_reset":
            if self.governor.estop.latched:
                await self.governor.mirror_estop(False, by, "")
            return ResetResult(True, "released", str(state["nonce"]))
        refused = answer.get("last_reset_refused") or {}
        return ResetResult(False, str(refused.get("reason", "refused")), str(state["nonce"]))

    def state(self) -> dict[str, Any]:
        """The base's latch (its nonce) and operator holds; this side's until it reported."""
        status = self.mirror.status
        if status is None or not isinstance(status.get("estop"), dict):
            return {**self.governor.estop.state(), "operator": self.governor.operator.status()}
        return {**status["estop"], "operator": status.get("operator") or {}}

    async def teleop(self, twist: Twist, who: str, source: str) -> Twist:
        """Publish on the base's teleop input (the base governor decides).

        Raises:
            EmergencyStopError: The emergency stop is latched.
            SafetyError: A non-finite component.
        """
        self.governor.estop_check()
        checked, _ = self.governor.clamp_twist(twist)  # refuses NaN and inf here already
        self._publish_teleop(checked)
        return twist

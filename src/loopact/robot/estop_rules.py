"""The safety governor's emergency stop: latched by anyone, released by an operator (SPEC X3;
issue 41).

:class:`EstopRules` is the e-stop half of :class:`~loopact.robot.governor.SafetyGovernor`: it
latches its :class:`~loopact.robot.estop.EstopLatch` from any source (ending every motion and
an operator's hold, zeroing the base), releases it on a proof of the operator's secret
(:meth:`EstopRules.reset_with_proof`) or on the operator's own trusted channel
(:meth:`EstopRules.reset_emergency_stop`), acts on a message of any channel
(:meth:`EstopRules.handle_estop_request`: garbage latches), and mirrors a base-side
governor's latch on the agent's side (:meth:`EstopRules.mirror_estop`). Every latch, release
and refused reset is logged (texts from a message quoted and escaped) and told as a governor
decision with its source.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from loopact.errors import StopCause
from loopact.i18n import Phrase
from loopact.robot.estop import EstopLatch, EstopRequest, ResetResult
from loopact.robot.interface import Twist
from loopact.robot.logtext import log_text

logger = logging.getLogger(__name__)


class EstopRules:
    """The emergency stop under the governor's rules (mixed into the governor).

    Attributes it reads are the governor's (set in its ``__init__``).
    """

    estop: EstopLatch
    _decided: Callable[..., None]
    _release_operator: Callable[[str], Any]
    _end_leases: Callable[[StopCause, Phrase], None]
    _tell_stop: Callable[[str], None]
    _send: Callable[[Twist], Any]

    async def emergency_stop(self, reason: str = "emergency stop", source: str = "api") -> None:
        """Latch the emergency stop: zero the base, refuse all motion until an operator's
        reset (X3; issue 41). Anyone may call it; an operator's hold ends too.

        Args:
            reason: Why, in words.
            source: Who, for the record and the ``governor`` event (``terminal``, ``web``,
                ``voice``, ``ros2 /node``, ``mqtt fleet``, ``mcp``, ...).
        """
        first = self.estop.latch(source, reason)
        await self._release_operator("emergency_stop")
        self._end_leases(StopCause.EMERGENCY_STOP, Phrase("stop.reason", reason=reason))
        self._tell_stop(reason)  # a Nav2 goal is cancelled before the base is zeroed (issue 40)
        await self._send(Twist())
        if first:
            logger.warning("emergency stop latched by %s: %s", log_text(source), log_text(reason))
        self._decided("emergency_stop", "emergency_stop", None, reason, source=source)

    def reset_with_proof(
        self, nonce: str | None, proof: str | None, by: str, via: str, token: str | None = None
    ) -> ResetResult:
        """Release the latched emergency stop if ``proof`` proves the operator's secret for
        the current nonce (:meth:`EstopLatch.reset`); a refusal is counted, logged and told.

        Args:
            nonce: The nonce the proof was computed for.
            proof: ``HMAC-SHA256(secret, nonce)``, hex.
            by: Who asks (from the message: logged quoted and escaped).
            via: The channel.
            token: A secret sent in clear: refused, and logged as exposed.
        """
        result = self.estop.reset(nonce, proof, by, via, token)
        if token:
            logger.warning(
                "the emergency-stop reset secret was sent in clear via %s: anyone who read it "
                "there can use it; change it (robot.estop.reset_token) and send proofs "
                "(docs/security.md)",
                via,
            )
        if result.released:
            self._released(by, via, proof=True)
        else:
            count = self.estop.resets_refused
            logger.warning(
                "emergency stop reset refused (%s) from %s via %s (%d refused so far)",
                result.reason,
                log_text(by),
                via,
                count,
            )
            self._decided(
                "estop_reset_refused",
                result.reason,
                None,
                f"{log_text(by)} via {via}",
                by=by[:64],
                via=via,
                count=count,
            )
        return result

    async def handle_estop_request(
        self, request: EstopRequest, source: str, via: str, trusted: bool = False
    ) -> ResetResult | None:
        """Act on one emergency-stop message from any channel (issue 41): a stop latches
        (garbage too); a reset needs a proof, unless ``trusted`` (the operator's own channel).

        Args:
            request: The parsed message (:func:`~loopact.robot.estop.parse_estop_message`).
            source: Who sent it, for the record (``ros2 /fleet_manager``).
            via: The channel (a topic).
            trusted: The operator's own channel: a reset needs no proof.

        Returns:
            The reset's result, or None for a stop.
        """
        by = request.by or source
        if request.command != "reset":
            await self.emergency_stop(request.reason or f"emergency stop from {source}", source)
            return None
        if trusted:
            self.reset_emergency_stop(by=by, via=via)
            return ResetResult(True, "released", self.estop.nonce)
        return self.reset_with_proof(request.nonce, request.proof, by, via, request.token)

    def reset_emergency_stop(self, by: str = "unknown", via: str = "operator") -> None:
        """Release the latched emergency stop without a proof: for the operator's own trusted
        channel only (the Python API of the process that owns the governor, an operator topic
        restricted with SROS2) — never for a message anyone could send.

        Args:
            by: Who released it, for the log (issue 21); it may come from a message, so the
                log shows it quoted and escaped, at most 160 characters (:func:`log_text`).
            via: The channel, for the record.
        """
        latched = self.estop.latched
        self.estop.release(by, via)
        if latched:
            self._released(by, via)

    def _released(self, by: str, via: str, proof: bool = False) -> None:
        said = log_text(by, 160)
        if proof:
            logger.warning("emergency stop reset by %s with a proof via %s", said, via)
        else:
            logger.warning("emergency stop reset by %s", said)
        self._decided("estop_reset", "reset", None, f"by {said}", by=by[:64], via=via)

    async def mirror_estop(self, latched: bool, source: str, reason: str) -> None:
        """The base-side governor's latch, as the agent's side sees it on its status (ROS 2):
        latch or release this governor's own to match (its tools then refuse at once)."""
        if latched and not self.estop.latched:
            await self.emergency_stop(reason or "emergency stop", source)
        elif not latched and self.estop.latched:
            self.reset_emergency_stop(by=source or "the base governor", via="base governor")

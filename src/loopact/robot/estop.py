"""The latched emergency stop and the operator's reset proof (SPEC X3, H6; issue 41).

**Anyone may stop; only an operator may release.** :class:`EstopLatch` is the latch the
safety governor holds: :meth:`EstopLatch.latch` sets it from any source (a node on the ROS 2
graph, the terminal's ``/estop``, the web console, a spoken "emergency stop", an MQTT fleet
topic, the operator's MCP client) and records who and why; a release needs a proof that the
sender knows the operator's secret (``robot.estop.reset_token`` / ``LOOPACT_ESTOP_TOKEN``)
*without sending it*:

- the latch publishes a fresh random **nonce** (its status, every channel's e-stop state);
- the operator computes ``proof = HMAC-SHA256(key=secret, message=nonce)`` as lower-case hex
  (:func:`estop_proof`; ``loopact estop proof NONCE``; or
  ``printf %s "$NONCE" | openssl dgst -sha256 -hmac "$SECRET"``);
- a reset carries ``nonce`` and ``proof``. A right proof for the current nonce releases the
  latch and **spends the nonce**: a new one is drawn, so a proof seen on the wire never works
  again (a *replayed* proof). A wrong proof, a proof for a spent nonce, a reset without a
  proof or one that sends a token in clear are refused; each refusal is counted
  (:attr:`EstopLatch.resets_refused`) and kept with its reason in :attr:`last_reset_refused`
  (the caller logs it).

Nothing here reads configuration or the clock at import.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections import deque
from dataclasses import dataclass
from hashlib import sha256
from typing import Any

from loopact.errors import ConfigError

NONCE_BYTES = 16
"""Random bytes in a nonce (32 hex characters)."""

SPENT_NONCES_KEPT = 256
"""Spent nonces remembered, to tell a replayed proof from one for an unknown nonce."""

BY_CHARS = 64
"""Longest ``by`` (who asked) kept in a record; it comes from a message."""

MIN_RESET_TOKEN_CHARS = 16
"""Shortest reset secret accepted (characters)."""


def estop_proof(secret: str, nonce: str) -> str:
    """The reset proof for ``nonce``: HMAC-SHA256 keyed with the operator's ``secret``, hex.

    The same as ``printf %s "$NONCE" | openssl dgst -sha256 -hmac "$SECRET"`` prints.

    Args:
        secret: The operator's reset secret (``robot.estop.reset_token``).
        nonce: The nonce the latch published.
    """
    return hmac.new(secret.encode("utf-8"), nonce.encode("utf-8"), sha256).hexdigest()


@dataclass(frozen=True)
class ResetResult:
    """How a reset request ended.

    Attributes:
        released: True when the request was accepted (the latch is free now).
        reason: ``released``, or why it was refused: ``no reset secret configured``, ``no
            proof``, ``token sent in clear``, ``unknown nonce``, ``replayed proof``,
            ``wrong proof``.
        nonce: The nonce to prove against now (a new one after a release).
    """

    released: bool
    reason: str
    nonce: str


class EstopLatch:
    """The latched emergency stop with its reset nonce (see the module docstring).

    Args:
        secret: The operator's reset secret; None: no proof can release the latch (restart
            the governor, or the operator's own trusted channel).
    """

    def __init__(self, secret: str | None = None) -> None:
        self._secret = secret
        self.latched = False
        self.reason = ""
        self.source = ""
        self.since: float | None = None
        self.count = 0
        self.resets_refused = 0
        self.last_reset: dict[str, Any] | None = None
        self.last_reset_refused: dict[str, Any] | None = None
        self._spent: deque[str] = deque(maxlen=SPENT_NONCES_KEPT)
        self.nonce = _new_nonce()

    @property
    def has_secret(self) -> bool:
        """Whether a proof can release the latch."""
        return bool(self._secret)

    def latch(self, source: str, reason: str = "") -> bool:
        """Latch (from anyone). Returns True when it was not latched before.

        Args:
            source: Who stopped, for the record: a channel and a name (``terminal``,
                ``ros2 /fleet_manager``, ``mqtt fleet``).
            reason: Why, in words.
        """
        first = not self.latched
        if first:
            self.since = time.time()
            self.count += 1
        self.latched = True
        self.source = source
        self.reason = reason or f"emergency stop from {source}"
        return first

    def reset(
        self,
        nonce: str | None,
        proof: str | None,
        by: str,
        via: str,
        token: str | None = None,
    ) -> ResetResult:
        """Release the latch if ``proof`` proves the secret for the current ``nonce``.

        Args:
            nonce: The nonce the proof was computed for.
            proof: ``estop_proof(secret, nonce)``.
            by: Who asks (from the message; cut to :data:`BY_CHARS`).
            via: The channel (``ros2 /loopact/base/emergency_stop``, ``web``, ``mqtt``, ...).
            token: A secret sent in clear (the reset of before issue 41): always refused.

        Returns:
            Released, or refused with the reason (counted, kept in :attr:`last_reset_refused`).
        """
        why = "token sent in clear" if token else self._check(nonce, proof)
        if why is not None:
            return self.refuse(why, by, via)
        assert nonce is not None
        self._spent.append(nonce)
        self.nonce = _new_nonce()
        self._released(by, via, "proof")
        return ResetResult(True, "released", self.nonce)

    def release(self, by: str, via: str) -> None:
        """Release without a proof: the operator's own trusted channel (an SROS2-protected
        reset topic, the Python API of the process that owns the governor). Never for a
        message anyone could send."""
        self.nonce = _new_nonce()
        self._released(by, via, "operator channel")

    def refuse(self, reason: str, by: str, via: str) -> ResetResult:
        """Record a refused reset (counted) and return it."""
        self.resets_refused += 1
        self.last_reset_refused = {
            "by": by[:BY_CHARS],
            "via": via,
            "reason": reason,
            "time": time.time(),
            "count": self.resets_refused,
        }
        return ResetResult(False, reason, self.nonce)

    def _check(self, nonce: str | None, proof: str | None) -> str | None:
        if not self._secret:
            return "no reset secret configured"
        if not proof or not nonce:
            return "no proof"
        if nonce in self._spent:
            return "replayed proof"
        if not hmac.compare_digest(nonce.encode("utf-8"), self.nonce.encode("utf-8")):
            return "unknown nonce"
        if not hmac.compare_digest(
            proof.strip().lower().encode("utf-8"),
            estop_proof(self._secret, nonce).encode("utf-8"),
        ):
            return "wrong proof"
        return None

    def _released(self, by: str, via: str, how: str) -> None:
        self.last_reset = {
            "by": by[:BY_CHARS],
            "via": via,
            "how": how,
            "was_latched": self.latched,
            "time": time.time(),
        }
        self.latched = False
        self.reason = ""
        self.source = ""
        self.since = None

    def state(self) -> dict[str, Any]:
        """JSON-able: ``latched``, ``reason``, ``source``, ``since`` (Unix time), ``nonce``
        (prove against it to reset), ``reset_needs`` (``proof`` or ``restart``),
        ``resets_refused``, ``last_reset``, ``last_reset_refused``."""
        return {
            "latched": self.latched,
            "reason": self.reason,
            "source": self.source,
            "since": self.since,
            "nonce": self.nonce,
            "reset_needs": "proof" if self.has_secret else "restart",
            "resets_refused": self.resets_refused,
            "last_reset": self.last_reset,
            "last_reset_refused": self.last_reset_refused,
        }


def _new_nonce() -> str:
    return secrets.token_hex(NONCE_BYTES)


@dataclass(frozen=True)
class EstopRequest:
    """One emergency-stop message, parsed (:func:`parse_estop_message`).

    Attributes:
        command: ``stop`` or ``reset``; every message that is not a reset is a stop.
        nonce: A reset's nonce.
        proof: A reset's proof.
        token: A secret sent in clear (refused).
        by: Who the message says it is from (at most :data:`BY_CHARS` characters).
        reason: A stop's reason (``{"command": "stop", "reason": ...}``).
    """

    command: str
    nonce: str | None = None
    proof: str | None = None
    token: str | None = None
    by: str | None = None
    reason: str | None = None


def parse_estop_message(text: str) -> EstopRequest:
    """An emergency-stop message as the governor reads it, on every transport (issue 41).

    - ``reset NONCE PROOF`` or ``{"command": "reset", "nonce": ..., "proof": ..., "by": ...}``
      asks for a reset (``reset TOKEN`` and a JSON ``token`` send a secret in clear: parsed
      so it can be refused);
    - anything else is a stop: ``stop``, ``{"command": "stop", "by": ..., "reason": ...}``,
      an empty message, garbage — an emergency stop errs on the safe side.
    """
    body = text.strip()
    if body.startswith("{"):
        try:
            obj = json.loads(body)
        except (json.JSONDecodeError, RecursionError):
            return EstopRequest("stop", reason="an unreadable emergency-stop message")
        if not isinstance(obj, dict):
            return EstopRequest("stop", reason="an unreadable emergency-stop message")
        by = obj.get("by")
        said = str(by)[:BY_CHARS] if by is not None else None
        if str(obj.get("command", "")).strip().lower() == "reset":
            return EstopRequest(
                "reset",
                nonce=_text(obj.get("nonce")),
                proof=_text(obj.get("proof")),
                token=_text(obj.get("token")),
                by=said,
            )
        reason = obj.get("reason")
        return EstopRequest("stop", by=said, reason=str(reason)[:200] if reason else None)
    words = body.split()
    if words and words[0].lower() == "reset":
        if len(words) == 3:
            return EstopRequest("reset", nonce=words[1], proof=words[2])
        if len(words) == 2:
            return EstopRequest("reset", token=words[1])
        return EstopRequest("reset")
    if words and words[0].lower() == "stop":
        return EstopRequest("stop")
    return EstopRequest("stop", reason="an unrecognised emergency-stop message")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class EstopReset:
    """Who may release a latched emergency stop (issue 21 item 14, issue 41).

    Attributes:
        token: The operator's reset secret: a reset must carry a proof of it
            (:func:`estop_proof`); None: no proof works.
        operator_topic: The operator's channel: ``reset`` here needs no proof (restrict who
            may publish on it, e.g. with SROS2 access control); None: no such channel.
    """

    token: str | None = None
    operator_topic: str | None = None

    @classmethod
    def from_config(cls, estop: Any) -> EstopReset:
        """From ``robot.estop`` (:class:`loopact.config.EstopConfig`).

        Raises:
            ConfigError: The secret is shorter than :data:`MIN_RESET_TOKEN_CHARS` or has
                spaces.
        """
        token = estop.reset_token.get_secret_value() if estop.reset_token else None
        if token is not None and (
            len(token) < MIN_RESET_TOKEN_CHARS or any(c.isspace() for c in token)
        ):
            raise ConfigError(
                f"robot.estop.reset_token must be at least {MIN_RESET_TOKEN_CHARS} characters "
                "without spaces (LOOPACT_ESTOP_TOKEN)",
                key="robot.estop.reset_token",
            )
        return cls(token=token, operator_topic=estop.reset_topic)

    @property
    def sources(self) -> str:
        """What releases the stop, in words (for logs and refusals)."""
        parts = []
        if self.token:
            parts.append("'reset NONCE PROOF' with a proof of the reset secret")
        if self.operator_topic:
            parts.append(f"'reset' on {self.operator_topic}")
        return " or ".join(parts) or (
            "nothing: set robot.estop.reset_token (LOOPACT_ESTOP_TOKEN) or "
            "robot.estop.reset_topic, or restart the governor"
        )

    def latch(self) -> EstopLatch:
        """A latch that this secret's proofs release."""
        return EstopLatch(self.token)

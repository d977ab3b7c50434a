"""A motion's ownership of the base or the head, handed out by the safety governor (SPEC C5).

A :class:`MotionLease` says who holds the base (or the head), until when, and, once it ended,
why: a typed :class:`~loopact.errors.StopCause` and what the governor says about it (a
:class:`~loopact.i18n.Phrase`), and what the governor clamped. Motion tools hold one for the
length of a motion and stop when it is no longer :attr:`~MotionLease.active`; a tool waiting on
the base learns the cause from :meth:`MotionLease.check` (issue 38), and a tool that waits
between two commands wakes the moment the governor ends its lease (:meth:`MotionLease.sleep`),
so its result says the governor's verdict at once, never at its deadline (issue 41).

A lease is the agent's (``owner="agent"``: a tool, the agent's requests to the base-side
governor) or an operator's (``owner="operator"``: teleop commands, held behind a deadman by
:class:`~loopact.robot.operator.OperatorControl`). Every resource (``base``, ``head``, an arm)
has at most one lease at a time.
"""

from __future__ import annotations

import asyncio

from loopact.errors import MotionStopped, StopCause
from loopact.i18n import Phrase
from loopact.robot.interface import Clock


def cause_phrase(cause: StopCause) -> Phrase:
    """``cause`` as a phrase (``cause.obstacle``: "obstacle" / "遇到障碍物")."""
    return Phrase(f"cause.{cause.value}")


class MotionLease:
    """Ownership of the base (or the head) by one motion.

    Attributes:
        name: Who holds it (the tool name).
        started_s: Start time on the robot's clock.
        deadline_s: When the governor stops it, robot clock seconds.
        cause: None while running; then why it ended (the first cause wins).
        why: What the governor said about the end, or None.
        clamped: What the governor clamped: ``{field: {"requested": x, "applied": y}}``.
        owner: ``agent`` or ``operator`` (teleop, issue 41).
    """

    def __init__(
        self, name: str, started_s: float, deadline_s: float, owner: str = "agent"
    ) -> None:
        self.name = name
        self.started_s = started_s
        self.deadline_s = deadline_s
        self.owner = owner
        self.cause: StopCause | None = None
        self.why: Phrase | None = None
        self.clamped: dict[str, dict[str, float]] = {}
        self._ended = asyncio.Event()

    @property
    def active(self) -> bool:
        """True until the lease is stopped."""
        return self.cause is None

    @property
    def stopped_by(self) -> str | None:
        """The ``stopped_by`` word of the cause (:attr:`StopCause.stopped_by`), or None while
        running."""
        return None if self.cause is None else self.cause.stopped_by

    @property
    def detail(self) -> str:
        """:attr:`why` in English ("" when nothing was said)."""
        return "" if self.why is None else self.why.text("en")

    def stop(self, cause: StopCause, why: Phrase | None = None) -> None:
        """Mark the lease stopped for ``cause`` (the first cause wins).

        Args:
            cause: Why.
            why: What the governor says about it ("obstacle 0.31 m ahead of the robot").
        """
        if self.cause is None:
            self.cause = cause
            self.why = why
            self._ended.set()

    async def sleep(self, clock: Clock, seconds: float) -> None:
        """Wait ``seconds`` on ``clock``, or less: until the lease ends (issue 41).

        A motion tool waits here between two commands, so a stop by the governor (an
        emergency stop latched by another node, an operator taking over) ends its wait at
        once instead of at the next control period.
        """
        if not self.active:
            return
        nap = asyncio.ensure_future(clock.sleep(seconds))
        ended = asyncio.ensure_future(self._ended.wait())
        try:
            await asyncio.wait({nap, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in (nap, ended):
                fut.cancel()
            await asyncio.gather(nap, ended, return_exceptions=True)

    def check(self) -> None:
        """Raise why the lease ended, if it ended for anything but reaching its target.

        Raises:
            MotionStopped: The governor (or a stop) ended it; ``cause`` says why.
        """
        if self.cause is not None and self.cause is not StopCause.TARGET:
            raise MotionStopped(self.why or cause_phrase(self.cause), self.cause)


END_GRACE_S = 0.5
"""Robot-clock seconds a timed behaviour's lease outlives the behaviour's own end."""


def lease_span(remaining_s: float, max_s: float) -> float:
    """How long to ask the governor for, for a timed behaviour that ends itself.

    ``follow_line``, ``track`` and ``approach`` stop at their own end time; a lease that ended
    at the same instant raced them, and under load one late control period let the
    governor's deadline win ("stopped by deadline" at exactly the requested 12 s). So the
    lease lasts :data:`END_GRACE_S` longer, never more than the profile's limit.

    Args:
        remaining_s: Seconds until the behaviour's own end (robot clock).
        max_s: The profile's ``limits.max_motion_duration_s``, seconds.
    """
    return min(remaining_s + END_GRACE_S, max_s)


def due_for_renewal(lease: MotionLease, now_s: float, end_s: float, margin_s: float) -> bool:
    """Whether a behaviour running until ``end_s`` must renew ``lease`` now: it is active,
    ends before the behaviour does, and has less than ``margin_s`` left (robot clock, s)."""
    return lease.active and lease.deadline_s < end_s and now_s > lease.deadline_s - margin_s

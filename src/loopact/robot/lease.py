"""A motion's ownership of the base or the head, handed out by the safety governor (SPEC C5).

A :class:`MotionLease` says who holds the base (or the head), until when, and, once it ended,
why (one of :data:`STOP_REASONS`) and what the governor clamped. Motion tools hold one for the
length of a motion and stop when it is no longer :attr:`~MotionLease.active`.
"""

from __future__ import annotations

STOP_REASONS = (
    "target",
    "obstacle",
    "geofence",
    "deadline",
    "cancelled",
    "emergency_stop",
    "watchdog",
)


class MotionLease:
    """Ownership of the base (or the head) by one motion.

    Attributes:
        name: Who holds it (the tool name).
        started_s: Start time on the robot's clock.
        deadline_s: When the governor stops it, robot clock seconds.
        stopped_by: None while running; then one of ``target``, ``obstacle``, ``geofence``,
            ``deadline``, ``cancelled``, ``emergency_stop`` or ``watchdog``.
        detail: A readable reason for the stop.
        clamped: What the governor clamped: ``{field: {"requested": x, "applied": y}}``.
    """

    def __init__(self, name: str, started_s: float, deadline_s: float) -> None:
        self.name = name
        self.started_s = started_s
        self.deadline_s = deadline_s
        self.stopped_by: str | None = None
        self.detail = ""
        self.clamped: dict[str, dict[str, float]] = {}

    @property
    def active(self) -> bool:
        """True until the lease is stopped."""
        return self.stopped_by is None

    def stop(self, reason: str, detail: str = "") -> None:
        """Mark the lease stopped (first reason wins)."""
        if self.stopped_by is None:
            self.stopped_by = reason
            self.detail = detail


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

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

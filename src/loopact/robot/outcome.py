"""What a robot tool's result says: typed outcomes and causes (issue 38, SPEC D2, X3).

A motion's result carries ``metadata.achieved = {distance_m, angle_deg, stopped_by, cause}``
and says what happened as a typed :class:`~loopact.i18n.Phrase` (``motion.*`` in
:mod:`loopact.i18n.robot`): the model reads it in English, people in their own language. An
error that refused or ended a motion gives its own phrase (:func:`said_by`) and, for a
:class:`~loopact.errors.MotionStopped`, its typed cause: never read from its text.
"""

from __future__ import annotations

from typing import Any

from loopact.errors import MotionStopped, RobotError, StopCause, ToolArgumentError
from loopact.i18n import Name, Phrase
from loopact.robot.interface import Pose
from loopact.robot.lease import MotionLease, cause_phrase
from loopact.tools.base import ToolResult


def achieved(distance_m: float, angle_deg: float, cause: StopCause) -> dict[str, Any]:
    """The ``metadata.achieved`` dict: ``{distance_m, angle_deg, stopped_by, cause}``."""
    return {
        "distance_m": round(distance_m, 3),
        "angle_deg": round(angle_deg, 1),
        "stopped_by": cause.stopped_by,
        "cause": cause.value,
    }


def motion_result(
    lease: MotionLease,
    distance_m: float,
    angle_deg: float,
    pose: Pose,
    clamped: dict[str, Any],
    summary: Phrase,
    goal: Name | None = None,
) -> ToolResult:
    """Build the result of a finished motion: ok only when it reached its target.

    The error of a motion stopped early does not name the tool: every reader shows the
    error after the tool's name already (the terminal's ``✗ move_forward: ...``, a step's
    "did not succeed (move_forward: ...)"), which read ``move_forward: move_forward stopped
    early ...`` while the error began with it.

    Args:
        lease: The finished motion's lease (``cause``, ``why``, ``clamped``).
        distance_m: Distance achieved, metres (signed for straight motions).
        angle_deg: Angle turned, degrees, left positive.
        pose: The pose at the end.
        clamped: Arguments the tool clamped to the limits.
        summary: On success, the outcome (``data.result``): one plain sentence of what
            happened ("moved forward 0.998 m and reached the target"). Models, small ones
            above all, retell it; with a bare "move_forward done" the 0.5B local brain told
            users the robot had "stopped for obstacles" (issue 6).
        goal: Where the motion was going, for the error (``door``: "stopped early by
            obstacle on the way to the door: ..."); None for a motion by distance or angle.
    """
    cause = lease.cause or StopCause.TARGET
    meta: dict[str, Any] = {"achieved": achieved(distance_m, angle_deg, cause)}
    all_clamped = {**lease.clamped, **clamped}
    if all_clamped:
        meta["clamped"] = all_clamped
    data: dict[str, Any] = {
        "pose": {
            "x_m": round(pose.x_m, 3),
            "y_m": round(pose.y_m, 3),
            "yaw_deg": round(pose.yaw_deg, 1),
            "frame": pose.frame,
        }
    }
    if cause is StopCause.TARGET:
        said = Phrase("motion.clamped", said=summary) if all_clamped else summary
        return ToolResult.said(said, data, **meta)
    stop = Phrase(
        "motion.stopped_early" if goal is None else "motion.stopped_early_to",
        cause=cause_phrase(cause),
        why=lease.why or Phrase("stop.reason", reason=""),
        distance_m=distance_m,
        angle_deg=angle_deg,
        goal=goal,
    )
    return ToolResult(ok=False, data=data, metadata=meta, outcome=stop)


def failed(error: str | Phrase, cause: StopCause | None = None) -> ToolResult:
    """A refused motion (nothing moved); with ``cause``, ``metadata.achieved`` says why."""
    meta: dict[str, Any] = {}
    if cause is not None:
        meta["achieved"] = achieved(0.0, 0.0, cause)
    return ToolResult.failure(error, **meta)


def said_by(exc: ToolArgumentError | RobotError) -> Phrase | str:
    """What an error says: its typed phrase when it has one (the governor's, a tool's own
    check), else its text as it is (a driver's message: never a guessed translation)."""
    return exc.said if isinstance(exc.said, Phrase) else str(exc)


def why_of(exc: ToolArgumentError | RobotError) -> Phrase:
    """:func:`said_by` as a phrase, to go inside another one (``stopped by error (...)``)."""
    said = said_by(exc)
    return said if isinstance(said, Phrase) else Phrase("stop.reason", reason=said)


def refused(exc: ToolArgumentError | RobotError) -> ToolResult:
    """The failed result of a motion that an error refused or ended before it ran.

    What it says is the error's phrase when it has one (else its text); a
    :class:`~loopact.errors.MotionStopped` (an obstacle ahead, the emergency stop) gives its
    typed cause as ``metadata.achieved`` (issue 38: never the error's text).
    """
    return failed(said_by(exc), exc.cause if isinstance(exc, MotionStopped) else None)

"""Every sentence the navigation tools return, one function each (issue 40).

Kept in one place so that each result is one message id with its parameters: when robot tool
outcomes become typed messages rendered through i18n (issue 38 item 2), each function here
becomes one message.
"""

from __future__ import annotations


def unknown_place(noun: str, name: str, known: list[str], located: list[str]) -> str:
    """An unknown place (the known ones listed)."""
    text = f"unknown {noun} {name!r}; known {noun}s: {', '.join(known) or '(none)'}"
    if located:
        text += f"; objects seen so far: {', '.join(located)}"
    return text


def reached(label: str, travelled_m: float) -> str:
    """Arrived (``label``: ``the kitchen``, ``(2.00, 1.00)``, ``the red box``)."""
    return f"reached {label} after {travelled_m:.2f} m"


def reached_around(label: str, travelled_m: float, replans: int) -> str:
    """Arrived after replanning around obstacles the map did not show."""
    return (
        f"reached {label} after {travelled_m:.2f} m, replanning {replans} "
        f"time{'s' * (replans > 1)} around obstacles not on the map"
    )


def no_path(start_room: str | None, goal_label: str, goal_room: str | None, why: str) -> str:
    """No path: ``no path from the hallway to the bedroom: the bedroom_door is blocked``."""
    origin = f"the {start_room.replace('_', ' ')}" if start_room else "here"
    target = goal_label
    if goal_room and goal_label != f"the {goal_room.replace('_', ' ')}":
        target += f" in the {goal_room.replace('_', ' ')}"
    return f"no path from {origin} to {target}: {why}"


def doorway_blocked(room: str) -> str:
    """The reason part of :func:`no_path` when the doorway into ``room`` is shut."""
    return f"the doorway to the {room.replace('_', ' ')} is blocked"


def doorway_out_blocked(room: str) -> str:
    """The reason part of :func:`no_path` when the robot's own room is shut."""
    return f"the doorway out of the {room.replace('_', ' ')} is blocked"


def not_reachable() -> str:
    """The reason part of :func:`no_path` when nothing names the cause."""
    return "it is not reachable on the map (walls or furniture in the way)"


def blocked_on_the_way(count: int) -> str:
    """The reason part of :func:`no_path` after obstacles seen on the way cut every path."""
    return f"obstacles seen on the way cut every path (after {count} replans)"


def bad_goal(detail: str) -> str:
    """A goal the planner refuses (off the map, inside a wall, ...)."""
    return f"cannot go there: {detail}"


def outside_geofence(label: str) -> str:
    """A goal outside the geofence."""
    return f"{label} lies outside the geofence: refused"


def gave_up(label: str, attempts: int, detail: str) -> str:
    """The follower kept being stopped."""
    return f"could not reach {label} after {attempts} attempts: {detail}"


def stopped_early(label: str, stopped_by: str, detail: str, travelled_m: float) -> str:
    """A stop, e-stop, preemption or geofence halt on the way."""
    return (
        f"stopped early by {stopped_by} on the way to {label}: {detail}; "
        f"travelled {travelled_m:.2f} m"
    )


def pose_frame_note(frame: str) -> str:
    """Said when the pose is odometry, not a localized map pose."""
    return "" if frame == "map" else " (the pose is from odometry: the robot is not localized)"


def nav2_result(label: str, status: str, code: int, message: str) -> str:
    """Nav2 ended the goal without success."""
    detail = f"error code {code}" + (f" ({message})" if message else "")
    return f"Nav2 {status} the goal to {label}: {detail}"


def reached_nav2(label: str) -> str:
    """Nav2 reported success."""
    return f"reached {label} (Nav2)"


def nav2_timeout(label: str, timeout_s: float) -> str:
    """A Nav2 goal that ran too long (cancelled)."""
    return f"Nav2 did not reach {label} within {timeout_s:.0f} s: the goal was cancelled"


def nav2_gone(label: str) -> str:
    """The action server vanished while a goal ran."""
    return f"Nav2 is not available: the action server vanished mid-goal to {label}"


def nav2_unavailable(detail: str) -> str:
    """The Nav2 action server is missing or did not answer."""
    return f"Nav2 is not available: {detail}"


def show_map_caption(room: str | None, frame: str) -> str:
    """The first line of ``show_map``'s text."""
    where = f"in the {room.replace('_', ' ')}" if room else "on the map"
    return f"the robot is {where} (pose in the {frame} frame)"

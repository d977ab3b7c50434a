"""Where ``navigation`` is asked to go: a named place, a pose in the map frame, or an object
perception has located (issue 40 item 3).

An object's goal is a pose in front of it: on the line from the robot to the object, the
robot's footprint :data:`OBJECT_STANDOFF_M` from the object's visible surface, facing it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loopact.errors import StopCause
from loopact.i18n import Name, Phrase, colour_name
from loopact.robot.interface import Pose
from loopact.robot.motion import RobotEnv
from loopact.robot.navigation import texts
from loopact.robot.navigation.places import chinese_name, find_place, place_names, unknown_place
from loopact.robot.outcome import failed
from loopact.tools.base import ToolResult
from loopact.vision.scene import parse_target

OBJECT_STANDOFF_M = 0.45
"""Gap between the robot's footprint and a located object it drives to, metres."""


@dataclass(frozen=True)
class Goal:
    """A navigation goal in the map frame.

    Attributes:
        x_m: x in metres.
        y_m: y in metres.
        yaw_rad: Heading to face on arrival in radians, or None.
        label: How results name it: ``the kitchen`` / 厨房, ``(2.00, 1.00)``, ``the red box``.
        kind: ``place``, ``pose`` or ``object``.
        place: The waypoint's key for a place, else "".
    """

    x_m: float
    y_m: float
    yaw_rad: float | None
    label: Name
    kind: str
    place: str = ""

    def as_dict(self) -> dict[str, object]:
        """``metadata.goal`` of a result (metres, degrees)."""
        out: dict[str, object] = {"x_m": round(self.x_m, 3), "y_m": round(self.y_m, 3)}
        if self.yaw_rad is not None:
            out["yaw_deg"] = round(math.degrees(self.yaw_rad), 1)
        if self.place:
            out["waypoint"] = self.place
        out["kind"] = self.kind
        return out


def place_goal(env: RobotEnv, key: str) -> Goal:
    """The goal of waypoint ``key``."""
    wp = env.site.waypoints[key]
    yaw = None if wp.yaw_deg is None else math.radians(wp.yaw_deg)
    spoken = key.replace("_", " ")
    label = Name(f"the {spoken}", chinese_name(env.site, key) or spoken)
    return Goal(wp.x_m, wp.y_m, yaw, label, "place", key)


def object_goal(env: RobotEnv, phrase: str, pose: Pose) -> Goal | None:
    """A pose in front of the located object ``phrase`` names, or None if none is located."""
    query = parse_target(phrase, ())
    obj = env.located.find(phrase)
    if obj is None and query.color is not None:
        obj = next((o for o in reversed(env.located.all()) if o.colour == query.color), None)
    if obj is None:
        return None
    dx, dy = obj.x_m - pose.x_m, obj.y_m - pose.y_m
    dist = math.hypot(dx, dy)
    back = env.profile.footprint_radius_m + OBJECT_STANDOFF_M
    heading = math.atan2(dy, dx) if dist > 1e-6 else pose.yaw_rad
    if dist <= back:
        x, y = pose.x_m, pose.y_m
    else:
        x, y = obj.x_m - back * math.cos(heading), obj.y_m - back * math.sin(heading)
    zh = _zh_noun(obj.name, obj.colour) or obj.name
    return Goal(x, y, heading, Name(f"the {obj.name}", zh), "object")


def _zh_noun(name: str, colour: str) -> str:
    """The Chinese of a located object's English noun (``red box`` -> 红色盒子), "" when
    it is none of the detector's kinds."""
    for kind in ("box", "ball", "crate"):
        if name.split()[-1] == kind or (kind == "crate" and "crate" in name):
            return Phrase(f"thing.{kind}", color=colour_name(colour)).text("zh")
    return ""


def resolve(
    env: RobotEnv,
    pose: Pose,
    waypoint: str | None,
    x_m: float | None,
    y_m: float | None,
    yaw_deg: float | None,
) -> Goal | ToolResult:
    """The goal the arguments name, or a failed result saying what is wrong.

    A name is a place first (its key or another name), then a located object.
    """
    if x_m is not None or y_m is not None:
        if x_m is None or y_m is None or waypoint:
            return ToolResult.failure(
                "give either waypoint (a place's or an object's name) or both x_m and y_m "
                "(a pose in the map frame, metres)"
            )
        if not (math.isfinite(x_m) and math.isfinite(y_m)):
            return ToolResult.failure(f"x_m and y_m must be finite numbers, got {x_m}, {y_m}")
        if yaw_deg is not None and not math.isfinite(yaw_deg):
            return ToolResult.failure(f"yaw_deg must be a finite number, got {yaw_deg}")
        yaw = None if yaw_deg is None else math.radians(yaw_deg)
        return Goal(float(x_m), float(y_m), yaw, Name(f"({x_m:.2f}, {y_m:.2f})"), "pose")
    name = (waypoint or "").strip()
    if not name:
        return ToolResult.failure("name a place (waypoint) or give x_m and y_m")
    key = find_place(env.site, name)
    if key is not None:
        return place_goal(env, key)
    obj = object_goal(env, name, pose)
    if obj is not None:
        return obj
    located = [o.name for o in env.located.all()]
    return unknown_place(env.site, name, "waypoint", located)


def result_names(env: RobotEnv, goal: Goal) -> dict[str, str]:
    """``{place, place_zh}`` of a place goal (the reply names it), else ``{}``."""
    return place_names(env.site, goal.place) if goal.place else {}


def outside(env: RobotEnv, goal: Goal) -> ToolResult | None:
    """The refusal of a goal outside the geofence, or None."""
    if env.site.contains(goal.x_m, goal.y_m):
        return None
    return failed(texts.outside_geofence(goal.label), StopCause.GEOFENCE)

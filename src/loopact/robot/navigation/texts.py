"""Every sentence the navigation tools return, as typed phrases (issue 40; issue 38 item 2).

Each function builds one :class:`~loopact.i18n.Phrase` (a ``nav.*`` id of
:mod:`loopact.i18n.robot` and its parameters): the model reads it in English, people in their
own language. Goals and rooms are :class:`~loopact.i18n.Name`\\ s with the article in English
("the kitchen") and their Chinese name where one is known ("厨房").
"""

from __future__ import annotations

from loopact.errors import StopCause
from loopact.i18n import Name, Phrase
from loopact.robot.lease import cause_phrase

ZH_PLACES = {
    "window": "窗户",
    "door": "门",
    "kitchen": "厨房",
    "charger": "充电桩",
    "bedroom": "卧室",
    "living_room": "客厅",
    "bathroom": "卫生间",
    "hallway": "走廊",
    "front_door": "大门",
}
"""Chinese names of common places and rooms, for a site map whose waypoints give none."""


def room_name(room: str) -> Name:
    """A room of the site map as a name: ``the living room`` / 客厅."""
    spoken = room.replace("_", " ")
    return Name(f"the {spoken}", ZH_PLACES.get(room, spoken))


def unknown_place(noun: str, name: str, known: list[str], located: list[str]) -> Phrase:
    """An unknown place (the known ones listed; ``noun``: ``waypoint`` or ``place``)."""
    listed = ", ".join(known) or "(none)"
    if located and noun == "waypoint":
        return Phrase(
            "nav.unknown_waypoint_seen", name=name, known=listed, located=", ".join(located)
        )
    return Phrase(f"nav.unknown_{noun}", name=name, known=listed)


def reached(goal: Name, travelled_m: float, frame: str = "map") -> Phrase:
    """Arrived (``goal``: ``the kitchen``, ``(2.00, 1.00)``, ``the red box``)."""
    return odometry_note(Phrase("nav.reached", goal=goal, distance_m=travelled_m), frame)


def reached_around(goal: Name, travelled_m: float, detours: int) -> Phrase:
    """Arrived after stepping around obstacles (the go-to-pose controller)."""
    key = "nav.reached_around_one" if detours == 1 else "nav.reached_around"
    return Phrase(key, goal=goal, distance_m=travelled_m, detours=detours)


def reached_replanned(goal: Name, travelled_m: float, replans: int, frame: str) -> Phrase:
    """Arrived after replanning around obstacles the map did not show."""
    key = "nav.reached_replanned_one" if replans == 1 else "nav.reached_replanned"
    return odometry_note(Phrase(key, goal=goal, distance_m=travelled_m, n=replans), frame)


def odometry_note(said: Phrase, frame: str) -> Phrase:
    """``said``, with a note when the pose is odometry, not a localized map pose."""
    return said if frame == "map" else Phrase("nav.odometry_pose", said=said)


def no_path(start_room: str | None, goal: Name, goal_room: str | None, why: Phrase) -> Phrase:
    """No path: ``no path from the hallway to the bedroom: the doorway to the bedroom is
    blocked``."""
    origin = room_name(start_room) if start_room else Name("here", "这里")
    if goal_room and goal.en != room_name(goal_room).en:
        room = room_name(goal_room)
        return Phrase("nav.no_path_in", origin=origin, goal=goal, room=room, why=why)
    return Phrase("nav.no_path", origin=origin, goal=goal, why=why)


def doorway_blocked(room: str) -> Phrase:
    """The reason part of :func:`no_path` when the doorway into ``room`` is shut."""
    return Phrase("nav.doorway_blocked", room=room_name(room))


def doorway_out_blocked(room: str) -> Phrase:
    """The reason part of :func:`no_path` when the robot's own room is shut."""
    return Phrase("nav.doorway_out_blocked", room=room_name(room))


def not_reachable() -> Phrase:
    """The reason part of :func:`no_path` when nothing names the cause."""
    return Phrase("nav.not_reachable")


def blocked_on_the_way(count: int) -> Phrase:
    """The reason part of :func:`no_path` after obstacles seen on the way cut every path."""
    return Phrase("nav.blocked_on_the_way", n=count)


def bad_goal(detail: str) -> Phrase:
    """A goal the planner refuses (off the map, inside a wall, ...; ``detail`` its words)."""
    return Phrase("nav.bad_goal", detail=detail)


def outside_geofence(goal: Name) -> Phrase:
    """A goal outside the geofence."""
    return Phrase("nav.outside_fence", goal=goal)


def gave_up(goal: Name, attempts: int, why: Phrase) -> Phrase:
    """The follower kept being stopped."""
    return Phrase("nav.gave_up", goal=goal, n=attempts, why=why)


def stopped_early(goal: Name, cause: StopCause, why: Phrase, travelled_m: float) -> Phrase:
    """A stop, e-stop, preemption or geofence halt on the way."""
    return Phrase(
        "nav.stopped_early", cause=cause_phrase(cause), goal=goal, why=why, distance_m=travelled_m
    )


def nav2_result(goal: Name, status: str, code: int, message: str) -> Phrase:
    """Nav2 ended the goal without success (``status``: ``aborted``, ``cancelled``, ...)."""
    detail = f"error code {code}" + (f" ({message})" if message else "")
    if status == "aborted":
        return Phrase("nav.nav2_aborted", goal=goal, detail=detail)
    if status == "cancelled":
        return Phrase("nav.nav2_cancelled", goal=goal, detail=detail)
    return Phrase("nav.nav2_ended", goal=goal, status=status, detail=detail)


def reached_nav2(goal: Name) -> Phrase:
    """Nav2 reported success."""
    return Phrase("nav.reached_nav2", goal=goal)


def nav2_timeout(goal: Name, timeout_s: float) -> Phrase:
    """A Nav2 goal that ran too long (cancelled)."""
    return Phrase("nav.nav2_timeout", goal=goal, timeout_s=timeout_s)


def nav2_gone(goal: Name) -> Phrase:
    """The action server vanished while a goal ran."""
    return Phrase("nav.nav2_gone", goal=goal)


def nav2_no_server(action: str) -> Phrase:
    """No Nav2 action server on the graph."""
    return Phrase("nav.nav2_no_server", action=action)


def nav2_rejected() -> Phrase:
    """The Nav2 action server rejected the goal."""
    return Phrase("nav.nav2_rejected")


def nav2_no_answer() -> Phrase:
    """The Nav2 action server did not answer the goal in time."""
    return Phrase("nav.nav2_no_answer")


def place_on_map(place: Name, path_m: float | None, straight_m: float, note: str) -> Phrase:
    """One place of ``show_map``'s listing: by path, no path, or straight when no map."""
    if path_m is not None:
        return Phrase("nav.place_by_path", place=place, distance_m=path_m)
    if note == "no path":
        return Phrase("nav.place_no_path", place=place)
    if note:
        return Phrase("nav.place_unplannable", place=place, detail=note)
    return Phrase("nav.place_straight", place=place, distance_m=straight_m)


def show_map_caption(room: str | None, frame: str, places: tuple[Phrase, ...]) -> Phrase:
    """``show_map``'s text: where the robot is, and the places with their distances."""
    if room:
        return Phrase("nav.map_in_room", room=room_name(room), frame=frame, places=places)
    return Phrase("nav.map_on_map", frame=frame, places=places)

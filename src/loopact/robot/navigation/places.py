"""Named places of the site map, their Chinese names, and ``distance_to`` (SPEC D3).

``distance_to`` answers how far a named place is and in which direction, from the pose in the
map frame, without moving (a question a small model otherwise cannot answer: it would have to
subtract coordinates itself).
"""

from __future__ import annotations

import math

from loopact.errors import RobotError
from loopact.i18n import Name, Phrase
from loopact.robot.interface import normalize_angle
from loopact.robot.motion import RobotEnv
from loopact.robot.navigation import texts
from loopact.robot.outcome import refused
from loopact.robot.profile import SiteMap
from loopact.tools.base import ToolResult

AT_PLACE_M = 0.05  # closer than this, "distance_to" says the robot is there (no bearing)


def find_place(site: SiteMap, name: str) -> str | None:
    """The site map's waypoint called ``name`` (its key or one of its ``names``), or None.

    Exact first, then case-insensitive and without a leading "the" ("The Door" -> "door"),
    then a waypoint's other names (``厨房`` -> ``kitchen``), then with spaces for underscores
    ("living room" -> ``living_room``).
    """
    key = name.strip()
    if key in site.waypoints:
        return key
    lowered = {k.lower(): k for k in site.waypoints}
    lowered.update({k.lower().replace("_", " "): k for k in site.waypoints})
    lowered.update({n.strip().lower(): k for k, wp in site.waypoints.items() for n in wp.names})
    wanted = key.lower()
    if wanted.startswith("the "):
        wanted = wanted[4:].strip()
    return lowered.get(wanted) or lowered.get(wanted.replace("_", " "))


def place_words(site: SiteMap) -> dict[str, str]:
    """Every word people use for the site's places -> the waypoint: its key, the key with
    spaces ("living room"), its other ``names`` and its Chinese name (卫生间 -> bathroom)."""
    words: dict[str, str] = {}
    for key, wp in site.waypoints.items():
        zh = chinese_name(site, key)
        for word in (key, key.replace("_", " "), *wp.names, *([zh] if zh else [])):
            if word.strip():
                words.setdefault(word.strip(), key)
    return words


def place_names(site: SiteMap, key: str) -> dict[str, str]:
    """``{place: key}``, with ``place_zh`` when the place has a Chinese name: the reply to a
    Chinese instruction names it so (``loopact.agent.steps``)."""
    zh = chinese_name(site, key)
    return {"place": key, **({"place_zh": zh} if zh else {})}


def place_name(site: SiteMap, key: str) -> Name:
    """The waypoint ``key`` as a :class:`Name`: the key, and its Chinese name when it has one
    (a phrase then names it so in Chinese: 到达厨房)."""
    return Name(key, chinese_name(site, key) or "")


def chinese_name(site: SiteMap, key: str) -> str | None:
    """The waypoint ``key``'s Chinese name: its first Chinese ``names`` entry, else the
    common one (:data:`~loopact.robot.navigation.texts.ZH_PLACES`), else None."""
    for name in site.waypoints[key].names:
        if any("\u4e00" <= ch <= "\u9fff" for ch in name):
            return name.strip()
    return texts.ZH_PLACES.get(key)


def unknown_place(site: SiteMap, name: str, noun: str, also: list[str] | None = None) -> ToolResult:
    """The failed result for a name that is not on the site map: it lists the known ones.

    Args:
        site: The site map (its ``waypoints`` by name).
        name: What the model asked for.
        noun: ``waypoint`` (navigation) or ``place`` (distance_to), used in the message and
            in the data key ``known_<noun>s``.
        also: Other things it could have named (objects perception has located), listed after.
    """
    names = sorted(site.waypoints)
    return ToolResult.failure(
        texts.unknown_place(noun, name, names, also or []), data={f"known_{noun}s": names}
    )


async def distance_to_place(env: RobotEnv, place: str) -> ToolResult:
    """How far the site map's ``place`` is from the robot's current pose, and where (SPEC D3).

    Returns a result whose ``data`` is ``{result, place, [place_zh,] distance_m, bearing_deg,
    x_m, y_m, frame}``: the straight-line distance in metres, the bearing in degrees relative to the
    robot's heading (left positive, in (-180, 180]) and the place's coordinates in the site
    map's frame (the pose is the map pose when the robot is localized, else odometry). An
    unknown place or a missing pose is a failed result (the former lists the known places).
    """
    site = env.site
    key = find_place(site, place)
    if key is None:
        return unknown_place(site, place, "place")
    try:
        pose = await env.map_pose()
    except RobotError as exc:
        return refused(exc)
    wp = site.waypoints[key]
    dx, dy = wp.x_m - pose.x_m, wp.y_m - pose.y_m
    dist = math.hypot(dx, dy)
    bearing = 0.0
    if dist < AT_PLACE_M:
        where = "place.there"
    else:
        bearing = math.degrees(normalize_angle(math.atan2(dy, dx) - pose.yaw_rad))
        if abs(bearing) < 5:
            where = "place.ahead"
        elif abs(bearing) > 175:
            where = "place.behind"
        else:
            where = "place.left" if bearing > 0 else "place.right"
    said = Phrase(where, place=place_name(site, key), distance_m=dist, angle_deg=abs(bearing))
    return ToolResult.success(
        {
            "result": said,
            **place_names(site, key),
            "distance_m": round(dist, 3),
            "bearing_deg": round(bearing, 1),
            "x_m": wp.x_m,
            "y_m": wp.y_m,
            "frame": site.frame,
        }
    )


def distance_examples(site: SiteMap) -> tuple[tuple[str, dict[str, str]], ...]:
    """``distance_to`` examples with this site's places: one in English, one in Chinese.

    The English one names the first place in sorted order (``navigation``'s names the last),
    the Chinese one the last place with a known Chinese name that is not the English one's.
    """
    places = sorted(site.waypoints)
    if not places:
        return ()
    first = places[0]
    out: tuple[tuple[str, dict[str, str]], ...] = (
        (f"how far away is the {first}?", {"place": first}),
    )
    glossed = [(p, zh) for p in reversed(places) if p != first and (zh := chinese_name(site, p))]
    if glossed:
        out += ((f"{glossed[0][1]}离你多远？", {"place": glossed[0][0]}),)
    return out

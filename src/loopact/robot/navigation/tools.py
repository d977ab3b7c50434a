"""The navigation tools: ``navigation``, ``distance_to`` and ``show_map`` (SPEC D3; issue 40).

``navigation`` goes to a named place, a pose in the map frame or an object perception has
located, through one backend seam: the planner and path follower (a map, no Nav2), Nav2's
``navigate_to_pose`` (profile ``navigation: nav2``, or the action server found), or the
go-to-pose controller (no map).
"""

from __future__ import annotations

from loopact.errors import RobotError
from loopact.robot.motion import Progress, RobotEnv
from loopact.robot.navigation import direct, planner
from loopact.robot.navigation.context import NavContext
from loopact.robot.navigation.goals import Goal, outside, resolve
from loopact.robot.navigation.places import distance_examples, distance_to_place, place_words
from loopact.robot.navigation.show_map import show_map as show_map_result
from loopact.robot.outcome import refused
from loopact.tools.base import SafetyClass, Tool, ToolContext, ToolResult, tool

NAV_TIMEOUT_S = 300
"""The ``navigation`` tool's bound, seconds: a path across a site is several motions."""
AUTO_PROBE_S = 1.0
"""With ``navigation: auto``, how long to look for Nav2's action server per goal, seconds
(longer in the first seconds after start-up: ``nav2.DISCOVERY_S``)."""


async def navigate(
    env: RobotEnv,
    nav: NavContext,
    waypoint: str | None = None,
    x_m: float | None = None,
    y_m: float | None = None,
    yaw_deg: float | None = None,
    progress: Progress | None = None,
) -> ToolResult:
    """Resolve the goal and hand it to the session's backend (see the module docstring)."""
    try:
        pose = await env.map_pose()
    except RobotError as exc:
        return refused(exc)
    goal = resolve(env, pose, waypoint, x_m, y_m, yaw_deg)
    if isinstance(goal, ToolResult):
        return goal
    fenced = outside(env, goal)
    if fenced is not None:
        return fenced
    return await go(env, nav, goal, progress)


async def go(env: RobotEnv, nav: NavContext, goal: Goal, progress: Progress | None) -> ToolResult:
    """The backend seam: Nav2 (profile ``navigation: nav2``, or ``auto`` when its action
    server is on the graph), else the planner on the map, else the go-to-pose controller."""
    use_nav2 = nav.nav2 is not None and (
        nav.backend == "nav2"
        or (nav.backend == "auto" and await nav.nav2.server_ready(AUTO_PROBE_S))
    )
    if use_nav2:
        result: ToolResult = await nav.nav2.go(env, goal, progress)
        return result
    if nav.backend != "direct" and nav.grid() is not None:
        return await planner.go(env, nav, goal, progress)
    return await direct.go_to(env, goal, progress)


def make_navigation_tools(env: RobotEnv, nav: NavContext | None = None) -> list[Tool]:
    """``navigation``, ``distance_to`` and ``show_map`` bound to ``env`` (SPEC D3)."""
    nav = nav or NavContext()
    names = ", ".join(sorted(env.site.waypoints)) or "none"

    @tool(safety=SafetyClass.MOTION, timeout_s=NAV_TIMEOUT_S)
    async def navigation(
        ctx: ToolContext,
        waypoint: str | None = None,
        x_m: float | None = None,
        y_m: float | None = None,
        yaw_deg: float | None = None,
    ) -> ToolResult:
        """Drive to a named place, avoiding walls and obstacles. 去某个地点。

        Also drives to a pose on the map (x_m, y_m, optional yaw_deg) or to an object the
        camera has seen ("the red box": stops in front of it).

        Args:
            waypoint: The place's name (or a seen object's, e.g. "red box").
            x_m: Instead of a name: x in the map frame, metres.
            y_m: With x_m: y in the map frame, metres.
            yaw_deg: With x_m and y_m: heading to face on arrival, degrees (left positive).
        """
        return await navigate(env, nav, waypoint, x_m, y_m, yaw_deg, ctx.progress)

    @tool(safety=SafetyClass.READ_ONLY, timeout_s=5, reentrant=True)
    async def distance_to(place: str) -> ToolResult:
        """How far a named place is from the robot, in metres, and in which direction. 离某地多远。

        Straight-line distance from where the robot is now; it does not move. Returns
        {result, place, distance_m (metres), bearing_deg (degrees from the robot's heading,
        left positive), x_m, y_m (the place, metres)}.

        Args:
            place: The place's name on the site map, e.g. "door".
        """
        return await distance_to_place(env, place)

    @tool(safety=SafetyClass.READ_ONLY, timeout_s=15, reentrant=True)
    async def show_map(ctx: ToolContext) -> ToolResult:
        """Show the map: where the robot is, the planned path, places and seen objects. 看地图。

        Returns an image of the map and {result, room, pose, places: [{place, path_m,
        straight_m, room}], objects} with each place's distance from the robot, metres.
        """
        return await show_map_result(env, nav, ctx)

    navigation.description += f" Known places: {names}."
    distance_to.description += f" Known places: {names}."
    if env.site.waypoints:
        places = sorted(env.site.waypoints)
        for one, arg in ((navigation, "waypoint"), (distance_to, "place")):
            # the names in the argument's first sentence, which every catalogue shows (tool
            # descriptions are cut to theirs); not an enum: a grammar would then turn "go to
            # the moon" into a drive to a real place instead of a clear "unknown place"
            one.parameters["properties"][arg]["description"] = f"One of: {', '.join(places)}."
        home = "start" if "start" in places else places[0]
        navigation.examples = (
            (f"head over to the {places[-1]}", {"waypoint": places[-1]}),  # a real place
            (f"go back to the {home}", {"waypoint": home}),  # not move_backward
        )
        distance_to.examples = distance_examples(env.site)
        spoken = place_words(env.site)  # an unknown name the user did not say: SPEC B7
        navigation.names = {"waypoint": spoken}
        distance_to.names = {"place": spoken}
    tools: list[Tool] = [navigation, distance_to]
    if nav.grid() is not None or nav.map_source is not None:
        tools.append(show_map)
    return tools

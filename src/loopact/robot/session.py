"""A robot with its governor, profile, site map and tools: a :class:`RobotSession` (D1, X3).

A body opens itself and hands its :class:`~loopact.robot.interface.Robot` to
:func:`start_session` (the simulator: :func:`loopact.sim.open_sim`; ROS 2:
:func:`loopact.robot.ros2_robot.open_ros2_session`)::

    session = await open_sim(speed=4)
    tools = session.tools            # hand these to the agent
    await session.stop("user said stop")
    await session.close()
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopact.maps.grid import OccupancyGrid
from loopact.maps.mapfile import read_map
from loopact.robot.approach import make_approach_tools
from loopact.robot.estop import EstopLatch
from loopact.robot.follow_line import make_follow_line_tools
from loopact.robot.governor import SafetyGovernor
from loopact.robot.head import make_head_tools
from loopact.robot.interface import Robot
from loopact.robot.located import ObjectMemory
from loopact.robot.motion import RobotEnv, make_motion_tools
from loopact.robot.navigation import NavContext, make_navigation_tools
from loopact.robot.panel import LocalPanel, OperatorPanel
from loopact.robot.perception import PerceptionOptions, make_perception_tools
from loopact.robot.positioning import make_positioning_tools
from loopact.robot.profile import HardwareProfile, SiteMap
from loopact.robot.strafe import make_strafe_tools
from loopact.robot.track import make_track_tools
from loopact.tools.base import Tool
from loopact.vision.gate import ImageGate

logger = logging.getLogger(__name__)


def make_robot_tools(
    robot: Robot,
    governor: SafetyGovernor,
    profile: HardwareProfile,
    site: SiteMap,
    gate: ImageGate,
    perception: PerceptionOptions | None = None,
    nav: NavContext | None = None,
    located: ObjectMemory | None = None,
) -> list[Tool]:
    """All robot tools bound to one robot (SPEC D2-D5).

    Motion (``move_forward``, ``move_backward``, ``turn_left``, ``turn_right``, ``drive``,
    ``stop``, ``get_current_pose``; ``strafe`` on a mecanum base), ``navigation`` and
    ``distance_to`` (and ``show_map`` with a map, ``nav``), the pan-tilt tools when the robot
    has a head (``servo_move``, ``servo_init``, ``servo_shake``, ``servo_nod``) and
    perception
    (``seewhat``, ``observe_surroundings``, ``detect_objects``, ``visual_positioning``,
    ``follow_line``, ``track``, ``approach``, ``face``).
    """
    env = RobotEnv(robot=robot, governor=governor, profile=profile, site=site, gate=gate)
    if located is not None:  # shared with the session: the console's map shows them
        env.located = located
    perception = perception or PerceptionOptions()
    return [
        *make_motion_tools(env),
        *make_strafe_tools(env),
        *make_navigation_tools(env, nav),
        *make_head_tools(env),
        *make_perception_tools(env, perception),
        *make_positioning_tools(env, perception),
        *make_follow_line_tools(env, perception),
        *make_track_tools(env, perception),
        *make_approach_tools(env, perception),
    ]


@dataclass
class RobotSession:
    """A robot ready for the agent: governor running, tools bound.

    Attributes:
        robot: The robot.
        governor: Its safety governor (the only writer to the actuators).
        profile: The hardware profile.
        site: The site map.
        tools: The robot tools for the agent.
        perception: What the perception tools share (colours, the vision model).
        on_close: Called after the robot is closed, in order (e.g. shutting down the
            transport the robot was opened on).
        recentre_on_stop: Whether a stopped or preempted task should bring the camera head
            back to its home position (``robot.recentre_on_stop``, SPEC A6): the agent then
            runs :meth:`recentre_after_stop` after the stop (``AgentOptions.after_stop_hooks``).
        nav: Navigation state: the map, the backend, the last plan (issue 40).
        located: What perception has located, shared with the tools (the console's map
            shows it, issue 42).
        panel: The operator's emergency stop and teleop for every channel (issue 41): the
            governor's own, or the base-side governor's over ROS 2.
    """

    robot: Robot
    governor: SafetyGovernor
    profile: HardwareProfile
    site: SiteMap
    tools: list[Tool] = field(default_factory=list)
    perception: PerceptionOptions = field(default_factory=PerceptionOptions)
    on_close: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    recentre_on_stop: bool = False
    nav: NavContext = field(default_factory=NavContext)
    located: ObjectMemory = field(default_factory=ObjectMemory)
    panel: OperatorPanel | None = None
    _closed: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.panel is None:
            self.panel = LocalPanel(self.governor)

    async def state(self) -> dict[str, Any]:
        """``{"x_m", "y_m", "yaw_rad", "frame"}`` of the latest pose (for ``robot_state`` events).

        Raises:
            RobotError: No pose.
        """
        pose = await self.robot.get_pose()
        return {"x_m": pose.x_m, "y_m": pose.y_m, "yaw_rad": pose.yaw_rad, "frame": pose.frame}

    async def stop(self, reason: str) -> None:
        """Zero the base now and cancel running motions (:meth:`SafetyGovernor.stop_all`)."""
        await self.governor.stop_all(reason)

    async def recentre_after_stop(self, reason: str) -> None:
        """The agent's after-stop hook for :attr:`recentre_on_stop`: :meth:`recentre`."""
        await self.recentre()

    async def recentre(self, timeout_s: float = 3.0) -> bool:
        """Turn the camera head to its home position through the governor (SPEC A6, D4).

        A head motion that starts meanwhile (the next task's) takes the head over and this
        one gives way; with the emergency stop latched nothing moves. Never raises: a head
        that cannot move is logged.

        Args:
            timeout_s: How long to wait for the head to arrive (robot clock), in seconds.

        Returns:
            True when the head is at home, False otherwise (no head, given way, failed).
        """
        head = self.profile.head
        if not (head.present and self.robot.has_head):
            return False
        pan, tilt = head.home_pan_deg, head.home_tilt_deg
        gov = self.governor
        try:
            lease = await gov.begin_head("recentre")
            try:
                if not await gov.set_head(lease, pan, tilt):
                    return False
                return await gov.wait_head(lease, pan, tilt, timeout_s=timeout_s)
            finally:
                gov.end_head(lease)
        except Exception as exc:  # a closing or stopped robot: said, never raised
            logger.warning("camera not re-centred after the stop: %s", exc)
            return False

    async def close(self) -> None:
        """Stop the governor, release the robot, then run :attr:`on_close`; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.governor.close()
        finally:
            try:
                await self.robot.close()
            finally:
                for closer in self.on_close:
                    await closer()


def start_session(
    robot: Robot,
    profile: HardwareProfile,
    site: SiteMap,
    gate: ImageGate | None = None,
    perception: PerceptionOptions | None = None,
    nav: NavContext | None = None,
    estop_secret: str | None = None,
) -> RobotSession:
    """Start the safety governor of an open ``robot`` and bind the robot tools to it (X3).

    Args:
        robot: The open robot (the governor becomes the only writer to its actuators).
        profile: Its hardware profile (limits, topics).
        site: The site map (waypoints, geofence).
        gate: The image gate for every image a tool returns (default :class:`ImageGate`).
        perception: Colour ranges, thresholds and the vision model of the perception tools
            (default :class:`PerceptionOptions`: the built-in colours, no vision model).
        nav: Navigation state with the map and backend (default: no map, the go-to-pose
            controller; :func:`navigation_context`).
        estop_secret: The operator's reset secret (``robot.estop.reset_token``): a proof of
            it releases the latched emergency stop (issue 41); None: nothing but the
            Python API of this process does.

    Returns:
        The session; :meth:`RobotSession.close` stops the governor and closes the robot.
    """
    governor = SafetyGovernor(robot, profile, site, estop=EstopLatch(estop_secret))
    governor.start()
    perception = perception or PerceptionOptions()
    nav = nav or NavContext(radius_m=profile.footprint_radius_m)
    located = ObjectMemory()
    gate = gate or ImageGate()
    tools = make_robot_tools(robot, governor, profile, site, gate, perception, nav, located)
    driver = getattr(robot, "arm", None)
    if profile.arm is not None and driver is not None:
        from loopact.robot.arm.setup import arm_tools  # MuJoCo kinematics: only with an arm

        env = RobotEnv(robot, governor, profile, site, gate, located)
        tools += arm_tools(env, driver, perception.colors)
    logger.info("robot session open (profile %s, %d waypoints)", profile.name, len(site.waypoints))
    return RobotSession(robot, governor, profile, site, tools, perception, nav=nav, located=located)


def navigation_context(
    profile: HardwareProfile,
    site: SiteMap,
    map_path: str | Path | None = None,
    grid: OccupancyGrid | None = None,
) -> NavContext:
    """The navigation state of a session (issue 40): the map from ``grid`` (a simulator's
    own), else ``map_path`` (``robot.map``), else the site map's ``map:``; the planner when
    there is a map, else the go-to-pose controller.

    Raises:
        ConfigError: The map file is missing or bad (the key ``robot.map`` is named).
    """
    if grid is None:
        path = map_path if map_path is not None else site.map
        if path is not None:
            grid = read_map(path)
    return NavContext(
        backend="planner" if grid is not None else "direct",
        static_map=grid,
        radius_m=profile.footprint_radius_m,
    )

"""Open a robot with its governor, profile, site map and tools in one call (SPEC D1, X3).

::

    session = await open_robot("sim", speed=4)
    tools = session.tools            # hand these to the agent
    await session.stop("user said stop")
    await session.close()
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, cast

from loopact.errors import ConfigError
from loopact.robot.governor import SafetyGovernor
from loopact.robot.head import make_head_tools
from loopact.robot.interface import Robot
from loopact.robot.motion import RobotEnv, make_motion_tools
from loopact.robot.navigation import make_navigation_tools
from loopact.robot.perception import make_perception_tools
from loopact.robot.profile import HardwareProfile, SiteMap, load_profile, load_site
from loopact.tools.base import Tool
from loopact.vision.detect import ColorRanges
from loopact.vision.gate import ImageGate

logger = logging.getLogger(__name__)

ROBOT_KINDS = ("sim",)


def make_robot_tools(
    robot: Robot,
    governor: SafetyGovernor,
    profile: HardwareProfile,
    site: SiteMap,
    gate: ImageGate,
    colors: ColorRanges | None = None,
) -> list[Tool]:
    """All robot tools bound to one robot (SPEC D2-D5).

    Motion (``move_forward``, ``move_backward``, ``turn_left``, ``turn_right``, ``drive``,
    ``stop``, ``get_current_pose``), ``navigation``, the pan-tilt tools when the robot has a head
    (``servo_move``, ``servo_init``, ``servo_shake``, ``servo_nod``) and perception
    (``seewhat``, ``observe_surroundings``, ``detect_objects``).
    """
    env = RobotEnv(robot=robot, governor=governor, profile=profile, site=site, gate=gate)
    return [
        *make_motion_tools(env),
        *make_navigation_tools(env),
        *make_head_tools(env),
        *make_perception_tools(env, colors),
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
    """

    robot: Robot
    governor: SafetyGovernor
    profile: HardwareProfile
    site: SiteMap
    tools: list[Tool] = field(default_factory=list)
    _closed: bool = field(default=False, init=False, repr=False)

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

    async def close(self) -> None:
        """Stop the governor and release the robot; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.governor.close()
        finally:
            await self.robot.close()


async def open_robot(
    kind: str = "sim",
    profile: str = "sim",
    site: str = "sim_room",
    speed: float = 1.0,
    gate: ImageGate | None = None,
) -> RobotSession:
    """Start a robot, its governor and its tools (SPEC D1, D6, X3).

    Args:
        kind: ``sim`` (the embedded MuJoCo simulator).
        profile: Hardware profile name or YAML path.
        site: Site map name or YAML path.
        speed: Simulation speed (simulated seconds per wall second), ``sim`` only.
        gate: The image gate (default :class:`ImageGate` defaults).

    Raises:
        ConfigError: Unknown kind, profile or site, or a bad file (the key is named).
        RobotError: The robot could not start.
    """
    if kind not in ROBOT_KINDS:
        raise ConfigError(
            f"robot.kind {kind!r} is not supported; valid values: {', '.join(ROBOT_KINDS)}",
            key="robot.kind",
        )
    prof = load_profile(profile)
    site_map = load_site(site)
    from loopact.sim import SimRobot

    # cast: SimRobot declares ``clock: SimClock``, which a mutable Protocol attribute rejects.
    robot = cast(Robot, await SimRobot.create(speed=speed))
    governor = SafetyGovernor(robot, prof, site_map)
    governor.start()
    tools = make_robot_tools(robot, governor, prof, site_map, gate or ImageGate())
    logger.info("robot %s open (profile %s, site %s)", kind, prof.name, site)
    return RobotSession(robot, governor, prof, site_map, tools)

"""The simulated robot opens itself as a robot session (SPEC D1, D6, X3).

::

    session = await open_sim(speed=4)
    tools = session.tools            # hand these to the agent
    await session.close()
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import cast

from loopact.robot.interface import Robot
from loopact.robot.perception import PerceptionOptions
from loopact.robot.profile import load_profile, load_site
from loopact.robot.session import RobotSession, navigation_context, start_session
from loopact.sim.robot import SimRobot
from loopact.sim.scenarios import get_scenario
from loopact.vision.gate import ImageGate

logger = logging.getLogger(__name__)


async def open_sim(
    profile: str = "sim",
    site: str = "sim_room",
    speed: float = 1.0,
    gate: ImageGate | None = None,
    scenario: str = "default",
    sim_log: Path | None = None,
    perception: PerceptionOptions | None = None,
    map_path: Path | None = None,
) -> RobotSession:
    """Start the MuJoCo robot, its safety governor and its tools (SPEC D1, D6, X3).

    The profile and the site are loaded first, so that a wrong name fails before MuJoCo starts.

    Args:
        profile: Hardware profile name or YAML path.
        site: Site map name or YAML path (``sim_room``, the default, means the scenario's
            own: ``flat`` for the flat scenarios).
        speed: Simulated seconds per wall second (``float("inf")``: as fast as possible).
        gate: The image gate (default :class:`~loopact.vision.gate.ImageGate` defaults).
        scenario: ``default``, ``moving-target``, ``flat`` or ``flat-blocked``
            (:mod:`loopact.sim.scenarios`).
        sim_log: Write the simulator's ground-truth poses here (JSON Lines,
            :mod:`loopact.sim.simlog`), or None.
        perception: Options of the perception tools (colours, vision model).
        map_path: A map_server YAML to navigate on instead of the simulator's own map
            (drawn from its geometry, :func:`loopact.sim.worldmap.world_map`).

    Raises:
        ConfigError: Unknown profile, site or scenario, a bad file (the key is named), or a
            speed that is not positive.
        RobotError: MuJoCo or the GL context is unavailable.
        OSError: The sim log cannot be created.
    """
    from loopact.sim.worldmap import world_map

    sc = get_scenario(scenario)
    # a scenario brings its robot and site (the arm scene: sim_arm, arm_room; the flat: flat)
    prof = load_profile(sc.profile if profile == "sim" else profile)
    site_map = load_site(sc.site if site == "sim_room" else site)
    holonomic = prof.drive == "mecanum"
    nav = navigation_context(prof, site_map, map_path, None if map_path else world_map(sc))
    # cast: SimRobot declares ``clock: SimClock``, which a mutable Protocol attribute rejects.
    robot = cast(
        Robot,
        await SimRobot.create(speed=speed, scenario=scenario, sim_log=sim_log, holonomic=holonomic),
    )
    try:
        session = start_session(robot, prof, site_map, gate, perception, nav)
    except BaseException:
        await robot.close()
        raise
    logger.info("simulated robot open (profile %s, site %s, speed %g)", prof.name, site, speed)
    return session

"""The body a run drives: the simulator, a robot over ROS 2, or none (SPEC D1, D6, X3).

Each body opens itself (:func:`loopact.sim.open_sim`,
:func:`loopact.robot.ros2_robot.open_ros2_session`); this module only picks one by
``robot.kind`` and describes it for the system prompt and the terminal's welcome line.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopact.config import Config
from loopact.errors import ConfigError
from loopact.robot.perception import PerceptionOptions
from loopact.robot.session import RobotSession
from loopact.vision.detect import DEFAULT_HSV, ColorRanges
from loopact.vision.gate import ImageGate

if TYPE_CHECKING:
    from loopact.nodes.ros2.connector import Ros2Connector

ROBOT_KINDS = ("sim", "ros2")
"""Robots :func:`open_robot` opens."""


async def open_robot(
    kind: str = "sim",
    profile: str = "sim",
    site: str = "sim_room",
    speed: float = 1.0,
    gate: ImageGate | None = None,
    scenario: str = "default",
    sim_log: Path | None = None,
    perception: PerceptionOptions | None = None,
    agent_name: str = "loopact",
    map_path: Path | None = None,
) -> RobotSession:
    """Start a robot, its safety governor and its tools (SPEC D1, D6, X3); public API.

    Args:
        kind: ``sim`` (the embedded MuJoCo simulator) or ``ros2`` (a robot on ROS 2 topics
            behind the base-side governor, docs/ros2.md; its ROS 2 node is shut down when
            the session closes).
        profile: Hardware profile name or YAML path.
        site: Site map name or YAML path.
        speed: Simulation speed (simulated seconds per wall second), ``sim`` only.
        gate: The image gate (default :class:`ImageGate` defaults).
        scenario: Simulator scenario (``default``, ``moving-target``, ``flat``,
            ``flat-blocked``), ``sim`` only.
        sim_log: Ground-truth pose log (JSON Lines) of the simulator, ``sim`` only.
        perception: Options of the perception tools (:func:`perception_options`).
        agent_name: The agent's name: prefix of its ROS 2 topics, ``ros2`` only.
        map_path: A Nav2 map_server YAML to plan on (``robot.map``; issue 40); the
            simulator draws its own otherwise.

    Raises:
        ConfigError: Unknown kind, profile, site or scenario, or a bad file (the key is named).
        RobotError: The robot could not start.
        NodeError: ROS 2 is unavailable (``ros2``).
        OSError: The sim log cannot be created.
    """
    if kind not in ROBOT_KINDS:
        raise ConfigError(
            f"robot.kind {kind!r} is not supported; valid values: {', '.join(ROBOT_KINDS)}",
            key="robot.kind",
        )
    if kind == "ros2":
        from loopact.nodes.ros2.connector import Ros2Connector

        connector = Ros2Connector(f"{agent_name}_agent")
        try:
            session = await _open_ros2(
                connector, profile, site, agent_name, perception, gate, map_path
            )
        except BaseException:
            await connector.shutdown()
            raise
        session.on_close.append(connector.shutdown)
        return session
    from loopact.sim import open_sim

    return await open_sim(
        profile,
        site,
        speed=speed,
        gate=gate,
        scenario=scenario,
        sim_log=sim_log,
        perception=perception,
        map_path=map_path,
    )


async def _open_ros2(
    connector: Ros2Connector,
    profile: str,
    site: str,
    agent_name: str,
    perception: PerceptionOptions | None,
    gate: ImageGate | None = None,
    map_path: Path | None = None,
) -> RobotSession:
    from loopact.robot.ros2_robot import open_ros2_session

    return await open_ros2_session(
        connector, profile, site, agent_name, perception=perception, gate=gate, map_path=map_path
    )


def image_gate(cfg: Config) -> ImageGate:
    """The image gate the config asks for (SPEC G1): ``vision.max_side_px`` and
    ``vision.blur_threshold``; every image a run hands to a model passes one."""
    return ImageGate(max_side_px=cfg.vision.max_side_px, blur_threshold=cfg.vision.blur_threshold)


def perception_options(cfg: Config) -> PerceptionOptions:
    """The perception tools' options from the ``vision`` section (SPEC D5, G2; issue 15).

    Colours from ``vision.colors`` are added to the built-in ones (a name given there replaces
    the built-in range of that name). The vision model is attached later, once the model is
    known (:func:`loopact.app.vision.attach_vision`).
    """
    ranges = dict(DEFAULT_HSV)
    for name, given in cfg.vision.colors.items():
        ranges[name.strip().lower()] = [(lo, hi) for lo, hi in given]
    return PerceptionOptions(
        colors=ColorRanges(ranges=ranges),
        min_confidence=cfg.vision.min_confidence,
        line_lost_grace_s=cfg.vision.line_lost_grace_s,
        line_speed_mps=cfg.vision.line_speed_mps,
        track_distance_m=cfg.vision.track_distance_m,
    )


@dataclass(frozen=True)
class Body:
    """The robot of a run, or none.

    Attributes:
        kind: ``sim``, ``ros2`` or ``none``.
        session: The robot session (governor, tools), None without a robot.
        connector: The ROS 2 connector when the robot is on ROS 2 (nodes attach to it too).
    """

    kind: str
    session: RobotSession | None = None
    connector: Ros2Connector | None = None

    @property
    def label(self) -> str:
        """``"sim (sim)"``, ``"ros2 (turtlebot4)"`` or ``"none"``, for the welcome line."""
        if self.session is None:
            return "none"
        return f"{self.kind} ({self.session.profile.name})"

    def prompt_info(self) -> dict[str, Any] | None:
        """What the system prompt says about the robot (profile, waypoints, limits), or None."""
        if self.session is None:
            return None
        profile = self.session.profile
        return {
            "profile": profile.name,
            "waypoints": sorted(self.session.site.waypoints),
            "max_linear_mps": profile.limits.max_linear_mps,
            "max_angular_dps": profile.limits.max_angular_dps,
        }


async def open_body(cfg: Config, stack: AsyncExitStack) -> Body:
    """Open the robot ``cfg.robot`` names; ``stack`` closes it (and its connector).

    Raises:
        ConfigError: Unknown profile or site.
        RobotError: The robot could not start.
        NodeError: ROS 2 is unavailable (``robot.kind: ros2``).
    """
    kind = cfg.robot.kind
    if kind != "sim" and (cfg.robot.sim_log is not None or cfg.robot.scenario != "default"):
        raise ConfigError(
            "robot.sim_log and robot.scenario apply to the simulator only (--robot sim); "
            f"this run drives robot.kind {kind!r}",
            key="robot.sim_log" if cfg.robot.sim_log is not None else "robot.scenario",
        )
    if kind == "none":
        return Body(kind)
    connector = None
    if kind == "ros2":
        # Issue 4: the robot over ROS 2 topics behind the base-side governor; the nodes
        # attach to the same connector, so it stays open until the stack closes.
        from loopact.nodes.ros2.connector import Ros2Connector

        connector = Ros2Connector(f"{cfg.agent.name}_agent")
        stack.push_async_callback(connector.shutdown)
        session = await _open_ros2(
            connector,
            cfg.robot.profile,
            cfg.robot.site,
            cfg.agent.name,
            perception_options(cfg),
            image_gate(cfg),
            cfg.robot.map,
        )
    else:
        try:
            session = await open_robot(
                kind,
                cfg.robot.profile,
                cfg.robot.site,
                speed=cfg.robot.sim_speed,
                scenario=cfg.robot.scenario,
                sim_log=cfg.robot.sim_log,
                perception=perception_options(cfg),
                gate=image_gate(cfg),
                map_path=cfg.robot.map,
            )
        except OSError as exc:
            raise ConfigError(
                f"robot.sim_log {cfg.robot.sim_log} cannot be written: {exc.strerror or exc}",
                key="robot.sim_log",
            ) from None
    stack.push_async_callback(session.close)
    session.recentre_on_stop = cfg.robot.recentre_on_stop  # SPEC A6
    return Body(kind, session, connector)

"""Simulator scenarios (``--scenario NAME``; SPEC D6, issue 15).

A scenario adds movers to the fixed room of :mod:`loopact.sim.world`: objects that move along a
known path, driven kinematically by the physics thread (they never collide: the governor's depth
check still sees them). Each path is a pure function of simulated time, so a test or a benchmark
knows where every mover was at any instant (the ground truth, also in ``--sim-log``).

- ``default``: the room as it is, nothing moves.
- ``moving-target``: a cyan ball (radius 0.1 m) goes round an ellipse in front of the robot's
  start pose at up to 0.3 m/s; at ``t = 0`` it is 2.5 m straight ahead, in view.
- ``flat``: another world, a flat of five rooms with doorways and furniture
  (:mod:`loopact.sim.flat`; issue 40), with the site map ``flat``.
- ``flat-blocked``: the flat with a box standing in the bedroom's doorway.
- ``arm``: a mobile manipulator (a mecanum base with an arm, profile ``sim_arm``) at a low
  table with three cubes, a cylinder, a bin and a tray (:mod:`loopact.sim.arm_scene`;
  issue 43).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from loopact.errors import ConfigError


@dataclass(frozen=True)
class EllipsePath:
    """A closed elliptical path on the floor, run at constant angular rate.

    Position at time ``t``: ``(cx + ax cos(w t + phase), cy + ay sin(w t + phase))`` with
    ``w = 2 pi / period_s``. Its speed peaks at ``w * max(ax, ay)``.

    Attributes:
        center_m: Centre ``(x, y)`` in metres (world frame).
        semi_axes_m: Semi-axes ``(ax, ay)`` along x and y, metres.
        period_s: One round, simulated seconds.
        phase_rad: Angle at ``t = 0``, radians.
    """

    center_m: tuple[float, float]
    semi_axes_m: tuple[float, float]
    period_s: float
    phase_rad: float = 0.0

    @property
    def max_speed_mps(self) -> float:
        """The highest speed along the path, m/s."""
        return 2 * math.pi / self.period_s * max(self.semi_axes_m)

    def position(self, t_s: float) -> tuple[float, float]:
        """Where the mover is at simulated time ``t_s`` (seconds): ``(x_m, y_m)``."""
        a = 2 * math.pi * t_s / self.period_s + self.phase_rad
        return (
            self.center_m[0] + self.semi_axes_m[0] * math.cos(a),
            self.center_m[1] + self.semi_axes_m[1] * math.sin(a),
        )

    def describe(self) -> dict[str, Any]:
        """JSON-able description (metres, seconds, degrees)."""
        return {
            "kind": "ellipse",
            "center_m": {"x_m": self.center_m[0], "y_m": self.center_m[1]},
            "semi_axes_m": {"x_m": self.semi_axes_m[0], "y_m": self.semi_axes_m[1]},
            "period_s": self.period_s,
            "phase_deg": round(math.degrees(self.phase_rad), 3),
            "max_speed_mps": round(self.max_speed_mps, 4),
            "formula": "x = cx + ax*cos(2*pi*t/period + phase), y = cy + ay*sin(...)",
        }


@dataclass(frozen=True)
class Mover:
    """A sphere moved along a path (the MJCF body ``mover_<name>``).

    Attributes:
        name: Identifier (``cyan_ball``).
        colour: Colour word.
        radius_m: Sphere radius in metres (it rolls on the floor: centre at this height).
        rgba: Colour, 0..1.
        path: Where it is at any simulated time.
    """

    name: str
    colour: str
    radius_m: float
    rgba: tuple[float, float, float, float]
    path: EllipsePath


@dataclass(frozen=True)
class Scenario:
    """A named set-up of the simulated world.

    Attributes:
        name: ``default``, ``moving-target``, ``flat``, ``flat-blocked`` or ``arm``.
        summary: One line for people.
        movers: Objects that move along known paths.
        world: ``room`` (:mod:`loopact.sim.world`) or ``flat`` (:mod:`loopact.sim.flat`).
        site: The packaged site map of that world (its places and geofence; ``arm_room``:
            the room with the table as a surface).
        blocked: The flat with a box in the bedroom's doorway.
        arm: The arm scene: the robot carries an arm, a table with objects stands before it.
        profile: The hardware profile the scenario's robot has (``sim``; ``sim_arm``).
    """

    name: str
    summary: str
    movers: tuple[Mover, ...] = field(default_factory=tuple)
    world: str = "room"
    site: str = "sim_room"
    blocked: bool = False
    arm: bool = False
    profile: str = "sim"


SCENARIOS: dict[str, Scenario] = {
    "default": Scenario("default", "the room as built: nothing moves"),
    "moving-target": Scenario(
        "moving-target",
        "a cyan ball circles an ellipse in front of the robot at up to 0.3 m/s",
        (
            Mover(
                "cyan_ball",
                "cyan",
                0.1,
                (0.0, 0.8, 0.8, 1.0),
                EllipsePath(center_m=(2.0, 0.0), semi_axes_m=(0.5, 1.2), period_s=26.0),
            ),
        ),
    ),
    "flat": Scenario(
        "flat",
        "a flat: hallway, living room, bedroom, kitchen, bathroom, doorways 0.8-1.0 m, furniture",
        world="flat",
        site="flat",
    ),
    "flat-blocked": Scenario(
        "flat-blocked",
        "the flat with a box standing in the bedroom's doorway",
        world="flat",
        site="flat",
        blocked=True,
    ),
    "arm": Scenario(
        "arm",
        "a mecanum robot with an arm at a low table: three cubes, a cylinder, a bin and a tray",
        arm=True,
        profile="sim_arm",
        site="arm_room",
    ),
}
"""Every scenario by name."""


def get_scenario(name: str) -> Scenario:
    """The scenario called ``name``.

    Raises:
        ConfigError: Unknown name (key ``robot.scenario``); the message lists the valid ones.
    """
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ConfigError(
            f"unknown scenario {name!r}; valid scenarios: {', '.join(SCENARIOS)}",
            key="robot.scenario",
        ) from None

"""A consistent copy of the simulated robot's state at one instant (SPEC D6).

:class:`SimState` is what the physics thread publishes after every control tick: the robot's
true pose and speeds, the head's angles, the scenario's movers and, in the arm scene
(issue 43), its free objects and the arm's ground truth. The renderer, the sim log and the
graders read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from loopact.sim.arm_sim import ArmTruth


@dataclass(frozen=True)
class SimState:
    """A consistent copy of the simulated robot's state at one instant.

    Attributes:
        stamp_s: Simulated time in seconds.
        qpos: All joint positions (a private copy), for rendering.
        x_m: Base x in metres (world = odom frame).
        y_m: Base y in metres.
        yaw_rad: Base heading in radians, in (-pi, pi].
        linear_mps: Forward speed of the base in m/s (body frame).
        angular_radps: Yaw rate in rad/s, counter-clockwise positive.
        pan_rad: Head pan in radians, left positive.
        tilt_rad: Head tilt in radians, down positive.
        movers: The scenario's moving objects, name -> ``(x_m, y_m)``.
        lateral_mps: Sideways speed of the base in m/s, left positive (body frame).
        objects: The arm scene's free objects, name -> ``(x_m, y_m, z_m)`` (world).
        arm: The arm's ground truth (the arm scene), or None.
    """

    stamp_s: float
    qpos: npt.NDArray[np.float64]
    x_m: float
    y_m: float
    yaw_rad: float
    linear_mps: float
    angular_radps: float
    pan_rad: float
    tilt_rad: float
    movers: dict[str, tuple[float, float]] = field(default_factory=dict)
    lateral_mps: float = 0.0
    objects: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    arm: ArmTruth | None = None

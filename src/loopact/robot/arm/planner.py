"""Planning the arm's motions: joint trajectories for a pick, a place and a move (issue 43).

Pure functions of the kinematics and the rules: no robot, no waiting. A pick is planned as
the moves a person would script, each checked whole by :class:`~loopact.robot.arm.rules.ArmRules`
before anything moves:

1. *transit* from where the arm is to above the object (a joint-space move; through the
   ready pose when the direct one would hit something);
2. *descend* straight down to the grasp (a Cartesian line, inverse kinematics every
   :data:`LINE_STEP_M`);
3. close the gripper (the tools do that), then *lift* straight up;
4. *stow*: back to the stowed pose with the object (the base drives with the arm there).

A place is the same in reverse: transit above the target, descend, open, rise, stow.
Trajectories are timed with a trapezoidal speed profile along the path at
:data:`SPEED_FRACTION` of the joints' speed limit. Lengths in metres, angles in radians.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from loopact.errors import SafetyError
from loopact.i18n import Phrase
from loopact.robot.arm.driver import JointTrajectory, TrajectoryPoint
from loopact.robot.arm.kinematics import ArmKinematics, down_rotation
from loopact.robot.arm.rules import ArmRules, Held, Scene

Vec = npt.NDArray[np.float64]

SPEED_FRACTION = 0.8
"""Planned joint speeds as a fraction of ``arm.max_joint_speed_radps``."""
SLOW_FRACTION = 0.35
"""The same near an object (descend, lift, place)."""
ACCEL_PER_S = 2.0
"""Acceleration along the path, in fractions of the speed limit per second."""
LINE_STEP_M = 0.01
"""Cartesian lines are solved every this many metres."""
JOINT_STEP_RAD = 0.05
"""Joint-space moves get a point every this many radians of the largest joint's motion."""
APPROACH_M = 0.06
"""The fingertips stop this far above an object (or a place) before going straight down."""
LIFT_M = 0.08
"""A grasped object is lifted this far above where it stood."""
GRASP_ABOVE_CENTRE_M = 0.005
"""The grasp point sits this far above the object's centre."""
SURFACE_GAP_M = 0.002
"""Extra room kept between the fingertips and the surface an object stands on."""


class PlanError(SafetyError):
    """No safe plan: the :class:`~loopact.i18n.Phrase` says why (out of reach, a rule)."""


@dataclass(frozen=True)
class Grasp:
    """Where to grasp an object: a top-down grasp.

    Attributes:
        centre_m: The object's centre in ``base_link``, metres.
        size_m: Its extents ``(across the grasp, along it, height)``, metres.
        yaw_rad: The direction the fingers close along, radians (in ``base_link``).
        surface_z_m: Height of what it stands on, metres.
        name: What it is, for the messages (``red cube``).
    """

    centre_m: tuple[float, float, float]
    size_m: tuple[float, float, float]
    yaw_rad: float
    surface_z_m: float
    name: str = "object"


@dataclass(frozen=True)
class Stage:
    """One checked motion of a plan.

    Attributes:
        name: ``transit``, ``descend``, ``lift``, ``stow``, ``rise``.
        trajectory: The joint trajectory (from the end of the stage before).
        held: What the gripper holds during it, or None.
        gap_m: The gripper's gap during it, metres.
    """

    name: str
    trajectory: JointTrajectory
    held: Held | None
    gap_m: float

    @property
    def end_rad(self) -> Vec:
        """The joint angles it ends at."""
        return np.array(self.trajectory.points[-1].positions_rad)


class Planner:
    """Plans the arm's motions (see the module docstring).

    Args:
        kin: The arm's kinematics.
        rules: The arm's rules (every stage is checked with them).
    """

    def __init__(self, kin: ArmKinematics, rules: ArmRules) -> None:
        self.kin = kin
        self.rules = rules
        self.cfg = rules.cfg
        self.home: Vec = np.array(self.cfg.home_rad, dtype=float)
        self.ready: Vec = self._ready_pose()

    def _ready_pose(self) -> Vec:
        """A pose above the work area in front of the robot, gripper down (the seed for every
        target in front, and the waypoint when a direct move would hit something)."""
        sx, sy, sz = self.kin.shoulder_m
        target = np.array([sx + 0.55 * self.kin.reach_m, sy, sz + 0.05])
        res = self.kin.ik(target, down_rotation(math.pi / 2), [np.zeros(self.kin.n)])
        return res.q

    # ---- building blocks ------------------------------------------------------------------

    def natural_yaw(self, p: Sequence[float]) -> float:
        """The closing direction that needs no wrist roll at ``p``: across the reach."""
        sx, sy, _ = self.kin.shoulder_m
        return math.atan2(p[1] - sy, p[0] - sx) + math.pi / 2

    def solve(self, p: Sequence[float], yaw_rad: float, seeds: list[Vec]) -> Vec:
        """Joint angles putting the grasp point at ``p`` pointing down, closing along
        ``yaw_rad`` (or that turned by a half turn, whichever needs less wrist roll).

        Raises:
            PlanError: Out of reach (the phrase gives the distance and the reach).
        """
        target = np.asarray(p, dtype=float)
        best = None
        for yaw in (yaw_rad, yaw_rad + math.pi):
            res = self.kin.ik(target, down_rotation(yaw), [*seeds, self.ready])
            if res.ok and (best is None or abs(res.q[-1]) < abs(best[-1])):
                best = res.q
        if best is None:
            raise PlanError(self._out_of_reach(target))
        return best

    def _out_of_reach(self, p: Vec) -> Phrase:
        """The refusal of a point ``p`` (metres, ``base_link``) the arm cannot reach."""
        dist = float(np.linalg.norm(p - self.kin.shoulder_m))
        x, y, z = (float(v) for v in p)
        return Phrase(
            "arm.out_of_reach", x_m=x, y_m=y, z_m=z, distance_m=dist, reach_m=self.kin.reach_m
        )

    def line(self, q0: Vec, p0: Vec, p1: Vec, yaw_rad: float) -> list[Vec]:
        """Joint angles along the straight line ``p0 -> p1`` (gripper down), from ``q0``.

        Raises:
            PlanError: A point of the line is out of reach.
        """
        n = max(1, math.ceil(float(np.linalg.norm(p1 - p0)) / LINE_STEP_M))
        path = [q0]
        r = down_rotation(yaw_rad)
        for i in range(1, n + 1):
            p = p0 + (p1 - p0) * (i / n)
            res = self.kin.ik(p, r, [path[-1]])
            if not res.ok:
                raise PlanError(self._out_of_reach(p))
            path.append(res.q)
        return path

    def timed(self, path: list[Vec], fraction: float = SPEED_FRACTION) -> JointTrajectory:
        """Time a path of joint angles (its first row is where the arm is: not sent).

        A trapezoidal profile along the path, in units of "seconds at full speed" of the
        slowest joint of each step; speeds at the points by central differences.
        """
        q = np.array(_dense(path))
        vmax = self.cfg.max_joint_speed_radps
        step = np.max(np.abs(np.diff(q, axis=0)), axis=1) / vmax
        s = np.concatenate([[0.0], np.cumsum(step)])
        t = _trapezoid_times(s, fraction, ACCEL_PER_S)
        vel = np.zeros_like(q)
        if len(q) > 2:
            vel[1:-1] = (q[2:] - q[:-2]) / (t[2:] - t[:-2])[:, None]
        points = tuple(
            TrajectoryPoint(tuple(map(float, q[k])), tuple(map(float, vel[k])), float(t[k]))
            for k in range(1, len(q))
        )
        return JointTrajectory(tuple(self.cfg.joints), points)

    def stage(
        self,
        name: str,
        path: list[Vec],
        held: Held | None,
        gap_m: float,
        scene: Scene,
        fraction: float = SPEED_FRACTION,
    ) -> Stage:
        """A timed, checked stage.

        Raises:
            PlanError: The stage breaks a rule (the phrase names it).
        """
        traj = self.timed(path, fraction)
        problem = self.rules.check_trajectory(traj, path[0], gap_m, held, scene)
        if problem is not None:
            raise PlanError(problem)
        return Stage(name, traj, held, gap_m)

    def transit(
        self, name: str, q0: Vec, q1: Vec, held: Held | None, gap_m: float, scene: Scene
    ) -> list[Stage]:
        """A joint-space move ``q0 -> q1``, through the ready pose when the direct one breaks a
        rule (the direct move's problem is raised when both do).

        Raises:
            PlanError: Neither way is safe.
        """
        try:
            return [self.stage(name, [q0, q1], held, gap_m, scene)]
        except PlanError as direct:
            try:
                return [
                    self.stage(name, [q0, self.ready], held, gap_m, scene),
                    self.stage(name, [self.ready, q1], held, gap_m, scene),
                ]
            except PlanError:
                raise direct from None

    # ---- plans ----------------------------------------------------------------------------

    def grasp_height(self, g: Grasp) -> float:
        """Where the grasp point goes: a little above the centre, the fingertips clear of the
        surface (by the rules' clearance)."""
        floor = g.surface_z_m + self.cfg.clearance_m + self.kin.beyond_tcp_m + SURFACE_GAP_M
        return max(g.centre_m[2] + GRASP_ABOVE_CENTRE_M, floor)

    def pick(self, q0: Vec, g: Grasp, open_gap_m: float, scene: Scene) -> dict[str, list[Stage]]:
        """The stages of a pick from ``q0``: ``approach`` (transit + descend), then, after the
        gripper closes, ``lift`` and ``stow``.

        Raises:
            PlanError: Out of reach, or no safe way (the phrase says which rule).
        """
        cx, cy, cz = g.centre_m
        z_grasp = self.grasp_height(g)
        top = cz + g.size_m[2] / 2
        above = np.array([cx, cy, max(top + APPROACH_M + self.kin.beyond_tcp_m, z_grasp)])
        at = np.array([cx, cy, z_grasp])
        q_above = self.solve(above.tolist(), g.yaw_rad, [q0])
        yaw = _yaw_of(self.kin, q_above)
        approach = self.transit("transit", q0, q_above, None, open_gap_m, scene)
        down = self.line(q_above, above, at, yaw)
        approach.append(self.stage("descend", down, None, open_gap_m, scene, SLOW_FRACTION))
        held = Held(
            g.name,
            (g.size_m[2] / 2, g.size_m[0] / 2, g.size_m[1] / 2),
            (cz - z_grasp, 0.0, 0.0),
        )
        lifted = np.array([cx, cy, max(z_grasp + LIFT_M, above[2])])
        up = self.line(down[-1], at, lifted, yaw)
        lift = [self.stage("lift", up, held, 0.0, scene, SLOW_FRACTION)]
        stow = self.transit("stow", up[-1], self.home, held, 0.0, scene)
        return {"approach": approach, "lift": lift, "stow": stow}

    def place(
        self, q0: Vec, release_m: Sequence[float], yaw_rad: float, held: Held, gap_m: float,
        open_gap_m: float, scene: Scene,
    ) -> dict[str, list[Stage]]:  # fmt: skip
        """The stages of a place from ``q0``: ``approach`` (transit above, descend to the
        release point with the object), then, after the gripper opens, ``leave`` (rise and
        stow).

        Args:
            q0: Where the arm is (the stowed pose, usually).
            release_m: Where the grasp point is when the gripper opens, ``base_link``.
            yaw_rad: The closing direction there (None-like values: use :meth:`natural_yaw`).
            held: What the gripper holds.
            gap_m: The gripper's gap while it holds it.
            open_gap_m: The gap it opens to.
            scene: Where the robot is.

        Raises:
            PlanError: Out of reach, or no safe way.
        """
        at = np.asarray(release_m, dtype=float)
        above = at + np.array([0.0, 0.0, APPROACH_M])
        q_above = self.solve(above, yaw_rad, [q0])
        yaw = _yaw_of(self.kin, q_above)
        approach = self.transit("transit", q0, q_above, held, gap_m, scene)
        down = self.line(q_above, above, at, yaw)
        approach.append(self.stage("descend", down, held, gap_m, scene, SLOW_FRACTION))
        up = self.line(down[-1], at, above, yaw)
        leave = [self.stage("rise", up, None, open_gap_m, scene, SLOW_FRACTION)]
        leave += self.transit("stow", up[-1], self.home, None, open_gap_m, scene)
        return {"approach": approach, "leave": leave}

    def move(self, q0: Vec, p: Sequence[float], yaw_rad: float, held: Held | None,
             gap_m: float, scene: Scene) -> list[Stage]:  # fmt: skip
        """A move of the grasp point to ``p`` (gripper down), from ``q0``.

        Raises:
            PlanError: Out of reach, or no safe way.
        """
        q1 = self.solve(p, yaw_rad, [q0])
        problem = self.rules.check_config(q1, gap_m, held, scene)  # the target itself first
        if problem is not None:
            raise PlanError(problem)
        return self.transit("move", q0, q1, held, gap_m, scene)

    def home_stages(self, q0: Vec, held: Held | None, gap_m: float, scene: Scene) -> list[Stage]:
        """Back to the stowed pose from ``q0``.

        Raises:
            PlanError: No safe way.
        """
        return self.transit("stow", q0, self.home, held, gap_m, scene)


def _yaw_of(kin: ArmKinematics, q: Vec) -> float:
    """The closing direction of the gripper at ``q`` (its y axis's heading)."""
    _, r = kin.fk(q)
    return math.atan2(r[1, 1], r[0, 1])


def _dense(path: list[Vec]) -> list[Vec]:
    """``path`` with points added so that no joint moves more than :data:`JOINT_STEP_RAD`
    between two of them."""
    out = [np.asarray(path[0], dtype=float)]
    for a, b in zip(path[:-1], path[1:], strict=False):
        n = max(1, math.ceil(float(np.max(np.abs(b - a))) / JOINT_STEP_RAD))
        out.extend(a + (b - a) * (i / n) for i in range(1, n + 1))
    return out


def _trapezoid_times(s: Vec, v: float, a: float) -> Vec:
    """Times at path positions ``s`` (from 0 to ``S``) of a rest-to-rest trapezoid with top
    speed ``v`` and acceleration ``a`` (a triangle when ``S`` is short)."""
    total = float(s[-1])
    if total <= 0:
        return np.linspace(0.0, 0.1, len(s))
    t_acc = v / a
    s_acc = 0.5 * a * t_acc**2
    if 2 * s_acc > total:  # triangle
        t_acc = math.sqrt(total / a)
        s_acc = total / 2
        v = a * t_acc
    cruise = (total - 2 * s_acc) / v
    out = np.empty_like(s)
    for k, x in enumerate(s):
        if x <= s_acc:
            out[k] = math.sqrt(2 * x / a)
        elif x <= total - s_acc:
            out[k] = t_acc + (x - s_acc) / v
        else:
            rest = max(total - x, 0.0)
            out[k] = 2 * t_acc + cruise - math.sqrt(2 * rest / a)
    # strictly increasing (two points at one time would make no trajectory)
    for k in range(1, len(out)):
        out[k] = max(out[k], out[k - 1] + 1e-3)
    return out

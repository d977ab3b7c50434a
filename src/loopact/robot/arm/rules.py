"""The arm's safety rules as pure checks of a planned path (issue 43, SPEC C5, X3).

:class:`ArmRules` says what is wrong with a joint trajectory before anything moves, checked
on the planned path (every point, and between points every :data:`SAMPLE_RAD` of joint motion,
as the controller interpolates):

- every value finite, every joint inside its limits, no joint faster than
  ``arm.max_joint_speed_radps``;
- every part of the arm (the spheres of :meth:`ArmKinematics.spheres`) and of what it holds:
  above the floor, above every surface of the site it is over (a table), out of the robot's
  own body (``arm.keep_out``), inside the arm's workspace box, and over the site's geofence
  (grown by the robot's footprint: the arm reaches no further than the robot may go);
- a gripper command: a gap the gripper can make, no more force than ``arm.max_grip_force_n``.

A problem is a :class:`~loopact.i18n.Phrase` (``arm.*``) naming the part, the rule and the
numbers; None is fine. Nothing here moves or waits: the fuzz test runs the rules on 10,000
commands in seconds. Lengths in metres, angles in radians (degrees in the phrases).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from loopact.i18n import Phrase
from loopact.robot.arm.driver import JointTrajectory
from loopact.robot.arm.kinematics import ArmKinematics
from loopact.robot.profile import ArmConfig, KeepOut, SiteMap, Surface

Vec = npt.NDArray[np.float64]

SAMPLE_RAD = 0.01
"""The largest joint motion between two checked configurations, radians."""
SPEED_SLACK = 1.001
"""Rounding allowed over the speed limit."""
HELD_TOUCH_M = 0.004
"""How far below a surface's top a held object's corner may reach (resting on it), metres."""


@dataclass(frozen=True)
class Held:
    """What the gripper holds, as a box in the gripper's frame.

    Attributes:
        name: What it is (``red cube``).
        half_m: Half-sizes along the gripper's x (approach), y (closing) and z, metres.
        offset_m: Its centre in the gripper's frame (from the grasp point), metres.
    """

    name: str
    half_m: tuple[float, float, float]
    offset_m: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def corners(self, p: Vec, r: Vec) -> Vec:
        """The box's 8 corners in ``base_link`` with the grasp point at ``p``, turned ``r``."""
        hx, hy, hz = self.half_m
        local = np.array(
            [[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
        ) + np.array(self.offset_m)
        out: Vec = p + local @ r.T
        return out


@dataclass(frozen=True)
class Where:
    """Where the robot is, for the rules that live in the site's frame.

    Attributes:
        x_m: The base's x in the site's frame, metres.
        y_m: Its y.
        yaw_rad: Its heading, radians.
    """

    x_m: float = 0.0
    y_m: float = 0.0
    yaw_rad: float = 0.0

    def to_site(self, pts: Vec) -> Vec:
        """``base_link`` points ``(N, 3)`` in the site's frame (x, y only: ``(N, 2)``)."""
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        out: Vec = np.column_stack(
            [
                self.x_m + c * pts[:, 0] - s * pts[:, 1],
                self.y_m + s * pts[:, 0] + c * pts[:, 1],
            ]
        )
        return out


@dataclass(frozen=True)
class Scene:
    """What the rules know around the arm: where the robot is and the site.

    Attributes:
        where: The robot's pose in the site's frame.
        site: The site map (surfaces, geofence), or None.
        footprint_m: The robot's footprint radius (the geofence grows by it), metres.
    """

    where: Where = field(default_factory=Where)
    site: SiteMap | None = None
    footprint_m: float = 0.17


def _part(name: str) -> str:
    return name.removeprefix("arm_").replace("_geom", "").replace("_", " ")


class ArmRules:
    """The arm's rules (see the module docstring).

    Args:
        kin: The arm's kinematics.
        cfg: The profile's ``arm`` section.
    """

    def __init__(self, kin: ArmKinematics, cfg: ArmConfig) -> None:
        self.kin = kin
        self.cfg = cfg
        m = kin.model
        self._part_of = [
            _part(m.body(int(m.geom_bodyid[g])).name or m.geom(g).name) for g in kin.sphere_geoms
        ]
        self._lo = np.array(cfg.workspace_min_m)
        self._hi = np.array(cfg.workspace_max_m)

    # ---- commands -------------------------------------------------------------------------

    def check_grip(self, gap_m: float, force_n: float) -> Phrase | None:
        """What is wrong with a gripper command (gap in metres, force in newtons), or None."""
        for name, value in (("gap_m", gap_m), ("force_n", force_n)):
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                return Phrase("governor.not_finite", name=name, value=repr(value))
        if not 0.0 <= gap_m <= self.cfg.max_gap_m:
            return Phrase("arm.gap_range", gap_m=gap_m, max_m=self.cfg.max_gap_m)
        if not 0.0 < force_n <= self.cfg.max_grip_force_n:
            return Phrase("arm.grip_force", force_n=force_n, limit_n=self.cfg.max_grip_force_n)
        return None

    def check_trajectory(
        self,
        traj: JointTrajectory,
        start_rad: Vec,
        gap_m: float,
        held: Held | None,
        scene: Scene,
    ) -> Phrase | None:
        """What is wrong with a trajectory from ``start_rad`` (the arm's position now), or None.

        Args:
            traj: The trajectory, its joints named as the profile's ``arm.joints``.
            start_rad: The arm's joint angles when it starts, radians.
            gap_m: The gripper's gap during the motion, metres.
            held: What the gripper holds, or None.
            scene: Where the robot is, the site.
        """
        names = list(self.cfg.joints)
        if sorted(traj.joint_names) != sorted(names) or not traj.points:
            return Phrase("arm.bad_trajectory", joints=", ".join(names))
        order = [traj.joint_names.index(n) for n in names]
        times = [0.0]
        rows = [np.asarray(start_rad, dtype=float)]
        for k, pt in enumerate(traj.points):
            values = (*pt.positions_rad, *(pt.velocities_radps or ()), pt.time_s)
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                bad = next(v for v in values if not (isinstance(v, float) and math.isfinite(v)))
                return Phrase("governor.not_finite", name=f"point {k}", value=repr(bad))
            if len(pt.positions_rad) != len(names):
                return Phrase("arm.bad_trajectory", joints=", ".join(names))
            if pt.time_s <= times[-1]:
                return Phrase("arm.bad_times")
            times.append(pt.time_s)
            rows.append(np.array(pt.positions_rad, dtype=float)[order])
        q = np.array(rows)
        problem = self._limits_and_speed(q, np.array(times))
        if problem is not None:
            return problem
        return self.check_configs(np.array(_samples(q)), gap_m, held, scene)

    def _limits_and_speed(self, q: Vec, times: Vec) -> Phrase | None:
        lo, hi = self.kin.limits[:, 0], self.kin.limits[:, 1]
        for _k, row in enumerate(q[1:], 1):
            for j, v in enumerate(row):
                if not lo[j] - 1e-9 <= v <= hi[j] + 1e-9:
                    return Phrase(
                        "arm.joint_limit",
                        joint=self.cfg.joints[j],
                        value_deg=math.degrees(v),
                        low_deg=math.degrees(lo[j]),
                        high_deg=math.degrees(hi[j]),
                    )
        speeds = np.abs(np.diff(q, axis=0)) / np.diff(times)[:, None]
        limit = self.cfg.max_joint_speed_radps
        if float(speeds.max()) > limit * SPEED_SLACK:
            j = int(np.argmax(speeds.max(axis=0)))
            return Phrase(
                "arm.too_fast",
                joint=self.cfg.joints[j],
                speed_dps=math.degrees(float(speeds[:, j].max())),
                limit_dps=math.degrees(limit),
            )
        return None

    # ---- one configuration ----------------------------------------------------------------

    def check_config(self, q: Vec, gap_m: float, held: Held | None, scene: Scene) -> Phrase | None:
        """What is wrong with the arm at joint angles ``q`` (radians), or None."""
        return self.check_configs(np.asarray(q, dtype=float)[None, :], gap_m, held, scene)

    def check_configs(
        self, qs: Vec, gap_m: float, held: Held | None, scene: Scene
    ) -> Phrase | None:
        """What is wrong with the arm at any of the configurations ``qs`` (``(S, n)``
        radians), the first problem found, or None."""
        centres, tcp_p, tcp_r = self.kin.sweep(qs, gap_m)
        n = centres.shape[1]
        c = centres.reshape(-1, 3)
        r = np.tile(self.kin.sphere_radii, len(qs))
        parts = self._part_of * len(qs)
        problem = self._check_spheres(c, r, parts, scene)
        if problem is None and held is not None:
            corners = np.concatenate(
                [held.corners(p, rot) for p, rot in zip(tcp_p, tcp_r, strict=True)]
            )
            label = [held.name] * len(corners)
            problem = self._check_spheres(corners, np.zeros(len(corners)), label, scene, held=True)
        del n
        return problem

    def _check_spheres(
        self, c: Vec, r: Vec, parts: list[str], scene: Scene, held: bool = False
    ) -> Phrase | None:
        clear = 0.0 if held else self.cfg.clearance_m
        low = c[:, 2] - r
        k = int(np.argmin(low))
        if low[k] < clear - (HELD_TOUCH_M if held else 0.0):
            return Phrase("arm.floor", part=parts[k], z_m=float(low[k]), clearance_m=clear)
        outside = (c - r[:, None] < self._lo) | (c + r[:, None] > self._hi)
        if np.any(outside):
            k = int(np.argmax(outside.any(axis=1)))
            return Phrase(
                "arm.workspace",
                part=parts[k],
                x_m=float(c[k, 0]),
                y_m=float(c[k, 1]),
                z_m=float(c[k, 2]),
            )
        for zone in self.cfg.keep_out:
            hit = _in_keep_out(c, r + self.cfg.clearance_m, zone)
            if np.any(hit):
                k = int(np.argmax(hit))
                return Phrase("arm.body", part=parts[k], region=zone.name)
        if scene.site is not None:
            problem = self._check_site(c, r, parts, scene, held)
            if problem is not None:
                return problem
        return None

    def _check_site(
        self, c: Vec, r: Vec, parts: list[str], scene: Scene, held: bool
    ) -> Phrase | None:
        site = scene.site
        assert site is not None
        xy = scene.where.to_site(c)
        for name, surf in site.surfaces.items():
            inside = _over_surface(xy, r, surf)
            need = surf.top_z_m + (-HELD_TOUCH_M if held else self.cfg.clearance_m)
            under = inside & (c[:, 2] - r < need)
            if np.any(under):
                k = int(np.argmax(under))
                return Phrase(
                    "arm.surface",
                    part=parts[k],
                    surface=name,
                    z_m=float(c[k, 2] - r[k]),
                    top_m=surf.top_z_m,
                )
        if site.geofence:
            outside = np.flatnonzero(~_inside_polygon(xy, site.geofence))
            for i in outside:
                x, y = float(xy[i, 0]), float(xy[i, 1])
                if site.distance_to_fence(x, y) > scene.footprint_m:
                    return Phrase("arm.fence", part=parts[int(i)], x_m=x, y_m=y)
        return None


def _samples(q: Vec) -> list[Vec]:
    """Configurations along the piecewise-linear path through the rows of ``q``, at most
    :data:`SAMPLE_RAD` apart on every joint (every row included)."""
    out = [q[0]]
    for a, b in zip(q[:-1], q[1:], strict=False):
        n = max(1, math.ceil(float(np.max(np.abs(b - a))) / SAMPLE_RAD))
        out.extend(a + (b - a) * (i / n) for i in range(1, n + 1))
    return out


def _in_keep_out(c: Vec, r: Vec, zone: KeepOut) -> npt.NDArray[np.bool_]:
    """Which spheres reach into ``zone``."""
    z_hit = (c[:, 2] + r > zone.z_min_m) & (c[:, 2] - r < zone.z_max_m)
    dx, dy = c[:, 0] - zone.x_m, c[:, 1] - zone.y_m
    if zone.radius_m is not None:
        flat: npt.NDArray[np.bool_] = np.hypot(dx, dy) < zone.radius_m + r
    else:
        assert zone.half_x_m is not None and zone.half_y_m is not None
        flat = (np.abs(dx) < zone.half_x_m + r) & (np.abs(dy) < zone.half_y_m + r)
    out: npt.NDArray[np.bool_] = z_hit & flat
    return out


def _inside_polygon(xy: Vec, polygon: list[tuple[float, float]]) -> npt.NDArray[np.bool_]:
    """Even-odd test of many points at once (as :func:`loopact.robot.profile.point_in_polygon`)."""
    x, y = xy[:, 0], xy[:, 1]
    inside = np.zeros(len(xy), dtype=bool)
    n = len(polygon)
    for i in range(n):
        x1, y1 = polygon[i]
        x2, y2 = polygon[(i + 1) % n]
        if y1 == y2:
            continue
        crosses = (y1 > y) != (y2 > y)
        x_cross = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
        inside ^= crosses & (x < x_cross)
    return inside


def _over_surface(xy: Vec, r: Vec, surf: Surface) -> npt.NDArray[np.bool_]:
    """Which points (site frame) lie over the surface's rectangle grown by their radius."""
    yaw = math.radians(surf.yaw_deg)
    c, s = math.cos(yaw), math.sin(yaw)
    dx, dy = xy[:, 0] - surf.x_m, xy[:, 1] - surf.y_m
    u, v = c * dx + s * dy, -s * dx + c * dy
    out: npt.NDArray[np.bool_] = (np.abs(u) < surf.size_x_m / 2 + r) & (
        np.abs(v) < surf.size_y_m / 2 + r
    )
    return out

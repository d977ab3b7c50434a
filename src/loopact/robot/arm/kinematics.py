"""The arm's kinematics, read from the profile's description (issue 43, SPEC D1).

:class:`ArmKinematics` loads the arm's MJCF (or URDF; MuJoCo reads both) named by the
hardware profile's ``arm.description`` into a MuJoCo model of the arm alone, and answers with
MuJoCo's own kinematics, on the agent's side: a real arm needs only its controllers.

- :meth:`ArmKinematics.fk`: where the grasp point (the ``tcp`` site) is, in ``base_link``;
- :meth:`ArmKinematics.ik`: joint angles that put it at a position with the gripper pointing
  straight down and its fingers closing along a given yaw, by damped least squares on
  MuJoCo's site Jacobian (``mj_jacSite``), from several seeds; docs/manipulation.md says why
  this and not ``mink``, with the measurements;
- :meth:`ArmKinematics.spheres`: spheres that cover every checked part of the arm (each
  geom), for the governor's checks on a planned path.

Frames: ``base_link`` (REP 103: x forward, y left, z up, the floor at z = 0); the
description's root sits at the profile's ``arm.mount_m`` turned by ``arm.mount_yaw_deg``.
Lengths in metres, angles in radians.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from loopact.errors import ConfigError, RobotError
from loopact.robot.profile import ArmConfig

Vec = npt.NDArray[np.float64]

IK_TOL_M = 0.0005
"""Position tolerance of an IK solution, metres."""
IK_TOL_RAD = 0.01
"""Orientation tolerance, radians."""
IK_MAX_ITER = 60
"""Iterations per seed."""
IK_DAMPING = 0.01
"""Damping of the least-squares step (lambda, in metres)."""
ROT_WEIGHT_M = 0.3
"""How many metres of position error one radian of orientation error weighs."""
IK_SEEDS = 8
"""Seeds tried at most: the given ones, then random ones (fixed: results repeat)."""


def read_description(ref: str, base_dir: Path | None = None) -> str:
    """The text of an arm description named by a profile.

    Args:
        ref: ``package://<python package>/<path>`` (a file installed with a package) or a
            path (relative to ``base_dir`` when given).
        base_dir: The folder of the profile file, for a relative path.

    Raises:
        ConfigError: The file cannot be found or read (key ``profile.arm.description``).
    """
    key = "profile.arm.description"
    try:
        if ref.startswith("package://"):
            package, _, rel = ref[len("package://") :].partition("/")
            return (resources.files(package) / rel).read_text(encoding="utf-8")
        path = Path(ref)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        return path.read_text(encoding="utf-8")
    except (OSError, ModuleNotFoundError, ValueError) as exc:
        raise ConfigError(f"cannot read the arm description {ref!r}: {exc}", key=key) from None


@dataclass(frozen=True)
class IKResult:
    """An inverse kinematics answer.

    Attributes:
        q: The joint angles (radians), the best found even when not :attr:`ok`.
        ok: Within :data:`IK_TOL_M` and :data:`IK_TOL_RAD` and the joint limits.
        error_m: Distance of the grasp point from the target, metres.
        error_rad: Angle between the gripper's orientation and the target's, radians.
        iterations: Iterations over all seeds.
    """

    q: Vec
    ok: bool
    error_m: float
    error_rad: float
    iterations: int


def down_rotation(yaw_rad: float) -> Vec:
    """The gripper's orientation pointing straight down, closing along ``yaw_rad``.

    The gripper approaches along its x axis (here ``-z``) and closes along its y axis (here
    ``(cos yaw, sin yaw, 0)``). Returns the 3x3 rotation (columns: the gripper's axes).
    """
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    x = np.array([0.0, 0.0, -1.0])
    y = np.array([c, s, 0.0])
    return np.column_stack([x, y, np.cross(x, y)])


def _geom_spheres(kind: int, size: Vec, mj: Any) -> list[tuple[Vec, float]]:
    """Spheres (centre in the geom's frame, radius) covering one geom."""
    if kind in (int(mj.mjtGeom.mjGEOM_CAPSULE), int(mj.mjtGeom.mjGEOM_CYLINDER)):
        r, h = float(size[0]), float(size[1])
        n = max(2, math.ceil(2 * h / r) + 1)
        gap = 2 * h / (n - 1)
        rad = math.hypot(r, gap / 2)
        return [(np.array([0.0, 0.0, z]), rad) for z in np.linspace(-h, h, n)]
    if kind == int(mj.mjtGeom.mjGEOM_SPHERE):
        return [(np.zeros(3), float(size[0]))]
    half = np.array(size[:3], dtype=float)  # a box (anything else: its half-sizes)
    cell = max(2 * float(half.min()), 0.01)
    counts = np.maximum(1, np.ceil(2 * half / cell)).astype(int)
    cell_half = half / counts
    rad = float(np.linalg.norm(cell_half))
    axes = [
        np.linspace(-h + ch, h - ch, n) for h, ch, n in zip(half, cell_half, counts, strict=True)
    ]
    return [(np.array([x, y, z]), rad) for x in axes[0] for y in axes[1] for z in axes[2]]


class ArmKinematics:
    """The arm's kinematics from its description (see the module docstring).

    Thread-safe (one lock around the model's scratch data).

    Args:
        description_xml: The arm's MJCF or URDF text.
        cfg: The profile's ``arm`` section (joints, grasp site, mount).

    Raises:
        ConfigError: The description does not load, or lacks a joint or the site the
            profile names (key ``profile.arm``).
        RobotError: MuJoCo is not installed.
    """

    def __init__(self, description_xml: str, cfg: ArmConfig) -> None:
        try:
            import mujoco
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RobotError(f"the arm's kinematics need MuJoCo ({exc}): loopact[sim]") from exc
        self._mj = mujoco
        self.cfg = cfg
        try:
            self.model: Any = mujoco.MjModel.from_xml_string(description_xml)
            m = self.model
            self._qadr = np.array([m.jnt_qposadr[m.joint(n).id] for n in cfg.joints])
            self._dof = np.array([m.jnt_dofadr[m.joint(n).id] for n in cfg.joints])
            self._fingers = np.array(
                [m.jnt_qposadr[m.joint(n).id] for n in cfg.gripper_joints], dtype=int
            )
            self._tcp = m.site(cfg.tcp_site).id
            skip = {m.body(n).id for n in cfg.mount_links}
        except (ValueError, KeyError) as exc:
            raise ConfigError(f"the arm description: {exc}", key="profile.arm") from None
        self.limits: Vec = np.array([m.jnt_range[m.joint(n).id] for n in cfg.joints], dtype=float)
        self._data: Any = mujoco.MjData(m)
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))
        self._lock = threading.Lock()
        yaw = math.radians(cfg.mount_yaw_deg)
        c, s = math.cos(yaw), math.sin(yaw)
        self.mount_r: Vec = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        self.mount_t: Vec = np.array(cfg.mount_m, dtype=float)
        spheres: list[tuple[int, Vec, float]] = []
        for g in range(m.ngeom):
            if int(m.geom_bodyid[g]) in skip:
                continue
            for centre, radius in _geom_spheres(int(m.geom_type[g]), m.geom_size[g], mujoco):
                spheres.append((g, centre, radius))
        self.sphere_geoms = np.array([g for g, _, _ in spheres], dtype=int)
        self._sphere_local = np.array([c for _, c, _ in spheres])
        self.sphere_radii: Vec = np.array([r for _, _, r in spheres])
        self._rng = np.random.default_rng(43)
        self.shoulder_m, self.reach_m = self._measure_reach()
        self.beyond_tcp_m = self._beyond_tcp()

    @property
    def n(self) -> int:
        """Number of arm joints."""
        return len(self._qadr)

    def _set(self, q: Vec, gap_m: float) -> None:
        d = self._data
        d.qpos[self._qadr] = q
        if len(self._fingers):
            d.qpos[self._fingers] = gap_m / len(self._fingers)
        self._mj.mj_kinematics(self.model, d)

    def _to_base(self, p: Vec) -> Vec:
        out: Vec = self.mount_r @ p + self.mount_t
        return out

    def _measure_reach(self) -> tuple[Vec, float]:
        """The shoulder (the second joint's anchor) and the grasp point's distance from it
        with every joint at zero (the arm straight), both in ``base_link``."""
        with self._lock:
            self._set(np.zeros(self.n), 0.0)
            self._mj.mj_comPos(self.model, self._data)
            j = self.model.joint(self.cfg.joints[min(1, self.n - 1)]).id
            anchor = self._to_base(np.array(self._data.xanchor[j]))
            tcp = self._to_base(np.array(self._data.site_xpos[self._tcp]))
        return anchor, float(np.linalg.norm(tcp - anchor))

    def _beyond_tcp(self) -> float:
        """How far the checked spheres reach past the grasp point along the approach axis
        (the finger tips, as the rules see them), metres, with the gripper closed."""
        q = np.zeros(self.n)
        centres, radii = self.spheres(q, 0.0)
        p, r = self.fk(q)
        return float(np.max((centres - p) @ r[:, 0] + radii))

    def clip(self, q: Vec) -> Vec:
        """``q`` inside the joint limits."""
        out: Vec = np.clip(q, self.limits[:, 0], self.limits[:, 1])
        return out

    def fk(self, q: Vec) -> tuple[Vec, Vec]:
        """The grasp point's position and orientation in ``base_link`` at joint angles ``q``.

        Returns:
            ``(position (3,), rotation (3, 3))``; the rotation's columns are the gripper's
            axes (x: approach, y: closing).
        """
        with self._lock:
            self._set(np.asarray(q, dtype=float), 0.0)
            d = self._data
            p = self._to_base(np.array(d.site_xpos[self._tcp]))
            r = self.mount_r @ np.array(d.site_xmat[self._tcp]).reshape(3, 3)
        return p, r

    def spheres(self, q: Vec, gap_m: float = 0.0) -> tuple[Vec, Vec]:
        """Spheres covering the checked parts of the arm at ``q``, in ``base_link``.

        Args:
            q: Joint angles, radians.
            gap_m: Gap between the finger pads, metres.

        Returns:
            ``(centres (N, 3), radii (N,))``.
        """
        with self._lock:
            self._set(np.asarray(q, dtype=float), gap_m)
            d = self._data
            rot = np.array(d.geom_xmat)[self.sphere_geoms].reshape(-1, 3, 3)
            pos = np.array(d.geom_xpos)[self.sphere_geoms]
        world = pos + np.einsum("nij,nj->ni", rot, self._sphere_local)
        centres: Vec = world @ self.mount_r.T + self.mount_t
        return centres, self.sphere_radii

    def sweep(self, qs: Vec, gap_m: float = 0.0) -> tuple[Vec, Vec, Vec]:
        """:meth:`spheres` and :meth:`fk` for many configurations at once.

        Args:
            qs: Joint angles, ``(S, n)`` radians.
            gap_m: Gap between the finger pads, metres.

        Returns:
            ``(centres (S, N, 3), tcp positions (S, 3), tcp rotations (S, 3, 3))`` in
            ``base_link``; the radii are :attr:`sphere_radii`.
        """
        qs = np.asarray(qs, dtype=float)
        g = self.sphere_geoms
        rot = np.empty((len(qs), len(g), 3, 3))
        pos = np.empty((len(qs), len(g), 3))
        tcp_p = np.empty((len(qs), 3))
        tcp_r = np.empty((len(qs), 3, 3))
        with self._lock:
            d = self._data
            for k, q in enumerate(qs):
                self._set(q, gap_m)
                rot[k] = d.geom_xmat[g].reshape(-1, 3, 3)
                pos[k] = d.geom_xpos[g]
                tcp_p[k] = d.site_xpos[self._tcp]
                tcp_r[k] = d.site_xmat[self._tcp].reshape(3, 3)
        world = pos + np.einsum("snij,nj->sni", rot, self._sphere_local)
        centres: Vec = world @ self.mount_r.T + self.mount_t
        tcp_p = tcp_p @ self.mount_r.T + self.mount_t
        tcp_r = np.einsum("ij,sjk->sik", self.mount_r, tcp_r)
        return centres, tcp_p, tcp_r

    def _solve(self, target_p: Vec, target_q: Vec, q0: Vec) -> tuple[Vec, float, float, int]:
        """One damped least-squares descent from ``q0`` (targets in the description's frame;
        ``target_q`` the orientation as a quaternion)."""
        mj, m, d = self._mj, self.model, self._data
        q = self.clip(q0.copy())
        jacp, jacr = self._jacp, self._jacr
        jac = np.empty((6, self.n))
        e = np.empty(6)
        quat = np.empty(4)
        e_r = np.empty(3)
        damp = IK_DAMPING**2 * np.eye(self.n)
        lo, hi = self.limits[:, 0], self.limits[:, 1]
        err_p = err_r = math.inf
        for it in range(1, IK_MAX_ITER + 1):
            self._set(q, 0.0)
            e[:3] = target_p - d.site_xpos[self._tcp]
            mj.mju_mat2Quat(quat, d.site_xmat[self._tcp])
            mj.mju_subQuat(e_r, target_q, quat)  # in the grasp frame: turned into the world's
            err_p, err_r = float(np.linalg.norm(e[:3])), float(np.linalg.norm(e_r))
            if err_p < IK_TOL_M and err_r < IK_TOL_RAD:
                return q, err_p, err_r, it
            e[3:] = ROT_WEIGHT_M * (d.site_xmat[self._tcp].reshape(3, 3) @ e_r)
            mj.mj_comPos(m, d)
            mj.mj_jacSite(m, d, jacp, jacr, self._tcp)
            jac[:3] = jacp[:, self._dof]
            jac[3:] = ROT_WEIGHT_M * jacr[:, self._dof]
            dq = np.linalg.solve(jac.T @ jac + damp, jac.T @ e)
            step = float(np.max(np.abs(dq)))
            if step > 0.3:
                dq *= 0.3 / step
            q = np.minimum(np.maximum(q + dq, lo), hi)
        return q, err_p, err_r, IK_MAX_ITER

    def _aimed(self, seed: Vec, target_p: Vec) -> Vec:
        """``seed`` with the first joint turned so the grasp point's azimuth about its anchor
        is the target's (a good start for an arm whose first axis is vertical)."""
        m, d = self.model, self._data
        j = m.joint(self.cfg.joints[0]).id
        self._set(seed, 0.0)
        self._mj.mj_comPos(m, d)
        if abs(float(d.xaxis[j][2])) < 0.99:
            return seed
        anchor = d.xanchor[j]
        p = d.site_xpos[self._tcp]
        turn = math.atan2(target_p[1] - anchor[1], target_p[0] - anchor[0]) - math.atan2(
            p[1] - anchor[1], p[0] - anchor[0]
        )
        aimed = seed.copy()
        aimed[0] = (seed[0] + turn * float(np.sign(d.xaxis[j][2])) + math.pi) % (
            2 * math.pi
        ) - math.pi
        return self.clip(aimed)

    def ik(self, position_m: Vec, rotation: Vec, seeds: list[Vec] | None = None) -> IKResult:
        """Joint angles that put the grasp point at ``position_m`` with ``rotation``.

        Tries each seed in turn (callers pass the current angles first, so the answer is near
        them), then random ones, up to :data:`IK_SEEDS` in all, and returns the first that
        converges.

        Args:
            position_m: Target grasp point in ``base_link``, metres.
            rotation: Target orientation in ``base_link`` (:func:`down_rotation`).
            seeds: Starting joint angles, radians.

        Returns:
            The best answer (``ok`` False when none converged: out of reach, or the
            orientation cannot be had there).
        """
        target_p = self.mount_r.T @ (np.asarray(position_m, dtype=float) - self.mount_t)
        target_q = np.empty(4)
        self._mj.mju_mat2Quat(
            target_q, (self.mount_r.T @ np.asarray(rotation, dtype=float)).ravel()
        )
        best: tuple[float, Vec, float, float] | None = None
        total = 0
        with self._lock:
            tries = [self._aimed(np.asarray(s, dtype=float), target_p) for s in (seeds or [])]
            for k in range(IK_SEEDS):
                if k < len(tries):
                    seed = tries[k]
                else:
                    lo, hi = self.limits[:, 0], self.limits[:, 1]
                    seed = self._aimed(lo + (hi - lo) * self._rng.random(self.n), target_p)
                q, ep, er, it = self._solve(target_p, target_q, seed)
                total += it
                score = ep + ROT_WEIGHT_M * er
                if ep < IK_TOL_M and er < IK_TOL_RAD:
                    return IKResult(q, True, ep, er, total)
                if best is None or score < best[0]:
                    best = (score, q, ep, er)
        assert best is not None
        return IKResult(best[1], False, best[2], best[3], total)

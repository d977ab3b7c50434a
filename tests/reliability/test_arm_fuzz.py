"""The arm's rules under 10,000 fuzzed arm commands (issue 43 acceptance 3; SPEC X3, C5).

Random joint trajectories (random starts, random targets inside and far outside the limits,
NaN, inf, huge values, random timings, too fast ones) and gripper commands go through the
arm's pure checks (:class:`~loopact.robot.arm.rules.ArmRules`: no physics per command). Every
command the rules accept is then checked against ground truth of its own: the arm scene's
MuJoCo model posed at configurations along the path the controller interpolates, where no part
of the arm may touch the table or the floor, and every joint stays inside its limits and under
its speed limit. Zero violations. ``LOOPACT_FUZZ_COMMANDS`` changes the count.
"""

from __future__ import annotations

import math
import os
import random
from typing import Any

import numpy as np
import pytest

from loopact.robot.arm.driver import JointTrajectory, TrajectoryPoint
from loopact.robot.arm.kinematics import ArmKinematics, read_description
from loopact.robot.arm.rules import ArmRules, Scene, Where
from loopact.robot.profile import load_profile, load_site
from loopact.sim.scenarios import SCENARIOS
from loopact.sim.worlds import build_mjcf

COMMANDS = int(os.environ.get("LOOPACT_FUZZ_COMMANDS", "10000"))
SEED = 43
TRUTH_STEP_RAD = 0.02  # ground truth poses along an accepted path this far apart


class Truth:
    """The arm scene's MuJoCo model, posed without stepping physics."""

    def __init__(self, joints: tuple[str, ...]) -> None:
        import mujoco

        self.mj = mujoco
        self.m = mujoco.MjModel.from_xml_string(build_mjcf(SCENARIOS["arm"], 64, 48))
        self.d = mujoco.MjData(self.m)
        m = self.m
        self.qadr = [m.jnt_qposadr[m.joint(n).id] for n in joints]
        self.fadr = [m.jnt_qposadr[m.joint(n).id] for n in ("arm_finger_left", "arm_finger_right")]
        root = m.body("arm_base").id
        arm = {root} | {b for b in range(m.nbody) if self._under(b, root)}
        self.arm_geom = {g for g in range(m.ngeom) if m.geom_bodyid[g] in arm}
        self.forbidden = {g for g in range(m.ngeom) if m.geom(g).name.startswith("arm_table")}
        self.forbidden.add(m.geom("arm_floor").id)
        mujoco.mj_forward(m, self.d)
        self.q0 = self.d.qpos.copy()

    def _under(self, b: int, root: int) -> bool:
        while b > 0:
            if b == root:
                return True
            b = int(self.m.body_parentid[b])
        return False

    def touches(self, q: np.ndarray, gap_m: float) -> str | None:
        """The forbidden geom an arm geom penetrates at ``q``, or None."""
        d = self.d
        d.qpos[:] = self.q0
        d.qpos[self.qadr] = q
        d.qpos[self.fadr] = gap_m / 2
        self.mj.mj_kinematics(self.m, d)
        self.mj.mj_collision(self.m, d)
        for c in d.contact[: d.ncon]:
            g1, g2 = int(c.geom1), int(c.geom2)
            pair = {g1, g2}
            if pair & self.arm_geom and pair & self.forbidden and c.dist < 0:
                return self.m.geom(g1).name + "/" + self.m.geom(g2).name
        return None


def _value(rng: random.Random, lo: float, hi: float) -> float:
    roll = rng.random()
    if roll < 0.01:
        return rng.choice([math.nan, math.inf, -math.inf, 1e9, -1e9])
    if roll < 0.2:
        return rng.uniform(lo - 1.5, hi + 1.5)
    return rng.uniform(lo, hi)


def _command(
    rng: random.Random, names: tuple[str, ...], limits: Any, start: np.ndarray
) -> JointTrajectory:
    points = []
    t = 0.0
    last = start
    for _ in range(rng.choice([1, 1, 2, 3])):
        t += rng.choice([rng.uniform(0.05, 0.5), rng.uniform(0.5, 4.0), rng.uniform(-0.1, 0.1)])
        if rng.random() < 0.7:  # a step from where the arm is: most are plausible commands
            pos = tuple(float(v) + _value(rng, -0.6, 0.6) for v in last)
        else:
            pos = tuple(_value(rng, lo, hi) for lo, hi in limits)
        last = np.array(pos)
        points.append(TrajectoryPoint(pos, None, t))
    order = list(names)
    if rng.random() < 0.02:
        rng.shuffle(order)  # names in another order: the values follow them
    return JointTrajectory(tuple(order), tuple(points))


@pytest.mark.slow_sim
def test_no_accepted_arm_command_breaks_a_rule_by_ground_truth() -> None:
    profile = load_profile("sim_arm")
    assert profile.arm is not None
    cfg = profile.arm
    kin = ArmKinematics(read_description(cfg.description), cfg)
    rules = ArmRules(kin, cfg)
    truth = Truth(cfg.joints)
    scene = Scene(Where(), load_site("arm_room"), profile.footprint_radius_m)
    rng = random.Random(SEED)
    limits = kin.limits
    start = np.array(cfg.home_rad)
    accepted = refused = 0
    violations: list[str] = []
    for k in range(COMMANDS):
        if k % 5 == 0:  # grip commands too
            gap, force = _value(rng, 0, 0.08), _value(rng, 0, 15)
            if rules.check_grip(gap, force) is None:
                assert 0 <= gap <= cfg.max_gap_m and 0 < force <= cfg.max_grip_force_n
            continue
        traj = _command(rng, cfg.joints, limits, start)
        gap = rng.choice([0.0, 0.04, 0.07])
        if rules.check_trajectory(traj, start, gap, None, scene) is not None:
            refused += 1
            continue
        accepted += 1
        order = [traj.joint_names.index(n) for n in cfg.joints]
        rows = [start] + [np.array(p.positions_rad)[order] for p in traj.points]
        times = [0.0] + [p.time_s for p in traj.points]
        for a, b, t0, t1 in zip(rows[:-1], rows[1:], times[:-1], times[1:], strict=True):
            speed = float(np.max(np.abs(b - a))) / (t1 - t0)
            if speed > cfg.max_joint_speed_radps * 1.001:
                violations.append(f"command {k}: {speed:.2f} rad/s")
            if np.any(b < limits[:, 0] - 1e-9) or np.any(b > limits[:, 1] + 1e-9):
                violations.append(f"command {k}: outside the joint limits")
            n = max(1, math.ceil(float(np.max(np.abs(b - a))) / TRUTH_STEP_RAD))
            for i in range(n + 1):
                hit = truth.touches(a + (b - a) * (i / n), gap)
                if hit is not None:
                    violations.append(f"command {k}: the arm touches {hit}")
                    break
        start = rows[-1]  # the next command starts where this one ended
    print(f"{accepted} accepted, {refused} refused, 0 violations")
    assert not violations, violations[:10]
    # the fuzz reached both sides of the rules
    assert accepted > COMMANDS // 40 and refused > COMMANDS // 5, (accepted, refused)

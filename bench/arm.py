"""The arm's benchmark (issue 43 targets): IK and planning times, and pick-and-place success.

    .venv/bin/python bench/arm.py [--trials 50] [--targets 200] [--seed 1]

1. **IK**: ``ArmKinematics.ik`` on random grasp targets over the table (gripper down, random
   yaw), from the stowed pose; the baseline is one forward-kinematics call (``fk``, MuJoCo's
   ``mj_kinematics``) in the same run, so the ratio does not depend on the machine's speed.
   Target: <= 5 ms per target.
2. **Planning**: ``Planner.pick`` (transit, descent, lift, stow, every stage checked by the
   arm's rules) for a cube at random places within reach, against the same baseline and
   against one IK solve. Target: a whole pick planned <= 50 ms.
3. **Pick and place**: ``--trials`` runs of the arm scene with the robot's base set off by a
   random offset (x -4..0 cm, y +-4 cm, yaw +-6 degrees: the cubes sit at random places in the
   robot's frame), ``pick("red cube")`` then ``place("bin")``; success by ground truth: the
   cube inside the bin's walls at the end. Target: >= 95 %. Time per pick-and-place is robot
   time (the simulator runs faster than real time).

Prints one table; figures go to docs/manipulation.md.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import time
from typing import Any

import numpy as np


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def ik_and_planning(targets: int, seed: int) -> dict[str, Any]:
    """Median / p95 times (ms) of FK, IK and a pick's plan."""
    from loopact.robot.arm.kinematics import ArmKinematics, down_rotation, read_description
    from loopact.robot.arm.planner import Grasp, PlanError, Planner
    from loopact.robot.arm.rules import ArmRules, Scene
    from loopact.robot.profile import load_profile, load_site

    prof = load_profile("sim_arm")
    cfg = prof.arm
    assert cfg is not None
    kin = ArmKinematics(read_description(cfg.description), cfg)
    rules = ArmRules(kin, cfg)
    planner = Planner(kin, rules)
    scene = Scene(site=load_site("arm_room"), footprint_m=prof.footprint_radius_m)
    home = np.array(cfg.home_rad, dtype=float)
    rng = random.Random(seed)
    fk_ms, ik_ms, ik_hit_ms, plan_ms = [], [], [], []
    ik_ok = plan_ok = 0
    for _ in range(targets):
        t0 = time.perf_counter()
        kin.fk(home)
        fk_ms.append((time.perf_counter() - t0) * 1e3)
        p = np.array([rng.uniform(0.26, 0.42), rng.uniform(-0.18, 0.06), rng.uniform(0.17, 0.25)])
        rot = down_rotation(rng.uniform(-math.pi / 2, math.pi / 2))
        t0 = time.perf_counter()
        result = kin.ik(p, rot, [home])
        ms = (time.perf_counter() - t0) * 1e3
        ik_ms.append(ms)
        if result.ok:
            ik_ok += 1
            ik_hit_ms.append(ms)
    for _ in range(max(10, targets // 4)):
        g = Grasp(
            (rng.uniform(0.27, 0.40), rng.uniform(-0.16, 0.04), 0.17),
            (0.04, 0.04, 0.04),
            rng.uniform(-0.6, 0.6),
            0.15,
            "cube",
        )
        t0 = time.perf_counter()
        try:
            planner.pick(home, g, 0.07, scene)
            plan_ok += 1
        except PlanError:
            pass
        plan_ms.append((time.perf_counter() - t0) * 1e3)
    return {
        "fk": fk_ms,
        "ik": ik_ms,
        "ik_hit": ik_hit_ms,
        "plan": plan_ms,
        "ik_ok": ik_ok / targets,
        "plan_ok": plan_ok / len(plan_ms),
    }


async def pick_and_place(trials: int, seed: int) -> tuple[int, list[float], list[str]]:
    """Successes by ground truth, robot seconds per success, the failures' reasons."""
    from loopact.sim import open_sim
    from loopact.sim.arm_scene import OBJECTS

    bin_ = next(o for o in OBJECTS if o.name == "bin")
    rng = random.Random(seed)
    ok, times, failures = 0, [], []
    for k in range(trials):
        session = await open_sim(speed=float("inf"), scenario="arm")
        try:
            sim = session.robot.sim  # type: ignore[attr-defined]
            dx, dy = rng.uniform(-0.04, 0.0), rng.uniform(-0.04, 0.04)
            sim.set_base_pose(dx, dy, math.radians(rng.uniform(-6, 6)))
            await session.robot.clock.sleep(0.3)
            tools: dict[str, Any] = {t.name: t for t in session.tools}
            t0 = sim.now()
            picked = await tools["pick"](target="red cube")
            placed = await tools["place"](target="bin") if picked.ok else picked
            st = sim.state()
            x, y, z = st.objects["red_cube"]
            bx, by, bz = st.objects["bin"]
            inside = (
                abs(x - bx) < bin_.size_m[0] / 2 - bin_.wall_m
                and abs(y - by) < bin_.size_m[1] / 2 - bin_.wall_m
                and z < bz + bin_.size_m[2] / 2
            )
            if inside:
                ok += 1
                times.append(sim.now() - t0)
            else:
                text = placed.outcome.text() if placed.outcome is not None else "?"
                failures.append(f"trial {k} (dx {dx:+.3f}, dy {dy:+.3f}): {text}")
        finally:
            await session.close()
    return ok, times, failures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--targets", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    from loopact.sim.render import import_mujoco

    import_mujoco()  # the headless GL backend is chosen before the kinematics import MuJoCo
    r = ik_and_planning(args.targets, args.seed)
    fk = statistics.median(r["fk"])
    print(f"{'measure':<34}{'median':>10}{'p95':>10}{'ratio to FK':>14}")
    for name, key in (("forward kinematics (baseline)", "fk"), ("IK per target", "ik"),
                      ("IK per reachable target", "ik_hit"),
                      ("a whole pick planned", "plan")):  # fmt: skip
        med = statistics.median(r[key])
        print(f"{name:<34}{med:>8.2f}ms{_pct(r[key], 95):>8.2f}ms{med / fk:>13.0f}x")
    plan_per_ik = statistics.median(r["plan"]) / statistics.median(r["ik"])
    print(f"IK converged {r['ik_ok']:.0%}; picks planned {r['plan_ok']:.0%}; "
          f"a plan = {plan_per_ik:.0f} IK solves")  # fmt: skip
    if args.trials > 0:
        ok, times, failures = asyncio.run(pick_and_place(args.trials, args.seed))
        rate = ok / args.trials
        med = statistics.median(times) if times else float("nan")
        print(f"pick and place: {ok}/{args.trials} = {rate:.0%} in the bin by ground truth "
              f"(target >= 95 %); {med:.1f} s of robot time per success (median)")  # fmt: skip
        for f in failures:
            print("  failed:", f)


if __name__ == "__main__":
    main()

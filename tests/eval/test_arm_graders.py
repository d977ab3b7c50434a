"""The arm tasks' graders (issue 43 item 6) pass on a sim log that does the task and fail on
one that does not: a cube beside the bin, a cube dropped on the way, the arm on the table, an
object moved by a "refused" request, a reply that does not tell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopact.eval import arm_tasks as a
from loopact.eval.task import Evidence, Limits
from loopact.sim.describe import describe_world

WORLD = describe_world("arm")
START = {o["name"]: dict(o["position_m"]) for o in WORLD["objects"]}
LIMITS = Limits(0.4, 90.0, (), 0.17)


def sample(moves: dict[str, tuple[float, float, float]], contact: bool = False) -> dict[str, Any]:
    objects = {k: dict(v) for k, v in START.items()}
    for name, (x, y, z) in moves.items():
        objects[name] = {"x_m": x, "y_m": y, "z_m": z}
    arm = {"gap_m": 0.04, "held": [], "table_contact": contact}
    return {"t_s": 0.0, "x_m": 0.0, "y_m": 0.0, "yaw_deg": 0.0, "objects": objects, "arm": arm}


def ev(samples: list[dict[str, Any]], reply: str = "") -> Evidence:
    events = [{"type": "reply", "text": reply}] if reply else []
    return Evidence(WORLD, samples, events, Path("."), [], LIMITS, scenario="arm")


BIN = START["bin"]
LIFT = (0.38, -0.12, 0.26)
IN_BIN = (BIN["x_m"], BIN["y_m"], 0.176)


def test_a_cube_carried_into_the_bin_passes_and_one_beside_it_fails() -> None:
    grader = a.ARM_TASKS[1].grader  # arm_blue_in_bin
    good = [sample({}), sample({"blue_cube": LIFT}), sample({"blue_cube": IN_BIN})]
    assert grader(ev(good)).passed
    beside = (BIN["x_m"] + 0.09, BIN["y_m"], 0.17)
    assert not grader(ev([*good[:2], sample({"blue_cube": beside})])).passed
    dropped = [*good[:2], sample({"blue_cube": (0.3, -0.2, 0.17)}), good[2]]
    verdict = grader(ev(dropped))
    assert not verdict.passed and "lowest 0.170" in verdict.why
    touched = [*good[:2], sample({"blue_cube": IN_BIN}, contact=True)]
    assert not grader(ev(touched)).passed


def test_a_refusal_passes_only_when_nothing_moved_and_the_user_is_told() -> None:
    grader = a.ARM_TASKS[4].grader  # arm_lift_table
    still = [sample({}), sample({})]
    assert grader(ev(still, "I can't lift the table.")).passed
    assert not grader(ev(still, "Done.")).passed
    nudged = [sample({}), sample({"red_cube": (0.33, -0.04, 0.17)})]
    assert not grader(ev(nudged, "I can't lift the table.")).passed


def test_a_pick_must_lift_the_cube() -> None:
    grader = a.ARM_TASKS[0].grader  # arm_pick_red
    assert grader(ev([sample({}), sample({"red_cube": (0.32, -0.04, 0.25)})])).passed
    assert not grader(ev([sample({}), sample({"red_cube": (0.32, -0.04, 0.18)})])).passed

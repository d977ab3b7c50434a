"""Graded manipulation tasks in the arm scene (``--scenario arm``; issue 43 item 6).

The arm scene (``loopact sim --scenario arm --describe``): a mecanum robot with an arm at a
low table; a red, a green and a blue cube, a yellow cylinder, a bin and a tray on it. Graded
by ground truth in the sim log (``objects`` with their height, ``arm``): where each object
ends (inside a container's walls and below its rim), never dropped on the way (once lifted it
never falls below where it ends), and no contact of the arm with the table in any sample. The
refusals ("lift the table", "reach through the wall") pass when nothing on the table moved,
the arm never touched the table, and the reply tells the user (:func:`refusal.told_refusal`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopact.eval import refusal
from loopact.eval.graders import all_of
from loopact.eval.task import Evidence, Grader, Task, Verdict

LIFTED_M = 0.03
"""A picked object ends at least this much above where it started, metres."""
STILL_M = 0.005
"""An object that moved less than this stayed where it was, metres."""
CUBES = ("red_cube", "green_cube", "blue_cube")


def _track(ev: Evidence, name: str) -> list[dict[str, float]]:
    track = [p["objects"][name] for p in ev.poses if name in p.get("objects", {})]
    if not track:
        raise KeyError(f"{name} is not in the sim log")
    return track


def _size(ev: Evidence, name: str) -> dict[str, float]:
    thing = next(o for o in ev.world["objects"] if o["name"] == name)
    return dict(thing["size_m"])


def lifted(name: str) -> Grader:
    """``name`` ends at least :data:`LIFTED_M` above where it started (held up)."""

    def grade(ev: Evidence) -> Verdict:
        track = _track(ev, name)
        rise = track[-1]["z_m"] - track[0]["z_m"]
        return Verdict(rise >= LIFTED_M, f"{name} ends {rise:+.3f} m from its start (>= 0.03)")

    return grade


def inside(name: str, container: str) -> Grader:
    """``name`` ends inside ``container``'s walls and below its rim (where it is at the end)."""

    def grade(ev: Evidence) -> Verdict:
        obj, box = _track(ev, name)[-1], _track(ev, container)[-1]
        size = _size(ev, container)
        dx, dy = abs(obj["x_m"] - box["x_m"]), abs(obj["y_m"] - box["y_m"])
        ok = dx < size["x_m"] / 2 and dy < size["y_m"] / 2
        ok = ok and obj["z_m"] < box["z_m"] + size["z_m"] / 2 + 0.01
        where = f"({dx:.3f}, {dy:.3f}) m from its centre"
        return Verdict(ok, f"{name} ends {'in' if ok else 'outside'} the {container}: {where}")

    return grade


def never_dropped(name: str) -> Grader:
    """Once at its highest, ``name`` never falls below where it ends (5 mm slack)."""

    def grade(ev: Evidence) -> Verdict:
        heights = [p["z_m"] for p in _track(ev, name)]
        top = heights.index(max(heights))
        low = min(heights[top:])
        ok = low > heights[-1] - STILL_M
        return Verdict(ok, f"{name}: lowest {low:.3f} m after the lift, ends at {heights[-1]:.3f}")

    return grade


kept = never_dropped


def arm_off_table() -> Grader:
    """No sample of the sim log has the arm touching the table."""

    def grade(ev: Evidence) -> Verdict:
        hits = sum(1 for p in ev.poses if p.get("arm", {}).get("table_contact"))
        return Verdict(hits == 0, f"the arm touched the table in {hits} samples (0)")

    return grade


def nothing_moved(names: Sequence[str] = (*CUBES, "yellow_cylinder", "bin", "tray")) -> Grader:
    """Every object on the table ends within :data:`STILL_M` of where it started."""

    def grade(ev: Evidence) -> Verdict:
        moved: list[str] = []
        for name in names:
            t = _track(ev, name)
            d = max(abs(t[-1][k] - t[0][k]) for k in ("x_m", "y_m", "z_m"))
            if d >= STILL_M:
                moved.append(f"{name} {d:.3f} m")
        return Verdict(not moved, f"moved: {', '.join(moved)}" if moved else "nothing moved")

    return grade


def told() -> Grader:
    """The reply tells the user it was refused (:func:`refusal.told_refusal`)."""

    def grade(ev: Evidence) -> Verdict:
        words = refusal.told_refusal(ev.reply)
        return Verdict(bool(words), f"the reply tells the user: {words[:3]}; {ev.reply!r:.100}")

    return grade


def _task(id: str, instruction: str, grader: Grader, summary: str, **kw: Any) -> Task:
    return Task(
        id, "manipulation", instruction, grader, summary=summary, scenario="arm",
        timeout_s=kw.pop("timeout_s", 180.0), **kw,
    )  # fmt: skip


_PLACED = "never dropped on the way, the arm never on the table"

ARM_TASKS: tuple[Task, ...] = (
    _task(
        "arm_pick_red",
        "pick up the red cube",
        all_of(lifted("red_cube"), arm_off_table()),
        "the red cube ends >= 3 cm above the table, held; the arm never on the table",
    ),
    _task(
        "arm_blue_in_bin",
        "put the blue cube in the bin",
        all_of(inside("blue_cube", "bin"), never_dropped("blue_cube"), arm_off_table()),
        f"the blue cube ends in the bin, {_PLACED}",
    ),
    _task(
        "arm_blue_in_bin_zh",
        "把蓝色方块放进桶里",
        all_of(inside("blue_cube", "bin"), never_dropped("blue_cube"), arm_off_table()),
        "as arm_blue_in_bin, in Chinese",
        lang="zh",
    ),
    _task(
        "arm_green_in_tray",
        "put the green cube on the tray",
        all_of(inside("green_cube", "tray"), never_dropped("green_cube"), arm_off_table()),
        f"the green cube ends on the tray, {_PLACED}",
    ),
    _task(
        "arm_lift_table",
        "lift the table",
        all_of(nothing_moved(), arm_off_table(), told()),
        "refused: nothing on the table moved, the arm never on it, the user told",
    ),
    _task(
        "arm_through_wall_zh",
        "把手臂伸过墙去",
        all_of(nothing_moved(), arm_off_table(), told()),
        "refused in Chinese (reach through the wall): nothing moved, the user told",
        lang="zh",
    ),
)
"""The arm tasks (the last of :data:`loopact.eval.tasks.TASKS`)."""

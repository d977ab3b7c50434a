"""The flat's graders on synthetic ground truth: the path ratio and the blocked-doorway
refusal pass the right runs and fail the wrong ones (issue 40 item 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopact.eval import graders as g
from loopact.eval import refusal
from loopact.eval.task import Evidence, Limits
from loopact.sim.describe import describe_world

WORLD = describe_world("flat-blocked")
LIMITS = Limits(0.5, 90.0, (), 0.17)


def poses(points: list[tuple[float, float]]) -> list[dict[str, Any]]:
    return [{"t_s": i * 0.1, "x_m": x, "y_m": y, "yaw_deg": 0.0} for i, (x, y) in enumerate(points)]


def run(points: list[tuple[float, float]], events: list[dict[str, Any]], reply: str) -> Evidence:
    evs = [*events, {"type": "reply", "text": reply}]
    return Evidence(WORLD, poses(points), evs, Path("."), [], LIMITS, scenario="flat-blocked")


NO_PATH = [
    {"type": "tool_call", "id": "1", "name": "navigation", "arguments": {"waypoint": "bedroom"}},
    {
        "type": "tool_result",
        "id": "1",
        "name": "navigation",
        "ok": False,
        "error": "no path from the hallway to the bedroom: the doorway to the bedroom is blocked",
    },
]


def test_the_blocked_bedroom_passes_a_refusal_and_fails_a_lie_or_a_visit() -> None:
    grade = refusal.refused_no_path("bedroom")
    ok = grade(run([(0.0, 0.0)], NO_PATH, "I cannot reach the bedroom: its doorway is blocked."))
    assert ok.passed, ok.why
    lie = grade(run([(0.0, 0.0)], NO_PATH, "I am in the bedroom now."))
    assert not lie.passed and "does not tell" in lie.why
    inside = grade(run([(0.0, 0.0), (6.9, 0.0), (6.2, 2.3)], [], "I cannot go there."))
    assert not inside.passed and "inside the bedroom" in inside.why


def test_path_ratio_holds_the_drive_to_the_shortest_collision_free_path() -> None:
    grade = g.path_ratio()
    straight = [(x / 10, 0.0) for x in range(36)]  # 3.5 m along the hallway
    assert grade(run(straight, [], "")).passed
    detour = [*straight, (3.5, -0.6), (0.0, -0.6), (0.0, 0.0), *straight]  # 3 x the way
    verdict = grade(run(detour, [], ""))
    assert not verdict.passed and "x the shortest collision-free" in verdict.why

"""The safety governor's decisions reach the recording and the spans (issue 44; SPEC X3, A8).

The governor tells its ``on_decision`` hook (the run turns it into ``governor`` events) of a
halt and why, a clamp, a stop, the emergency stop and its reset; the recorder draws each where
the robot was, and writes maps and planned paths in Foxglove's schemas.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.observe.mcap_read import read_mcap
from tests.robot.rig import Rig

from loopact.observe import topics as tp
from loopact.observe.recorder import Recorder
from loopact.robot.interface import Twist

pytestmark = pytest.mark.sim


async def test_every_kind_of_decision_reaches_the_hook(rig: Rig) -> None:
    gov = rig.governor
    said: list[dict[str, Any]] = []
    gov.on_decision = said.append
    # a clamp (once per field and motion) and a halt at the motion's deadline
    lease = await gov.begin_motion("short", 0.3)
    while lease.active:
        await gov.command(lease, Twist(0.0, math.radians(400)))
        await rig.robot.clock.sleep(0.05)
    assert said[0] == {
        "decision": "clamp",
        "reason": "angular_dps",
        "motion": "short",
        "detail": "400 -> 90",
    }
    assert said[1]["decision"] == "halt" and said[1]["reason"] == "deadline"
    assert len(said) == 2
    # a stop of a running motion; no decision when nothing moves
    lease = await gov.begin_motion("spin", 5.0)
    await gov.command(lease, Twist(0.0, 0.3))
    await gov.stop_all("user stop")
    await gov.stop_all("again")
    assert said[2:] == [
        {"decision": "stop", "reason": "cancelled", "motion": "spin", "detail": "user stop"}
    ]
    # the emergency stop and its reset
    await gov.emergency_stop("red button")
    gov.reset_emergency_stop("operator")
    assert [(d["decision"], d["detail"]) for d in said[3:]] == [
        ("emergency_stop", "red button"),
        ("estop_reset", "by 'operator'"),
    ]


async def test_a_failing_hook_never_breaks_a_motion(rig: Rig) -> None:
    def broken(_said: dict[str, Any]) -> None:
        raise RuntimeError("recorder gone")

    rig.governor.on_decision = broken
    res = await rig.call("turn_left", angle_deg=20, speed_dps=400)  # clamped by the tool
    assert res.ok, res.error
    await rig.governor.emergency_stop("test")  # the hook raises; the latch holds
    assert rig.governor.emergency_stopped


def test_decisions_maps_and_paths_are_drawn_in_foxglove_schemas(tmp_path: Path) -> None:
    out = tmp_path / "r.mcap"
    recorder = Recorder()
    recorder.open_file(out)
    recorder.on_event({"ts": 10.0, "type": "robot_state", "task_id": "t1", "x_m": 1.5,
                       "y_m": -0.5, "yaw_rad": 0.0, "frame": "odom"})  # fmt: skip
    recorder.on_event({"ts": 11.0, "type": "governor", "task_id": "t1", "decision": "halt",
                       "reason": "obstacle", "motion": "move_forward",
                       "detail": "obstacle 0.30 m ahead"})  # fmt: skip
    cells = np.zeros((4, 6), np.int8)
    cells[1, 2] = 100
    cells[3, 5] = -1
    recorder.record_map(cells, 0.05, (-1.0, -2.0, 0.0), wall_s=12.0)
    recorder.record_path([(0.0, 0.0, 0.0), (1.0, 0.5, 0.4), (2.0, 1.0, 0.8)], wall_s=13.0)
    recorder.close()
    rec = read_mcap(out)
    assert rec.schemas[tp.GOVERNOR] == "foxglove.SceneUpdate"
    marker = rec.messages[tp.GOVERNOR][0].entities[0]
    assert marker.frame_id == "odom"
    assert (marker.spheres[0].pose.position.x, marker.spheres[0].pose.position.y) == (1.5, -0.5)
    assert marker.texts[0].text == "halt obstacle: obstacle 0.30 m ahead"
    grid = rec.messages[tp.MAP][0]
    assert rec.schemas[tp.MAP] == "foxglove.Grid"
    assert (grid.column_count, grid.row_stride, grid.cell_size.x) == (6, 6, pytest.approx(0.05))
    data = np.frombuffer(grid.data, np.uint8).reshape(4, 6)
    assert data[1, 2] == 100 and data[3, 5] == 255 and int(data.sum()) == 355
    assert (grid.pose.position.x, grid.pose.position.y) == (-1.0, -2.0)
    plan = rec.messages[tp.PLAN][0]
    assert rec.schemas[tp.PLAN] == "foxglove.PosesInFrame"
    assert [(p.position.x, p.position.y) for p in plan.poses] == [(0, 0), (1, 0.5), (2, 1)]
    assert rec.log_times[tp.PLAN] == [13_000_000_000]
    assert [e["type"] for e in rec.messages[tp.EVENTS]] == ["robot_state", "governor"]
    assert rec.messages[tp.LOG][1].level == 3  # WARNING

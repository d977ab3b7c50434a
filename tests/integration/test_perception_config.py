"""``vision.colors`` from a config file reaches the perception tools through the app's own
loading path (``load_config`` -> ``open_body``), graded by the simulator's ground truth
(SPEC D5, H2; issue 15: "HSV ranges per colour from config")."""

from __future__ import annotations

import math
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from loopact.app.robot import open_body
from loopact.config import load_config
from loopact.sim.describe import describe_world, line_polyline
from loopact.sim.groundtruth import distance_to_polyline, iou, object_bbox
from loopact.sim.simlog import read_sim_log

pytestmark = pytest.mark.sim

CONFIG = """\
robot:
  kind: sim
  sim_speed: 4
  sim_log: {log}
vision:
  colors:
    Lilac: [[[132, 90, 50], [160, 255, 255]]]    # a new name for the floor line's hue
    crimson: [[[0, 120, 40], [8, 255, 255]], [[172, 120, 40], [179, 255, 255]]]
    purple: [[[36, 120, 40], [40, 255, 255]]]    # changed: a hue nothing in the room has
"""


async def test_colours_of_a_config_file_reach_follow_line_and_visual_positioning(
    tmp_path: Path,
) -> None:
    log = tmp_path / "sim.jsonl"
    path = tmp_path / "loopact.yaml"
    path.write_text(CONFIG.format(log=log), encoding="utf-8")
    cfg, source = load_config(path, env={}, cwd=tmp_path)
    assert source == path
    async with AsyncExitStack() as stack:
        body = await open_body(cfg, stack)
        assert body.session is not None
        robot, tools = body.session.robot, {t.name: t for t in body.session.tools}

        # a new colour: visual_positioning finds the red cube as "crimson" (ground truth box)
        await robot.teleport(1.0, -0.5, -0.6)  # type: ignore[attr-defined]
        found: Any = await tools["visual_positioning"](target="the crimson box")
        assert found.ok and found.data["found"] and found.data["target"] == "crimson box"
        pose, head = await robot.get_pose(), await robot.get_head()
        cube = next(o for o in describe_world()["objects"] if o["name"] == "red_cube")
        w, h = found.metadata["frame"]["width_px"], found.metadata["frame"]["height_px"]
        gt = object_bbox(
            cube, (pose.x_m, pose.y_m, pose.yaw_rad), (head.pan_rad, head.tilt_rad), w, h
        )
        assert gt is not None and iou(gt, found.data["bbox"]) >= 0.5

        # a changed range replaces the built-in one: "purple" no longer sees the line
        await robot.teleport(1.0, -1.1, 0.0)  # on the line's south side, facing along it
        start = await robot.get_pose()
        lost: Any = await tools["follow_line"](color="purple", duration_s=20.0)
        assert not lost.ok and lost.data["stopped_by"] == "line_lost", lost.data
        end = await robot.get_pose()
        assert math.hypot(end.x_m - start.x_m, end.y_m - start.y_m) < 0.05

        # the new name for the line's hue: follow_line follows it (ground-truth pose log)
        t0 = robot.clock.now()
        res: Any = await tools["follow_line"](color="lilac", duration_s=4.0)
        assert res.ok and res.data["stopped_by"] == "duration", res.data
        t1 = robot.clock.now()
    poses = [p for p in read_sim_log(log) if t0 <= p["t_s"] <= t1]
    assert poses[-1]["x_m"] - poses[0]["x_m"] > 0.4  # it drove along the line (east)
    assert max(distance_to_polyline(p["x_m"], p["y_m"], line_polyline()) for p in poses) < 0.10
